/* The reconciler (issue 7, docs/design.md guarantee 4: a crash of the front), against the
 * shared Redis, a private PostgreSQL database, a private seckill-devkafka, a private
 * seckill-consumer and private seckill-order instances (a reconciler lock name of
 * their own, short message timeout, scan interval and watchdog timeout).
 *  - kill -9 of the reconciling instance while orders wait for an unreachable broker:
 *    a second instance takes the lock over and releases every orphaned reservation
 *    within message.timeout.ms + margin + lag + scan interval + watchdog timeout; a
 *    pending entry whose order is in PostgreSQL is confirmed, never cancelled; stock +
 *    pending + created = stock_total, and buyers = the created orders' users.
 *  - an old pending entry whose message is in Kafka but not yet in PostgreSQL (the
 *    consumer is stopped) is not cancelled; once the consumer is back it is confirmed.
 *  - lost Redis data: an event's keys deleted mid-sale -> orders get 503 (not 404), the
 *    reconciler rebuilds the gate from PostgreSQL once the partition is drained (stock =
 *    stock_left, buyers = the created orders' users), then no second order for a user
 *    and no oversell.
 *  - the same after FLUSHALL of a private redis-server (every key gone: gates, ID
 *    counters, the reconciler's lock). */
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
#include <libpq-fe.h>
#include <signal.h>
#include <time.h>

#include "order_msg.h"
#include "sk_test_redis.h"
#include "test_order_support.h"

#define MSG_TIMEOUT_MS 2000
#define MARGIN_MS 500
#define INTERVAL_MS 300
#define WATCHDOG_MS 2000
#define STOCK 20

static to_kafka kafka;
static to_order inst_a, inst_b; /* stopped by teardown if a check failed with them running */
static to_proc consumer;
static redisContext *rc;
static redisContext *priv;     /* the FLUSHALL test's own Redis */
static sk_test_redis *priv_srv;
static char pg[512], dbname[128], lockenv[128];

static const char *order_env[] = {
    "SECKILL_KAFKA_MESSAGE_TIMEOUT_MS=2000", "SECKILL_RECONCILE_INTERVAL_MS=300",
    "SECKILL_RECONCILE_MARGIN_MS=500", "SECKILL_RECONCILE_LOCK_TIMEOUT_MS=2000",
    "SECKILL_RATELIMIT_MODE=off", "SECKILL_WORKERS=1", lockenv, NULL};

static int consumer_start(void)
{
    /* A short session: the mock coordinator waits for a member that left this long
     * before the restarted consumer gets the partitions. */
    const char *env[] = {"SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000",
                         "SECKILL_KAFKA_HEARTBEAT_INTERVAL_MS=500", NULL};
    return to_consumer_start(&consumer, pg, kafka.bootstrap, env, "test_order_reconcile");
}

static int setup(void **state)
{
    (void)state;
    if (!to_stack_available()) {
        fprintf(stderr, "skipped: no stack (source .run/env)\n");
        return -1;
    }
    snprintf(lockenv, sizeof(lockenv), "SECKILL_RECONCILE_LOCK=test:reconciler:%d:%lld",
             (int)getpid(), (long long)sk_test_now_ms());
    if (to_pg_create(pg, sizeof(pg), dbname, sizeof(dbname)) != 0)
        return -1;
    if (to_kafka_start(&kafka) != 0)
        return -1;
    if (consumer_start() != 0)
        return -1;
    rc = to_redis(getenv("SECKILL_REDIS_URL"));
    return rc ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (inst_a.proc.pid)
        to_stop(&inst_a.proc, SIGKILL, 5000);
    if (inst_b.proc.pid)
        to_stop(&inst_b.proc, SIGTERM, 10000);
    if (consumer.pid)
        to_stop(&consumer, SIGTERM, 10000);
    to_kafka_stop(&kafka);
    if (rc)
        redisFree(rc);
    if (priv)
        redisFree(priv);
    sk_test_redis_free(priv_srv);
    to_pg_drop(dbname);
    return 0;
}

static long long pg_int(const char *sql, uint64_t arg)
{
    PGconn *c = PQconnectdb(pg);
    char a[24];
    snprintf(a, sizeof(a), "%" PRIu64, arg);
    const char *params[1] = {a};
    PGresult *res = PQexecParams(c, sql, 1, NULL, params, NULL, NULL, 0);
    long long v = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    PQfinish(c);
    return v;
}

