/* rcluster's pure parts, no network: cluster URLs (seeds, user and password, errors that
 * never show the password), key positions by command, CROSSSLOT, the CRC16 check value,
 * reply classification (MOVED/ASK targets), CLUSTER SLOTS parsing, backoff, scripts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "rcl_int.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>

static void test_urls(void **state)
{
    rcl_url u;
    char err[256];
    assert_int_equal(rcl_url_parse("redis-cluster://app:s3cret@10.0.0.1:7000,10.0.0.2:7001", &u,
                                   err, sizeof(err)), 0);
    assert_int_equal(u.cluster, 1);
    assert_int_equal(u.nseeds, 2);
    assert_string_equal(u.seeds[1].host, "10.0.0.2");
    assert_int_equal(u.seeds[1].port, 7001);
    assert_string_equal(u.plain.user, "app");
    assert_string_equal(u.plain.pass, "s3cret");
    assert_int_equal(rcl_url_parse("redis-cluster://:pw@h:1", &u, err, sizeof(err)), 0);
    assert_string_equal(u.plain.user, "");
    assert_string_equal(u.plain.pass, "pw");
    assert_int_equal(rcl_url_parse("redis-cluster://h", &u, err, sizeof(err)), 0);
    assert_int_equal(u.seeds[0].port, 6379);
    assert_int_equal(rcl_url_parse("redis://:pw@h:7/2", &u, err, sizeof(err)), 0);
    assert_int_equal(u.cluster, 0);
    assert_int_equal(u.plain.db, 2);
    const char *bad[] = {"redis-cluster://", "redis-cluster://h:1,", "redis-cluster://h:1,,h:2",
                         "redis-cluster://:topsecret@h:99999", "redis-cluster://h:1/3", "http://h"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(rcl_url_check(bad[i], err, sizeof(err)), -1);
        assert_null(strstr(err, "topsecret"));
    }
    assert_int_equal(rcl_url_is_cluster("redis-cluster://x"), 1);
    assert_int_equal(rcl_url_is_cluster("redis://x"), 0);
}

static void keys_of(int argc, const char **argv, int first, int n, int step)
{
    int f, k, s;
    assert_int_equal(rcl_command_keys(argc, argv, NULL, &f, &k, &s), 0);
    assert_int_equal(k, n);
    if (n) {
        assert_int_equal(f, first);
        assert_int_equal(s, step);
    }
}

static void test_command_keys(void **state)
{
    const char *get[] = {"get", "k"}, *ev[] = {"EVALSHA", "x", "2", "a", "b", "arg"};
    const char *ev0[] = {"EVAL", "return 1", "0"}, *mset[] = {"MSET", "a", "1", "b", "2"};
    const char *del[] = {"DEL", "a", "b", "c"}, *pub[] = {"PUBLISH", "ch", "m"};
    const char *blpop[] = {"BLPOP", "a", "b", "0"}, *ping[] = {"PING"};
    const char *script[] = {"SCRIPT", "LOAD", "x"}, *wait[] = {"WAIT", "1", "0"};
    keys_of(2, get, 1, 1, 1);
    keys_of(6, ev, 3, 2, 1);
    keys_of(3, ev0, 0, 0, 0);
    keys_of(5, mset, 1, 2, 2);
    keys_of(4, del, 1, 3, 1);
    keys_of(3, pub, 0, 0, 0);
    keys_of(4, blpop, 1, 2, 1);
    keys_of(1, ping, 0, 0, 0);
    keys_of(3, script, 0, 0, 0);
    keys_of(3, wait, 0, 0, 0);
    int f, k, s;
    const char *badn[] = {"EVAL", "x", "3", "a"}, *neg[] = {"EVALSHA", "x", "-1"};
    assert_int_equal(rcl_command_keys(4, badn, NULL, &f, &k, &s), -1);
    assert_int_equal(rcl_command_keys(3, neg, NULL, &f, &k, &s), -1);
    char err[256];
    const char *cross[] = {"MSET", "xa", "1", "xb", "2"}, *same[] = {"MSET", "{t}a", "1", "{t}b", "2"};
    assert_int_equal(rcl_command_slot(5, cross, NULL, err, sizeof(err)), -2);
    assert_memory_equal(err, "CROSSSLOT", 9);
    assert_int_equal(rcl_command_slot(5, same, NULL, err, sizeof(err)), rcl_keyslot("t", 1));
    assert_int_equal(rcl_command_slot(1, ping, NULL, err, sizeof(err)), -1);
    assert_int_equal(rcl_command_slot(4, badn, NULL, err, sizeof(err)), -3);
}

static void test_keyslot(void **state)
{
    assert_int_equal(rcl_keyslot("123456789", 9), 0x31C3); /* CRC16/XMODEM check value */
    assert_int_equal(rcl_keyslot("{user1000}.a", 12), rcl_keyslot("user1000", 8));
    assert_int_equal(rcl_keyslot("foo{}{bar}", 10) == rcl_keyslot("bar", 3), 0);
    assert_int_equal(rcl_keyslot("foo{{bar}}", 10), rcl_keyslot("{bar", 4));
    assert_int_equal(rcl_keyslot("a{b", 3), rcl_keyslot("a{b", 3));
}

