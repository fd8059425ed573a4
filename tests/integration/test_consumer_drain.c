/* Integration: 100,000 orders with 1% replays, 0.1% poison and a few second orders of
 * a user, drained by one seckill-consumer from a private dev Kafka into a database of
 * its own. The table must hold exactly the distinct valid orders, the DLQ exactly the
 * poison messages (original bytes, error header, source offset), stock_left must be
 * down by exactly the orders created, and the metrics must agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_test_redis.h" /* sk_test_free_port */
#include "test_consumer_util.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DB_NAME "sk_test_consumer_drain"
#define NVALID 100000
#define NREPLAY 1000   /* 1% */
#define NPOISON 100    /* 0.1% */
#define NSECOND 50     /* second orders of a user in the same event: duplicates */
#define NEVENTS 10
#define EVENT_BASE INT64_C(4100000000)
#define ORDER_BASE INT64_C(4100000000000)
#define STOCK 20000    /* per event: more than its 10,000 orders */

typedef struct poison {
    char key[32];
    char val[1200];
    size_t vlen;
    const char *error;
} poison;

/* Builds poison message i (one of each kind in turn). */
static void make_poison(poison *p, int i)
{
    int64_t o = ORDER_BASE + 900000 + i, e = EVENT_BASE;
    snprintf(p->key, sizeof(p->key), "%" PRId64, e);
    switch (i % 10) {
    case 0:
        p->vlen = (size_t)snprintf(p->val, sizeof(p->val), "not json %d", i);
        p->error = "not_json";
        break;
    case 1:
        p->vlen = (size_t)snprintf(p->val, sizeof(p->val),
                                   "{\"v\":2,\"order_id\":\"%" PRId64 "\",\"event_id\":\"%" PRId64
                                   "\",\"user_id\":\"1\",\"ts_ms\":1}", o, e);
        p->error = "bad_version";
        break;
    case 2:
        p->vlen = (size_t)snprintf(p->val, sizeof(p->val),
                                   "{\"v\":1,\"order_id\":\"99999999999999999999\",\"event_id\":\"%" PRId64
                                   "\",\"user_id\":\"1\",\"ts_ms\":1}", e);
        p->error = "bad_order_id";
        break;
    case 3:
        p->vlen = (size_t)snprintf(p->val, sizeof(p->val),
                                   "{\"v\":1,\"order_id\":\"%" PRId64 "\",\"event_id\":\"abc\","
                                   "\"user_id\":\"1\",\"ts_ms\":1}", o);
        p->error = "bad_event_id";
        break;
    case 4:
        p->vlen = (size_t)snprintf(p->val, sizeof(p->val),
                                   "{\"v\":1,\"order_id\":\"%" PRId64 "\",\"event_id\":\"%" PRId64
                                   "\",\"ts_ms\":1}", o, e);
        p->error = "bad_user_id";
        break;
    case 5:
        memset(p->val, ' ', 1100);
        p->val[0] = '{';
        p->val[1099] = '}';
        p->vlen = 1100;
        p->error = "too_large";
        break;
    case 6:
        /* A well-formed order for an event that does not exist: its foreign key would
         * fail the whole batch, so it is poison too. */
        p->vlen = ctu_order_json(p->val, sizeof(p->val), o, EVENT_BASE + 999, 5, 1); /* signed */
        snprintf(p->key, sizeof(p->key), "%" PRId64, EVENT_BASE + 999);
        p->error = "unknown_event";
        break;
    case 7:
        p->vlen = (size_t)snprintf(p->val, sizeof(p->val), "[%d]", i);
        p->error = "not_object";
        break;
    case 8:
        p->vlen = (size_t)snprintf(p->val, sizeof(p->val),
                                   "{\"v\":1,\"order_id\":\"%" PRId64 "\",\"event_id\":\"%" PRId64
                                   "\",\"user_id\":\"1\",\"ts_ms\":-5}", o, e);
        p->error = "bad_ts";
        break;
    default:
        p->vlen = 0;
        p->error = "empty";
        break;
    }
}

