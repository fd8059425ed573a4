/* Every component that opens PostgreSQL, against an address that accepts the connection
 * and never answers (test_pg_hold): none hangs. Each fails within its bound (sk_pg's
 * connect_timeout, SK_PG_CONNECT_TIMEOUT_S), says so in its log with libpq's reason,
 * tries again, and the services still stop on SIGTERM within a bound.
 *
 *   seckill-consumer, migrate on:  the migration       migrate_failed
 *   seckill-consumer, migrate off: the expiry          expiry_failed
 *                                  the events publisher events_failed
 *                                  a writer (a batch)  batch_failed
 *   seckill-order:                 the reconciler      reconciler_pg_failed
 *                                  the front's pool    pg_connect_failed (and a 503)
 *
 * The time of each first failure is measured from the process start (the writer's from
 * the start too: it includes the consumer's group join) and printed; bounds are asserted
 * with room for a loaded sanitizer build. Needs the stack (Redis) and a private dev Kafka. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_pg.h"
#include "test_consumer_util.h"
#include "test_order_support.h"
#include "test_pg_hold.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONNECT_MS (SK_PG_CONNECT_TIMEOUT_S * 1000)
/* Room over connect_timeout for a sanitizer build on a loaded two-core machine. */
#define SLACK_MS 4000
/* A stop may wait for connection attempts in flight in turn (writers, then the events publisher
 * publisher, then the expiry: consumer/main.c stops them one after the other). */
#define STOP_MS (3 * CONNECT_MS + 5000)

static pg_hold hold;
static to_kafka kafka;
static to_proc consumer;
static to_order order;
static char pg_conninfo[512];

static int setup(void **state)
{
    (void)state;
    if (!to_stack_available()) {
        fprintf(stderr, "skipped: no stack (source .run/env)\n");
        return -1;
    }
    if (pg_hold_start(&hold) != 0 || to_kafka_start(&kafka) != 0)
        return -1;
    pg_hold_conninfo(&hold, "hang-test-secret", pg_conninfo, sizeof(pg_conninfo));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (consumer.pid)
        to_stop(&consumer, SIGKILL, 5000);
    if (order.proc.pid)
        to_stop(&order.proc, SIGKILL, 5000);
    to_kafka_stop(&kafka);
    pg_hold_stop(&hold);
    return 0;
}

/* Lines of the log holding both a and b (b NULL: any line with a). */
static int log_count(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, a) && (!b || strstr(line, b));
    fclose(f);
    return n;
}

/* Waits until the log has `want` lines with event `ev` and libpq's "timeout expired".
 * @returns ms from t0 when it had them, or -1 past timeout_ms. */
static int64_t wait_log(const char *path, const char *ev, int want, int64_t t0, int timeout_ms)
{
    while (sk_test_now_ms() - t0 < timeout_ms) {
        if (log_count(path, ev, "timeout expired") >= want)
            return sk_test_now_ms() - t0;
        sk_test_pause_ms(20);
    }
    return -1;
}

/* A failure line says what failed and why, never the password. */
static void assert_log_clean(const char *path)
{
    assert_int_equal(log_count(path, "hang-test-secret", NULL), 0);
}

static int64_t stop_timed(to_proc *p, const char *what)
{
    char log[256];
    snprintf(log, sizeof(log), "%s", p->log);
    int64_t t0 = sk_test_now_ms();
    int st = to_stop(p, SIGTERM, STOP_MS);
    int64_t took = sk_test_now_ms() - t0;
    fprintf(stderr, "# %s: SIGTERM to exit %lld ms, status %d\n", what, (long long)took, st);
    if (st != 0)
        fprintf(stderr, "# its log: %s\n", log);
    assert_int_equal(st, 0);
    return took;
}

static void test_consumer_migrate(void **state)
{
    (void)state;
    const char *env[] = {"SECKILL_RETRY_MAX_MS=500", NULL};
    int64_t t0 = sk_test_now_ms();
    assert_int_equal(
        to_consumer_start(&consumer, pg_conninfo, kafka.bootstrap, env, "pg_hang_m"), 0);
    int64_t first = wait_log(consumer.log, "event=migrate_failed", 1, t0, CONNECT_MS + SLACK_MS);
    fprintf(stderr, "# consumer migration: first failure after %lld ms\n", (long long)first);
    assert_true(first >= CONNECT_MS - 1500); /* it waited: a hang, not a refusal */
    /* It retries (the service waits for its schema) with the same bound each time. */
    int64_t second = wait_log(consumer.log, "event=migrate_failed", 2, t0,
                              2 * (CONNECT_MS + SLACK_MS));
    fprintf(stderr, "# consumer migration: second failure after %lld ms\n", (long long)second);
    assert_true(second > first);
    assert_log_clean(consumer.log);
    stop_timed(&consumer, "consumer (migrating)");
}

