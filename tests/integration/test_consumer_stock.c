/* Integration: database stock. An event whose stock_left is smaller than the orders
 * sent ends at 0 with the surplus stored as 'rejected' (the latest orders by Kafka
 * offset), never negative; an event with stock 0 rejects everything; an exact fit
 * rejects nothing. Several units (issue 31): an event of 10 units with per_user_limit 4
 * stores a user's two orders (3 + 2 units), takes units off stock_left, and rejects an
 * order of 3 units that finds 1 left whole, that unit staying on sale. Small batches, so
 * the stock decision spans transactions. A full replay afterwards changes nothing. Also:
 * `seckill-consumer migrate` twice is harmless. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_test_redis.h"
#include "test_consumer_util.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DB_NAME "sk_test_consumer_stock"
#define EV_SHORT INT64_C(4200000001) /* stock 30, 50 orders */
#define EV_ZERO INT64_C(4200000002)  /* stock 0, 5 orders */
#define EV_EXACT INT64_C(4200000003) /* stock 10, 10 orders */
#define EV_UNITS INT64_C(4200000004) /* stock 10, per_user_limit 4: 3 + 2, 4, then 3 */
#define ORDER_BASE INT64_C(4200000000000)

static void produce_all(rd_kafka_t *p)
{
    static const struct {
        int64_t event;
        int n;
    } plan[] = {{EV_SHORT, 50}, {EV_ZERO, 5}, {EV_EXACT, 10}};
    char buf[256], key[32];
    int64_t order = ORDER_BASE;
    for (size_t e = 0; e < 3; e++) {
        for (int i = 0; i < plan[e].n; i++, order++) {
            size_t n = ctu_order_json(buf, sizeof(buf), order, plan[e].event, 500 + i, 1700000000000LL);
            int kn = snprintf(key, sizeof(key), "%" PRId64, plan[e].event);
            assert_int_equal(ctu_produce(p, "seckill.orders", -1, key, (size_t)kn, buf, n), 0);
        }
    }
    /* user 900 twice (3 and 2 units), 901 4 units: 9 of 10; then 902 asks 3 */
    static const struct {
        int64_t user;
        uint32_t q;
    } units[] = {{900, 3}, {900, 2}, {901, 4}, {902, 3}};
    for (size_t i = 0; i < 4; i++, order++) {
        size_t n = ctu_order_json_units(buf, sizeof(buf), order, EV_UNITS, units[i].user,
                                        1700000000000LL, units[i].q);
        int kn = snprintf(key, sizeof(key), "%" PRId64, EV_UNITS);
        assert_int_equal(ctu_produce(p, "seckill.orders", -1, key, (size_t)kn, buf, n), 0);
    }
}