static uint64_t create_event_k(const to_order *o, long stock, int segments)
{
    char tok[1024], resp[512], body[256];
    to_token(o, 1, 1, 600, tok, sizeof(tok));
    snprintf(body, sizeof(body),
             "{\"name\":\"reconcile\",\"stock\":%ld,\"starts_at\":\"2026-01-01T00:00:00Z\","
             "\"ends_at\":\"2036-01-01T00:00:00Z\",\"segments\":%d}", stock, segments);
    int st = to_http1(o->port, "POST", "/api/v1/events", tok, body, resp, sizeof(resp));
    if (st != 201)
        fail_msg("create event: %d %s", st, resp);
    return to_json_id(resp, "event_id");
}

static uint64_t create_event(const to_order *o, long stock)
{
    return create_event_k(o, stock, 1);
}

static int place(const to_order *o, uint64_t event, uint64_t user, char *resp, size_t respsz)
{
    char tok[1024], path[128];
    to_token(o, user, 0, 600, tok, sizeof(tok));
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64 "/orders", event);
    return to_http1(o->port, "POST", path, tok, NULL, resp, respsz);
}

/* Sends an order request and leaves it waiting (the answer is never read). */
static int place_no_wait(const to_order *o, uint64_t event, uint64_t user)
{
    char tok[1024], req[2048];
    to_token(o, user, 0, 600, tok, sizeof(tok));
    int fd = to_http_connect(o->port);
    assert_true(fd >= 0);
    int n = snprintf(req, sizeof(req),
                     "POST /api/v1/events/%" PRIu64 "/orders HTTP/1.1\r\nHost: x\r\n"
                     "Authorization: Bearer %s\r\nContent-Length: 0\r\n\r\n", event, tok);
    assert_int_equal(write(fd, req, (size_t)n), n);
    return fd;
}

typedef struct {
    uint64_t ev;
    long long want;
} hlen_arg;

static int pending_is(void *arg)
{
    hlen_arg *a = arg;
    return to_key_int(rc, a->ev, ORDER_KEY_PENDING, "HLEN %s") == a->want;
}

typedef struct {
    uint64_t ev;
    long long created;
} pg_arg;

