/* Integration: dead letters back (issue 32 item 7), `seckill-consumer replay` against a
 * private seckill-devkafka and a database of its own on the shared PostgreSQL.
 *
 * On one partition, signed with the consumer's key: an order for an event PostgreSQL
 * does not know yet (dead-lettered unknown_event), an order signed with a key the
 * consumer does not hold (bad_mac), a good order. Then:
 *  - bad usage exits 2 (no filter, a bad id, --all with a filter, an unknown flag);
 *  - --dry-run lists the letter it would send and sends nothing (the orders topic keeps
 *    its 3 messages); --all --dry-run reports the bad-MAC letter as skipped;
 *  - the cause fixed (the event created), `replay --event` sends it: the order lands,
 *    stock_left - 1; the message on the orders topic is the letter's bytes (its MAC kept);
 *  - replayed twice more (--error unknown_event, --all): nothing changes (one row, the
 *    same stock_left, no new dead letter), checked after a later order of the same
 *    partition landed; the bad-MAC order is never in PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_order_msg.h"
#include "sk_test_proc.h"
#include "sk_test_redis.h"
#include "test_consumer_util.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DB_NAME "sk_test_consumer_replay"
#define EVENT INT64_C(4500000001)
#define LATE_EVENT INT64_C(4500000002) /* created only after its order was dead-lettered */
#define ORDER INT64_C(4500000000001)
#define KEY_NOW "replay-test-key-current-0123456"
#define KEY_BAD "replay-test-key-attacker-012345"

static char env_pg[1024], env_brokers[300];
static char out_path[256];

static void produce(const char *bootstrap, int64_t order, int64_t event, int64_t user,
                    const char *key, char *val, size_t *vlen)
{
    char k[32], buf[SK_ORDER_MSG_MAX_SIGNED];
    int kn = snprintf(k, sizeof(k), "%" PRId64, event);
    size_t n = ctu_order_signed(buf, sizeof(buf), order, event, user, 1700000000000LL, key);
    assert_true(n > 0);
    rd_kafka_t *p = ctu_producer(bootstrap);
    assert_int_equal(ctu_produce(p, "seckill.orders", 0, k, (size_t)kn, buf, n), 0);
    assert_int_equal(ctu_producer_close(p), 0);
    if (val) {
        memcpy(val, buf, n);
        *vlen = n;
    }
}

/* Runs `seckill-consumer replay ARGS...` (NULL-terminated); its stdout in out_path.
 * @returns its exit status. */
static int replay(const char *a1, const char *a2, const char *a3, const char *a4)
{
    char exe[512];
    const char *argv[] = {sk_test_bin(exe, sizeof(exe), "seckill-consumer"), "replay", a1, a2,
                          a3, a4, NULL};
    const char *env[] = {env_pg, env_brokers, "SECKILL_ORDER_MSG_KEYS=" KEY_NOW,
                         "SECKILL_EVENTS_TOPIC=", NULL};
    sk_test_spawn_opts o = {.env = env, .death_sig = SIGKILL, .out_path = out_path,
                            .null_stdin = 1};
    return sk_test_proc_stop(sk_test_spawn(argv, &o), 0, 60000);
}

static long long order_count(PGconn *pg, int64_t event)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM seckill_order WHERE event_id = %" PRId64, event);
    return ctu_pg_ll(pg, sql);
}

/* How many messages of `topic` hold exactly val. */
static size_t copies_of(const char *bootstrap, const char *topic, size_t want, const char *val,
                        size_t vlen, size_t *total)
{
    ctu_dlq_msg *m = NULL;
    size_t n = ctu_dlq_read(bootstrap, topic, want, 10000, &m), same = 0;
    for (size_t i = 0; i < n; i++)
        same += m[i].vlen == vlen && memcmp(m[i].val, val, vlen) == 0;
    ctu_dlq_free(m, n);
    *total = n;
    return same;
}