static void test_classify(void **state)
{
    redisReply r = {.type = REDIS_REPLY_ERROR};
    int slot = -1;
    rcl_addr to;
    r.str = "MOVED 3999 127.0.0.1:6381";
    assert_int_equal(rcl_classify(&r, &slot, &to), RCL_R_MOVED);
    assert_int_equal(slot, 3999);
    assert_string_equal(to.host, "127.0.0.1");
    assert_int_equal(to.port, 6381);
    r.str = "ASK 1 ::1:7000";
    assert_int_equal(rcl_classify(&r, &slot, &to), RCL_R_ASK);
    assert_string_equal(to.host, "::1");
    r.str = "TRYAGAIN Multiple keys request during rehashing of slot";
    assert_int_equal(rcl_classify(&r, &slot, &to), RCL_R_TRYAGAIN);
    r.str = "CLUSTERDOWN The cluster is down";
    assert_int_equal(rcl_classify(&r, &slot, &to), RCL_R_CLUSTERDOWN);
    r.str = "NOSCRIPT No matching script";
    assert_int_equal(rcl_classify(&r, &slot, &to), RCL_R_NOSCRIPT);
    r.str = "MOVED 99999 h:1";
    assert_int_equal(rcl_classify(&r, &slot, &to), RCL_R_NONE);
    r.str = "ERR wrong";
    assert_int_equal(rcl_classify(&r, &slot, &to), RCL_R_NONE);
    assert_int_equal(rcl_backoff_ms(0), 20);
    assert_int_equal(rcl_backoff_ms(3), 160);
    assert_int_equal(rcl_backoff_ms(20), 500);
}

static redisReply *mk(int type, long long i, const char *s, size_t n, redisReply **el)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = type;
    r->integer = i;
    r->str = (char *)s;
    r->elements = n;
    r->element = el;
    return r;
}

