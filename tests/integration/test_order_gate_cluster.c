/* seckill-order's gate on a Redis Cluster (3 masters + 3 replicas, throwaway): orders for
 * events on different masters arriving in one loop turn go out as one reserve.lua call
 * per event, each to its own master, and every answer is the one a single Redis would
 * give. Its own devkafka and seckill-order (one worker); no PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <inttypes.h>
#include <signal.h>

#include "order_msg.h"
#include "rcluster.h"
#include "seckill_lua.h"
#include "sk_test_cluster.h"
#include "test_order_support.h"

static sk_test_cluster *cl;
static to_kafka kafka;
static to_order srv;
static uint64_t next_event;

/* The master serving event id's keys. */
static int master_of_event(uint64_t id)
{
    char tag[32];
    int n = snprintf(tag, sizeof(tag), "{e%" PRIu64 "}", id);
    return sk_test_cluster_master_of(cl, rcl_keyslot(tag, (size_t)n));
}

static void load_on(int node, uint64_t id, long stock)
{
    redisContext *c = sk_test_cluster_connect(cl, node);
    assert_non_null(c);
    char ks[ORDER_KEY_MAX], km[ORDER_KEY_MAX], s[24], a[24], b[24];
    order_key(id, ORDER_KEY_STOCK, ks, sizeof(ks));
    order_key(id, ORDER_KEY_META, km, sizeof(km));
    int64_t now = (int64_t)time(NULL) * 1000;
    snprintf(s, sizeof(s), "%ld", stock);
    snprintf(a, sizeof(a), "%" PRId64, now - 60000);
    snprintf(b, sizeof(b), "%" PRId64, now + 3600000);
    const char *argv[] = {"EVAL", seckill_lua_find("event_load"), "2", ks, km, s, a, b, "1"};
    redisReply *r = redisCommandArgv(c, 9, argv, NULL);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
        fail_msg("event_load on node %d: type %d %s", node, r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    redisFree(c);
}

static long long on_node(int node, uint64_t id, int kind, const char *fmt)
{
    redisContext *c = sk_test_cluster_connect(cl, node);
    assert_non_null(c);
    long long v = to_key_int(c, id, kind, fmt);
    redisFree(c);
    return v;
}

#define CALLS "seckill_order_gate_calls_total{script=\"reserve\"}"
#define ORDERS "seckill_order_gate_orders_total{script=\"reserve\"}"

/* Three events, one per master, 2 units each, 4 requests each in one burst: per event 2
 * accepted and 2 sold out, each master's gate at 0 with 2 buyers; the gate sent at
 * least one call per event, and (repeated with fresh events until it happened) fewer
 * calls than orders. */
static void test_events_on_three_masters_one_turn(void **state)
{
    (void)state;
    int batched = 0;
    for (int attempt = 0; attempt < 8 && !batched; attempt++) {
        uint64_t ev[3];
        int node[3], found = 0;
        while (found < 3) {
            uint64_t id = next_event++;
            int m = master_of_event(id);
            assert_true(m >= 0);
            int dup = 0;
            for (int j = 0; j < found; j++)
                dup |= node[j] == m;
            if (dup)
                continue;
            ev[found] = id;
            node[found++] = m;
        }
        for (int j = 0; j < 3; j++)
            load_on(node[j], ev[j], 2);
        enum { N = 12 };
        uint64_t events[N], users[N];
        for (int i = 0; i < N; i++) {
            events[i] = ev[i % 3];
            users[i] = 1000 + (uint64_t)attempt * 100 + (uint64_t)i;
        }
        long long calls0 = to_order_metric(&srv, CALLS), orders0 = to_order_metric(&srv, ORDERS);
        int st[N];
        char bodies[N][512];
        assert_int_equal(to_order_burst(&srv, N, events, users, st, bodies), 0);
        for (int j = 0; j < 3; j++) {
            int acc = 0, sold = 0;
            for (int i = j; i < N; i += 3) {
                if (st[i] == 202)
                    acc++;
                else if (st[i] == 409 && strstr(bodies[i], "\"sold_out\""))
                    sold++;
                else
                    fail_msg("event %d request %d: %d %s", j, i, st[i], bodies[i]);
            }
            assert_int_equal(acc, 2);
            assert_int_equal(sold, 2);
            assert_int_equal(on_node(node[j], ev[j], ORDER_KEY_STOCK, "GET %s"), 0);
            assert_int_equal(on_node(node[j], ev[j], ORDER_KEY_BUYERS, "HLEN %s"), 2);
        }
        long long calls = to_order_metric(&srv, CALLS) - calls0;
        long long orders = to_order_metric(&srv, ORDERS) - orders0;
        assert_true(calls >= 3);
        /* requests answered sold out by the service's flag never reach the gate */
        assert_true(orders >= 6 && orders <= N);
        batched = orders > calls;
    }
    assert_true(batched);
}

static int setup(void **state)
{
    (void)state;
    char err[512];
    cl = sk_test_cluster_start(NULL, err, sizeof(err));
    if (!cl) {
        fprintf(stderr, "cluster: %s\n", err);
        return -1;
    }
    if (to_kafka_start(&kafka) != 0)
        return -1;
    const char *env[] = {"SECKILL_WORKERS=1", "SECKILL_REDIS_TIMEOUT_MS=5000", NULL};
    if (to_order_start(&srv, sk_test_cluster_url(cl), kafka.bootstrap, NULL, env) != 0)
        return -1;
    next_event = 7000000000000000000ULL + (uint64_t)getpid() * 1000ULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (srv.proc.pid)
        to_stop(&srv.proc, SIGTERM, 10000);
    to_kafka_stop(&kafka);
    sk_test_cluster_free(cl);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_on_three_masters_one_turn),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
