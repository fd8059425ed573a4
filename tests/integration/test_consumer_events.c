/* Integration tests of seckill.order-events from the WAL (issues 22 and 36): real
 * PostgreSQL (wal_level=logical, the test stack), the dev Kafka, seckill-consumer.
 *
 * test_events: 10 orders written by the consumer against a stock of 9 (10 "created" and
 * the last one "rejected", in the same transaction, after its "created"), one inserted
 * by hand, then one paid, one cancelled and released, one expired, as a front's pay and
 * cancel, the release sweep and the expiry do (the triggers see every change, whoever
 * makes it), and one pay rolled back: exactly 16 messages, none for the rollback, and
 * each order's transitions on the topic in the order they committed.
 * test_takeover: two consumers; only one streams the slot (it is exclusive), the other
 * waits. 5,000 orders committed in 50 transactions, the streaming one killed with
 * SIGKILL half-way: the other takes the slot over, every transition arrives, and the
 * duplicates are fewer than what was written before the kill (at least once, bounded by
 * what was produced and not yet confirmed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sk_test_redis.h"
#include "test_consumer_evutil.h"

#define DB_NAME "seckill_test_events"
#define EVENT INT64_C(4300000001)
#define ORDER_BASE INT64_C(4300000000000)

/* The "status" of a transition's JSON into st[16]; the order id is the key. */
static void status_of(const ctu_dlq_msg *m, char st[16])
{
    const char *p = strstr(m->val, "\"status\":\"");
    st[0] = '\0';
    if (p)
        sscanf(p + 10, "%15[a-z]", st);
}

/* Index in msgs of order `oid`'s transition `st`, -1 if absent; *count: how many. */
static long find(const ctu_dlq_msg *msgs, size_t n, int64_t oid, const char *st, int *count)
{
    char key[24], s[16];
    snprintf(key, sizeof(key), "%" PRId64, oid);
    long at = -1;
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        status_of(&msgs[i], s);
        if (strcmp(msgs[i].key, key) == 0 && strcmp(s, st) == 0) {
            if (at < 0)
                at = (long)i;
            (*count)++;
        }
    }
    return at;
}

static void test_events(void **state)
{
    (void)state;
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 3, DB_NAME, EVENT, 1, 9, &pg);

    rd_kafka_t *p = ctu_producer(k.bootstrap);
    char buf[256], key[32];
    for (int i = 0; i < 10; i++) {
        size_t n = ctu_order_json(buf, sizeof(buf), ORDER_BASE + i, EVENT, 900 + i, 1700000000000LL);
        int kn = snprintf(key, sizeof(key), "%" PRId64, EVENT);
        assert_int_equal(ctu_produce(p, "seckill.orders", -1, key, (size_t)kn, buf, n), 0);
    }
    assert_int_equal(ctu_producer_close(p), 0);

    int port = sk_test_free_port();
    pid_t pid = cev_spawn(conninfo, k.bootstrap, port);
    assert_int_equal(ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", 10, 60000), 10);

    /* An order written by hand, not by the consumer. */
    assert_int_equal(cev_insert(pg, ORDER_BASE + 100, EVENT, 0, 1), 0);

    char sql[512];
    snprintf(sql, sizeof(sql),
             "UPDATE seckill_order SET status = CASE order_id WHEN %" PRId64 " THEN 'paid' WHEN %" PRId64
             " THEN 'cancelled' ELSE 'expired' END WHERE order_id IN (%" PRId64 ", %" PRId64 ", %" PRId64 ")",
             ORDER_BASE, ORDER_BASE + 1, ORDER_BASE, ORDER_BASE + 1, ORDER_BASE + 2);
    assert_int_equal(ctu_pg_exec(pg, sql), 0);
    snprintf(sql, sizeof(sql), "UPDATE seckill_order SET released_at = now() WHERE order_id = %" PRId64,
             ORDER_BASE + 1);
    assert_int_equal(ctu_pg_exec(pg, sql), 0);
    /* A pay that rolls back: nothing of it may be published. */
    snprintf(sql, sizeof(sql),
             "BEGIN; UPDATE seckill_order SET status = 'paid' WHERE order_id = %" PRId64 "; ROLLBACK",
             ORDER_BASE + 3);
    assert_int_equal(ctu_pg_exec(pg, sql), 0);

    ctu_dlq_msg *msgs = NULL;
    size_t n = ctu_dlq_read(k.bootstrap, CEV_TOPIC, 16, 30000, &msgs);
    /* Exactly 16 (a transaction published twice would show more, a lost one fewer). */
    assert_int_equal(n, 16);
    int c;
    long created0 = find(msgs, n, ORDER_BASE, "created", &c);
    assert_int_equal(c, 1);
    for (int i = 1; i < 10; i++) {
        assert_true(find(msgs, n, ORDER_BASE + i, "created", &c) >= 0);
        assert_int_equal(c, 1);
    }
    /* beyond the stock: created, then rejected, by the same transaction */
    long rejected = find(msgs, n, ORDER_BASE + 9, "rejected", &c);
    assert_int_equal(c, 1);
    assert_true(rejected > find(msgs, n, ORDER_BASE + 9, "created", &c));
    assert_true(find(msgs, n, ORDER_BASE + 100, "created", &c) >= 0);
    assert_int_equal(c, 1);
    assert_true(created0 >= 0 && find(msgs, n, ORDER_BASE, "paid", &c) > created0);
    long cancelled = find(msgs, n, ORDER_BASE + 1, "cancelled", &c);
    assert_true(cancelled > find(msgs, n, ORDER_BASE + 1, "created", &c));
    assert_true(find(msgs, n, ORDER_BASE + 1, "released", &c) > cancelled);
    assert_true(find(msgs, n, ORDER_BASE + 2, "expired", &c) > find(msgs, n, ORDER_BASE + 2, "created", &c));
    assert_int_equal(find(msgs, n, ORDER_BASE + 3, "paid", &c), -1);
    assert_non_null(strstr(msgs[0].val, "\"event_id\":\"4300000001\""));
    ctu_dlq_free(msgs, n);
    assert_true(ctu_metric_of(port, "seckill_consumer_events_published_total") >= 16);

    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 20000), 0);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