static void test_slotmap(void **state)
{
    /* [[0, 99, ["", 7000, id]], [100, 16383, ["10.0.0.2", 7001, id], replica]] */
    redisReply *n1[2] = {mk(REDIS_REPLY_STRING, 0, "", 0, NULL), mk(REDIS_REPLY_INTEGER, 7000, NULL, 0, NULL)};
    redisReply *n2[2] = {mk(REDIS_REPLY_STRING, 0, "10.0.0.2", 0, NULL), mk(REDIS_REPLY_INTEGER, 7001, NULL, 0, NULL)};
    redisReply *e1[3] = {mk(REDIS_REPLY_INTEGER, 0, NULL, 0, NULL), mk(REDIS_REPLY_INTEGER, 99, NULL, 0, NULL),
                         mk(REDIS_REPLY_ARRAY, 0, NULL, 2, n1)};
    redisReply *e2[3] = {mk(REDIS_REPLY_INTEGER, 100, NULL, 0, NULL), mk(REDIS_REPLY_INTEGER, 16383, NULL, 0, NULL),
                         mk(REDIS_REPLY_ARRAY, 0, NULL, 2, n2)};
    redisReply *top[2] = {mk(REDIS_REPLY_ARRAY, 0, NULL, 3, e1), mk(REDIS_REPLY_ARRAY, 0, NULL, 3, e2)};
    redisReply *r = mk(REDIS_REPLY_ARRAY, 0, NULL, 2, top);
    rcl_slotmap m = {0};
    char err[256];
    assert_int_equal(rcl_slotmap_parse(r, "seed", &m, err, sizeof(err)), 0);
    assert_int_equal(m.nmasters, 2);
    assert_string_equal(m.masters[m.owner[50]].host, "seed"); /* "" is the node asked */
    assert_int_equal(m.masters[m.owner[16383]].port, 7001);
    int *mn = calloc(2, sizeof(int));
    mn[0] = 0, mn[1] = 1;
    rcl_addr to = {"10.0.0.3", 7002};
    assert_int_equal(rcl_slotmap_move(&m, &mn, 5, &to, 7), 0);
    assert_int_equal(m.nmasters, 3);
    assert_int_equal(mn[m.owner[5]], 7);
    free(mn);
    rcl_slotmap_clear(&m);
    assert_int_equal(m.owner[5], -1);
    redisReply bad = {.type = REDIS_REPLY_ERROR, .str = "ERR This instance has cluster support disabled"};
    assert_int_equal(rcl_slotmap_parse(&bad, "seed", &m, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cluster support disabled"));
    for (int i = 0; i < 2; i++)
        free(n1[i]), free(n2[i]);
    for (int i = 0; i < 3; i++)
        free(e1[i]), free(e2[i]);
    free(top[0]), free(top[1]), free(r);
}

static void test_scripts(void **state)
{
    rcl_scripts s = {0};
    char sha[41], sha2[41];
    assert_int_equal(rcl_scripts_add(&s, "return 1", sha), 0);
    assert_int_equal(rcl_scripts_add(&s, "return 1", sha2), 0); /* once */
    assert_int_equal(s.n, 1);
    assert_string_equal(sha, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"); /* Redis's SHA1 of it */
    const char *ev[4] = {"evalsha", sha, "0"};
    assert_string_equal(rcl_scripts_body_for(&s, 3, ev, NULL), "return 1");
    ev[1] = "0000000000000000000000000000000000000000";
    assert_null(rcl_scripts_body_for(&s, 3, ev, NULL));
    rcl_scripts_free(&s);
}

/* rcl_resp_format makes the bytes hiredis's own formatter makes, for empty arguments,
 * binary ones (NUL, CR, LF inside), lengths across digit counts, and argc across them. */
static void test_resp_format(void **state)
{
    (void)state;
    static char big[100000];
    memset(big, 'x', sizeof(big));
    big[5] = '\0';
    big[6] = '\r';
    big[7] = '\n';
    const size_t sizes[] = {0, 1, 9, 10, 99, 100, 12345, sizeof(big)};
    for (int argc = 1; argc <= 120; argc += 7) {
        const char *argv[120];
        size_t lens[120];
        for (int i = 0; i < argc; i++) {
            argv[i] = big;
            lens[i] = sizes[(size_t)(i * 3 + argc) % (sizeof(sizes) / sizeof(sizes[0]))];
        }
        size_t got_len = 0;
        char *got = rcl_resp_format(argc, argv, lens, &got_len);
        char *want = NULL;
        long long want_len = redisFormatCommandArgv(&want, argc, argv, lens);
        assert_non_null(got);
        assert_true(want_len > 0);
        assert_int_equal(got_len, (size_t)want_len);
        assert_memory_equal(got, want, got_len);
        free(got);
        redisFreeCommand(want);
    }
    /* lens NULL: C strings */
    const char *cmd[] = {"EVALSHA", "0123456789012345678901234567890123456789", "0"};
    size_t n;
    char *got = rcl_resp_format(3, cmd, NULL, &n);
    const char *want = "*3\r\n$7\r\nEVALSHA\r\n$40\r\n0123456789012345678901234567890123456789\r\n$1\r\n0\r\n";
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_urls),     cmocka_unit_test(test_command_keys),
        cmocka_unit_test(test_keyslot),  cmocka_unit_test(test_classify),
        cmocka_unit_test(test_slotmap),  cmocka_unit_test(test_scripts),
        cmocka_unit_test(test_resp_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
