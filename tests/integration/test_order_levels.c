/* Integration tests of the order limits by level and of admission control (issue 19
 * sections 2 and 3), on a throwaway redis-server and a private seckill-devkafka, each
 * case with its own seckill-order configured for it:
 *  - per address: 429, Retry-After, {"level":"ip"}, seckill_order_limited_total{level="ip"};
 *    an untrusted peer's X-Forwarded-For is ignored (every request counts against the
 *    socket's address); behind a trusted proxy each forwarded client has its own bucket,
 *    and what a client wrote left of the proxy's entry changes nothing;
 *  - per user: the same answer with "level":"user";
 *  - per event across two fronts: limits.event_rate = 20/s, burst 20, batches of 5: the
 *    orders admitted to one event over both fronts stay within burst + rate x time, the
 *    others get 429 "level":"event", and the fronts made about one Redis call per batch;
 *  - a slowed Redis (CLIENT PAUSE): once the gate's answers come back slow, new orders
 *    get 503 with Retry-After at once; orders flow again when the window has passed;
 *    every 202 is on the topic (Kafka acknowledged it) and the stock adds up;
 *  - pause and resume across two fronts: the pause given on one holds on the other within
 *    1 s (503 paused, Retry-After), nothing is taken meanwhile, and the sale goes on
 *    after the resume given on the other front;
 *  - per-segment sold-out flags (issue 19 section 1): K = 3 with segments 0 and 1
 *    emptied by orders, users homed on segment 0 still buy (borrowing from segment 2)
 *    with one borrow.lua call each, not two (the front remembers segment 1 is empty);
 *    once all three are empty, 409 sold_out comes from memory with no Redis call;
 *  - per-event overrides of the levels, learnt from the event's meta by a front that did
 *    not create it: ip_rate 2, user_rate 1, event_rate 3 each answer 429 naming their
 *    level, while an event without overrides on the same front is not limited. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "order_msg.h"
#include "seckill_lua.h"
#include "sk_test_redis.h"
#include "test_order_support.h"

static to_kafka kafka;
static sk_test_redis *tr;
static redisContext *rc;
static uint64_t next_event = 5000, next_user = 1000;

/* One segment of an event straight into Redis with event_load.lua (no PostgreSQL here),
 * as order_loader writes it: `share` units, K = k, and the event's rate overrides in
 * meta (ARGV 6..8; 0: none). */
static void load_keys(uint64_t id, unsigned seg, unsigned k, long share, const long rates[3])
{
    char k1[ORDER_KEY_MAX], k2[ORDER_KEY_MAX], s[24], a[24], b[24], ks[8], r[3][24];
    order_key_seg(id, seg, ORDER_KEY_STOCK, k1, sizeof(k1));
    order_key_seg(id, seg, ORDER_KEY_META, k2, sizeof(k2));
    int64_t now = (int64_t)time(NULL) * 1000;
    snprintf(s, sizeof(s), "%ld", share);
    snprintf(a, sizeof(a), "%" PRId64, now - 60000);
    snprintf(b, sizeof(b), "%" PRId64, now + 3600000);
    snprintf(ks, sizeof(ks), "%u", k);
    for (int i = 0; i < 3; i++)
        snprintf(r[i], sizeof(r[i]), "%ld", rates ? rates[i] : 0L);
    const char *argv[] = {"EVAL", seckill_lua_find("event_load"), "2", k1, k2, s, a, b, "1", ks,
                          r[0], r[1], r[2]};
    redisReply *rep = redisCommandArgv(rc, 13, argv, NULL);
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
}

static uint64_t load_event(long stock)
{
    uint64_t id = next_event++;
    load_keys(id, 0, 1, stock, NULL);
    return id;
}

typedef struct {
    int status;
    long long retry_after; /* -1: no Retry-After header */
    char body[1024];
} answer;