static void test_consumer_parts(void **state)
{
    (void)state;
    char redis[600];
    snprintf(redis, sizeof(redis), "SECKILL_REDIS_URL=%s", getenv("SECKILL_REDIS_URL"));
    const char *env[] = {"SECKILL_MIGRATE=false",     "SECKILL_EXPIRY_INTERVAL_MS=200",
                         "SECKILL_EVENTS_INTERVAL_MS=200", "SECKILL_RETRY_MAX_MS=1000",
                         "SECKILL_DB_WRITERS=1",      redis, NULL};
    /* One order for a writer to write. */
    rd_kafka_t *p = ctu_producer(kafka.bootstrap);
    assert_int_equal(ctu_produce_orders(p, 9100000000000LL, 3, 9100000000LL, 1, 1), 0);
    assert_int_equal(ctu_producer_close(p), 0);

    int64_t t0 = sk_test_now_ms();
    assert_int_equal(
        to_consumer_start(&consumer, pg_conninfo, kafka.bootstrap, env, "pg_hang_c"), 0);
    int64_t expiry = wait_log(consumer.log, "event=expiry_failed", 1, t0, CONNECT_MS + SLACK_MS);
    int64_t events = wait_log(consumer.log, "event=events_failed", 1, t0, CONNECT_MS + SLACK_MS);
    /* The writer's first attempt waits for the group join and the batch. */
    int64_t writer = wait_log(consumer.log, "event=batch_failed", 1, t0, CONNECT_MS + 20000);
    fprintf(stderr, "# consumer: first failure after %lld ms (expiry), %lld ms (events), "
                    "%lld ms (writer, join included)\n",
            (long long)expiry, (long long)events, (long long)writer);
    assert_true(expiry >= CONNECT_MS - 1500);
    assert_true(events >= CONNECT_MS - 1500);
    assert_true(writer >= CONNECT_MS - 1500);
    /* Each retries on its own: a second failure one bound later. */
    int64_t expiry2 = wait_log(consumer.log, "event=expiry_failed", 2, t0,
                               (int)expiry + CONNECT_MS + SLACK_MS);
    int64_t events2 = wait_log(consumer.log, "event=events_failed", 2, t0,
                               (int)events + CONNECT_MS + SLACK_MS);
    int64_t writer2 = wait_log(consumer.log, "event=batch_failed", 2, t0,
                               (int)writer + CONNECT_MS + SLACK_MS);
    fprintf(stderr, "# consumer: second failure after %lld, %lld, %lld ms\n", (long long)expiry2,
            (long long)events2, (long long)writer2);
    assert_true(expiry2 > expiry && events2 > events && writer2 > writer);
    assert_log_clean(consumer.log);
    stop_timed(&consumer, "consumer");
}

static void test_order(void **state)
{
    (void)state;
    const char *env[] = {"SECKILL_RECONCILE_INTERVAL_MS=300", "SECKILL_WORKERS=1", NULL};
    int64_t t0 = sk_test_now_ms();
    assert_int_equal(to_order_start(&order, getenv("SECKILL_REDIS_URL"), kafka.bootstrap,
                                    pg_conninfo, env),
                     0);
    /* The front's pool: a read that needs PostgreSQL answers 503 within the bound. */
    char resp[1024], tok[1024];
    to_token(&order, 7, 0, 300, tok, sizeof(tok));
    int64_t r0 = sk_test_now_ms();
    int st = to_http1(order.port, "GET", "/api/v1/events", tok, NULL, resp, sizeof(resp));
    int64_t took = sk_test_now_ms() - r0;
    fprintf(stderr, "# order: GET /api/v1/events answered %d after %lld ms\n", st,
            (long long)took);
    assert_int_equal(st, 503);
    assert_true(took >= CONNECT_MS - 1500 && took < CONNECT_MS + SLACK_MS);
    assert_true(log_count(order.proc.log, "event=pg_connect_failed", "app=seckill-order/pg") >= 1);
    assert_true(log_count(order.proc.log, "event=pg_connect_failed", "timeout expired") >= 1);
    /* The reconciler, on its own thread, elected on Redis, then failing on PostgreSQL. */
    int64_t recon = wait_log(order.proc.log, "event=reconciler_pg_failed", 1, t0,
                             CONNECT_MS + SLACK_MS + 5000);
    int64_t recon2 = wait_log(order.proc.log, "event=reconciler_pg_failed", 2, t0,
                              (int)recon + CONNECT_MS + SLACK_MS);
    fprintf(stderr, "# order: reconciler failures after %lld and %lld ms from start\n",
            (long long)recon, (long long)recon2);
    assert_true(recon > 0 && recon2 > recon);
    assert_true(log_count(order.proc.log, "event=reconciler_pg_failed",
                          "app=seckill-order/reconciler") >= 2);
    /* Still serving while its database hangs. */
    assert_int_equal(to_http1(order.port, "GET", "/healthz", NULL, NULL, resp, sizeof(resp)), 200);
    assert_log_clean(order.proc.log);
    stop_timed(&order.proc, "order");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consumer_migrate),
        cmocka_unit_test(test_consumer_parts),
        cmocka_unit_test(test_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