#define TAKEOVER_TX 50
#define TAKEOVER_PER_TX 100

static void test_takeover(void **state)
{
    (void)state;
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 3, DB_NAME "_takeover", EVENT, 1, 100, &pg);
    int port_a = sk_test_free_port(), port_b = sk_test_free_port();
    while (port_b == port_a)
        port_b = sk_test_free_port();
    pid_t a = cev_spawn(conninfo, k.bootstrap, port_a);
    assert_int_equal(ctu_wait_healthy(port_a, 30000), 0);
    assert_int_equal(cev_metric_wait(port_a, "seckill_consumer_events_streaming", 1, 30000), 1);
    pid_t b = cev_spawn(conninfo, k.bootstrap, port_b);
    assert_int_equal(ctu_wait_healthy(port_b, 30000), 0);
    /* B tried the slot at least a few times (every 200 ms) and waits. */
    sk_test_pause_ms(1500);
    assert_int_equal(ctu_metric_of(port_b, "seckill_consumer_events_streaming"), 0);
    assert_int_equal(ctu_metric_of(port_a, "seckill_consumer_events_streaming"), 1);

    for (int t = 0; t < TAKEOVER_TX; t++) {
        if (t == TAKEOVER_TX / 2)
            kill(a, SIGKILL); /* mid-stream: half committed, some of it in flight */
        assert_int_equal(cev_insert(pg, ORDER_BASE, EVENT, t * TAKEOVER_PER_TX,
                                    (t + 1) * TAKEOVER_PER_TX), 0);
    }
    sk_test_proc_stop(a, SIGKILL, 10000);
    assert_int_equal(cev_metric_wait(port_b, "seckill_consumer_events_streaming", 1, 30000), 1);

    const size_t total = TAKEOVER_TX * TAKEOVER_PER_TX;
    size_t n;
    size_t distinct = cev_read_distinct(k.bootstrap, ORDER_BASE, total, "takeover", &n);
    /* Every one arrived (distinct order ids), duplicates bounded. */
    assert_int_equal(distinct, total);
    assert_true(n - distinct < total / 2);
    /* The standby watched the slot's lag (its alarm is 1 byte here) while A was gone. */
    assert_true(ctu_metric_of(port_b, "seckill_consumer_events_slot_lag_bytes") >= 0);

    assert_int_equal(sk_test_proc_stop(b, SIGTERM, 20000), 0);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME "_takeover");
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_events),
                                       cmocka_unit_test(test_takeover)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