/* One order on a fresh connection, with an optional X-Forwarded-For; the answer's status,
 * Retry-After and body (the connection is closed by us after the answer). */
static int order_xff(const to_order *o, uint64_t event, uint64_t user, const char *xff, answer *a)
{
    char tok[1024], req[4096];
    to_token(o, user, 0, 600, tok, sizeof(tok));
    int n = snprintf(req, sizeof(req),
                     "POST /api/v1/events/%" PRIu64 "/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Authorization: Bearer %s\r\nConnection: close\r\n",
                     event, tok);
    if (xff)
        n += snprintf(req + n, sizeof(req) - (size_t)n, "X-Forwarded-For: %s\r\n", xff);
    n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\n");
    int fd = to_http_connect(o->port);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, req, (size_t)n), n);
    char buf[8192];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == sizeof(buf) - 1)
            break;
    }
    close(fd);
    buf[got] = '\0';
    memset(a, 0, sizeof(*a));
    a->retry_after = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &a->status) != 1)
        return -1;
    char *end = strstr(buf, "\r\n\r\n");
    assert_non_null(end);
    *end = '\0';
    for (char *p = buf; (p = strstr(p, "\r\n")) != NULL; p += 2)
        if (strncasecmp(p + 2, "Retry-After:", 12) == 0)
            a->retry_after = strtoll(p + 14, NULL, 10);
    size_t blen = strnlen(end + 4, sizeof(a->body) - 1);
    memcpy(a->body, end + 4, blen);
    a->body[blen] = '\0';
    return a->status;
}

static void is_limited(const answer *a, const char *level)
{
    char want[64];
    snprintf(want, sizeof(want), "\"level\":\"%s\"", level);
    if (a->status != 429 || !strstr(a->body, "\"error\":\"rate_limited\"") || !strstr(a->body, want) ||
        a->retry_after < 1)
        fail_msg("want 429 rate_limited level %s with Retry-After, got %d (Retry-After %lld) %s",
                 level, a->status, a->retry_after, a->body);
}

static long long limited_metric(const to_order *o, const char *level)
{
    char name[128];
    snprintf(name, sizeof(name), "seckill_order_limited_total{level=\"%s\"}", level);
    return to_order_metric(o, name);
}

/* /readyz 200: the front's Redis connection (and Kafka) is up. */
static int front_ready(void *o)
{
    char resp[512];
    return to_http1(((to_order *)o)->port, "GET", "/readyz", NULL, NULL, resp, sizeof(resp)) == 200;
}

/* A front for one case, ready for orders: to_order_start waits for /healthz only, and an
 * order sent before the Redis connection is up is a 503 that has already spent its
 * address token (a count of 202s would then be one short). */
static void start(to_order *o, const char *const *env)
{
    assert_int_equal(to_order_start(o, sk_test_redis_url(tr), kafka.bootstrap, NULL, env), 0);
    assert_int_equal(to_wait(front_ready, o, 10000), 1);
}

