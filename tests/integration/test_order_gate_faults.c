/* Integration tests of seckill-order's gate when its Redis fails, each on a private
 * redis-server and a private seckill-order (SECKILL_REDIS_TIMEOUT_MS 300, one worker)
 * with a private seckill-devkafka; no PostgreSQL. Split out of test_order_http.c, whose
 * front shares the stack's Redis and so cannot be stopped or flushed:
 *  - a batched gate call that times out (Redis stopped) or gets an error reply: every
 *    request 503 unavailable, the stock and its pending entries consistent after;
 *  - NOSCRIPT in the middle of the traffic: the batch is loaded and sent again, every
 *    request gets the answer it would have had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <inttypes.h>
#include <signal.h>
#include <time.h>

#include "order_msg.h"
#include "seckill_lua.h"
#include "sk_test_redis.h"
#include "test_order_support.h"

#define GATE_CALLS "seckill_order_gate_calls_total{script=\"reserve\"}"

static to_kafka kafka;
static uint64_t user_base; /* ids of this run: user_base + n */

static void error_code_is(const char *body, const char *code)
{
    if (!to_error_is(body, code))
        fail_msg("want error %s, got %s", code, body);
}

/* A private Redis, an event loaded into it (event_load.lua), and a seckill-order on it
 * with a short Redis timeout; no PostgreSQL. */
typedef struct {
    sk_test_redis *redis;
    redisContext *c;
    to_order o;
} private_front;

