/* Fault: PostgreSQL stopped for 10 s during a drain (a throwaway server of our own).
 * While it is down the consumer keeps its process and group membership, reports
 * db_up 0, pauses its partitions (consumption stops growing: memory stays bounded)
 * and retries the same batch with capped backoff; once the server is back it resumes
 * by itself and finishes: nothing lost, nothing doubled, stock moved exactly once.
 * A second consumer joins the group during the outage: the first one is revoked while
 * its batch cannot be written, abandons it cleanly (the new owner replays it), and the
 * two finish the drain together once the server is back. */
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
#include <sys/wait.h>

#define N 30000
#define NEVENTS 12
#define EVENT_BASE INT64_C(4500000000)
#define ORDER_BASE INT64_C(4500000000000)
#define USER_BASE INT64_C(1)
#define DOWN_MS 10000

/* File-scope so the teardown can stop the server even after a failed assertion
 * (pg_ctl daemonizes it: it would outlive the test). */
static ctu_pgsrv srv;

static int teardown(void **state)
{
    (void)state;
    ctu_pgsrv_destroy(&srv);
    return 0;
}

static void test_pgdown(void **state)
{
    (void)state;
    assert_int_equal(ctu_pgsrv_start(&srv), 0);
    ctu_kafka k;
    assert_int_equal(ctu_kafka_start(&k, 6), 0);
    assert_int_equal(ctu_consumer_migrate(srv.conninfo), 0);
    PGconn *pg = ctu_pg(srv.conninfo);
    for (int e = 0; e < NEVENTS; e++)
        assert_int_equal(ctu_pg_add_event(pg, EVENT_BASE + e, 10000), 0);
    rd_kafka_t *p = ctu_producer(k.bootstrap);
    assert_int_equal(ctu_produce_orders(p, ORDER_BASE, N, EVENT_BASE, NEVENTS, USER_BASE), 0);
    assert_int_equal(ctu_producer_close(p), 0);

    int port = sk_test_free_port();
    ctu_env ce;
    char env_port[64];
    ctu_env_fill(&ce, srv.conninfo, k.bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_GROUP_ID=pgdown-test",
                         "SECKILL_BATCH_MAX=200", "SECKILL_RETRY_MAX_MS=1000",
                         "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", NULL};
    pid_t pid = ctu_consumer_spawn(env);

    /* Mid-drain: stop the server. */
    long long rows = 0;
    int64_t deadline = sk_test_now_ms() + 60000;
    while ((rows = ctu_pg_ll(pg, "SELECT count(*) FROM seckill_order")) < N / 5 &&
           sk_test_now_ms() < deadline)
        sk_test_pause_ms(5);
    assert_true(rows >= N / 5);
    PQfinish(pg);
    assert_int_equal(ctu_pgsrv_stop(&srv), 0);
    int64_t down_at = sk_test_now_ms();
    fprintf(stderr, "# PostgreSQL stopped at %lld rows\n", rows);

    /* While down: the consumer notices, pauses, stays alive and healthy. */
    deadline = down_at + DOWN_MS;
    int saw_paused = 0;
    double consumed_paused = -1, consumed_late = -1;
    while (sk_test_now_ms() < deadline && !saw_paused) {
        if (ctu_metric_of(port, "seckill_consumer_paused") == 1 &&
            ctu_metric_of(port, "seckill_consumer_db_up") == 0) {
            saw_paused = 1;
            consumed_paused = ctu_metric_of(port, "seckill_consumer_messages_consumed_total");
        }
        sk_test_pause_ms(50);
    }
    assert_true(saw_paused);
    /* The stuck writer shows (refreshed every second). */
    while (sk_test_now_ms() < deadline && !(ctu_metric_of(port, "seckill_consumer_writers_retrying") >= 1 &&
                                        ctu_metric_of(port, "seckill_consumer_retrying_seconds") > 0))
        sk_test_pause_ms(50);
    assert_true(ctu_metric_of(port, "seckill_consumer_writers_retrying") >= 1);
    assert_true(ctu_metric_of(port, "seckill_consumer_retrying_seconds") > 0);
    /* A second member joins: the first is revoked with a batch it cannot write. */
    int port_b = sk_test_free_port();
    char env_port_b[64];
    snprintf(env_port_b, sizeof(env_port_b), "SECKILL_HTTP_PORT=%d", port_b);
    const char *env_b[] = {ce.pg, ce.brokers, env_port_b, "SECKILL_GROUP_ID=pgdown-test",
                           "SECKILL_BATCH_MAX=200", "SECKILL_RETRY_MAX_MS=1000",
                           "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", "SECKILL_MIGRATE=false", NULL};
    pid_t pid_b = ctu_consumer_spawn(env_b);
    while (sk_test_now_ms() < deadline &&
           ctu_metric_of(port, "seckill_consumer_batches_abandoned_total") < 1)
        sk_test_pause_ms(50);
    assert_true(ctu_metric_of(port, "seckill_consumer_batches_abandoned_total") >= 1);
    while (sk_test_now_ms() < deadline)
        sk_test_pause_ms(100);
    consumed_late = ctu_metric_of(port, "seckill_consumer_messages_consumed_total");
    fprintf(stderr, "# consumed %.0f when paused, %.0f at the end of the outage\n", consumed_paused,
            consumed_late);
    /* Paused means paused: at most what librdkafka had already fetched came in after
     * (and the replay of the abandoned batch once the group settled). */
    assert_true(consumed_late < N);
    assert_true(ctu_metric_of(port, "seckill_consumer_batch_failures_total") > 0);
    assert_int_equal(ctu_http_get(port, "/healthz", NULL), 200);
    assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* still running */

    /* Back up: it resumes by itself and finishes. */
    assert_int_equal(ctu_pgsrv_restart(&srv), 0);
    pg = ctu_pg(srv.conninfo);
    assert_int_equal(ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", N, 120000), N);
    assert_int_equal(ctu_check_orders(pg, ORDER_BASE, N, EVENT_BASE, NEVENTS, USER_BASE), 0);
    assert_int_equal(ctu_pg_ll(pg, "SELECT sum(stock_total - stock_left) FROM seckill_event"), N);
    deadline = sk_test_now_ms() + 10000;
    while (sk_test_now_ms() < deadline && (ctu_metric_of(port, "seckill_consumer_paused") != 0 ||
                                       ctu_metric_of(port_b, "seckill_consumer_paused") != 0))
        sk_test_pause_ms(50);
    assert_true(ctu_metric_of(port, "seckill_consumer_paused") == 0);
    assert_true(ctu_metric_of(port_b, "seckill_consumer_paused") == 0);
    /* Both wrote: the second member took partitions over. */
    assert_true(ctu_metric_of(port_b, "seckill_consumer_orders_created_total") > 0);

    assert_int_equal(sk_test_proc_stop(pid_b, SIGTERM, 15000), 0);
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    PQfinish(pg);
    ctu_kafka_stop(&k);
    ctu_pgsrv_destroy(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test_teardown(test_pgdown, teardown)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