/* No trusted proxy: the peer (127.0.0.1) is the client, whatever X-Forwarded-For says. */
static void test_ip_level_untrusted_xff_ignored(void **state)
{
    const char *env[] = {"SECKILL_RATELIMIT_IP_RATE=1", "SECKILL_RATELIMIT_IP_BURST=3", NULL};
    to_order o;
    start(&o, env);
    uint64_t ev = load_event(100);
    answer a;
    char xff[64];
    int passed = 0, limited = 0;
    for (int i = 0; i < 8; i++) {
        snprintf(xff, sizeof(xff), "198.51.100.%d", i + 1); /* a new "client" each time */
        order_xff(&o, ev, next_user++, xff, &a);
        if (a.status == 429) {
            is_limited(&a, "ip");
            limited++;
        } else {
            assert_int_equal(a.status, 202);
            passed++;
        }
    }
    /* burst 3 plus at most a token or two refilled while the loop ran */
    if (passed < 3 || passed > 5)
        fail_msg("%d of 8 passed the address limit (want 3..5)", passed);
    assert_int_equal(limited_metric(&o, "ip"), limited);
    assert_int_equal(limited_metric(&o, "user"), 0);
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

/* 127.0.0.1 trusted: each forwarded client has its own bucket; the right-most untrusted
 * entry is the client, so a forged entry left of it does not buy a new bucket. */
static void test_ip_level_trusted_proxy(void **state)
{
    const char *env[] = {"SECKILL_RATELIMIT_IP_RATE=1", "SECKILL_RATELIMIT_IP_BURST=2",
                         "SECKILL_HTTP_TRUSTED_PROXIES=10.0.0.0/8, 127.0.0.1", NULL};
    to_order o;
    start(&o, env);
    uint64_t ev = load_event(100);
    answer a;
    int passed = 0;
    char seen[128] = "";
    for (int i = 0; i < 6; i++) {
        order_xff(&o, ev, next_user++, "198.51.100.1", &a);
        passed += a.status == 202;
        size_t n = strlen(seen);
        snprintf(seen + n, sizeof(seen) - n, " %d", a.status);
    }
    if (passed < 2 || passed > 4)
        fail_msg("%d of 6 passed for one forwarded client (want 2..4), answers%s", passed, seen);
    /* the same client behind a second proxy of ours, with a forged entry on the left */
    order_xff(&o, ev, next_user++, "203.0.113.77, 198.51.100.1, 10.1.2.3", &a);
    is_limited(&a, "ip");
    /* another client through the same proxy is not affected */
    order_xff(&o, ev, next_user++, "198.51.100.2", &a);
    assert_int_equal(a.status, 202);
    order_xff(&o, ev, next_user++, "9.9.9.9, 198.51.100.2", &a);
    assert_int_equal(a.status, 202);
    order_xff(&o, ev, next_user++, "198.51.100.2", &a);
    is_limited(&a, "ip");
    assert_true(limited_metric(&o, "ip") >= 3);
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

static void test_user_level(void **state)
{
    const char *env[] = {"SECKILL_RATELIMIT_RATE=1", "SECKILL_RATELIMIT_BURST=2", NULL};
    to_order o;
    start(&o, env);
    uint64_t ev = load_event(100), user = next_user++;
    answer a;
    int limited = 0;
    for (int i = 0; i < 6; i++) {
        order_xff(&o, ev, user, NULL, &a);
        if (a.status == 429) {
            is_limited(&a, "user");
            assert_int_equal(a.retry_after, 1);
            limited++;
        } else if (a.status != 202 && a.status != 409) { /* one order, then duplicate */
            fail_msg("unexpected %d %s", a.status, a.body);
        }
    }
    assert_true(limited >= 2);
    assert_int_equal(limited_metric(&o, "user"), limited);
    assert_int_equal(limited_metric(&o, "ip"), 0);
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

static int pending_drained(void *ev);

static long long evalsha_calls(void)
{
    redisReply *r = redisCommand(rc, "INFO commandstats");
    assert_non_null(r);
    const char *p = r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "cmdstat_evalsha:calls=") : NULL;
    long long n = p ? strtoll(p + 22, NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

static long long gate_calls(const to_order *o)
{
    return to_order_metric(o, "seckill_order_gate_calls_total{script=\"reserve\"}") +
           to_order_metric(o, "seckill_order_gate_calls_total{script=\"cancel\"}") +
           to_order_metric(o, "seckill_order_gate_calls_total{script=\"confirm\"}");
}

/* Two fronts, one event, distinct users, as fast as one client goes for ~1.5 s. */
static void test_event_level_two_fronts(void **state)
{
    const char *env[] = {"SECKILL_LIMITS_EVENT_RATE=20", "SECKILL_LIMITS_EVENT_BURST=20",
                         "SECKILL_LIMITS_EVENT_BATCH=5", NULL};
    to_order fa, fb;
    start(&fa, env);
    start(&fb, env);
    uint64_t ev = load_event(100000);
    answer a;
    int accepted = 0, limited = 0, n = 0;
    long long e0 = evalsha_calls(), g0 = gate_calls(&fa) + gate_calls(&fb);
    int64_t t0 = sk_test_now_ms();
    while (sk_test_now_ms() - t0 < 1500) {
        order_xff(n++ % 2 ? &fa : &fb, ev, next_user++, NULL, &a);
        if (a.status == 202)
            accepted++;
        else if (a.status == 429) {
            is_limited(&a, "event");
            limited++;
        } else
            fail_msg("unexpected %d %s", a.status, a.body);
    }
    int64_t elapsed = sk_test_now_ms() - t0;
    /* the bucket gave at most burst + rate x elapsed tokens; a front spends no more */
    long long most = 20 + 20 * elapsed / 1000 + 1;
    fprintf(stderr, "event level: %d requests in %" PRId64 " ms, %d accepted (at most %lld), %d limited\n",
            n, elapsed, accepted, most, limited);
    if (accepted > most || accepted < 10)
        fail_msg("%d accepted in %" PRId64 " ms (want 10..%lld)", accepted, elapsed, most);
    assert_true(limited > 0);
    assert_int_equal(limited_metric(&fa, "event") + limited_metric(&fb, "event"), limited);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), 100000 - accepted);
    /* no Redis call per request: the script calls that were not the gate's (the
     * per-event bucket's) are a small fraction of the requests */
    assert_int_equal(to_wait(pending_drained, &ev, 5000), 1);
    long long bucket = evalsha_calls() - e0 - (gate_calls(&fa) + gate_calls(&fb) - g0);
    fprintf(stderr, "event level: %lld bucket calls for %d requests\n", bucket, n);
    assert_true(bucket >= 1);
    if (bucket * 4 > n)
        fail_msg("%lld calls of the event bucket for %d requests", bucket, n);
    assert_int_equal(to_stop(&fa.proc, SIGTERM, 10000), 0);
    assert_int_equal(to_stop(&fb.proc, SIGTERM, 10000), 0);
}

typedef struct {
    const to_order *o;
    uint64_t ev;
    int accepted;
    uint64_t ids[64];
} tally;

static void count(tally *t, const answer *a)
{
    if (a->status == 202) {
        assert_true(t->accepted < 64);
        t->ids[t->accepted++] = to_json_id(a->body, "order_id");
    } else if (a->status != 503) {
        fail_msg("unexpected %d %s", a->status, a->body);
    }
}

static int pending_drained(void *ev)
{
    return to_key_int(rc, *(uint64_t *)ev, ORDER_KEY_PENDING, "HLEN %s") == 0;
}

/* Redis paused for 600 ms while 8 orders are in flight: their gate answers take about
 * that long, past limits.gate_p99_ms = 100; the next orders are shed at once. */
static void test_slow_redis_sheds(void **state)
{
    const char *env[] = {"SECKILL_LIMITS_GATE_P99_MS=100", "SECKILL_LIMITS_WINDOW_MS=1000",
                         "SECKILL_LIMITS_MIN_SAMPLES=4", "SECKILL_REDIS_TIMEOUT_MS=5000", NULL};
    to_order o;
    start(&o, env);
    tally t = {&o, load_event(1000), 0, {0}};
    answer a;
    for (int i = 0; i < 4; i++) { /* a fast gate admits */
        order_xff(&o, t.ev, next_user++, NULL, &a);
        assert_int_equal(a.status, 202);
        count(&t, &a);
    }
    redisReply *r = redisCommand(rc, "CLIENT PAUSE 600 ALL");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    uint64_t evs[8], users[8];
    int st[8];
    char bodies[8][512];
    for (int i = 0; i < 8; i++) {
        evs[i] = t.ev;
        users[i] = next_user++;
    }
    assert_int_equal(to_order_burst(&o, 8, evs, users, st, bodies), 0);
    for (int i = 0; i < 8; i++) {
        answer b = {st[i], -1, {0}};
        memcpy(b.body, bodies[i], sizeof(bodies[i])); /* NUL-terminated, shorter than b.body */
        count(&t, &b);
    }
    /* The slow answers are in the window: within one evaluation slot (100 ms), orders
     * are shed; each shed answer comes at once. */
    int64_t deadline = sk_test_now_ms() + 2000;
    int shed = 0;
    while (!shed && sk_test_now_ms() < deadline) {
        int64_t t0 = sk_test_now_ms();
        order_xff(&o, t.ev, next_user++, NULL, &a);
        int64_t took = sk_test_now_ms() - t0;
        count(&t, &a);
        if (a.status == 503) {
            shed = 1;
            if (!strstr(a.body, "gate is slow") || a.retry_after != 1)
                fail_msg("want the gate's 503 with Retry-After 1, got %lld %s", a.retry_after, a.body);
            assert_true(took < 300);
        } else {
            usleep(20000);
        }
    }
    assert_int_equal(shed, 1);
    assert_true(to_order_metric(&o, "seckill_order_shed_total{reason=\"gate_p99\"}") >= 1);
    /* recovery: the slow answers leave the 1 s window; orders are admitted again */
    deadline = sk_test_now_ms() + 4000;
    int back = 0;
    while (!back && sk_test_now_ms() < deadline) {
        order_xff(&o, t.ev, next_user++, NULL, &a);
        count(&t, &a);
        back = a.status == 202;
        if (!back)
            usleep(50000);
    }
    assert_int_equal(back, 1);
    /* no order accepted without Kafka's acknowledgement, none lost, stock adds up */
    for (int i = 0; i < t.accepted; i++)
        if (!to_kafka_find_order(kafka.bootstrap, "seckill.orders", t.ids[i], 5000))
            fail_msg("order %" PRIu64 " answered 202 is not on the topic", t.ids[i]);
    assert_int_equal(to_wait(pending_drained, &t.ev, 5000), 1);
    assert_int_equal(to_key_int(rc, t.ev, ORDER_KEY_STOCK, "GET %s"), 1000 - t.accepted);
    assert_int_equal(to_acked_orders(rc, t.ev), t.accepted);
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

static int pause_call(const to_order *o, uint64_t ev, const char *what, int admin, char *resp,
                      size_t respsz)
{
    char tok[1024], path[128];
    to_token(o, 1, admin, 600, tok, sizeof(tok));
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64 "/%s", ev, what);
    return to_http1(o->port, "POST", path, tok, NULL, resp, respsz);
}

/* Orders on `o` every 20 ms until one is answered `want` (202, or 503 paused); the time
 * it took in ms, or -1 past 1 s. 202s on the way are counted. */
static int64_t until_answer(const to_order *o, uint64_t ev, int want, int *accepted)
{
    int64_t t0 = sk_test_now_ms();
    answer a;
    while (sk_test_now_ms() - t0 <= 1000) {
        order_xff(o, ev, next_user++, NULL, &a);
        if (a.status == 202)
            (*accepted)++;
        if (a.status == want) {
            if (want == 503 && (!strstr(a.body, "\"error\":\"paused\"") || a.retry_after != 1))
                fail_msg("want 503 paused with Retry-After 1, got %lld %s", a.retry_after, a.body);
            return sk_test_now_ms() - t0;
        }
        if (a.status != 202 && a.status != 503)
            fail_msg("unexpected %d %s", a.status, a.body);
        usleep(20000);
    }
    return -1;
}

static void test_pause_resume_two_fronts(void **state)
{
    to_order fa, fb;
    start(&fa, NULL);
    start(&fb, NULL);
    uint64_t ev = load_event(1000);
    int accepted = 0;
    answer a;
    order_xff(&fb, ev, next_user++, NULL, &a);
    assert_int_equal(a.status, 202);
    accepted++;
    char resp[512];
    assert_int_equal(pause_call(&fa, ev, "pause", 0, resp, sizeof(resp)), 403); /* admins only */
    assert_int_equal(pause_call(&fa, ev + 100000, "pause", 1, resp, sizeof(resp)), 404); /* no gate */
    assert_int_equal(to_cmd_int(rc, "EXISTS %s", "seckill:paused"), 0);
    assert_int_equal(pause_call(&fa, ev, "pause", 1, resp, sizeof(resp)), 200);
    assert_non_null(strstr(resp, "\"paused\":true"));
    /* the front that took the call: at once; the other: within 1 s */
    order_xff(&fa, ev, next_user++, NULL, &a);
    assert_int_equal(a.status, 503);
    int64_t took = until_answer(&fb, ev, 503, &accepted);
    if (took < 0)
        fail_msg("front B still sells 1 s after the pause");
    fprintf(stderr, "pause held on the other front after %" PRId64 " ms\n", took);
    int during = accepted;
    for (int i = 0; i < 5; i++) { /* paused: nothing is taken on either front */
        order_xff(i % 2 ? &fa : &fb, ev, next_user++, NULL, &a);
        assert_int_equal(a.status, 503);
    }
    assert_int_equal(to_wait(pending_drained, &ev, 5000), 1);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), 1000 - during);
    /* resume on the other front: the sale goes on where it stopped */
    assert_int_equal(pause_call(&fb, ev, "resume", 1, resp, sizeof(resp)), 200);
    assert_non_null(strstr(resp, "\"paused\":false"));
    took = until_answer(&fa, ev, 202, &accepted);
    if (took < 0)
        fail_msg("front A still paused 1 s after the resume");
    fprintf(stderr, "resume held on the other front after %" PRId64 " ms\n", took);
    assert_int_equal(to_wait(pending_drained, &ev, 5000), 1);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), 1000 - accepted);
    assert_int_equal(to_acked_orders(rc, ev), accepted);
    assert_int_equal(to_cmd_int(rc, "EXISTS %s", "seckill:paused"), 0);
    assert_int_equal(to_stop(&fa.proc, SIGTERM, 10000), 0);
    assert_int_equal(to_stop(&fb.proc, SIGTERM, 10000), 0);
}

