/* Unit tests of consumer_walproto: the replication frames, pgoutput's Begin / Message /
 * Commit, the standby status update, and the payload lines turned into transitions.
 * Frames are built here byte by byte as PostgreSQL's protocol documentation lays them out;
 * every truncation of a valid frame must be refused, never read past. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "consumer_walproto.h"

static size_t put64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
    return 8;
}

/* 'w' header: dataStart, walEnd, sendTime. */
static size_t xlog_header(unsigned char *b, uint64_t wal_end)
{
    size_t n = 0;
    b[n++] = 'w';
    n += put64(b + n, 0x10);
    n += put64(b + n, wal_end);
    n += put64(b + n, 0);
    return n;
}

static size_t message_frame(unsigned char *b, const char *prefix, const char *content, int flags)
{
    size_t n = xlog_header(b, 0x2000);
    b[n++] = 'M';
    b[n++] = (unsigned char)flags;
    n += put64(b + n, 0x1800);
    memcpy(b + n, prefix, strlen(prefix) + 1);
    n += strlen(prefix) + 1;
    uint32_t len = (uint32_t)strlen(content);
    b[n++] = (unsigned char)(len >> 24);
    b[n++] = (unsigned char)(len >> 16);
    b[n++] = (unsigned char)(len >> 8);
    b[n++] = (unsigned char)len;
    memcpy(b + n, content, len);
    return n + len;
}

static void test_message(void **state)
{
    (void)state;
    unsigned char b[256];
    size_t n = message_frame(b, "seckill", "1\t2\t3\tcreated\t4", 1);
    consumer_wal_frame f;
    assert_int_equal(consumer_wal_parse((const char *)b, n, &f), 0);
    assert_int_equal(f.kind, CONSUMER_WAL_MESSAGE);
    assert_int_equal(f.wal_end, 0x2000);
    assert_int_equal(f.transactional, 1);
    assert_string_equal(f.prefix, "seckill");
    assert_int_equal(f.content_len, 15);
    assert_memory_equal(f.content, "1\t2\t3\tcreated\t4", 15);
    for (size_t cut = 0; cut < n; cut++) /* every truncation is refused */
        assert_int_equal(consumer_wal_parse((const char *)b, cut, &f), -1);
}

static void test_begin_commit_keepalive(void **state)
{
    (void)state;
    unsigned char b[128];
    consumer_wal_frame f;
    size_t n = xlog_header(b, 0x3000);
    b[n++] = 'C';
    b[n++] = 0;
    n += put64(b + n, 0x2fff);
    n += put64(b + n, 0x3000);
    n += put64(b + n, 7);
    assert_int_equal(consumer_wal_parse((const char *)b, n, &f), 0);
    assert_int_equal(f.kind, CONSUMER_WAL_COMMIT);
    assert_int_equal(f.commit_lsn, 0x2fff);
    assert_int_equal(f.end_lsn, 0x3000);
    assert_int_equal(consumer_wal_parse((const char *)b, n - 1, &f), -1);

    n = xlog_header(b, 0x3000);
    b[n++] = 'B';
    n += put64(b + n, 0x3000);
    n += put64(b + n, 123456);
    memset(b + n, 0, 4);
    n += 4;
    assert_int_equal(consumer_wal_parse((const char *)b, n, &f), 0);
    assert_int_equal(f.kind, CONSUMER_WAL_BEGIN);
    assert_int_equal(f.commit_ts_us, 123456);

    n = 0;
    b[n++] = 'k';
    n += put64(b + n, 0x4000);
    n += put64(b + n, 0);
    b[n++] = 1;
    assert_int_equal(consumer_wal_parse((const char *)b, n, &f), 0);
    assert_int_equal(f.kind, CONSUMER_WAL_KEEPALIVE);
    assert_int_equal(f.wal_end, 0x4000);
    assert_int_equal(f.reply_requested, 1);
    assert_int_equal(consumer_wal_parse((const char *)b, n - 1, &f), -1);

    n = xlog_header(b, 0x3000);
    b[n++] = 'R'; /* a relation: not ours */
    assert_int_equal(consumer_wal_parse((const char *)b, n, &f), 0);
    assert_int_equal(f.kind, CONSUMER_WAL_OTHER);
}

static void test_status(void **state)
{
    (void)state;
    char out[CONSUMER_WAL_STATUS_LEN];
    consumer_wal_status(out, 0x0102030405060708ULL, 946684800000000LL + 5);
    assert_int_equal(out[0], 'r');
    const unsigned char want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_memory_equal(out + 1, want, 8);
    assert_memory_equal(out + 9, want, 8);
    assert_memory_equal(out + 17, want, 8);
    assert_int_equal((unsigned char)out[32], 5); /* 5 us after PostgreSQL's epoch */
    assert_int_equal(out[33], 0);
    char lsn[24];
    consumer_wal_lsn_str(0x16B3748ULL | (1ULL << 32), lsn);
    assert_string_equal(lsn, "1/16B3748");
}

static void test_lines(void **state)
{
    (void)state;
    const char *c = "11\t2\t3\tcreated\t1700\n12\t2\t4\tpaid\t1701\n\n";
    size_t pos = 0, n;
    const char *line;
    char out[256], key[24];
    assert_int_equal(consumer_wal_next_line(c, strlen(c), &pos, &line, &n), 1);
    int v = consumer_wal_line_json(line, n, out, sizeof(out), key);
    assert_true(v > 0);
    assert_string_equal(out, "{\"v\":1,\"order_id\":\"11\",\"event_id\":\"2\",\"user_id\":\"3\","
                             "\"status\":\"created\",\"at_ms\":1700}");
    assert_string_equal(key, "11");
    assert_int_equal(consumer_wal_next_line(c, strlen(c), &pos, &line, &n), 1);
    assert_true(consumer_wal_line_json(line, n, out, sizeof(out), key) > 0);
    assert_string_equal(key, "12");
    assert_int_equal(consumer_wal_next_line(c, strlen(c), &pos, &line, &n), 0);
    /* the quantity (issue 31): a sixth field */
    const char *q = "13\t2\t5\tcreated\t1702\t3";
    assert_true(consumer_wal_line_json(q, strlen(q), out, sizeof(out), key) > 0);
    assert_string_equal(out, "{\"v\":1,\"order_id\":\"13\",\"event_id\":\"2\",\"user_id\":\"5\","
                             "\"status\":\"created\",\"at_ms\":1702,\"quantity\":3}");

    const char *bad[] = {"", "1\t2\t3\tcreated", "1\t2\t3\tcreated\t4\t5\t6", "x\t2\t3\tpaid\t4",
                         "1\t2\t3\tcreated\t4\t", "1\t2\t3\tcreated\t4\t0", "1\t2\t3\tcreated\t4\t1000",
                         "1\t2\t3\tcreated\t4\t-1",
                         "1\t2\t3\tPAID\t4", "1\t2\t3\tpa\"id\t4", "12345678901234567890\t2\t3\tpaid\t4",
                         "1\t\t3\tpaid\t4", "1\t2\t3\tpaid\t-4"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(consumer_wal_line_json(bad[i], strlen(bad[i]), out, sizeof(out), key), -1);
    const char *ok = "1\t2\t3\tpaid\t4";
    assert_int_equal(consumer_wal_line_json(ok, strlen(ok), out, 10, key), -1); /* too small */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message), cmocka_unit_test(test_begin_commit_keepalive),
        cmocka_unit_test(test_status), cmocka_unit_test(test_lines)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
