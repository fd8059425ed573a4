/* rcluster, async API on a libevent loop, on a throwaway 3+3 cluster with a password
 * and on one plain Redis: readiness, commands over every master, CROSSSLOT refused,
 * MOVED after a migration, ASK during one, NOSCRIPT per node, every callback exactly
 * once (rcl_async_free included), timeouts, reconnection after a restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rcluster.h"
#include "sk_test_cluster.h"
#include "sk_test_redis.h"

#define PASS "cl-s3cret"
#define MAXR 512

static sk_test_cluster *cl;
static struct event_base *base;
static const struct timeval TV = {2, 0};

/* What came back, by command index. */
typedef struct results {
    int calls[MAXR];
    int type[MAXR];
    char str[MAXR][64];
    int done;
    int ready_changes[2];
    int ready;
} results;

static results R;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_state(rcl_async *ac, int ready, void *priv)
{
    results *r = priv;
    r->ready = ready;
    r->ready_changes[ready != 0]++;
}

static void on_cmd(rcl_async *ac, redisReply *reply, void *priv)
{
    int i = (int)(intptr_t)priv;
    R.calls[i]++;
    R.done++;
    R.type[i] = reply ? reply->type : -1;
    R.str[i][0] = '\0';
    if (reply && (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS ||
                  reply->type == REDIS_REPLY_ERROR))
        snprintf(R.str[i], sizeof(R.str[i]), "%s", reply->str);
}

/* Runs the loop until *flag >= want or timeout_ms passes. @returns 1 reached. */
static int run_until(const int *flag, int want, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    while (*flag < want && now_ms() < deadline)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), event_base_loop(base, EVLOOP_ONCE);
    return *flag >= want;
}

static void reset(void) { memset(&R, 0, sizeof(R)); }

static rcl_async *connect_ready(const char *url)
{
    char err[512];
    reset();
    rcl_async *ac = rcl_async_connect(url, base, TV, err, sizeof(err));
    if (!ac)
        fail_msg("rcl_async_connect: %s", err);
    rcl_async_set_state_cb(ac, on_state, &R);
    assert_true(run_until(&R.ready, 1, 5000));
    assert_int_equal(rcl_async_ready(ac), 1);
    return ac;
}

static int send3(rcl_async *ac, int i, const char *a0, const char *a1, const char *a2)
{
    const char *v[3] = {a0, a1, a2};
    return rcl_async_command_argv(ac, on_cmd, (void *)(intptr_t)i, a2 ? 3 : 2, v, NULL);
}

/* Sends one command, runs until its callback, expects a string/status reply `want`. */
static void roundtrip(rcl_async *ac, const char *a0, const char *a1, const char *a2, const char *want)
{
    R.done = 0;
    R.calls[0] = 0;
    assert_int_equal(send3(ac, 0, a0, a1, a2), 0);
    assert_true(run_until(&R.done, 1, 10000));
    assert_int_equal(R.calls[0], 1);
    if (want && strcmp(R.str[0], want) != 0)
        fail_msg("%s %s: want %s, got type %d \"%s\"", a0, a1, want, R.type[0], R.str[0]);
}

static int setup(void **state)
{
    char err[512];
    base = event_base_new();
    cl = sk_test_cluster_start(PASS, err, sizeof(err));
    if (!cl) {
        fprintf(stderr, "cluster: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    sk_test_cluster_free(cl);
    event_base_free(base);
    return 0;
}

static void test_commands_every_master_and_crossslot(void **state)
{
    rcl_async *ac = connect_ready(sk_test_cluster_url(cl));
    enum { N = 200 };
    char k[32], v[32];
    R.done = 0;
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "as:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        assert_int_equal(send3(ac, i, "SET", k, v), 0);
    }
    assert_true(run_until(&R.done, N, 10000));
    R.done = 0;
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "as:%d", i);
        assert_int_equal(send3(ac, i, "GET", k, NULL), 0);
    }
    assert_true(run_until(&R.done, N, 10000));
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "v%d", i);
        assert_int_equal(R.calls[i], 2);
        assert_string_equal(R.str[i], v);
    }
    const char *ms[5] = {"MSET", "xa", "1", "xb", "2"};
    assert_int_equal(rcl_async_command_argv(ac, on_cmd, NULL, 5, ms, NULL), -1);
    assert_memory_equal(rcl_async_errstr(ac), "CROSSSLOT", 9);
    rcl_async_free(ac);
}

