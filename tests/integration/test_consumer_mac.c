/* Integration: orders that only the gate can make (issue 33, item 4). Anyone who could
 * produce to seckill.orders created orders: a well-formed message for a user who never
 * passed the gate was stored as `created`. With order.msg_keys set, the consumer takes
 * only messages whose MAC is one of its keys'.
 *
 * On one partition, in this order: an unsigned well-formed order (the attacker's, for a
 * user who never passed the gate), one signed with a key the consumer does not hold,
 * one signed with the previous key of a rotation, one with the current key. A consumer
 * with "current,previous" stores the last two; the first two go to the dead-letter
 * topic with error "bad_mac" and leave PostgreSQL as it was (no order row, stock
 * untouched beyond the two real orders). A private seckill-devkafka, a database of its
 * own on the shared PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_order_msg.h"
#include "sk_test_redis.h"
#include "test_consumer_util.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DB_NAME "sk_test_consumer_mac"
#define EVENT INT64_C(4400000001)
#define ORDER INT64_C(4400000000001)
#define KEY_NOW "mac-test-key-current-0123456789"
#define KEY_OLD "mac-test-key-previous-012345678"
#define KEY_BAD "mac-test-key-attacker-012345678"


static void test_only_gate_orders(void **state)
{
    (void)state;
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 1, DB_NAME, EVENT, 1, 10, &pg);
    char key[32], buf[SK_ORDER_MSG_MAX_SIGNED];
    int kn = snprintf(key, sizeof(key), "%" PRId64, EVENT);
    const char *signer[] = {NULL, KEY_BAD, KEY_OLD, KEY_NOW};
    rd_kafka_t *p = ctu_producer(k.bootstrap);
    for (int i = 0; i < 4; i++) {
        size_t n = ctu_order_signed(buf, sizeof(buf), ORDER + i, EVENT, 900 + i, 1700000000000LL,
                                    signer[i]);
        assert_true(n > 0);
        assert_int_equal(ctu_produce(p, "seckill.orders", 0, key, (size_t)kn, buf, n), 0);
    }
    assert_int_equal(ctu_producer_close(p), 0);

    int port = sk_test_free_port();
    ctu_env ce;
    char env_port[64];
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_GROUP_ID=mac-test",
                         "SECKILL_ORDER_MSG_KEYS=" KEY_NOW "," KEY_OLD,
                         "SECKILL_RETRY_MAX_MS=500", "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000",
                         "SECKILL_EVENTS_TOPIC=", NULL};
    pid_t pid = ctu_consumer_spawn(env);

    /* The two signed by a key of the consumer's are stored... */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE order_id IN (%" PRId64 ", %" PRId64 ")",
             ORDER + 2, ORDER + 3);
    assert_int_equal(ctu_pg_wait_ll(pg, sql, 2, 60000), 2);
    /* ...the other two are dead-lettered as bad_mac, in order, with their offsets. */
    ctu_dlq_msg *dlq = NULL;
    size_t nd = ctu_dlq_read(k.bootstrap, "seckill.orders.dlq", 2, 30000, &dlq);
    assert_int_equal(nd, 2);
    for (size_t i = 0; i < nd; i++) {
        assert_string_equal(dlq[i].error, "bad_mac");
        assert_int_equal(dlq[i].src_offset, (int64_t)i);
        assert_string_equal(dlq[i].key, key);
    }
    ctu_dlq_free(dlq, nd);
    /* ...and change nothing: no row for them, only the two real orders in the event. */
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM seckill_order WHERE event_id = %" PRId64,
             EVENT);
    assert_int_equal(ctu_pg_wait_ll(pg, sql, 2, 5000), 2);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM seckill_order WHERE order_id IN (%" PRId64 ", %" PRId64 ")"
             " OR user_id IN (900, 901)",
             ORDER, ORDER + 1);
    assert_int_equal(ctu_pg_wait_ll(pg, sql, 0, 1000), 0);
    snprintf(sql, sizeof(sql), "SELECT stock_left FROM seckill_event WHERE id = %" PRId64, EVENT);
    assert_int_equal(ctu_pg_wait_ll(pg, sql, 8, 5000), 8); /* 10, less the two real orders */
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_only_gate_orders)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