/* An event with its rate overrides in meta (as for an event created with "limits"). */
static uint64_t load_event_limits(long stock, long ip_rate, long user_rate, long event_rate)
{
    uint64_t id = next_event++;
    const long rates[3] = {ip_rate, user_rate, event_rate};
    load_keys(id, 0, 1, stock, rates);
    return id;
}

/* `n` orders of distinct users on `ev`: each 202, or 429 naming `level`; *limited gets
 * the 429s. @returns the 202s. */
static int orders_limited(const to_order *o, uint64_t ev, int n, const char *level, int *limited)
{
    answer a;
    int ok = 0;
    *limited = 0;
    for (int i = 0; i < n; i++) {
        order_xff(o, ev, next_user++, NULL, &a);
        if (a.status == 429 && level) {
            is_limited(&a, level);
            (*limited)++;
        } else {
            if (a.status != 202)
                fail_msg("order %d on event %" PRIu64 ": %d %s", i, ev, a.status, a.body);
            ok++;
        }
    }
    return ok;
}

/* Per-event overrides (issue 19 section 2), learnt by a front that did not create the
 * events (from their meta): each level refuses the event with a low override, naming
 * the level, while an event without one, on the same front, is not limited. The
 * configured levels are off (ip), 5/s burst 10 (user) and off (event). */