static void check_state(PGconn *pg)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT stock_left FROM seckill_event WHERE id = %" PRId64, EV_SHORT);
    assert_int_equal(ctu_pg_ll(pg, sql), 0);
    snprintf(sql, sizeof(sql), "SELECT stock_left FROM seckill_event WHERE id = %" PRId64, EV_ZERO);
    assert_int_equal(ctu_pg_ll(pg, sql), 0);
    snprintf(sql, sizeof(sql), "SELECT stock_left FROM seckill_event WHERE id = %" PRId64, EV_EXACT);
    assert_int_equal(ctu_pg_ll(pg, sql), 0);
    /* Short event: the first 30 by offset created, the last 20 rejected. */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE event_id = %" PRId64
             " AND status = 'created' AND order_id < %" PRId64,
             EV_SHORT, ORDER_BASE + 30);
    assert_int_equal(ctu_pg_ll(pg, sql), 30);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE event_id = %" PRId64
             " AND status = 'rejected' AND order_id >= %" PRId64,
             EV_SHORT, ORDER_BASE + 30);
    assert_int_equal(ctu_pg_ll(pg, sql), 20);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE event_id = %" PRId64 " AND status = 'rejected'",
             EV_ZERO);
    assert_int_equal(ctu_pg_ll(pg, sql), 5);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE event_id = %" PRId64 " AND status = 'created'",
             EV_EXACT);
    assert_int_equal(ctu_pg_ll(pg, sql), 10);
    /* several units: 9 units in 3 orders created, the 3-unit order rejected whole, 1 left */
    snprintf(sql, sizeof(sql), "SELECT stock_left FROM seckill_event WHERE id = %" PRId64, EV_UNITS);
    assert_int_equal(ctu_pg_ll(pg, sql), 1);
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(sum(quantity), 0) FROM seckill_order WHERE event_id = %" PRId64
             " AND status = 'created'",
             EV_UNITS);
    assert_int_equal(ctu_pg_ll(pg, sql), 9);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE event_id = %" PRId64
             " AND status = 'rejected' AND user_id = 902 AND quantity = 3",
             EV_UNITS);
    assert_int_equal(ctu_pg_ll(pg, sql), 1);
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(*) FROM seckill_order"), 69);
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(*) FROM seckill_event WHERE stock_left < 0"), 0);
    /* created_at is the order's ts_ms; the Kafka position is kept for tracing. */
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(*) FROM seckill_order WHERE created_at = "
                                   "'2023-11-14T22:13:20Z' AND kafka_partition IS NOT NULL "
                                   "AND kafka_offset >= 0"),
                     69);
}

static void test_stock(void **state)
{
    (void)state;
    ctu_kafka k;
    assert_int_equal(ctu_kafka_start(&k, 3), 0);
    char *conninfo = ctu_db_create(DB_NAME);
    assert_non_null(conninfo);
    assert_int_equal(ctu_consumer_migrate(conninfo), 0);
    assert_int_equal(ctu_consumer_migrate(conninfo), 0); /* twice: harmless */
    PGconn *pg = ctu_pg(conninfo);
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(*) FROM seckill_schema_version"),
                     ctu_pg_ll(pg, "SELECT max(version) FROM seckill_schema_version"));
    assert_int_equal(ctu_pg_add_event(pg, EV_SHORT, 30), 0);
    assert_int_equal(ctu_pg_add_event(pg, EV_ZERO, 0), 0);
    assert_int_equal(ctu_pg_add_event(pg, EV_EXACT, 10), 0);
    assert_int_equal(ctu_pg_add_event(pg, EV_UNITS, 10), 0);
    char lim[128];
    snprintf(lim, sizeof(lim), "UPDATE seckill_event SET per_user_limit = 4 WHERE id = %" PRId64,
             EV_UNITS);
    PQclear(PQexec(pg, lim));

    rd_kafka_t *p = ctu_producer(k.bootstrap);
    produce_all(p);
    assert_int_equal(ctu_producer_close(p), 0);

    int port = sk_test_free_port();
    ctu_env ce;
    char env_port[64];
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_GROUP_ID=stock-test",
                         "SECKILL_BATCH_MAX=7", "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", NULL};
    pid_t pid = ctu_consumer_spawn(env);
    assert_int_equal(ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", 69, 60000), 69);
    check_state(pg);

    /* Replay everything: nothing changes, all counted as duplicates. */
    p = ctu_producer(k.bootstrap);
    produce_all(p);
    assert_int_equal(ctu_producer_close(p), 0);
    char *body = NULL;
    double dups = -1;
    int64_t deadline = sk_test_now_ms() + 30000;
    while (sk_test_now_ms() < deadline) {
        free(body);
        body = NULL;
        if (ctu_http_get(port, "/metrics", &body) == 200 &&
            (dups = ctu_metric(body, "seckill_consumer_duplicates_total")) >= 69)
            break;
        sk_test_pause_ms(50);
    }
    assert_true(dups == 69);
    assert_true(ctu_metric(body, "seckill_consumer_orders_rejected_total") == 26);
    assert_true(ctu_metric(body, "seckill_consumer_orders_created_total") == 43);
    free(body);
    check_state(pg);
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 10000), 0);

    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stock)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