static int64_t event_of(int i) { return EVENT_BASE + i % NEVENTS; }

static void test_drain(void **state)
{
    (void)state;
    uint64_t rnd = ctu_seed();
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 6, DB_NAME, EVENT_BASE, NEVENTS, STOCK, &pg);

    /* Produce: valid orders in order, replays, second orders and poison spread among them. */
    poison *poisons = calloc(NPOISON, sizeof(*poisons));
    for (int i = 0; i < NPOISON; i++)
        make_poison(&poisons[i], i);
    rd_kafka_t *prod = ctu_producer(k.bootstrap);
    int next_poison = 0, replays = 0, seconds = 0;
    char buf[256], key[32];
    for (int i = 0; i < NVALID; i++) {
        int64_t e = event_of(i);
        size_t n = ctu_order_json(buf, sizeof(buf), ORDER_BASE + i, e, 1000000 + i, 1700000000000LL + i);
        int kn = snprintf(key, sizeof(key), "%" PRId64, e);
        assert_int_equal(ctu_produce(prod, "seckill.orders", -1, key, (size_t)kn, buf, n), 0);
        if (replays < NREPLAY && i % (NVALID / NREPLAY) == NVALID / NREPLAY - 1) {
            /* replay a random earlier order, byte for byte */
            int j = (int)(ctu_rand(&rnd) % (uint64_t)i);
            int64_t ej = event_of(j);
            n = ctu_order_json(buf, sizeof(buf), ORDER_BASE + j, ej, 1000000 + j, 1700000000000LL + j);
            kn = snprintf(key, sizeof(key), "%" PRId64, ej);
            assert_int_equal(ctu_produce(prod, "seckill.orders", -1, key, (size_t)kn, buf, n), 0);
            replays++;
        }
        if (i > 0 && seconds < NSECOND && i % (NVALID / NSECOND) == 7) {
            /* the same user again in the same event, with a new order id */
            int j = i - 3;
            int64_t ej = event_of(j);
            n = ctu_order_json(buf, sizeof(buf), ORDER_BASE + 500000 + seconds, ej, 1000000 + j, 1);
            kn = snprintf(key, sizeof(key), "%" PRId64, ej);
            assert_int_equal(ctu_produce(prod, "seckill.orders", -1, key, (size_t)kn, buf, n), 0);
            seconds++;
        }
        if (next_poison < NPOISON && i % (NVALID / NPOISON) == 500) {
            poison *p = &poisons[next_poison++];
            assert_int_equal(ctu_produce(prod, "seckill.orders", -1, p->key, strlen(p->key),
                                         p->vlen ? p->val : NULL, p->vlen), 0);
        }
    }
    assert_int_equal(ctu_producer_close(prod), 0);
    assert_int_equal(replays, NREPLAY);
    assert_int_equal(seconds, NSECOND);
    assert_int_equal(next_poison, NPOISON);

    int port = sk_test_free_port();
    ctu_env ce;
    char env_port[64];
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_GROUP_ID=drain-test",
                         "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", NULL};
    int64_t t0 = sk_test_now_ms();
    pid_t pid = ctu_consumer_spawn(env);
    assert_true(pid > 0);

    long long rows = ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", NVALID, 180000);
    fprintf(stderr, "# drained %lld orders in %.1f s\n", rows, (double)(sk_test_now_ms() - t0) / 1000);
    assert_int_equal(rows, NVALID);

    /* Exactly the valid orders: same ids, users, events, all created, no extra row. */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE order_id - %lld BETWEEN 0 AND %d"
             " AND user_id = 1000000 + (order_id - %lld) AND event_id = %lld + (order_id - %lld) %% %d"
             " AND status = 'created'",
             (long long)ORDER_BASE, NVALID - 1, (long long)ORDER_BASE, (long long)EVENT_BASE,
             (long long)ORDER_BASE, NEVENTS);
    assert_int_equal(ctu_pg_ll(pg, sql), NVALID);
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(DISTINCT order_id) FROM seckill_order"), NVALID);
    snprintf(sql, sizeof(sql), "SELECT sum(stock_left) FROM seckill_event");
    assert_int_equal(ctu_pg_ll(pg, sql), (long long)NEVENTS * STOCK - NVALID);
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(*) FROM seckill_event WHERE stock_left <> "
                                   "stock_total - (SELECT count(*) FROM seckill_order o WHERE "
                                   "o.event_id = seckill_event.id AND o.status = 'created')"),
                     0);

    /* The DLQ: exactly the poison messages, byte for byte, with their error codes. */
    ctu_dlq_msg *dlq = NULL;
    size_t nd = ctu_dlq_read(k.bootstrap, "seckill.orders.dlq", NPOISON, 60000, &dlq);
    assert_int_equal(nd, NPOISON);
    int *seen = calloc(NPOISON, sizeof(int));
    for (size_t i = 0; i < nd; i++) {
        int match = -1;
        for (int j = 0; j < NPOISON && match < 0; j++)
            if (!seen[j] && dlq[i].vlen == poisons[j].vlen &&
                memcmp(dlq[i].val, poisons[j].val, poisons[j].vlen) == 0 &&
                strcmp(dlq[i].key, poisons[j].key) == 0)
                match = j;
        if (match < 0)
            fail_msg("DLQ message %zu (%.60s) is not one of the poison messages", i, dlq[i].val);
        seen[match] = 1;
        assert_string_equal(dlq[i].error, poisons[match].error);
        assert_true(dlq[i].src_partition >= 0 && dlq[i].src_offset >= 0);
        assert_false(dlq[i].truncated); /* small poison goes as it is */
    }
    free(seen);
    ctu_dlq_free(dlq, nd);

    /* Metrics agree; the counters are updated before offsets commit, so poll a little. */
    char *body = NULL;
    int64_t deadline = sk_test_now_ms() + 10000;
    double dups = -1;
    while (sk_test_now_ms() < deadline) {
        free(body);
        body = NULL;
        assert_int_equal(ctu_http_get(port, "/metrics", &body), 200);
        dups = ctu_metric(body, "seckill_consumer_duplicates_total");
        if (dups >= NREPLAY + NSECOND)
            break;
        sk_test_pause_ms(50);
    }
    assert_true(dups == NREPLAY + NSECOND);
    assert_true(ctu_metric(body, "seckill_consumer_orders_created_total") == NVALID);
    assert_true(ctu_metric(body, "seckill_consumer_orders_rejected_total") == 0);
    assert_true(ctu_metric(body, "seckill_consumer_messages_consumed_total") ==
                NVALID + NREPLAY + NSECOND + NPOISON);
    assert_true(ctu_metric(body, "seckill_consumer_dead_letters_total{error=\"unknown_event\"}") ==
                NPOISON / 10);
    assert_true(ctu_metric(body, "seckill_consumer_db_up") == 1);
    assert_non_null(strstr(body, "seckill_consumer_lag{partition=\""));
    free(body);
    assert_int_equal(ctu_http_get(port, "/healthz", NULL), 200);
    assert_int_equal(ctu_http_get(port, "/nope", NULL), 404);

    /* SIGTERM: finish, commit, leave, exit 0 within a few seconds. */
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 10000), 0);

    /* A restart reads nothing again (offsets were committed): no new duplicates. */
    pid = ctu_consumer_spawn(env);
    deadline = sk_test_now_ms() + 15000;
    body = NULL;
    assert_int_equal(ctu_wait_healthy(port, 15000), 0);
    /* Give it time to join and fetch: poll the lag metric until it appears, then read counters. */
    double consumed = -1;
    while (sk_test_now_ms() < deadline) {
        free(body);
        body = NULL;
        if (ctu_http_get(port, "/metrics", &body) == 200 && strstr(body, "seckill_consumer_lag{"))
            break;
        sk_test_pause_ms(50);
    }
    if (body)
        consumed = ctu_metric(body, "seckill_consumer_messages_consumed_total");
    free(body);
    assert_true(consumed == 0);
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 10000), 0);

    free(poisons);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_drain)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