static void test_event_overrides(void **state)
{
    to_order o;
    start(&o, NULL);
    uint64_t plain = load_event(1000), by_ip = load_event_limits(1000, 2, 0, 0);
    uint64_t by_user = load_event_limits(1000, 0, 1, 0), by_event = load_event_limits(1000, 0, 0, 3);
    answer a;
    int limited;
    /* ip: 2 per second from one address on by_ip; 8 orders of distinct users */
    int ok = orders_limited(&o, by_ip, 8, "ip", &limited);
    if (ok < 2 || ok > 4 || limited < 4)
        fail_msg("ip override 2/s: %d of 8 passed, %d limited", ok, limited);
    /* the same address on the event without an override: not limited (level off) */
    assert_int_equal(orders_limited(&o, plain, 8, NULL, &limited), 8);
    /* user: 1 per second on by_user; one user's retries are 429 user, not 409 */
    uint64_t u = next_user++;
    order_xff(&o, by_user, u, NULL, &a);
    assert_int_equal(a.status, 202);
    order_xff(&o, by_user, u, NULL, &a);
    is_limited(&a, "user");
    assert_int_equal(a.retry_after, 1);
    /* the same user on the plain event: the configured burst of 10, so 202 then 409 */
    order_xff(&o, plain, u, NULL, &a);
    assert_int_equal(a.status, 202);
    order_xff(&o, plain, u, NULL, &a);
    assert_int_equal(a.status, 409);
    /* event: 3 per second for the whole event; 10 orders of distinct users */
    ok = orders_limited(&o, by_event, 10, "event", &limited);
    if (ok < 3 || ok > 5 || limited < 5)
        fail_msg("event override 3/s: %d of 10 passed, %d limited", ok, limited);
    /* the event level is off for the plain event */
    assert_int_equal(orders_limited(&o, plain, 10, NULL, &limited), 10);
    assert_true(limited_metric(&o, "event") >= 5);
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

static void load_segment(uint64_t id, unsigned seg, unsigned k, long share)
{
    load_keys(id, seg, k, share, NULL);
}

/* The next fresh user whose home among k segments is `seg`. */
static uint64_t user_homed(unsigned seg, unsigned k)
{
    while (order_seg_home(next_user, k) != seg)
        next_user++;
    return next_user++;
}

static long long seg_stock(uint64_t ev, unsigned seg)
{
    char key[ORDER_KEY_MAX];
    order_key_seg(ev, seg, ORDER_KEY_STOCK, key, sizeof(key));
    return to_cmd_int(rc, "GET %s", key);
}

static int segs_drained(void *arg)
{
    uint64_t ev = *(uint64_t *)arg;
    char key[ORDER_KEY_MAX];
    for (unsigned seg = 0; seg < 3; seg++) {
        order_key_seg(ev, seg, ORDER_KEY_PENDING, key, sizeof(key));
        if (to_cmd_int(rc, "HLEN %s", key) != 0)
            return 0;
    }
    return 1;
}

static void test_segment_soldout_flags(void **state)
{
    const char *env[] = {"SECKILL_SOLDOUT_TTL_MS=1000", NULL};
    to_order o;
    start(&o, env);
    uint64_t ev = next_event++;
    load_segment(ev, 2, 3, 12);
    load_segment(ev, 1, 3, 2);
    load_segment(ev, 0, 3, 2);
    answer a;
    /* the first order teaches the front K (reserve.lua's 100 + K), then segments 1 and 0
     * are emptied by their own home users, with no borrowing */
    const unsigned emptied[2] = {1, 0};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            unsigned seg = emptied[j];
            order_xff(&o, ev, user_homed(seg, 3), NULL, &a);
            if (a.status != 202)
                fail_msg("order homed on segment %u: %d %s", seg, a.status, a.body);
        }
    assert_int_equal(seg_stock(ev, 0), 0);
    assert_int_equal(seg_stock(ev, 1), 0);
    assert_int_equal(seg_stock(ev, 2), 12);
    assert_int_equal(to_order_metric(&o, "seckill_order_gate_calls_total{script=\"borrow\"}"), 0);
    /* users homed on the empty segment 0 still buy: the claim at home, the unit from 2 */
    const int n = 8;
    long long b0 = to_order_metric(&o, "seckill_order_gate_calls_total{script=\"borrow\"}");
    long long r0 = to_order_metric(&o, "seckill_order_gate_calls_total{script=\"reserve\"}");
    int64_t t0 = sk_test_now_ms();
    for (int i = 0; i < n; i++) {
        order_xff(&o, ev, user_homed(0, 3), NULL, &a);
        if (a.status != 202)
            fail_msg("order %d homed on the empty segment 0: %d %s", i, a.status, a.body);
    }
    int64_t took = sk_test_now_ms() - t0;
    long long borrows = to_order_metric(&o, "seckill_order_gate_calls_total{script=\"borrow\"}") - b0;
    long long reserves = to_order_metric(&o, "seckill_order_gate_calls_total{script=\"reserve\"}") - r0;
    fprintf(stderr, "segments: %d orders homed on an empty segment in %" PRId64
            " ms: %lld reserve and %lld borrow calls\n", n, took, reserves, borrows);
    assert_int_equal(reserves, n);
    /* Without the flags every order asks segment 1 then segment 2: 2n borrows. With them
     * only the first order (and one per flag lifetime, 1 s, should the loop be slow)
     * asks segment 1. */
    long long most = n + 1 + took / 1000;
    if (borrows > most)
        fail_msg("%lld borrow.lua calls for %d orders (want at most %lld)", borrows, n, most);
    assert_int_equal(seg_stock(ev, 2), 12 - n);
    /* the rest of segment 2 to its own users, then nothing is left anywhere */
    for (int i = 0; i < 12 - n; i++) {
        order_xff(&o, ev, user_homed(2, 3), NULL, &a);
        assert_int_equal(a.status, 202);
    }
    order_xff(&o, ev, user_homed(1, 3), NULL, &a); /* finds every segment empty */
    assert_int_equal(a.status, 409);
    assert_non_null(strstr(a.body, "\"sold_out\""));
    assert_int_equal(to_wait(segs_drained, &ev, 5000), 1);
    /* sold out in memory: the next orders cost Redis nothing */
    long long e0 = evalsha_calls(), hits0 = to_order_metric(&o, "seckill_order_soldout_flag_hits_total");
    for (unsigned seg = 0; seg < 3; seg++) {
        order_xff(&o, ev, user_homed(seg, 3), NULL, &a);
        assert_int_equal(a.status, 409);
        assert_non_null(strstr(a.body, "\"sold_out\""));
    }
    assert_int_equal(evalsha_calls() - e0, 0);
    assert_int_equal(to_order_metric(&o, "seckill_order_soldout_flag_hits_total") - hits0, 3);
    for (unsigned seg = 0; seg < 3; seg++)
        assert_int_equal(seg_stock(ev, seg), 0);
    assert_int_equal(to_stop(&o.proc, SIGTERM, 10000), 0);
}

static int setup(void **state)
{
    char err[256];
    tr = sk_test_redis_start(NULL, err, sizeof(err));
    if (!tr) {
        fprintf(stderr, "redis-server: %s\n", err);
        return -1;
    }
    rc = to_redis(sk_test_redis_url(tr));
    next_user = (uint64_t)getpid() * 100000ULL;
    return rc && to_kafka_start(&kafka) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    to_kafka_stop(&kafka);
    if (rc)
        redisFree(rc);
    sk_test_redis_free(tr);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ip_level_untrusted_xff_ignored),
        cmocka_unit_test(test_ip_level_trusted_proxy),
        cmocka_unit_test(test_user_level),
        cmocka_unit_test(test_event_level_two_fronts),
        cmocka_unit_test(test_slow_redis_sheds),
        cmocka_unit_test(test_pause_resume_two_fronts),
        cmocka_unit_test(test_segment_soldout_flags),
        cmocka_unit_test(test_event_overrides),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
