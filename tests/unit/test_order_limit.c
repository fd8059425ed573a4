/* Unit tests of order_limit (trusted proxies, the client address behind them, the
 * per-address level, Retry-After) and order_admit (the sliding-window p99 and the shed
 * decision). Time is injected: no sleeps, no network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "order_admit.h"
#include "order_limit.h"
#include "order_reply.h"
#include "order_window.h"
#include "order_pause.h"
#include "order_evrate.h"

#define IP(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

static void test_proxies_parse(void **state)
{
    order_limit_proxies p;
    char err[256];
    assert_int_equal(order_limit_proxies_parse("", &p, err, sizeof(err)), 0);
    assert_int_equal(p.n, 0);
    assert_int_equal(order_limit_proxies_parse(" 10.0.0.0/8, 192.168.1.7 ,,127.0.0.1/32", &p, err,
                                               sizeof(err)), 0);
    assert_int_equal(p.n, 3);
    assert_true(order_limit_proxy_trusted(&p, IP(10, 200, 3, 4)));
    assert_true(order_limit_proxy_trusted(&p, IP(192, 168, 1, 7)));
    assert_false(order_limit_proxy_trusted(&p, IP(192, 168, 1, 8)));
    assert_false(order_limit_proxy_trusted(&p, IP(11, 0, 0, 1)));
    assert_true(order_limit_proxy_trusted(&p, IP(127, 0, 0, 1)));
    assert_int_equal(order_limit_proxies_parse("0.0.0.0/0", &p, err, sizeof(err)), 0);
    assert_true(order_limit_proxy_trusted(&p, IP(8, 8, 8, 8)));
    const char *bad[] = {"10.0.0.0/33", "10.0.0/8", "localhost", "10.0.0.1/", "10.0.0.1/x",
                         "::1", "1.2.3.4/8/8", "300.1.1.1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (order_limit_proxies_parse(bad[i], &p, err, sizeof(err)) != -1)
            fail_msg("accepted %s", bad[i]);
        assert_non_null(strstr(err, "http.trusted_proxies"));
    }
}

static void test_client_ip(void **state)
{
    order_limit_proxies p;
    char err[128];
    assert_int_equal(order_limit_proxies_parse("10.0.0.0/8", &p, err, sizeof(err)), 0);
    uint32_t proxy = IP(10, 0, 0, 5), stranger = IP(203, 0, 113, 9);
    /* an untrusted peer is the client, whatever X-Forwarded-For says */
    assert_int_equal(order_limit_client_ip(&p, stranger, "1.2.3.4"), stranger);
    assert_int_equal(order_limit_client_ip(&p, stranger, NULL), stranger);
    /* a trusted peer: the right-most untrusted entry; what the client wrote left of it
     * is not believed */
    assert_int_equal(order_limit_client_ip(&p, proxy, "198.51.100.7"), IP(198, 51, 100, 7));
    assert_int_equal(order_limit_client_ip(&p, proxy, "6.6.6.6, 198.51.100.7"), IP(198, 51, 100, 7));
    assert_int_equal(order_limit_client_ip(&p, proxy, "6.6.6.6,198.51.100.7, 10.1.1.1 , 10.2.2.2"),
                     IP(198, 51, 100, 7));
    /* every hop is ours: the left-most */
    assert_int_equal(order_limit_client_ip(&p, proxy, "10.9.9.9, 10.1.1.1"), IP(10, 9, 9, 9));
    /* no header, or an empty one: the proxy itself */
    assert_int_equal(order_limit_client_ip(&p, proxy, NULL), proxy);
    assert_int_equal(order_limit_client_ip(&p, proxy, " , "), proxy);
    /* garbage written by a hop of ours stops the walk at that hop */
    assert_int_equal(order_limit_client_ip(&p, proxy, "1.1.1.1, junk, 10.1.1.1"), IP(10, 1, 1, 1));
    assert_int_equal(order_limit_client_ip(&p, proxy, "unknown"), proxy);
}