static void test_moved_ask_noscript(void **state)
{
    char err[512], from_id[41], to_id[41];
    rcl_async *ac = connect_ready(sk_test_cluster_url(cl));
    /* MOVED */
    const char *key = "{amoved}k";
    int slot = rcl_keyslot(key, strlen(key));
    roundtrip(ac, "SET", key, "before", "OK");
    if (sk_test_cluster_migrate_slot(cl, slot, sk_test_cluster_other_master(cl, slot), err, sizeof(err)))
        fail_msg("migrate: %s", err);
    roundtrip(ac, "GET", key, NULL, "before");
    roundtrip(ac, "SET", key, "after", "OK");
    roundtrip(ac, "GET", key, NULL, "after");

    /* ASK */
    const char *k1 = "{aasking}one", *k2 = "{aasking}two";
    slot = rcl_keyslot(k1, strlen(k1));
    roundtrip(ac, "SET", k1, "1", "OK");
    roundtrip(ac, "SET", k2, "2", "OK");
    int from = sk_test_cluster_master_of(cl, slot), to = sk_test_cluster_other_master(cl, slot);
    assert_int_equal(sk_test_cluster_node_id(cl, from, from_id), 0);
    assert_int_equal(sk_test_cluster_node_id(cl, to, to_id), 0);
    freeReplyObject(sk_test_cluster_cmd(cl, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id));
    freeReplyObject(sk_test_cluster_cmd(cl, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id));
    redisReply *r = sk_test_cluster_cmd(cl, from, "MIGRATE 127.0.0.1 %d %s 0 5000 AUTH %s",
                                        sk_test_cluster_port(cl, to), k1, PASS);
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    roundtrip(ac, "GET", k1, NULL, "1"); /* ASK to the target */
    roundtrip(ac, "GET", k2, NULL, "2"); /* still on the source */
    if (sk_test_cluster_migrate_slot(cl, slot, to, err, sizeof(err)))
        fail_msg("finish migration: %s", err);
    roundtrip(ac, "GET", k2, NULL, "2");

    /* NOSCRIPT on a flushed node */
    char sha[41];
    assert_int_equal(rcl_async_script_add(ac, "return redis.call('GET', KEYS[1])", sha), 0);
    for (int round = 0; round < 2; round++) {
        R.done = 0;
        for (int i = 0; i < 30; i++) {
            char k[32];
            snprintf(k, sizeof(k), "as:%d", i);
            const char *v[4] = {"EVALSHA", sha, "1", k};
            assert_int_equal(rcl_async_command_argv(ac, on_cmd, (void *)(intptr_t)i, 4, v, NULL), 0);
        }
        assert_true(run_until(&R.done, 30, 10000));
        for (int i = 0; i < 30; i++) {
            char v[32];
            snprintf(v, sizeof(v), "v%d", i);
            if (strcmp(R.str[i], v) != 0)
                fail_msg("round %d cmd %d: \"%s\"", round, i, R.str[i]);
        }
        /* Flush every master's script cache: each loads it again on NOSCRIPT. */
        for (int n = 0; n < SK_TEST_CLUSTER_NODES; n++)
            freeReplyObject(sk_test_cluster_cmd(cl, n, "SCRIPT FLUSH"));
    }
    rcl_async_free(ac);
}

static void test_free_calls_every_callback(void **state)
{
    rcl_async *ac = connect_ready(sk_test_cluster_url(cl));
    R.done = 0;
    for (int i = 0; i < 100; i++) {
        char k[32];
        snprintf(k, sizeof(k), "free:%d", i);
        assert_int_equal(send3(ac, i, "GET", k, NULL), 0);
    }
    rcl_async_free(ac);
    assert_int_equal(R.done, 100);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(R.calls[i], 1);
        assert_int_equal(R.type[i], -1);
    }
}

