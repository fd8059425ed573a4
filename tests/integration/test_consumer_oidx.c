/* consumer_oidx (the order index's recorder thread) against a Redis of its own: what a
 * writer submits after its commit reaches the index, also when the recorder is freed
 * right after the submit (a stopping consumer); a batch that cannot reach Redis is
 * counted as a failure, and the next one is recorded once Redis is back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "consumer_batch.h"
#include "consumer_oidx.h"
#include "order_msg.h"
#include "sk_order_msg.h"
#include "sk_test_redis.h"
#include "sk_test_proc.h"

#define TTL_S 600
#define SECOND 1795341600ULL /* the ids' second (libidgen's layout: second << 32 | sequence) */

static sk_test_redis *srv;

static uint64_t oid(uint64_t second, uint64_t seq)
{
    return second << 32 | seq;
}

/* A batch of n orders of ids oid(second, base + i); every third rejected, the others
 * created with pay_by 1000 + i; one poison message (not an order: no outcome). */
static consumer_batch *batch_of(uint64_t second, uint64_t base, size_t n)
{
    consumer_batch *b = consumer_batch_new();
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        sk_order_msg m = {.order_id = oid(second, base + i), .event_id = 7 + i % 5,
                          .user_id = 100 + i, .ts_ms = 1};
        char v[SK_ORDER_MSG_MAX];
        size_t len = sk_order_msg_encode(&m, v, sizeof(v));
        assert_int_equal(consumer_batch_add(b, 0, (int64_t)i, "7", 1, v, len), 0);
        consumer_batch_msg *bm = consumer_batch_msg_at(b, i);
        assert_int_equal(bm->err, CONSUMER_MSG_OK);
        bm->outcome = i % 3 == 2 ? 'r' : 'c';
        bm->pay_by_ms = bm->outcome == 'c' ? (int64_t)(1000 + i) : 0;
    }
    assert_int_equal(consumer_batch_add(b, 0, (int64_t)n, "7", 1, "{", 1), 0);
    return b;
}

/* Every order of batch_of(second, base, n) has its outcome field, as written. */
static void assert_recorded(redisContext *rc, uint64_t second, uint64_t base, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t id = oid(second, base + i);
        char key[ORDER_KEY_MAX], field[48];
        order_key_index(id, key, sizeof(key));
        snprintf(field, sizeof(field), "%" PRIu64 "%s", id, ORDER_INDEX_OUTCOME_SUFFIX);
        redisReply *r = redisCommand(rc, "HGET %s %s", key, field);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STRING)
            fail_msg("no outcome for order %" PRIu64, id);
        order_index_entry e;
        assert_int_equal(order_index_decode(r->str, r->len, &e), 0);
        assert_true(e.event_id == 7 + i % 5 && e.user_id == 100 + i);
        assert_int_equal(e.outcome, i % 3 == 2 ? 'r' : 'c');
        assert_int_equal(e.pay_by_ms, e.outcome == 'c' ? (int64_t)(1000 + i) : 0);
        freeReplyObject(r);
        r = redisCommand(rc, "PTTL %s", key);
        assert_true(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0 &&
                    r->integer <= TTL_S * 1000LL);
        freeReplyObject(r);
    }
}

static redisContext *connect_srv(void)
{
    redisContext *rc = redisConnect("127.0.0.1", sk_test_redis_port(srv));
    assert_true(rc && !rc->err);
    return rc;
}

/* Two batches submitted back to back (one written while the other waits), over two
 * seconds of ids, then the recorder freed at once: both are in the index. */
static void test_written_before_free(void **state)
{
    (void)state;
    atomic_uint_fast64_t failures = 0;
    consumer_oidx *o = consumer_oidx_new(sk_test_redis_url(srv), TTL_S, 1000, 0, &failures);
    assert_non_null(o);
    consumer_batch *b1 = batch_of(SECOND, 1, 700), *b2 = batch_of(SECOND + 1, 1, 300);
    assert_int_equal(consumer_oidx_submit(o, b1), 0);
    /* b1 is copied: the writer may reuse it at once */
    consumer_batch_clear(b1);
    assert_int_equal(consumer_oidx_submit(o, b2), 0);
    consumer_oidx_free(o);
    assert_int_equal(atomic_load(&failures), 0);
    redisContext *rc = connect_srv();
    assert_recorded(rc, SECOND, 1, 700);
    assert_recorded(rc, SECOND + 1, 1, 300);
    redisFree(rc);
    consumer_batch_free(b1);
    consumer_batch_free(b2);
}

/* Whether order id's outcome field is in the index now. */
static int has_outcome(redisContext *rc, uint64_t id)
{
    char key[ORDER_KEY_MAX];
    order_key_index(id, key, sizeof(key));
    redisReply *r = redisCommand(rc, "HEXISTS %s %" PRIu64 "%s", key, id, ORDER_INDEX_OUTCOME_SUFFIX);
    int have = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return have;
}

/* Redis away: the batch is counted as a failure (not retried: the index is best
 * effort); back: the next batch is recorded on a new connection. */
static void test_redis_away(void **state)
{
    (void)state;
    atomic_uint_fast64_t failures = 0;
    consumer_oidx *o = consumer_oidx_new(sk_test_redis_url(srv), TTL_S, 1000, 1, &failures);
    assert_non_null(o);
    consumer_batch *b = batch_of(SECOND + 2, 1, 10);
    assert_int_equal(consumer_oidx_submit(o, b), 0); /* connects, records */
    redisContext *rc = connect_srv();
    int64_t t0 = sk_test_now_ms();
    while (!has_outcome(rc, oid(SECOND + 2, 10)) && sk_test_now_ms() - t0 < 5000)
        ;
    assert_true(has_outcome(rc, oid(SECOND + 2, 10)));
    redisFree(rc);
    assert_int_equal(sk_test_redis_stop(srv, SIGKILL), 0);
    consumer_batch *lost = batch_of(SECOND + 3, 1, 10);
    assert_int_equal(consumer_oidx_submit(o, lost), 0);
    consumer_oidx_free(o); /* writes `lost`: the connection is gone */
    assert_int_equal(atomic_load(&failures), 1);
    char err[256];
    assert_int_equal(sk_test_redis_restart(srv, err, sizeof(err)), 0);
    o = consumer_oidx_new(sk_test_redis_url(srv), TTL_S, 1000, 1, &failures);
    assert_non_null(o);
    consumer_batch *after = batch_of(SECOND + 4, 1, 10);
    assert_int_equal(consumer_oidx_submit(o, after), 0);
    consumer_oidx_free(o);
    assert_int_equal(atomic_load(&failures), 1);
    rc = connect_srv();
    assert_recorded(rc, SECOND + 2, 1, 10); /* kept across the kill (appendfsync always) */
    assert_recorded(rc, SECOND + 4, 1, 10);
    assert_false(has_outcome(rc, oid(SECOND + 3, 1)));
    redisFree(rc);
    consumer_batch_free(b);
    consumer_batch_free(lost);
    consumer_batch_free(after);
}

static int setup(void **state)
{
    (void)state;
    char err[256];
    const char *extra[] = {"--appendfsync", "always", NULL};
    srv = sk_test_redis_start(extra, err, sizeof(err));
    if (!srv)
        fprintf(stderr, "redis: %s\n", err);
    return srv ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sk_test_redis_free(srv);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_written_before_free),
                                       cmocka_unit_test(test_redis_away)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