static void test_ip_level(void **state)
{
    char err[128];
    order_limit *l = order_limit_new(0, 10, 1024, "", err, sizeof(err));
    assert_non_null(l);
    assert_false(order_limit_ip_on(l));
    long long retry = -1;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(order_limit_ip_take(l, IP(1, 2, 3, 4), 1000, &retry), 1);
    order_limit_free(l);

    l = order_limit_new(2, 3, 1024, "127.0.0.1", err, sizeof(err)); /* 2/s, burst 3 */
    assert_non_null(l);
    assert_true(order_limit_ip_on(l));
    int ok = 0;
    for (int i = 0; i < 10; i++)
        ok += order_limit_ip_take(l, IP(1, 2, 3, 4), 1000000, &retry);
    assert_int_equal(ok, 3);
    assert_int_equal(retry, 1);
    assert_int_equal(order_limit_ip_take(l, IP(1, 2, 3, 5), 1000000, &retry), 1);
    assert_int_equal(order_limit_ip_take(l, IP(1, 2, 3, 4), 1500000, &retry), 1); /* 1 token in 0.5 s */
    assert_int_equal(order_limit_proxies_of(l)->n, 1);
    order_limit_free(l);
    assert_null(order_limit_new(1, 1, 1024, "nonsense", err, sizeof(err)));
    assert_non_null(strstr(err, "nonsense"));
    order_limit_free(NULL);

    assert_int_equal(order_limit_retry_after_s(5), 1);
    assert_int_equal(order_limit_retry_after_s(1), 1);
    assert_int_equal(order_limit_retry_after_s(0.4), 3);
    assert_int_equal(order_limit_retry_after_s(0), 1);
    assert_string_equal(order_limit_level_name(ORDER_LIMIT_IP), "ip");
    assert_string_equal(order_limit_level_name(ORDER_LIMIT_USER), "user");

    char body[256];
    size_t n = order_reply_limited(body, sizeof(body), "ip", 2);
    assert_int_equal(n, strlen(body));
    assert_string_equal(body, "{\"error\":\"rate_limited\",\"message\":\"too many requests (ip limit), "
                              "retry after 2 s\",\"level\":\"ip\"}");
}

static void test_admit_buckets(void **state)
{
    assert_int_equal(order_admit_bucket(0), 0);
    assert_int_equal(order_admit_bucket(100), 0);
    assert_int_equal(order_admit_bucket(101), 1);
    assert_int_equal(order_admit_bucket(200), 1);
    assert_int_equal(order_admit_bucket(201), 2);
    assert_int_equal(order_admit_bucket(INT64_MAX), ORDER_ADMIT_BUCKETS - 1);
    for (int i = 0; i < ORDER_ADMIT_BUCKETS - 1; i++)
        assert_int_equal(order_admit_bucket(order_admit_bucket_bound(i)), i);
}

static void test_admit_sheds_and_recovers(void **state)
{
    /* bound 50 ms, window 1 s (slots of 100 ms), at least 20 answers */
    order_admit *a = order_admit_new(50000, 1000, 20);
    assert_non_null(a);
    int64_t t = 5000000000LL, n;
    long long retry = -1;
    assert_int_equal(order_admit_check(a, t, &retry), 1); /* empty: admit */
    for (int i = 0; i < 1000; i++)
        order_admit_record(a, t, 800); /* fast gate */
    assert_int_equal(order_admit_p99(a, t, &n), 800); /* 800 us lies in the 800 us bucket */
    assert_int_equal(n, 1000);
    assert_int_equal(order_admit_check(a, t + 100000, &retry), 1);
    /* 9 slow answers in 1009: under 1%, still admitted */
    for (int i = 0; i < 9; i++)
        order_admit_record(a, t + 100000, 300000);
    assert_int_equal(order_admit_check(a, t + 200000, &retry), 1);
    /* a slow Redis: most answers past 200 ms */
    for (int i = 0; i < 200; i++)
        order_admit_record(a, t + 200000, 250000);
    assert_int_equal(order_admit_check(a, t + 300000, &retry), 0);
    assert_int_equal(retry, 1);
    /* between evaluations the decision holds (one atomic load) */
    assert_int_equal(order_admit_check(a, t + 300001, &retry), 0);
    /* nothing new recorded: the slow answers age out of the window and orders flow */
    assert_int_equal(order_admit_check(a, t + 1100000, &retry), 0); /* slot of t+200ms still in */
    assert_int_equal(order_admit_check(a, t + 1300000, &retry), 1);
    assert_int_equal(order_admit_p99(a, t + 1300000, &n), 0);
    assert_int_equal(n, 0);
    order_admit_free(a);
}

static void test_admit_min_samples_and_off(void **state)
{
    order_admit *a = order_admit_new(50000, 1000, 20);
    int64_t t = 1000000, n;
    long long retry;
    for (int i = 0; i < 19; i++)
        order_admit_record(a, t, 900000);
    assert_int_equal(order_admit_check(a, t, &retry), 1); /* 19 < 20 answers */
    order_admit_record(a, t, 900000);
    assert_int_equal(order_admit_check(a, t + 100000, &retry), 0);
    order_admit_free(a);
    /* just under the bound's bucket: 40 ms answers with a 50 ms bound are admitted */
    a = order_admit_new(50000, 1000, 1);
    for (int i = 0; i < 100; i++)
        order_admit_record(a, t, 40000);
    assert_int_equal(order_admit_check(a, t, &retry), 1);
    assert_true(order_admit_p99(a, t, &n) >= 40000);
    order_admit_free(a);
    /* off: never sheds */
    a = order_admit_new(0, 1000, 1);
    for (int i = 0; i < 100; i++)
        order_admit_record(a, t, 9000000);
    assert_int_equal(order_admit_check(a, t, &retry), 1);
    order_admit_free(a);
    assert_null(order_admit_new(1, 5, 1));
    order_admit_free(NULL);
}