static int pg_created_is(void *arg)
{
    pg_arg *a = arg;
    return pg_int("SELECT count(*) FROM seckill_order WHERE event_id = $1 AND status = 'created'", a->ev) == a->created;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Puts an accepted order back into pending with reservation time ts, as if confirm.lua
 * had never landed. */
static void back_to_pending(uint64_t ev, uint64_t order, uint64_t user, int64_t ts)
{
    char k[ORDER_KEY_MAX], f[24], v[64];
    order_key(ev, ORDER_KEY_PENDING, k, sizeof(k));
    snprintf(f, sizeof(f), "%" PRIu64, order);
    snprintf(v, sizeof(v), "%" PRIu64 ":%" PRId64, user, ts);
    freeReplyObject(redisCommand(rc, "HSET %s %s %s", k, f, v));
}

static int is_buyer(uint64_t ev, uint64_t user)
{
    char k[ORDER_KEY_MAX], u[24];
    order_key(ev, ORDER_KEY_BUYERS, k, sizeof(k));
    snprintf(u, sizeof(u), "%" PRIu64, user);
    redisReply *r = redisCommand(rc, "HEXISTS %s %s", k, u);
    int v = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    freeReplyObject(r);
    return v;
}

static void check_sums(uint64_t ev)
{
    long long stock = to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s");
    long long pending = to_key_int(rc, ev, ORDER_KEY_PENDING, "HLEN %s");
    long long buyers = to_key_int(rc, ev, ORDER_KEY_BUYERS, "HLEN %s");
    long long created = pg_int("SELECT count(*) FROM seckill_order WHERE event_id = $1 AND status = 'created'", ev);
    long long left = pg_int("SELECT stock_left FROM seckill_event WHERE id = $1", ev);
    if (stock + pending + created != STOCK || buyers != pending + created || left != STOCK - created)
        fail_msg("stock %lld + pending %lld + created %lld != %d, or buyers %lld, or stock_left %lld",
                 stock, pending, created, STOCK, buyers, left);
}

static void test_kill_then_takeover(void **state)
{
    (void)state;
    char resp[1024];
    assert_int_equal(to_order_start(&inst_a, getenv("SECKILL_REDIS_URL"), kafka.bootstrap, pg, order_env), 0);
    uint64_t ev = create_event(&inst_a, STOCK);
    /* Three orders that reach PostgreSQL. */
    uint64_t done[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(place(&inst_a, ev, 100 + (uint64_t)i, resp, sizeof(resp)), 202);
        done[i] = to_json_id(resp, "order_id");
    }
    pg_arg three = {ev, 3};
    assert_int_equal(to_wait(pg_created_is, &three, 15000), 1);
    /* One of them shows up in pending again, old enough to be cancelled if the
     * reconciler looked at its age alone: it must be confirmed (it is in PostgreSQL). */
    back_to_pending(ev, done[0], 100, wall_ms() - 600000);

    /* The broker stops answering: five orders wait in the producer, reserved. */
    assert_int_equal(to_kafka_control(&kafka, "broker down -1"), 0);
    int fds[5];
    for (int i = 0; i < 5; i++)
        fds[i] = place_no_wait(&inst_a, ev, 200 + (uint64_t)i);
    hlen_arg six = {ev, 6};
    if (to_wait(pending_is, &six, 10000) != 1 && !pending_is(&(hlen_arg){ev, 5}))
        fail_msg("pending: %lld", to_key_int(rc, ev, ORDER_KEY_PENDING, "HLEN %s"));
    assert_int_equal(to_stop(&inst_a.proc, SIGKILL, 5000), 128 + SIGKILL);
    int64_t killed = sk_test_now_ms();
    for (int i = 0; i < 5; i++)
        close(fds[i]);
    assert_int_equal(to_kafka_control(&kafka, "broker up -1"), 0);

    assert_int_equal(to_order_start(&inst_b, getenv("SECKILL_REDIS_URL"), kafka.bootstrap, pg, order_env), 0);
    /* The bound: message.timeout.ms + margin + consumer lag + one scan interval, plus the
     * dead holder's watchdog timeout; 5 s of slack for lag and this busy machine. */
    const int bound = MSG_TIMEOUT_MS + MARGIN_MS + INTERVAL_MS + WATCHDOG_MS + 5000;
    hlen_arg zero = {ev, 0};
    int ok = to_wait(pending_is, &zero, bound);
    int64_t took = sk_test_now_ms() - killed;
    if (ok != 1)
        fail_msg("pending still %lld after %lld ms", to_key_int(rc, ev, ORDER_KEY_PENDING, "HLEN %s"), (long long)took);
    fprintf(stderr, "orphans released %lld ms after the kill (bound %d)\n", (long long)took, bound);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), STOCK - 3);
    assert_int_equal(is_buyer(ev, 100), 1); /* confirmed, not cancelled */
    static char metrics[65536];
    assert_int_equal(to_http1(inst_b.port, "GET", "/metrics", NULL, NULL, metrics, sizeof(metrics)), 200);
    if (!strstr(metrics, "\nseckill_order_reconcile_leader 1\n") ||
        !strstr(metrics, "\nseckill_order_reconcile_cancelled_total 5\n"))
        fail_msg("reconciler metrics: %s", strstr(metrics, "seckill_order_reconcile") ? strstr(metrics, "seckill_order_reconcile") : "none");
    for (int i = 0; i < 5; i++)
        assert_int_equal(is_buyer(ev, 200 + (uint64_t)i), 0);
    check_sums(ev);
    /* The stock given back sells again. */
    assert_int_equal(place(&inst_b, ev, 300, resp, sizeof(resp)), 202);
    pg_arg four = {ev, 4};
    assert_int_equal(to_wait(pg_created_is, &four, 15000), 1);
    assert_int_equal(to_wait(pending_is, &zero, 5000), 1);
    check_sums(ev);

    /* An old entry whose message is in Kafka but not in PostgreSQL (consumer stopped):
     * never cancelled while the group has not passed it; confirmed once it has. */
    assert_int_equal(to_stop(&consumer, SIGTERM, 10000), 0);
    int64_t placed_ms = wall_ms(); /* within a few ms of the reservation's own time */
    assert_int_equal(place(&inst_b, ev, 400, resp, sizeof(resp)), 202);
    uint64_t oid = to_json_id(resp, "order_id");
    assert_int_equal(to_wait(pending_is, &zero, 5000), 1); /* confirm.lua from the service */
    back_to_pending(ev, oid, 400, placed_ms);
    /* Past the age rule (message timeout + margin) and several scans: it must stay. */
    hlen_arg one = {ev, 1};
    int64_t t0 = sk_test_now_ms();
    while (sk_test_now_ms() - t0 < MSG_TIMEOUT_MS + MARGIN_MS + 4 * INTERVAL_MS)
        assert_int_equal(to_wait(pending_is, &one, 50), 1);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), STOCK - 5);
    assert_int_equal(consumer_start(), 0);
    pg_arg five = {ev, 5};
    assert_int_equal(to_wait(pg_created_is, &five, 20000), 1);
    assert_int_equal(to_wait(pending_is, &zero, 5000), 1);
    assert_int_equal(is_buyer(ev, 400), 1);
    check_sums(ev);
    assert_int_equal(to_stop(&inst_b.proc, SIGTERM, 10000), 0);
}