/* kill -9 of a key's master: commands in the gap end (NULL or an error, each callback
 * once), and the same context serves the key again from the promoted replica. Leaves a
 * node down: last of the cluster tests. */
static void test_failover_same_context(void **state)
{
    char err[512];
    rcl_async *ac = connect_ready(sk_test_cluster_url(cl));
    const char *key = "{afailover}k";
    /* SET + WAIT on the key's master (a blocking pipeline routes WAIT after the SET), so
     * the replica has the key before its master dies. */
    rcl_ctx *sc = rcl_connect(sk_test_cluster_url(cl), TV, err, sizeof(err));
    assert_non_null(sc);
    const char *g[3] = {"SET", key, "kept"}, *w[3] = {"WAIT", "1", "1500"};
    redisReply *r;
    assert_int_equal(rcl_append_argv(sc, 3, g, NULL), 0);
    assert_int_equal(rcl_append_argv(sc, 3, w, NULL), 0);
    if (rcl_get_reply(sc, &r) != 0)
        fail_msg("SET: %s", rcl_errstr(sc));
    freeReplyObject(r);
    if (rcl_get_reply(sc, &r) != 0)
        fail_msg("WAIT: %s", rcl_errstr(sc));
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    rcl_free(sc);
    int slot = rcl_keyslot(key, strlen(key));
    int m = sk_test_cluster_master_of(cl, slot);
    sk_test_redis_stop(sk_test_cluster_node(cl, m), SIGKILL);
    int64_t t0 = now_ms(), served = -1;
    int sent = 0;
    while (served < 0 && now_ms() - t0 < 20000) {
        R.done = 0;
        R.calls[0] = 0;
        if (send3(ac, 0, "GET", key, NULL) != 0) { /* not ready: no map reachable */
            int tick = 0;
            run_until(&tick, 1, 100);
            continue;
        }
        sent++;
        assert_true(run_until(&R.done, 1, 10000));
        assert_int_equal(R.calls[0], 1);
        if (R.type[0] == REDIS_REPLY_STRING && strcmp(R.str[0], "kept") == 0)
            served = now_ms() - t0;
    }
    print_message("failover: served again after %lld ms (%d commands)\n", (long long)served, sent);
    assert_true(served >= 0);
    rcl_async_free(ac);
    if (sk_test_cluster_wait_ok(cl, slot, 20000, err, sizeof(err)) != 0)
        fail_msg("%s", err);
}

static void test_pass_through_timeout_and_restart(void **state)
{
    char err[512];
    sk_test_redis *r1 = sk_test_redis_start(NULL, err, sizeof(err));
    assert_non_null(r1);
    struct timeval tv = {0, 500000};
    reset();
    rcl_async *ac = rcl_async_connect(sk_test_redis_url(r1), base, tv, err, sizeof(err));
    assert_non_null(ac);
    rcl_async_set_state_cb(ac, on_state, &R);
    assert_true(run_until(&R.ready, 1, 5000));
    roundtrip(ac, "SET", "xa", "1", "OK");
    roundtrip(ac, "SET", "xb", "2", "OK"); /* other slot: fine on one server */
    char sha[41];
    assert_int_equal(rcl_async_script_add(ac, "return redis.call('GET', KEYS[1])", sha), 0);
    const char *v[4] = {"EVALSHA", sha, "1", "xa"};
    R.done = 0;
    assert_int_equal(rcl_async_command_argv(ac, on_cmd, 0, 4, v, NULL), 0);
    assert_true(run_until(&R.done, 1, 5000));
    assert_string_equal(R.str[0], "1");

    /* A frozen server: the command ends with NULL after about the timeout. */
    kill(sk_test_redis_pid(r1), SIGSTOP);
    R.done = 0;
    int64_t t0 = now_ms();
    assert_int_equal(send3(ac, 0, "GET", "xa", NULL), 0);
    assert_true(run_until(&R.done, 1, 5000));
    assert_int_equal(R.type[0], -1);
    int64_t took = now_ms() - t0;
    assert_true(took >= 400 && took < 2000);
    kill(sk_test_redis_pid(r1), SIGCONT);
    /* Reconnects by itself; ready again. */
    assert_true(run_until(&R.ready, 1, 5000));
    roundtrip(ac, "GET", "xa", NULL, "1");

    /* A restart: not ready (commands refused at once), then ready again. */
    int downs = R.ready_changes[0];
    sk_test_redis_stop(r1, SIGKILL);
    assert_true(run_until(&R.ready_changes[0], downs + 1, 5000));
    assert_int_equal(rcl_async_ready(ac), 0);
    assert_int_equal(send3(ac, 0, "GET", "xa", NULL), -1);
    assert_int_equal(sk_test_redis_restart(r1, err, sizeof(err)), 0);
    assert_true(run_until(&R.ready, 1, 5000));
    roundtrip(ac, "SET", "xc", "3", "OK");
    rcl_async_free(ac);
    sk_test_redis_free(r1);
}