static void test_replay(void **state)
{
    (void)state;
    ctu_kafka k;
    PGconn *pg;
    char *conninfo = ctu_setup(&k, 1, DB_NAME, EVENT, 1, 10, &pg);
    snprintf(out_path, sizeof(out_path), "/tmp/sk_test_replay_%d.out", (int)getpid());
    ctu_env ce;
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_pg, sizeof(env_pg), "%s", ce.pg);
    snprintf(env_brokers, sizeof(env_brokers), "%s", ce.brokers);

    char late[SK_ORDER_MSG_MAX_SIGNED];
    size_t late_len = 0;
    produce(k.bootstrap, ORDER, LATE_EVENT, 901, KEY_NOW, late, &late_len);
    produce(k.bootstrap, ORDER + 1, EVENT, 902, KEY_BAD, NULL, NULL);
    produce(k.bootstrap, ORDER + 2, EVENT, 903, KEY_NOW, NULL, NULL);
    int port = sk_test_free_port();
    char env_port[64];
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_GROUP_ID=replay-test",
                         "SECKILL_ORDER_MSG_KEYS=" KEY_NOW, "SECKILL_RETRY_MAX_MS=500",
                         "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", "SECKILL_EVENTS_TOPIC=", NULL};
    pid_t pid = ctu_consumer_spawn(env);
    assert_int_equal(ctu_pg_wait_ll(pg, "SELECT count(*) FROM seckill_order", 1, 60000), 1);
    ctu_dlq_msg *dlq = NULL;
    size_t nd = ctu_dlq_read(k.bootstrap, "seckill.orders.dlq", 2, 30000, &dlq);
    assert_int_equal(nd, 2);
    assert_string_equal(dlq[0].error, "unknown_event");
    assert_string_equal(dlq[1].error, "bad_mac");
    ctu_dlq_free(dlq, nd);

    /* Bad usage: 2, nothing read. */
    assert_int_equal(replay(NULL, NULL, NULL, NULL), 2);
    assert_int_equal(replay("--event", "x12", NULL, NULL), 2);
    assert_int_equal(replay("--all", "--event", "5", NULL), 2);
    assert_int_equal(replay("--all", "--bogus", NULL, NULL), 2);

    /* A dry run lists and sends nothing. */
    char ev[24];
    snprintf(ev, sizeof(ev), "%" PRId64, LATE_EVENT);
    assert_int_equal(replay("--event", ev, "--dry-run", NULL), 0);
    char want[128];
    snprintf(want, sizeof(want), "would_send dlq_partition=0 dlq_offset=0 error=unknown_event order_id=%" PRId64, ORDER);
    assert_true(sk_test_log_has(out_path, want));
    assert_true(sk_test_log_has(out_path, "replay: 1 would be sent, 0 skipped, 1 not asked for"));
    assert_int_equal(replay("--all", "--dry-run", NULL, NULL), 0);
    assert_true(sk_test_log_has(out_path, "reason=bad_mac"));
    assert_true(sk_test_log_has(out_path, "replay: 1 would be sent, 1 skipped, 0 not asked for"));
    size_t total;
    assert_int_equal(copies_of(k.bootstrap, "seckill.orders", 3, late, late_len, &total), 1);
    assert_int_equal(total, 3);

    /* The cause fixed, the letter replayed: the order lands with its MAC. */
    assert_int_equal(ctu_pg_add_event(pg, LATE_EVENT, 5), 0);
    assert_int_equal(replay("--event", ev, NULL, NULL), 0);
    assert_true(sk_test_log_has(out_path, "replay: 1 sent, 0 skipped"));
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM seckill_order WHERE order_id = %" PRId64
             " AND user_id = 901 AND status = 'created'", ORDER);
    assert_int_equal(ctu_pg_wait_ll(pg, sql, 1, 60000), 1);
    snprintf(sql, sizeof(sql), "SELECT stock_left FROM seckill_event WHERE id = %" PRId64, LATE_EVENT);
    assert_int_equal(ctu_pg_ll(pg, sql), 4);

    /* Twice more: nothing changes. A later order of the partition proves both were read. */
    assert_int_equal(replay("--error", "unknown_event", NULL, NULL), 0);
    assert_int_equal(replay("--all", NULL, NULL, NULL), 0);
    assert_true(sk_test_log_has(out_path, "replay: 1 sent, 1 skipped, 0 not asked for"));
    produce(k.bootstrap, ORDER + 3, LATE_EVENT, 904, KEY_NOW, NULL, NULL);
    char done[160];
    snprintf(done, sizeof(done), "SELECT count(*) FROM seckill_order WHERE order_id = %" PRId64, ORDER + 3);
    assert_int_equal(ctu_pg_wait_ll(pg, done, 1, 60000), 1);
    assert_int_equal(order_count(pg, LATE_EVENT), 2);
    assert_int_equal(ctu_pg_ll(pg, sql), 3); /* 5 - the replayed order - the later one */
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM seckill_order WHERE order_id = %" PRId64, ORDER + 1);
    assert_int_equal(ctu_pg_ll(pg, sql), 0); /* the bad-MAC order never lands */
    assert_int_equal(copies_of(k.bootstrap, "seckill.orders", 7, late, late_len, &total), 4);
    assert_int_equal(total, 7); /* 3 + 3 replays + the later order */
    nd = ctu_dlq_read(k.bootstrap, "seckill.orders.dlq", 3, 3000, &dlq);
    ctu_dlq_free(dlq, nd);
    assert_int_equal(nd, 2); /* no replay came back as a dead letter */

    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    unlink(out_path);
    PQfinish(pg);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_replay)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