static int gate_loaded(void *ev)
{
    return to_key_int(rc, *(uint64_t *)ev, ORDER_KEY_STOCK, "EXISTS %s") == 1;
}

static void test_lost_gate_reloaded(void **state)
{
    (void)state;
    char resp[1024];
    assert_int_equal(to_order_start(&inst_b, getenv("SECKILL_REDIS_URL"), kafka.bootstrap, pg, order_env), 0);
    uint64_t ev = create_event(&inst_b, 10);
    for (uint64_t u = 500; u < 503; u++)
        assert_int_equal(place(&inst_b, ev, u, resp, sizeof(resp)), 202);
    /* The gate vanishes mid-sale (only this event's keys: the Redis is shared). */
    char k[ORDER_KEY_COUNT][ORDER_KEY_MAX];
    for (int i = 0; i < ORDER_KEY_COUNT; i++)
        order_key(ev, (order_key_kind)i, k[i], sizeof(k[i]));
    freeReplyObject(redisCommand(rc, "DEL %s %s %s %s", k[0], k[1], k[2], k[3]));
    int64_t lost_at = sk_test_now_ms();
    /* Not sold from nothing, and not "unknown event" either. */
    int st = place(&inst_b, ev, 503, resp, sizeof(resp));
    if (st != 503 || !strstr(resp, "\"error\":\"unavailable\""))
        fail_msg("want 503 unavailable, got %d %s", st, resp);
    assert_int_equal(place(&inst_b, ev, 500, resp, sizeof(resp)), 503);
    assert_int_equal(place(&inst_b, ev + 1000000, 500, resp, sizeof(resp)), 404); /* no such event */
    /* Reloaded once what was sold before is in PostgreSQL. */
    const int bound = MSG_TIMEOUT_MS + MARGIN_MS + INTERVAL_MS + 8000;
    if (to_wait(gate_loaded, &ev, bound) != 1)
        fail_msg("gate not reloaded within %d ms", bound);
    fprintf(stderr, "gate reloaded %lld ms after the loss\n", (long long)(sk_test_now_ms() - lost_at));
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), 7);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_BUYERS, "HLEN %s"), 3);
    for (uint64_t u = 500; u < 503; u++)
        assert_int_equal(is_buyer(ev, u), 1);
    /* No second order for a buyer, and the rest sells exactly once. */
    assert_int_equal(place(&inst_b, ev, 501, resp, sizeof(resp)), 409);
    int accepted = 0;
    for (uint64_t u = 600; u < 610; u++)
        accepted += place(&inst_b, ev, u, resp, sizeof(resp)) == 202;
    assert_int_equal(accepted, 7);
    pg_arg ten = {ev, 10};
    assert_int_equal(to_wait(pg_created_is, &ten, 15000), 1);
    assert_int_equal(to_key_int(rc, ev, ORDER_KEY_STOCK, "GET %s"), 0);
    assert_int_equal(to_stop(&inst_b.proc, SIGTERM, 10000), 0);
}


/* A segmented event (issue 19): a claim left by a crashed front in the user's home
 * segment ("user:ts:c": the user is a buyer there, no unit was taken there) whose
 * order never reached Kafka is released by the reconciler: the entry and the buyer go,
 * and the segment's stock does not grow (a claim gave none). */
typedef struct {
    char pending[ORDER_KEY_MAX];
} claim_arg;

static int claim_gone(void *arg)
{
    claim_arg *a = arg;
    redisReply *r = redisCommand(rc, "HEXISTS %s 777000001", a->pending);
    int gone = r && r->type == REDIS_REPLY_INTEGER && r->integer == 0;
    freeReplyObject(r);
    return gone;
}

