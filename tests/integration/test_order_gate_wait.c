/* The gate's confirms gathered across loop turns (order_gate.h, issue 16), against a
 * throwaway redis-server: order_gate.c and order_redis.c on a loop of the test's own,
 * script calls counted from INFO commandstats (EVALSHA), pending entries read back.
 *  - confirms submitted over several turns are held (no call) until a full call's worth
 *    waits, then go as one call at the end of that turn; the entries are gone
 *  - a reserve queued while confirms are held goes at the end of its own turn (held
 *    confirms never hold up an answer), and the confirms stay held
 *  - order_gate_close sends what is held: every entry gone, every item answered
 *  - with the default wait, confirms of several turns are answered without a close
 *    (the timer), in fewer calls than turns when the turns come within the wait
 *  - input that arrives while the worker is busy with a turn joins that turn's call */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>

#include "order_gate.h"
#include "order_msg.h"
#include "order_redis.h"
#include "sk_test_redis.h"

static sk_test_redis *tr;
static redisContext *rc;
static order_scripts scripts;

typedef struct {
    struct event_base *base;
    order_redis *redis;
    order_gate *gate;
    int done[ORDER_GATE_OPS];
    int failed;
} fixture;

static void on_done(order_gate_op op, long long code, void *arg)
{
    fixture *f = arg;
    f->done[op]++;
    if (code == ORDER_GATE_FAILED)
        f->failed++;
}
static void done_reserve(order_gate_item *it, long long code, void *arg)
{
    (void)it;
    on_done(ORDER_GATE_RESERVE, code, arg);
}
static void done_cancel(order_gate_item *it, long long code, void *arg)
{
    (void)it;
    on_done(ORDER_GATE_CANCEL, code, arg);
}
static void done_confirm(order_gate_item *it, long long code, void *arg)
{
    (void)it;
    if (code != 0 && code != ORDER_GATE_FAILED)
        fail_msg("confirm answered %lld", code);
    on_done(ORDER_GATE_CONFIRM, code, arg);
}
static void done_borrow(order_gate_item *it, long long code, void *arg)
{
    (void)it;
    on_done(ORDER_GATE_BORROW, code, arg);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs the loop until *counter reaches want or timeout_ms passes. @returns 1 if reached. */
static int run_until(fixture *f, const int *counter, int want, int timeout_ms)
{
    long long end = now_ms() + timeout_ms;
    while (*counter < want && now_ms() < end)
        event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    return *counter >= want;
}

/* One loop turn: what is active runs (the gate's end-of-turn flush among it). */
static void one_turn(fixture *f)
{
    event_base_loop(f->base, EVLOOP_NONBLOCK);
}

static long long evalsha_calls(void)
{
    redisReply *r = redisCommand(rc, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long long n = 0;
    const char *p = strstr(r->str, "cmdstat_evalsha:calls=");
    if (p)
        n = atoll(p + strlen("cmdstat_evalsha:calls="));
    freeReplyObject(r);
    return n;
}

static long long pending_len(uint64_t ev)
{
    char key[ORDER_KEY_MAX];
    order_key(ev, ORDER_KEY_PENDING, key, sizeof(key));
    redisReply *r = redisCommand(rc, "HLEN %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* n items of event ev whose reservations are pending (as reserve.lua leaves them). */
static order_gate_item *pending_items(uint64_t ev, int n)
{
    order_gate_item *items = calloc((size_t)n, sizeof(*items));
    assert_non_null(items);
    char key[ORDER_KEY_MAX];
    order_key(ev, ORDER_KEY_PENDING, key, sizeof(key));
    for (int i = 0; i < n; i++) {
        items[i].event_id = ev;
        items[i].user_id = 1000 + (uint64_t)i;
        items[i].order_id = ev * 1000000 + (uint64_t)i;
        redisReply *r = redisCommand(rc, "HSET %s %" PRIu64 " %" PRIu64 ":1", key,
                                     items[i].order_id, items[i].user_id);
        assert_non_null(r);
        freeReplyObject(r);
    }
    assert_int_equal(pending_len(ev), n);
    return items;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->base = event_base_new();
    assert_non_null(f->base);
    f->redis = order_redis_new(f->base, sk_test_redis_url(tr), &scripts, 5000);
    assert_non_null(f->redis);
    long long end = now_ms() + 10000;
    while (!order_redis_connected(f->redis) && now_ms() < end)
        event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    assert_true(order_redis_connected(f->redis));
    order_gate_done_fn *const done[ORDER_GATE_OPS] = {done_reserve, done_cancel, done_confirm,
                                                      done_borrow};
    f->gate = order_gate_new(f->base, f->redis, NULL, done, f);
    assert_non_null(f->gate);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    order_gate_close(f->gate);
    order_redis_free(f->redis);
    order_gate_free(f->gate);
    event_base_free(f->base);
    free(f);
    return 0;
}

/* 3 turns of 40 confirms: no call; the rest of a full call (257 in all) in one more
 * turn: one call at the end of that turn, and every entry gone. Before issue 16's
 * change: a call per turn. */
static void test_confirms_held_across_turns(void **state)
{
    fixture *f = *state;
    order_gate_set_confirm_wait(f->gate, 600000); /* only the batch bound sends */
    uint64_t ev = 71;
    int n = ORDER_GATE_CONFIRM_MAX;
    order_gate_item *items = pending_items(ev, n);
    long long calls0 = evalsha_calls();
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < 40; i++)
            order_gate_submit(f->gate, ORDER_GATE_CONFIRM, &items[t * 40 + i]);
        one_turn(f);
    }
    assert_int_equal(f->done[ORDER_GATE_CONFIRM], 0);
    assert_int_equal(evalsha_calls() - calls0, 0);
    assert_int_equal(pending_len(ev), n);
    for (int i = 120; i < n; i++)
        order_gate_submit(f->gate, ORDER_GATE_CONFIRM, &items[i]);
    assert_true(run_until(f, &f->done[ORDER_GATE_CONFIRM], n, 10000));
    assert_int_equal(f->failed, 0);
    assert_int_equal(evalsha_calls() - calls0, 1);
    assert_int_equal(pending_len(ev), 0);
    free(items);
}

/* A reserve queued while confirms are held goes at the end of its turn, alone; the
 * confirms stay held; order_gate_close sends them: every entry gone, every item answered. */
static void test_reserve_not_held_close_sends(void **state)
{
    fixture *f = *state;
    order_gate_set_confirm_wait(f->gate, 600000);
    uint64_t ev = 72;
    order_gate_item *items = pending_items(ev, 10);
    long long calls0 = evalsha_calls();
    for (int i = 0; i < 10; i++)
        order_gate_submit(f->gate, ORDER_GATE_CONFIRM, &items[i]);
    one_turn(f);
    order_gate_item res = {.event_id = 73, .user_id = 5, .order_id = 7300000};
    order_gate_submit(f->gate, ORDER_GATE_RESERVE, &res);
    assert_true(run_until(f, &f->done[ORDER_GATE_RESERVE], 1, 10000)); /* answered: 5, not loaded */
    assert_int_equal(evalsha_calls() - calls0, 1);
    assert_int_equal(f->done[ORDER_GATE_CONFIRM], 0);
    assert_int_equal(pending_len(ev), 10);
    order_gate_close(f->gate);
    assert_true(run_until(f, &f->done[ORDER_GATE_CONFIRM], 10, 10000));
    assert_int_equal(f->failed, 0);
    assert_int_equal(evalsha_calls() - calls0, 2);
    assert_int_equal(pending_len(ev), 0);
    free(items);
}

/* The default wait: confirms of 4 turns submitted back to back are answered without a
 * close (the timer sends them), in fewer calls than turns unless the machine stalled
 * the test for longer than the wait between two turns (then it is at most one per turn:
 * never more calls than before). */
static void test_default_wait_timer(void **state)
{
    fixture *f = *state;
    uint64_t ev = 74;
    enum { TURNS = 4, PER = 5 };
    order_gate_item *items = pending_items(ev, TURNS * PER);
    long long calls0 = evalsha_calls(), t0 = now_ms();
    for (int t = 0; t < TURNS; t++) {
        for (int i = 0; i < PER; i++)
            order_gate_submit(f->gate, ORDER_GATE_CONFIRM, &items[t * PER + i]);
        one_turn(f);
    }
    long long spent = now_ms() - t0;
    assert_true(run_until(f, &f->done[ORDER_GATE_CONFIRM], TURNS * PER, 10000));
    assert_int_equal(f->failed, 0);
    assert_int_equal(pending_len(ev), 0);
    long long calls = evalsha_calls() - calls0;
    assert_true(calls >= 1 && calls <= TURNS);
    if (spent < ORDER_GATE_CONFIRM_WAIT_MS)
        assert_int_equal(calls, 1);
    free(items);
}

/* The end of a turn: what arrives while the worker is busy with the turn joins its call.
 * A callback queues a reserve and makes a socket readable (as a client's request landing
 * during the turn would); the socket's callback, run by the next poll, which does not
 * block, queues a second: one script call carries both. (Flushed from an event made
 * active at once, as before round 9, the first left alone: two calls.) */
typedef struct {
    fixture *f;
    order_gate_item *a, *b;
    int sv[2];
} late_input;

static void on_late_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    late_input *l = arg;
    char c;
    assert_int_equal(read(fd, &c, 1), 1);
    order_gate_submit(l->f->gate, ORDER_GATE_RESERVE, l->b);
}

static void on_turn(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    late_input *l = arg;
    order_gate_submit(l->f->gate, ORDER_GATE_RESERVE, l->a);
    assert_int_equal(write(l->sv[0], "x", 1), 1);
}

static void test_input_during_turn_joins(void **state)
{
    fixture *f = *state;
    order_gate_item a = {.event_id = 75, .user_id = 1, .order_id = 7500001};
    order_gate_item b = {.event_id = 75, .user_id = 2, .order_id = 7500002};
    late_input l = {f, &a, &b, {-1, -1}};
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, l.sv), 0);
    struct event *rd = event_new(f->base, l.sv[1], EV_READ, on_late_readable, &l);
    struct event *turn = event_new(f->base, -1, 0, on_turn, &l);
    assert_non_null(rd);
    assert_non_null(turn);
    assert_int_equal(event_add(rd, NULL), 0);
    long long calls0 = evalsha_calls();
    event_active(turn, EV_TIMEOUT, 0);
    assert_true(run_until(f, &f->done[ORDER_GATE_RESERVE], 2, 10000)); /* 5: not loaded */
    assert_int_equal(f->failed, 0);
    assert_int_equal(evalsha_calls() - calls0, 1);
    event_free(turn);
    event_free(rd);
    close(l.sv[0]);
    close(l.sv[1]);
}

int main(void)
{
    char err[256];
    tr = sk_test_redis_start(NULL, err, sizeof(err));
    if (!tr) {
        fprintf(stderr, "test_order_gate_wait: %s\n", err);
        return 1;
    }
    rc = redisConnect("127.0.0.1", sk_test_redis_port(tr));
    if (!rc || rc->err || order_scripts_init(&scripts) != 0 ||
        order_scripts_load(&scripts, sk_test_redis_url(tr), 5000, err, sizeof(err)) != 0) {
        fprintf(stderr, "test_order_gate_wait: setup failed %s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_confirms_held_across_turns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_not_held_close_sends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_wait_timer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_during_turn_joins, setup, teardown),
    };
    int rc_tests = cmocka_run_group_tests(tests, NULL, NULL);
    redisFree(rc);
    sk_test_redis_free(tr);
    return rc_tests;
}
