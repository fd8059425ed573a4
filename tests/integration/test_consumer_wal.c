/* Fault tests of the order-events publisher reading the WAL (issue 36): real PostgreSQL,
 * the dev Kafka, seckill-consumer.
 *
 * test_broker_down: the dev Kafka's broker down for 10 s (its control port) while 1,000
 * transitions commit: the slot holds (its confirmed position stays before them, its lag
 * metric past the alarm), and once the broker is back every transition arrives.
 * test_pg_restart: a throwaway PostgreSQL (wal_level=logical) stopped and started again
 * between two runs of 500 transitions: the publisher streams again by itself and every
 * transition of both runs arrives. */
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

#include "sk_test_devkafka.h"
#include "sk_test_redis.h"
#include "test_consumer_evutil.h"

#define DB_NAME "seckill_test_wal"
#define EVENT INT64_C(4400000001)
#define ORDER_BASE INT64_C(4400000000000)

/* "t" when the slot of the connection's database confirmed `lsn`, "f" before. */
static int slot_past(PGconn *pg, const char *lsn)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM pg_replication_slots WHERE database = current_database() "
             "AND confirmed_flush_lsn >= '%s'",
             lsn);
    return ctu_pg_ll(pg, sql) == 1;
}

static void current_lsn(PGconn *pg, char lsn[32])
{
    PGresult *r = PQexec(pg, "SELECT pg_current_wal_lsn()");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    snprintf(lsn, 32, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static void test_broker_down(void **state)
{
    (void)state;
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 3, DB_NAME, EVENT, 1, 100, &pg);
    int port = sk_test_free_port();
    pid_t pid = cev_spawn(conninfo, k.bootstrap, port);
    assert_int_equal(ctu_wait_healthy(port, 30000), 0);
    assert_int_equal(cev_metric_wait(port, "seckill_consumer_events_streaming", 1, 30000), 1);

    assert_int_equal(sk_test_devkafka_control(k.control, "broker down 1"), 0);
    for (int t = 0; t < 10; t++)
        assert_int_equal(cev_insert(pg, ORDER_BASE, EVENT, t * 100, (t + 1) * 100), 0);
    char lsn[32];
    current_lsn(pg, lsn);
    sk_test_pause_ms(10000);
    /* The slot held: nothing past the writes confirmed, the lag alarmed on (1 byte). */
    assert_false(slot_past(pg, lsn));
    assert_true(ctu_metric_of(port, "seckill_consumer_events_slot_lag_bytes") > 1);
    assert_int_equal(sk_test_devkafka_control(k.control, "broker up 1"), 0);

    size_t n;
    assert_int_equal(cev_read_distinct(k.bootstrap, ORDER_BASE, 1000, "broker down", &n), 1000);
    for (int i = 0; i < 300 && !slot_past(pg, lsn); i++)
        sk_test_pause_ms(100);
    assert_true(slot_past(pg, lsn));

    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 20000), 0);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

static void test_pg_restart(void **state)
{
    (void)state;
    ctu_pgsrv srv;
    assert_int_equal(ctu_pgsrv_start(&srv), 0);
    ctu_kafka k;
    assert_int_equal(ctu_kafka_start(&k, 3), 0);
    assert_int_equal(ctu_consumer_migrate(srv.conninfo), 0);
    PGconn *pg = PQconnectdb(srv.conninfo);
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    assert_int_equal(ctu_pg_add_event(pg, EVENT, 100), 0);
    int port = sk_test_free_port();
    pid_t pid = cev_spawn(srv.conninfo, k.bootstrap, port);
    assert_int_equal(ctu_wait_healthy(port, 30000), 0);
    assert_int_equal(cev_metric_wait(port, "seckill_consumer_events_streaming", 1, 30000), 1);
    for (int t = 0; t < 5; t++)
        assert_int_equal(cev_insert(pg, ORDER_BASE, EVENT, t * 100, (t + 1) * 100), 0);
    PQfinish(pg);

    assert_int_equal(ctu_pgsrv_stop(&srv), 0);
    assert_int_equal(ctu_pgsrv_restart(&srv), 0);
    pg = PQconnectdb(srv.conninfo);
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    for (int t = 5; t < 10; t++)
        assert_int_equal(cev_insert(pg, ORDER_BASE, EVENT, t * 100, (t + 1) * 100), 0);
    assert_int_equal(cev_metric_wait(port, "seckill_consumer_events_streaming", 1, 30000), 1);

    size_t n;
    assert_int_equal(cev_read_distinct(k.bootstrap, ORDER_BASE, 1000, "pg restart", &n), 1000);

    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 20000), 0);
    PQfinish(pg);
    ctu_kafka_stop(&k);
    ctu_pgsrv_destroy(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_broker_down),
                                       cmocka_unit_test(test_pg_restart)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
