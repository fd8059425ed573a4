/* Integration: a writer lane's ready batches (consumer/consumer_loop_int.h, struct lane).
 *
 * One writer, batch.max 10, batch.ms long enough that a batch goes to the writer only
 * when full, 100 orders on one partition, and seckill_event locked by the test, so the
 * writer's first transaction waits on the lock. Intake takes in what the lane may hold
 * and then holds: the batch being written, LANE_READY_MAX full batches behind it and a
 * full one filling, 50 messages, and no more while the lock lasts (with no ready
 * batches it would stop at 20; without the hold it would take all 100). Then SIGTERM,
 * and the lock released: the stopping consumer writes the 50, oldest first, commits
 * their offsets and exits 0. A second consumer writes the other 50 and sees no
 * duplicate: every order once, stock down by exactly 100. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_test_proc.h"
#include "sk_test_redis.h" /* sk_test_free_port */
#include "test_consumer_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define DB_NAME "sk_test_consumer_queue"
#define N 100
#define HELD 50 /* 10 writing + 3 ready x 10 + 10 filling */
#define EVENT INT64_C(4700000001)
#define ORDER_BASE INT64_C(4700000000000)
#define USER_BASE INT64_C(1)

static pid_t spawn(const ctu_env *ce, int port)
{
    char env_port[64];
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce->pg, ce->brokers, env_port, "SECKILL_GROUP_ID=queue-test",
                         "SECKILL_DB_WRITERS=1", "SECKILL_BATCH_MAX=10", "SECKILL_BATCH_MS=60000",
                         "SECKILL_SHUTDOWN_MS=30000", "SECKILL_MIGRATE=false",
                         "SECKILL_EVENTS_TOPIC=", "SECKILL_REDIS_URL=",
                         "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", NULL};
    return ctu_consumer_spawn(env);
}

static void test_queue(void **state)
{
    (void)state;
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 1, DB_NAME, EVENT, 1, 1000, &pg);
    rd_kafka_t *p = ctu_producer(k.bootstrap);
    assert_int_equal(ctu_produce_orders(p, ORDER_BASE, N, EVENT, 1, USER_BASE), 0);
    assert_int_equal(ctu_producer_close(p), 0);

    /* EXCLUSIVE: the writer's SELECT ... FOR UPDATE of the event waits; reads do not. */
    PGconn *lk = ctu_pg(conninfo);
    assert_int_equal(ctu_pg_exec(lk, "BEGIN; LOCK TABLE seckill_event IN EXCLUSIVE MODE"), 0);

    ctu_env ce;
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    int port = sk_test_free_port();
    pid_t pid = spawn(&ce, port);
    assert_int_equal(ctu_wait_healthy(port, 30000), 0);
    int64_t deadline = sk_test_now_ms() + 30000;
    while (ctu_metric_of(port, "seckill_consumer_messages_consumed_total") < HELD &&
           sk_test_now_ms() < deadline)
        sk_test_pause_ms(20);
    assert_int_equal(ctu_metric_of(port, "seckill_consumer_messages_consumed_total"), HELD);
    /* Held: a second on, not one more (the main loop looks every 100 ms at the most). */
    sk_test_pause_ms(1000);
    assert_int_equal(ctu_metric_of(port, "seckill_consumer_messages_consumed_total"), HELD);
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(*) FROM seckill_order"), 0);

    /* Stop it while its writer waits, then let the writer through: it writes all it
     * holds before it exits. */
    assert_int_equal(kill(pid, SIGTERM), 0);
    sk_test_pause_ms(300);
    assert_int_equal(ctu_pg_exec(lk, "COMMIT"), 0);
    assert_int_equal(sk_test_proc_stop(pid, 0, 30000), 0);
    assert_int_equal(ctu_pg_ll(pg, "SELECT count(*) FROM seckill_order"), HELD);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT max(order_id) - %lld FROM seckill_order",
             (long long)ORDER_BASE);
    assert_int_equal(ctu_pg_ll(pg, sql), HELD - 1); /* the oldest 50 */

    /* The rest, from the committed offsets: nothing twice. */
    port = sk_test_free_port();
    pid = spawn(&ce, port);
    assert_int_equal(ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", N, 60000), N);
    assert_int_equal(ctu_check_orders(pg, ORDER_BASE, N, EVENT, 1, USER_BASE), 0);
    assert_int_equal(ctu_pg_ll(pg, "SELECT sum(stock_total - stock_left) FROM seckill_event"), N);
    assert_int_equal(ctu_metric_of(port, "seckill_consumer_messages_consumed_total"), N - HELD);
    assert_int_equal(ctu_metric_of(port, "seckill_consumer_duplicates_total"), 0);
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 20000), 0);

    PQfinish(lk);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_queue)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