static void test_window_table(void **state)
{
    order_window *t = order_window_new();
    assert_non_null(t);
    assert_int_equal(order_window_get(t, 77, 1000), ORDER_WINDOW_UNKNOWN);
    order_event_limits lim = {0, 0, 0, 0};
    assert_int_equal(order_window_limits(t, 77, &lim), 0);
    order_window_set(t, 77, 5000, 9000, NULL);
    assert_int_equal(order_window_limits(t, 77, &lim), 1); /* known: no override */
    assert_int_equal(order_event_limits_any(&lim), 0);
    order_event_limits over = {3, 0, 250, 0};
    order_window_set(t, 79, 5000, 9000, &over);
    assert_int_equal(order_window_limits(t, 79, &lim), 1);
    assert_int_equal(lim.ip_rate, 3);
    assert_int_equal(lim.user_rate, 0);
    assert_int_equal(lim.event_rate, 250);
    assert_int_equal(order_window_get(t, 77, 4999), ORDER_WINDOW_NOT_STARTED);
    assert_int_equal(order_window_get(t, 77, 5000), ORDER_WINDOW_UNKNOWN); /* open: the gate decides */
    assert_int_equal(order_window_get(t, 77, 8999), ORDER_WINDOW_UNKNOWN);
    assert_int_equal(order_window_get(t, 77, 9000), ORDER_WINDOW_ENDED); /* as reserve.lua: now >= ends */
    assert_int_equal(order_window_get(t, 78, 1000), ORDER_WINDOW_UNKNOWN);
    /* an admin's change (issue 32): forgotten, then learnt again; another id's forget
     * leaves the entry alone */
    order_window_forget(t, 78);
    assert_int_equal(order_window_get(t, 77, 4999), ORDER_WINDOW_NOT_STARTED);
    order_window_forget(t, 77);
    assert_int_equal(order_window_get(t, 77, 4999), ORDER_WINDOW_UNKNOWN);
    assert_int_equal(order_window_limits(t, 77, &lim), 0);
    order_window_set(t, 77, 5000, 9000, NULL);
    /* many events: a slot taken by another event forgets the first, never mixes them */
    for (uint64_t id = 1000; id < 100000; id++)
    {
        order_event_limits l = {(int64_t)id, 0, 0, 0};
        order_window_set(t, id, (int64_t)id * 10, (int64_t)id * 10 + 5, &l);
    }
    int known = 0;
    for (uint64_t id = 1000; id < 100000; id++) {
        order_window_state st = order_window_get(t, id, (int64_t)id * 10 - 1);
        assert_true(st == ORDER_WINDOW_UNKNOWN || st == ORDER_WINDOW_NOT_STARTED);
        known += st == ORDER_WINDOW_NOT_STARTED;
        assert_true(order_window_get(t, id, (int64_t)id * 10 + 1) == ORDER_WINDOW_UNKNOWN);
        if (order_window_limits(t, id, &lim)) /* an entry's overrides are its own */
            assert_int_equal(lim.ip_rate, (int64_t)id);
        else
            assert_int_equal(lim.ip_rate, 0);
    }
    assert_true(known >= 4096 / 2);
    order_window_free(t);
    order_window_free(NULL);
}

