/* Fault: kill -9 of seckill-consumer at 5 random points during a drain, restarting it
 * each time. At the end every order is in the table exactly once, stock_left went
 * down by exactly the orders created (no batch applied twice), and every poison
 * message reached the DLQ at least once (dead letters are at-least-once across a
 * crash: a batch may be dead-lettered, then killed before its offsets commit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_consumer_util.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DB_NAME "sk_test_consumer_kill"
#define N 40000
#define NEVENTS 24
#define NPOISON 20
#define EVENT_BASE INT64_C(4300000000)
#define ORDER_BASE INT64_C(4300000000000)
#define USER_BASE INT64_C(1)
#define STOCK 5000
#define KILLS 5

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static void test_kill(void **state)
{
    (void)state;
    uint64_t rnd = ctu_seed();
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 6, DB_NAME, EVENT_BASE, NEVENTS, STOCK, &pg);

    rd_kafka_t *p = ctu_producer(k.bootstrap);
    assert_int_equal(ctu_produce_orders(p, ORDER_BASE, N, EVENT_BASE, NEVENTS, USER_BASE), 0);
    char bad[NPOISON][32];
    for (int i = 0; i < NPOISON; i++) {
        int n = snprintf(bad[i], sizeof(bad[i]), "poison %d", i);
        assert_int_equal(ctu_produce(p, k.topic, i % 6, NULL, 0, bad[i], (size_t)n), 0);
    }
    assert_int_equal(ctu_producer_close(p), 0);

    ctu_env ce;
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    /* A short session: a killed member's partitions move on after 6 s, not 45 s. */
    const char *env[] = {ce.pg, ce.brokers, "SECKILL_HTTP_PORT=0", "SECKILL_GROUP_ID=kill-test",
                         "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000",
                         "SECKILL_KAFKA_HEARTBEAT_INTERVAL_MS=500", "SECKILL_BATCH_MAX=500", NULL};

    /* Five kill points, as row counts reached, spread over the drain. */
    long long points[KILLS];
    for (int i = 0; i < KILLS; i++)
        points[i] = (long long)(N * 0.05 + (double)(ctu_rand(&rnd) % (uint64_t)(N * 0.85)));
    qsort(points, KILLS, sizeof(points[0]), cmp_ll);

    pid_t pid = ctu_consumer_spawn(env);
    for (int i = 0; i < KILLS; i++) {
        long long rows = 0;
        int64_t deadline = sk_test_now_ms() + 90000;
        while ((rows = ctu_pg_ll(pg, "SELECT count(*) FROM seckill_order")) < points[i] &&
               sk_test_now_ms() < deadline)
            sk_test_pause_ms(5);
        assert_true(rows >= points[i]);
        assert_int_equal(sk_test_proc_stop(pid, SIGKILL, 10000), 128 + SIGKILL);
        fprintf(stderr, "# kill %d at %lld rows (point %lld)\n", i + 1, rows, points[i]);
        pid = ctu_consumer_spawn(env);
    }
    long long rows = ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", N, 120000);
    assert_int_equal(rows, N);
    assert_int_equal(ctu_check_orders(pg, ORDER_BASE, N, EVENT_BASE, NEVENTS, USER_BASE), 0);
    /* Stock moved exactly once per created order: no batch was applied twice. */
    assert_int_equal(ctu_pg_ll(pg, "SELECT sum(stock_total - stock_left) FROM seckill_event"), N);

    ctu_dlq_msg *dlq = NULL;
    size_t nd = ctu_dlq_read(k.bootstrap, k.dlq, NPOISON, 60000, &dlq);
    for (int i = 0; i < NPOISON; i++) {
        int found = 0;
        for (size_t j = 0; j < nd && !found; j++)
            found = strcmp(dlq[j].val, bad[i]) == 0 && strcmp(dlq[j].error, "not_json") == 0;
        if (!found)
            fail_msg("poison message \"%s\" is not in the DLQ (%zu dead letters)", bad[i], nd);
    }
    ctu_dlq_free(dlq, nd);

    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kill)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
