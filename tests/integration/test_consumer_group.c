/* Integration: two consumers in one group share the partitions, still exactly once;
 * stopping one (SIGTERM: finish, commit, leave) moves its partitions to the other,
 * which then drains a second wave alone. */
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

#define DB_NAME "sk_test_consumer_group"
#define N1 30000
#define N2 5000
#define NEVENTS 60 /* many keys, so every partition gets orders */
#define EVENT_BASE INT64_C(4400000000)
#define ORDER_BASE INT64_C(4400000000000)
#define USER_BASE INT64_C(1)

static int lag_partitions(int port)
{
    char *body = NULL;
    int n = 0;
    if (ctu_http_get(port, "/metrics", &body) == 200)
        for (const char *q = body; (q = strstr(q, "\nseckill_consumer_lag{")); q++)
            n++;
    free(body);
    return n;
}

static void test_group(void **state)
{
    (void)state;
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 6, DB_NAME, EVENT_BASE, NEVENTS, 10000, &pg);
    rd_kafka_t *p = ctu_producer(k.bootstrap);
    assert_int_equal(ctu_produce_orders(p, ORDER_BASE, N1, EVENT_BASE, NEVENTS, USER_BASE), 0);
    assert_int_equal(ctu_producer_close(p), 0);

    int port_a = sk_test_free_port(), port_b = sk_test_free_port();
    ctu_env ce;
    char env_pa[64], env_pb[64];
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_pa, sizeof(env_pa), "SECKILL_HTTP_PORT=%d", port_a);
    snprintf(env_pb, sizeof(env_pb), "SECKILL_HTTP_PORT=%d", port_b);
    /* Small batches and a slow-ish pace, so both members are busy when one leaves. */
    const char *env_a[] = {ce.pg, ce.brokers, env_pa, "SECKILL_GROUP_ID=group-test",
                           "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", "SECKILL_BATCH_MAX=100", NULL};
    const char *env_b[] = {ce.pg, ce.brokers, env_pb, "SECKILL_GROUP_ID=group-test",
                           "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", "SECKILL_BATCH_MAX=100", NULL};
    pid_t a = ctu_consumer_spawn(env_a);
    pid_t b = ctu_consumer_spawn(env_b);
    assert_int_equal(ctu_wait_healthy(port_a, 30000), 0);
    assert_int_equal(ctu_wait_healthy(port_b, 30000), 0);

    /* Both take part: each has consumed something, and each holds 3 of the 6 partitions. */
    int64_t deadline = sk_test_now_ms() + 60000;
    while (sk_test_now_ms() < deadline &&
           !(ctu_metric_of(port_a, "seckill_consumer_messages_consumed_total") > 0 &&
             ctu_metric_of(port_b, "seckill_consumer_messages_consumed_total") > 0))
        sk_test_pause_ms(20);
    assert_true(ctu_metric_of(port_a, "seckill_consumer_messages_consumed_total") > 0);
    assert_true(ctu_metric_of(port_b, "seckill_consumer_messages_consumed_total") > 0);
    long long mid = ctu_pg_ll(pg, "SELECT count(*) FROM seckill_order");
    fprintf(stderr, "# both consuming; %lld rows; A holds %d partitions, B %d\n", mid,
            lag_partitions(port_a), lag_partitions(port_b));

    /* Stop A cleanly: B must take every partition and finish. */
    assert_int_equal(sk_test_proc_stop(a, SIGTERM, 15000), 0);
    assert_int_equal(ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", N1, 120000), N1);
    deadline = sk_test_now_ms() + 30000;
    while (sk_test_now_ms() < deadline && lag_partitions(port_b) != 6)
        sk_test_pause_ms(50);
    assert_int_equal(lag_partitions(port_b), 6);

    /* A second wave, drained by B alone. */
    p = ctu_producer(k.bootstrap);
    assert_int_equal(ctu_produce_orders(p, ORDER_BASE + N1, N2, EVENT_BASE, NEVENTS, USER_BASE + N1), 0);
    assert_int_equal(ctu_producer_close(p), 0);
    assert_int_equal(ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", N1 + N2, 120000), N1 + N2);
    assert_int_equal(ctu_check_orders(pg, ORDER_BASE, N1 + N2, EVENT_BASE, NEVENTS, USER_BASE), 0);
    assert_int_equal(ctu_pg_ll(pg, "SELECT sum(stock_total - stock_left) FROM seckill_event"), N1 + N2);

    assert_int_equal(sk_test_proc_stop(b, SIGTERM, 15000), 0);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_group)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