static void test_pause_table(void **state)
{
    order_pause *p = order_pause_new();
    assert_non_null(p);
    assert_false(order_pause_has(p, 5));
    assert_int_equal(order_pause_set(p, 5, 1), 0);
    assert_int_equal(order_pause_set(p, 5, 1), 0); /* twice: once in the set */
    assert_int_equal(order_pause_set(p, 6, 1), 0);
    assert_int_equal(order_pause_count(p), 2);
    assert_true(order_pause_has(p, 5));
    assert_true(order_pause_has(p, 6));
    assert_int_equal(order_pause_set(p, 5, 0), 0);
    assert_false(order_pause_has(p, 5));
    assert_true(order_pause_has(p, 6));
    assert_int_equal(order_pause_set(p, 99, 0), 0); /* resuming what is not paused */
    assert_int_equal(order_pause_count(p), 1);
    uint64_t ids[ORDER_PAUSE_MAX + 10];
    for (size_t i = 0; i < ORDER_PAUSE_MAX + 10; i++)
        ids[i] = 1000 + i;
    order_pause_replace(p, ids, 3); /* what Redis holds replaces what was known */
    assert_false(order_pause_has(p, 6));
    assert_true(order_pause_has(p, 1002));
    assert_false(order_pause_has(p, 1003));
    order_pause_replace(p, ids, ORDER_PAUSE_MAX + 10);
    assert_int_equal(order_pause_count(p), ORDER_PAUSE_MAX);
    assert_true(order_pause_has(p, 1000 + ORDER_PAUSE_MAX - 1));
    assert_false(order_pause_has(p, 1000 + ORDER_PAUSE_MAX));
    assert_int_equal(order_pause_set(p, 7, 1), -1); /* full */
    order_pause_replace(p, NULL, 0);
    assert_false(order_pause_has(p, 1000));
    /* A read of Redis sent before a resume here must not pause the event again. */
    assert_int_equal(order_pause_set(p, 8, 1), 0);
    uint64_t v = order_pause_version(p), stale[1] = {8};
    assert_int_equal(order_pause_set(p, 8, 0), 0);
    assert_int_equal(order_pause_replace_since(p, stale, 1, v), 0);
    assert_false(order_pause_has(p, 8));
    v = order_pause_version(p); /* no change here since: the read is applied */
    assert_int_equal(order_pause_replace_since(p, stale, 1, v), 1);
    assert_true(order_pause_has(p, 8));
    order_pause_free(p);
    order_pause_free(NULL);
    char body[96];
    order_reply_paused(body, sizeof(body), 42, 1);
    assert_string_equal(body, "{\"event_id\":\"42\",\"paused\":true}");
}

static void test_evrate_pool(void **state)
{
    order_evrate *t = order_evrate_new(500);
    assert_non_null(t);
    assert_int_equal(order_evrate_take(t, 9, 1000), 0); /* nothing taken yet */
    order_evrate_add(t, 9, 3, 1000);
    assert_int_equal(order_evrate_take(t, 9, 1001), 1);
    assert_int_equal(order_evrate_take(t, 10, 1001), 0); /* another event has none */
    assert_int_equal(order_evrate_take(t, 9, 1002), 1);
    assert_int_equal(order_evrate_take(t, 9, 1003), 1);
    assert_int_equal(order_evrate_take(t, 9, 1004), 0); /* spent */
    order_evrate_add(t, 9, 5, 2000);
    assert_int_equal(order_evrate_take(t, 9, 2499), 1);
    assert_int_equal(order_evrate_take(t, 9, 2500), 0); /* the 4 left expired unspent */
    order_evrate_add(t, 9, 2, 3000);
    assert_int_equal(order_evrate_take(t, 9, 3000), 1);
    order_evrate_add(t, 9 + 1024, 1, 3000); /* may share the slot: never a token too many */
    int got = 0;
    for (int i = 0; i < 5; i++)
        got += order_evrate_take(t, 9, 3001) + order_evrate_take(t, 9 + 1024, 3001);
    assert_true(got <= 2);
    char key[64];
    assert_int_equal(order_evrate_key(42, key, sizeof(key)), strlen("seckill:{e42}:rate"));
    assert_string_equal(key, "seckill:{e42}:rate");
    order_evrate_free(t);
    order_evrate_free(NULL);
    assert_null(order_evrate_new(0));
    assert_string_equal(order_limit_level_name(ORDER_LIMIT_EVENT), "event");
    /* dry: refused from memory until valid_ms passed, then Redis is asked again */
    t = order_evrate_new(100);
    order_evrate_dry(t, 5, 1000);
    assert_int_equal(order_evrate_take(t, 5, 1050), -1);
    assert_int_equal(order_evrate_take(t, 6, 1050), 0);
    assert_int_equal(order_evrate_take(t, 5, 1100), 0);
    order_evrate_dry(t, 5, 2000);
    order_evrate_add(t, 5, 1, 2010); /* tokens came (another request's batch): not dry */
    assert_int_equal(order_evrate_take(t, 5, 2011), 1);
    order_evrate_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proxies_parse),
        cmocka_unit_test(test_client_ip),
        cmocka_unit_test(test_ip_level),
        cmocka_unit_test(test_admit_buckets),
        cmocka_unit_test(test_admit_sheds_and_recovers),
        cmocka_unit_test(test_admit_min_samples_and_off),
        cmocka_unit_test(test_window_table),
        cmocka_unit_test(test_pause_table),
        cmocka_unit_test(test_evrate_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