/* A pass-through client that connects while Redis loads its data (PING answers
 * LOADING) becomes ready once the load is over, without being made again. The load is
 * slowed by Redis's own debugging knob, key-load-delay (microseconds per key). */
static void test_pass_through_connect_while_loading(void **state)
{
    char err[512];
    const char *extra[] = {"--appendonly", "no", "--enable-debug-command", "local",
                           "--key-load-delay", "300", "--loading-process-events-interval-bytes",
                           "1024", NULL};
    sk_test_redis *r1 = sk_test_redis_start(extra, err, sizeof(err));
    assert_non_null(r1);
    redisContext *c = redisConnect("127.0.0.1", sk_test_redis_port(r1));
    assert_true(c && !c->err);
    redisReply *rep = redisCommand(c, "DEBUG POPULATE 10000 lk");
    assert_true(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    rep = redisCommand(c, "SAVE");
    assert_true(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    redisFree(c);
    assert_int_equal(sk_test_redis_respawn(r1, err, sizeof(err)), 0);

    /* wait until it answers, and the answer is LOADING */
    int loading = 0;
    for (int64_t deadline = now_ms() + 10000; !loading && now_ms() < deadline;) {
        c = redisConnect("127.0.0.1", sk_test_redis_port(r1));
        if (c && !c->err && (rep = redisCommand(c, "PING")) != NULL) {
            loading = rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "LOADING", 7) == 0;
            freeReplyObject(rep);
        }
        redisFree(c);
        if (!loading)
            usleep(20000); /* no readiness signal from redis-server: poll */
    }
    assert_true(loading);

    reset();
    rcl_async *ac = rcl_async_connect(sk_test_redis_url(r1), base, TV, err, sizeof(err));
    assert_non_null(ac);
    rcl_async_set_state_cb(ac, on_state, &R);
    assert_true(run_until(&R.ready, 1, 30000));
    /* ready means loaded: every key is there */
    c = redisConnect("127.0.0.1", sk_test_redis_port(r1));
    assert_true(c && !c->err);
    rep = redisCommand(c, "DBSIZE");
    assert_true(rep && rep->type == REDIS_REPLY_INTEGER);
    assert_int_equal(rep->integer, 10000);
    freeReplyObject(rep);
    redisFree(c);
    roundtrip(ac, "GET", "lk:9999", NULL, "value:9999");
    rcl_async_free(ac);
    sk_test_redis_free(r1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commands_every_master_and_crossslot),
        cmocka_unit_test(test_moved_ask_noscript),
        cmocka_unit_test(test_free_calls_every_callback),
        cmocka_unit_test(test_failover_same_context),
        cmocka_unit_test(test_pass_through_timeout_and_restart),
        cmocka_unit_test(test_pass_through_connect_while_loading),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