static void private_front_start(private_front *f, uint64_t event, long stock)
{
    char err[256];
    f->redis = sk_test_redis_start(NULL, err, sizeof(err));
    if (!f->redis)
        fail_msg("redis-server: %s", err);
    f->c = to_redis(sk_test_redis_url(f->redis));
    assert_non_null(f->c);
    char ks[ORDER_KEY_MAX], km[ORDER_KEY_MAX], st[24], a[24], b[24];
    order_key(event, ORDER_KEY_STOCK, ks, sizeof(ks));
    order_key(event, ORDER_KEY_META, km, sizeof(km));
    snprintf(st, sizeof(st), "%ld", stock);
    int64_t now_ms = (int64_t)time(NULL) * 1000; /* wall clock, as the gate's now_ms */
    snprintf(a, sizeof(a), "%" PRId64, now_ms - 5000);
    snprintf(b, sizeof(b), "%" PRId64, now_ms + 3600000);
    const char *argv[] = {"EVAL", seckill_lua_find("event_load"), "2", ks, km, st, a, b, "1"};
    redisReply *r = redisCommandArgv(f->c, 9, argv, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    const char *env[] = {"SECKILL_REDIS_TIMEOUT_MS=300", "SECKILL_WORKERS=1", NULL};
    assert_int_equal(to_order_start(&f->o, sk_test_redis_url(f->redis), kafka.bootstrap, NULL, env), 0);
}

static void private_front_stop(private_front *f)
{
    assert_int_equal(to_stop(&f->o.proc, SIGTERM, 10000), 0);
    redisFree(f->c);
    sk_test_redis_free(f->redis);
}

static long long pint(private_front *f, uint64_t event, int kind, const char *fmt)
{
    return to_key_int(f->c, event, kind, fmt);
}

/* The front's /readyz says Redis (and Kafka) reachable again. */
static int front_ready(void *p)
{
    char resp[512];
    return to_http1(((private_front *)p)->o.port, "GET", "/readyz", NULL, NULL, resp,
                    sizeof(resp)) == 200;
}

static int redis_answers(void *p)
{
    redisReply *r = redisCommand(((private_front *)p)->c, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok;
}

/* A batch whose Redis call times out: Redis stops (SIGSTOP) with the calls sent or
 * about to be; every request gets 503 once the 300 ms timeout drops the connection.
 * When Redis runs again it may still execute what it had read: whatever it reserved
 * is then a pending entry (the reconciler's to release: no message was produced), so
 * stock + pending = the stock loaded, buyers = pending, and no index entry says
 * "acknowledged". Then a batch whose call fails with an error reply (the stock key of
 * the wrong type): every request 503, nothing changed. */
static void test_gate_batch_fails(void **state)
{
    (void)state;
    uint64_t ev = user_base + 7100000;
    private_front f;
    private_front_start(&f, ev, 5);
    enum { N = 6 };
    uint64_t events[N], users[N];
    for (int i = 0; i < N; i++) {
        events[i] = ev;
        users[i] = user_base + 7100100 + (uint64_t)i;
    }
    int st[N];
    char bodies[N][512];
    assert_int_equal(kill(sk_test_redis_pid(f.redis), SIGSTOP), 0);
    assert_int_equal(to_order_burst(&f.o, N, events, users, st, bodies), 0);
    assert_int_equal(kill(sk_test_redis_pid(f.redis), SIGCONT), 0);
    for (int i = 0; i < N; i++) {
        if (st[i] != 503)
            fail_msg("request %d: %d %s", i, st[i], bodies[i]);
        error_code_is(bodies[i], "unavailable");
    }
    assert_int_equal(to_wait(redis_answers, &f, 5000), 1);
    long long pending = pint(&f, ev, ORDER_KEY_PENDING, "HLEN %s");
    assert_true(pending >= 0 && pending <= N);
    assert_int_equal(pint(&f, ev, ORDER_KEY_STOCK, "GET %s") + pending, 5);
    assert_int_equal(pint(&f, ev, ORDER_KEY_BUYERS, "HLEN %s"), pending);
    assert_int_equal(to_acked_orders(f.c, ev), 0);
    /* the front dropped its timed-out connection: wait until it has a new one */
    assert_int_equal(to_wait(front_ready, &f, 5000), 1);

    /* an error reply for the whole call */
    uint64_t bad = ev + 1;
    char ks[ORDER_KEY_MAX];
    order_key(bad, ORDER_KEY_STOCK, ks, sizeof(ks));
    freeReplyObject(redisCommand(f.c, "HSET %s x 1", ks));
    char before[8192], after[8192], pat[64];
    snprintf(pat, sizeof(pat), "seckill:{e%" PRIu64 "}:*", bad);
    to_redis_snapshot(f.c, pat, before, sizeof(before));
    for (int i = 0; i < N; i++)
        events[i] = bad;
    long long calls0 = to_order_metric(&f.o, GATE_CALLS);
    assert_int_equal(to_order_burst(&f.o, N, events, users, st, bodies), 0);
    for (int i = 0; i < N; i++) {
        if (st[i] != 503)
            fail_msg("request %d: %d %s", i, st[i], bodies[i]);
        error_code_is(bodies[i], "unavailable");
    }
    to_redis_snapshot(f.c, pat, after, sizeof(after));
    assert_string_equal(before, after);
    assert_true(to_order_metric(&f.o, GATE_CALLS) > calls0); /* the calls were made, and failed */
    private_front_stop(&f);
}

/* NOSCRIPT in the middle of the traffic: the node's script cache is flushed between
 * bursts, so a batched reserve.lua call (and confirm.lua) meets NOSCRIPT; the call is
 * loaded and sent again whole, and every request gets the answer it would have had:
 * exactly the stock accepted, no 503. */
static void test_gate_noscript_batch(void **state)
{
    (void)state;
    uint64_t ev = user_base + 7200000;
    private_front f;
    private_front_start(&f, ev, 6);
    enum { N = 5 };
    uint64_t events[N], users[N];
    int accepted = 0;
    for (int round = 0; round < 3; round++) {
        freeReplyObject(redisCommand(f.c, "SCRIPT FLUSH"));
        for (int i = 0; i < N; i++) {
            events[i] = ev;
            users[i] = user_base + 7200100 + (uint64_t)(round * N + i);
        }
        int st[N];
        char bodies[N][512];
        assert_int_equal(to_order_burst(&f.o, N, events, users, st, bodies), 0);
        for (int i = 0; i < N; i++) {
            if (st[i] == 202) {
                accepted++;
                continue;
            }
            if (st[i] != 409)
                fail_msg("round %d request %d: %d %s", round, i, st[i], bodies[i]);
            error_code_is(bodies[i], "sold_out");
        }
    }
    assert_int_equal(accepted, 6);
    assert_int_equal(pint(&f, ev, ORDER_KEY_STOCK, "GET %s"), 0);
    assert_int_equal(pint(&f, ev, ORDER_KEY_BUYERS, "HLEN %s"), 6);
    private_front_stop(&f);
}

static int setup(void **state)
{
    (void)state;
    if (to_kafka_start(&kafka) != 0)
        return -1;
    user_base = (uint64_t)getpid() * 10000000ULL + (uint64_t)(sk_test_now_ms() % 1000) * 1000000000000ULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    to_kafka_stop(&kafka);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_batch_fails),
        cmocka_unit_test(test_gate_noscript_batch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