static void test_segment_claim_released(void **state)
{
    (void)state;
    assert_int_equal(to_order_start(&inst_b, getenv("SECKILL_REDIS_URL"), kafka.bootstrap, pg, order_env), 0);
    uint64_t ev = create_event_k(&inst_b, 10, 2);
    const uint64_t user = 4242;
    unsigned home = order_seg_home(user, 2);
    claim_arg a;
    char kb[ORDER_KEY_MAX], ks[ORDER_KEY_MAX], u[24], v[64];
    order_key_seg(ev, home, ORDER_KEY_PENDING, a.pending, sizeof(a.pending));
    order_key_seg(ev, home, ORDER_KEY_BUYERS, kb, sizeof(kb));
    order_key_seg(ev, home, ORDER_KEY_STOCK, ks, sizeof(ks));
    redisReply *r = redisCommand(rc, "GET %s", ks);
    assert_true(r && r->type == REDIS_REPLY_STRING);
    long long stock0 = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    assert_int_equal(stock0, 5); /* 10 over 2 segments */
    snprintf(u, sizeof(u), "%" PRIu64, user);
    snprintf(v, sizeof(v), "%" PRIu64 ":%" PRId64 ":c", user, wall_ms() - 60000);
    freeReplyObject(redisCommand(rc, "HSET %s %s 777000001", kb, u));
    freeReplyObject(redisCommand(rc, "HSET %s 777000001 %s", a.pending, v));
    const int bound = MSG_TIMEOUT_MS + MARGIN_MS + INTERVAL_MS + 8000;
    if (to_wait(claim_gone, &a, bound) != 1)
        fail_msg("the claim was not released within %d ms", bound);
    r = redisCommand(rc, "HEXISTS %s %s", kb, u);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    r = redisCommand(rc, "GET %s", ks);
    assert_int_equal(strtoll(r->str, NULL, 10), stock0); /* no stock from a claim */
    freeReplyObject(r);
    /* the user can buy now (a unit from the home segment) */
    char resp[1024];
    assert_int_equal(place(&inst_b, ev, user, resp, sizeof(resp)), 202);
    assert_int_equal(to_stop(&inst_b.proc, SIGTERM, 10000), 0);
}

static int priv_gate_loaded(void *ev)
{
    char k[ORDER_KEY_MAX];
    order_key(*(uint64_t *)ev, ORDER_KEY_STOCK, k, sizeof(k));
    redisReply *r = redisCommand(priv, "EXISTS %s", k);
    int v = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return v;
}

static long long priv_int(const char *fmt, uint64_t ev, order_key_kind kind)
{
    return to_key_int(priv, ev, (int)kind, fmt);
}

static void test_flushall_reloaded(void **state)
{
    (void)state;
    char err[256], resp[1024];
    sk_test_redis *tr = priv_srv = sk_test_redis_start(NULL, err, sizeof(err));
    if (!tr)
        fail_msg("redis-server: %s", err);
    priv = to_redis(sk_test_redis_url(tr));
    assert_non_null(priv);
    assert_int_equal(to_order_start(&inst_b, sk_test_redis_url(tr), kafka.bootstrap, pg, order_env), 0);
    uint64_t ev = create_event(&inst_b, 6);
    uint64_t first[2];
    for (uint64_t u = 700; u < 702; u++) {
        assert_int_equal(place(&inst_b, ev, u, resp, sizeof(resp)), 202);
        first[u - 700] = to_json_id(resp, "order_id");
    }
    freeReplyObject(redisCommand(priv, "FLUSHALL"));
    assert_int_equal(place(&inst_b, ev, 702, resp, sizeof(resp)), 503);
    if (to_wait(priv_gate_loaded, &ev, MSG_TIMEOUT_MS + MARGIN_MS + INTERVAL_MS + WATCHDOG_MS + 8000) != 1)
        fail_msg("gate not reloaded after FLUSHALL");
    assert_int_equal(priv_int("GET %s", ev, ORDER_KEY_STOCK), 4);
    assert_int_equal(priv_int("HLEN %s", ev, ORDER_KEY_BUYERS), 2);
    assert_int_equal(place(&inst_b, ev, 700, resp, sizeof(resp)), 409);
    int accepted = 0;
    for (uint64_t u = 710; u < 716; u++) {
        int st = place(&inst_b, ev, u, resp, sizeof(resp));
        if (st == 202) {
            accepted++;
            uint64_t id = to_json_id(resp, "order_id");
            assert_true(id != first[0] && id != first[1]); /* ids stay unique across the flush */
        }
    }
    assert_int_equal(accepted, 4);
    pg_arg six = {ev, 6};
    assert_int_equal(to_wait(pg_created_is, &six, 15000), 1);
    assert_int_equal(pg_int("SELECT stock_left FROM seckill_event WHERE id = $1", ev), 0);
    assert_int_equal(to_stop(&inst_b.proc, SIGTERM, 10000), 0);
    redisFree(priv);
    priv = NULL;
    sk_test_redis_free(tr);
    priv_srv = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_then_takeover),
        cmocka_unit_test(test_lost_gate_reloaded),
        cmocka_unit_test(test_flushall_reloaded),
        cmocka_unit_test(test_segment_claim_released),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
