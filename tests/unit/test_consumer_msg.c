/* Unit: the order message parser and validator over a table of good and malformed
 * messages, plus the batch (dedup, offsets) and the metrics text. No network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "consumer_batch.h"
#include "consumer_metrics.h"
#include "consumer_msg.h"

static const struct {
    const char *text;
    consumer_msg_err want;
    int64_t order_id, event_id, user_id, ts_ms;
} cases[] = {
    /* good */
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_OK, 1, 2, 3, 4},
    {"{\"v\":1,\"order_id\":\"9223372036854775807\",\"event_id\":\"42\",\"user_id\":\"7\",\"ts_ms\":0}",
     CONSUMER_MSG_OK, INT64_MAX, 42, 7, 0},
    {" { \"ts_ms\" : 1700000000000 , \"user_id\":\"5\",\"event_id\":\"6\",\"order_id\":\"7\",\"v\":1 } ",
     CONSUMER_MSG_OK, 7, 6, 5, 1700000000000},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4,\"extra\":[1,2]}",
     CONSUMER_MSG_OK, 1, 2, 3, 4},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":253402300799999}",
     CONSUMER_MSG_OK, 1, 2, 3, 253402300799999},
    /* not JSON / not an object */
    {"", CONSUMER_MSG_EMPTY, 0, 0, 0, 0},
    {"not json", CONSUMER_MSG_NOT_JSON, 0, 0, 0, 0},
    {"{\"v\":1,", CONSUMER_MSG_NOT_JSON, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4} trailing", CONSUMER_MSG_NOT_JSON, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"order_id\":\"2\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_NOT_JSON, 0, 0, 0, 0},
    {"[1,2,3]", CONSUMER_MSG_NOT_OBJECT, 0, 0, 0, 0},
    {"\"str\"", CONSUMER_MSG_NOT_OBJECT, 0, 0, 0, 0},
    {"null", CONSUMER_MSG_NOT_OBJECT, 0, 0, 0, 0},
    /* version */
    {"{\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_VERSION, 0, 0, 0, 0},
    {"{\"v\":2,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_VERSION, 0, 0, 0, 0},
    {"{\"v\":\"1\",\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_VERSION, 0, 0, 0, 0},
    {"{\"v\":1.0,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_VERSION, 0, 0, 0, 0},
    /* ids */
    {"{\"v\":1,\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":1,\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"0\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"-1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"+1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"01\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\" 1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1x\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"0x1f\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"9223372036854775808\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"99999999999999999999\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_ORDER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"1.5\",\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_EVENT_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":null,\"user_id\":\"3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_EVENT_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"ts_ms\":4}", CONSUMER_MSG_BAD_USER_ID, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"1e3\",\"ts_ms\":4}", CONSUMER_MSG_BAD_USER_ID, 0, 0, 0, 0},
    /* ts */
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\"}", CONSUMER_MSG_BAD_TS, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":-1}", CONSUMER_MSG_BAD_TS, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":\"4\"}", CONSUMER_MSG_BAD_TS, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4.5}", CONSUMER_MSG_BAD_TS, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":253402300800000}", CONSUMER_MSG_BAD_TS, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":99999999999999999999999}", CONSUMER_MSG_NOT_JSON, 0, 0, 0, 0},
    /* quantity (issue 31): absent or 1 is one unit, up to 100 units; out of its bounds
     * refused */
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4,\"quantity\":1}", CONSUMER_MSG_OK, 1, 2, 3, 4},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4,\"quantity\":100}", CONSUMER_MSG_OK, 1, 2, 3, 4},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4,\"quantity\":0}", CONSUMER_MSG_BAD_QUANTITY, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4,\"quantity\":\"1\"}", CONSUMER_MSG_BAD_QUANTITY, 0, 0, 0, 0},
    {"{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4,\"quantity\":101}", CONSUMER_MSG_BAD_QUANTITY, 0, 0, 0, 0},
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        consumer_order o;
        memset(&o, 0, sizeof(o));
        consumer_msg_err got = consumer_msg_parse(cases[i].text, strlen(cases[i].text), &o);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): got %s, want %s", i, cases[i].text, consumer_msg_strerror(got),
                     consumer_msg_strerror(cases[i].want));
        if (got == CONSUMER_MSG_OK) {
            assert_int_equal(o.order_id, cases[i].order_id);
            assert_int_equal(o.event_id, cases[i].event_id);
            assert_int_equal(o.user_id, cases[i].user_id);
            assert_int_equal(o.ts_ms, cases[i].ts_ms);
            assert_int_equal(o.quantity, strstr(cases[i].text, "\"quantity\":100") ? 100 : 1);
        }
    }
}

static void test_special_inputs(void **state)
{
    (void)state;
    consumer_order o;
    assert_int_equal(consumer_msg_parse(NULL, 0, &o), CONSUMER_MSG_EMPTY);
    /* An embedded NUL inside a string is not accepted. */
    static const char nul[] = "{\"v\":1,\"order_id\":\"1\\u0000\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}";
    assert_int_not_equal(consumer_msg_parse(nul, sizeof(nul) - 1, &o), CONSUMER_MSG_OK);
    /* Too large: never even parsed. */
    size_t big = CONSUMER_MSG_MAX_BYTES + 1;
    char *b = malloc(big);
    memset(b, ' ', big);
    b[0] = '{';
    b[big - 1] = '}';
    assert_int_equal(consumer_msg_parse(b, big, &o), CONSUMER_MSG_TOO_LARGE);
    free(b);
    /* Length is honoured: a valid prefix with garbage after `len` is still valid. */
    static const char pre[] = "{\"v\":1,\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"ts_ms\":4}GARBAGE";
    assert_int_equal(consumer_msg_parse(pre, sizeof(pre) - 1 - 7, &o), CONSUMER_MSG_OK);
    /* Every code has a distinct name. */
    for (int i = 0; i < CONSUMER_MSG__COUNT; i++)
        for (int j = i + 1; j < CONSUMER_MSG__COUNT; j++)
            assert_string_not_equal(consumer_msg_strerror((consumer_msg_err)i),
                                    consumer_msg_strerror((consumer_msg_err)j));
    assert_string_equal(consumer_msg_strerror(CONSUMER_MSG__COUNT), "unknown");
}

static void add(consumer_batch *b, int32_t part, int64_t off, int64_t order, int64_t event, int64_t user)
{
    char buf[256], key[32];
    int n = snprintf(buf, sizeof(buf),
                     "{\"v\":1,\"order_id\":\"%lld\",\"event_id\":\"%lld\",\"user_id\":\"%lld\",\"ts_ms\":1}",
                     (long long)order, (long long)event, (long long)user);
    int k = snprintf(key, sizeof(key), "%lld", (long long)event);
    assert_int_equal(consumer_batch_add(b, part, off, key, (size_t)k, buf, (size_t)n), 0);
}

static void test_batch(void **state)
{
    (void)state;
    consumer_batch *b = consumer_batch_new();
    assert_non_null(b);
    add(b, 0, 10, 100, 1, 1000);
    add(b, 0, 11, 101, 1, 1001);
    add(b, 3, 5, 100, 1, 1000);  /* replay of the first */
    add(b, 0, 12, 102, 1, 1001); /* second order of user 1001 in event 1 */
    add(b, 3, 6, 103, 2, 1001);  /* same user, other event: fine */
    assert_int_equal(consumer_batch_add(b, 3, 7, NULL, 0, "junk", 4), 0);
    assert_int_equal(consumer_batch_add(b, 1, 2, NULL, 0, NULL, 0), 0);
    assert_int_equal(consumer_batch_count(b), 7);
    assert_int_equal(consumer_batch_dedup(b), 2);
    int want_dup[] = {0, 0, 1, 2, 0, 0, 0}; /* 2: only the (event, user) pair repeats */
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(consumer_batch_msg_at(b, i)->dup, want_dup[i]);
    consumer_batch_msg *junk = consumer_batch_msg_at(b, 5);
    assert_int_equal(junk->err, CONSUMER_MSG_NOT_JSON);
    assert_null(consumer_batch_key(b, junk));
    assert_memory_equal(consumer_batch_value(b, junk), "junk", 4);
    consumer_batch_msg *first = consumer_batch_msg_at(b, 0);
    assert_memory_equal(consumer_batch_key(b, first), "1", 1);
    assert_int_equal(consumer_batch_msg_at(b, 6)->err, CONSUMER_MSG_EMPTY);

    const consumer_batch_pos *pos;
    size_t np = consumer_batch_positions(b, &pos);
    assert_int_equal(np, 3);
    for (size_t i = 0; i < np; i++) {
        int64_t want = pos[i].partition == 0 ? 13 : pos[i].partition == 3 ? 8 : 3;
        assert_int_equal(pos[i].next_offset, want);
    }
    consumer_batch_clear(b);
    assert_int_equal(consumer_batch_count(b), 0);
    assert_int_equal(consumer_batch_positions(b, &pos), 0);
    /* Many messages: the arena and the tables grow; dedup finds exactly the replays. */
    for (int i = 0; i < 5000; i++)
        add(b, i % 6, i, 1 + i % 4000, 7, 1 + i % 4000);
    assert_int_equal(consumer_batch_dedup(b), 1000);
    consumer_batch_free(b);
    consumer_batch_free(NULL);
}

static void test_metrics(void **state)
{
    (void)state;
    consumer_metrics m;
    consumer_metrics_init(&m);
    atomic_fetch_add(&m.consumed, 5);
    atomic_fetch_add(&m.dead_lettered[CONSUMER_MSG_NOT_JSON], 2);
    consumer_hist_observe(&m.batch_size, 700);
    consumer_hist_observe(&m.batch_size, 3);
    int32_t parts[] = {0, 4};
    int64_t lags[] = {12, -1};
    consumer_metrics_set_lag(&m, parts, lags, 2);
    size_t len;
    char *t = consumer_metrics_render(&m, &len);
    assert_non_null(t);
    assert_int_equal(strlen(t), len);
    assert_non_null(strstr(t, "\nseckill_consumer_messages_consumed_total 5\n"));
    assert_non_null(strstr(t, "seckill_consumer_dead_letters_total{error=\"not_json\"} 2\n"));
    assert_non_null(strstr(t, "seckill_consumer_batch_size_bucket{le=\"10\"} 1\n"));
    assert_non_null(strstr(t, "seckill_consumer_batch_size_bucket{le=\"1000\"} 2\n"));
    assert_non_null(strstr(t, "seckill_consumer_batch_size_count 2\n"));
    assert_non_null(strstr(t, "seckill_consumer_lag{partition=\"0\"} 12\n"));
    assert_null(strstr(t, "partition=\"4\""));
    free(t);
    consumer_metrics_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),     cmocka_unit_test(test_special_inputs),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
