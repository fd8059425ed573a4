/* rcluster, blocking API, on a throwaway 3+3 cluster (sk_test_cluster, with a password
 * so AUTH runs on every node connection) and on one plain Redis (pass-through):
 * rcl_keyslot against CLUSTER KEYSLOT, MOVED after a slot migration, ASK during one,
 * NOSCRIPT on a node that never saw the script, CROSSSLOT refused before sending,
 * pipelines across nodes answered in order, TRYAGAIN retried then handed over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcluster.h"
#include "sk_test_cluster.h"
#include "sk_test_redis.h"

#define PASS "cl-s3cret"

static sk_test_cluster *cl;
static rcl_ctx *ctx;
static const struct timeval TV = {2, 0};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
    char err[512];
    cl = sk_test_cluster_start(PASS, err, sizeof(err));
    if (!cl) {
        fprintf(stderr, "cluster: %s\n", err);
        return -1;
    }
    ctx = rcl_connect(sk_test_cluster_url(cl), TV, err, sizeof(err));
    if (!ctx) {
        fprintf(stderr, "rcl_connect: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    rcl_free(ctx);
    sk_test_cluster_free(cl);
    return 0;
}

static redisReply *cmd(const char *a0, const char *a1, const char *a2)
{
    const char *v[3] = {a0, a1, a2};
    return rcl_command_argv(ctx, a2 ? 3 : a1 ? 2 : 1, v, NULL);
}

static void expect_status(redisReply *r)
{
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("error reply: %s", r->str);
    freeReplyObject(r);
}

static void expect_str(redisReply *r, const char *want)
{
    assert_non_null(r);
    if (r->type != REDIS_REPLY_STRING)
        fail_msg("want \"%s\", got type %d %s", want, r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    assert_string_equal(r->str, want);
    freeReplyObject(r);
}

static void test_keyslot_matches_server(void **state)
{
    static const struct {
        const char *k;
        size_t n;
    } keys[] = {
        {"foo", 3}, {"bar", 3}, {"123456789", 9}, {"{user1000}.following", 21},
        {"{user1000}.followers", 20}, {"foo{}{bar}", 10}, {"foo{{bar}}zap", 13},
        {"foo{bar}{zap}", 13}, {"{}", 2}, {"{", 1}, {"}", 1}, {"a{b", 3}, {"tag at end{x}", 13},
        {"tag at end{}", 12}, {"", 0}, {"\x00\xff{\x01\x00}z", 7}, {"\xfe\x00\x80", 3},
        {"seckill:{ev42}:stock", 20}, {"rlock:{mylock}", 14}, {"idgen:{orders}:20261122", 23},
    };
    redisContext *rc = sk_test_cluster_connect(cl, 0);
    assert_non_null(rc);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *v[3] = {"CLUSTER", "KEYSLOT", keys[i].k};
        size_t l[3] = {7, 7, keys[i].n};
        redisReply *r = redisCommandArgv(rc, 3, v, l);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        if (r->integer != rcl_keyslot(keys[i].k, keys[i].n))
            fail_msg("key #%zu: server %lld, ours %d", i, r->integer, rcl_keyslot(keys[i].k, keys[i].n));
        freeReplyObject(r);
    }
    redisFree(rc);
    assert_int_equal(rcl_keyslot("123456789", 9), 0x31C3 & 16383); /* the spec's check value */
}

static void test_routing_every_master(void **state)
{
    assert_int_equal(rcl_is_cluster(ctx), 1);
    assert_int_equal(rcl_master_count(ctx), 3);
    char k[32], v[32];
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "route:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        expect_status(cmd("SET", k, v));
    }
    long long total = 0;
    for (int m = 0; m < 3; m++) {
        const char *v1[2] = {"DBSIZE"};
        redisReply *r = rcl_command_on_master(ctx, m, 1, v1, NULL);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_true(r->integer > 0); /* the keys spread over every master */
        total += r->integer;
        freeReplyObject(r);
    }
    assert_true(total >= 200);
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof(k), "route:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        expect_str(cmd("GET", k, NULL), v);
    }
}

static void test_crossslot_refused_before_sending(void **state)
{
    const char *v[5] = {"MSET", "xa", "1", "xb", "2"};
    assert_true(rcl_keyslot("xa", 2) != rcl_keyslot("xb", 2));
    assert_null(rcl_command_argv(ctx, 5, v, NULL));
    assert_memory_equal(rcl_errstr(ctx), "CROSSSLOT", 9);
    assert_int_equal(rcl_append_argv(ctx, 5, v, NULL), -1);
    /* Nothing was sent: neither key exists. */
    redisReply *r = cmd("EXISTS", "xa", NULL);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    const char *ev[6] = {"EVAL", "return 1", "2", "xa", "xb", "x"};
    assert_null(rcl_command_argv(ctx, 6, ev, NULL));
    assert_memory_equal(rcl_errstr(ctx), "CROSSSLOT", 9);
    /* One hash tag: one slot, accepted. */
    const char *ok[5] = {"MSET", "{x}a", "1", "{x}b", "2"};
    expect_status(rcl_command_argv(ctx, 5, ok, NULL));
}

static void test_pipeline_across_nodes_in_order(void **state)
{
    enum { N = 300 };
    char k[32], v[32];
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "pipe:%d", i);
        snprintf(v, sizeof(v), "%d", i * 7);
        const char *a[3] = {"SET", k, v};
        assert_int_equal(rcl_append_argv(ctx, 3, a, NULL), 0);
        const char *g[2] = {"GET", k};
        assert_int_equal(rcl_append_argv(ctx, 2, g, NULL), 0);
    }
    for (int i = 0; i < N; i++) {
        redisReply *r;
        assert_int_equal(rcl_get_reply(ctx, &r), 0);
        expect_status(r);
        assert_int_equal(rcl_get_reply(ctx, &r), 0);
        snprintf(v, sizeof(v), "%d", i * 7);
        expect_str(r, v);
    }
    redisReply *r;
    assert_int_equal(rcl_get_reply(ctx, &r), -1); /* nothing pending */
}

static void test_moved_after_migration(void **state)
{
    char err[512];
    const char *key = "{moved}k";
    int slot = rcl_keyslot(key, strlen(key));
    expect_status(cmd("SET", key, "before"));
    int to = sk_test_cluster_other_master(cl, slot);
    assert_true(to >= 0);
    if (sk_test_cluster_migrate_slot(cl, slot, to, err, sizeof(err)) != 0)
        fail_msg("migrate: %s", err);
    assert_int_equal(sk_test_cluster_master_of(cl, slot), to);
    /* Our map still names the old master: it answers MOVED, we follow. */
    expect_str(cmd("GET", key, NULL), "before");
    expect_status(cmd("SET", key, "after"));
    expect_str(cmd("GET", key, NULL), "after");
    /* In a pipeline too (the map is right now; move it back to get MOVED again). */
    int back = sk_test_cluster_other_master(cl, slot);
    if (sk_test_cluster_migrate_slot(cl, slot, back, err, sizeof(err)) != 0)
        fail_msg("migrate back: %s", err);
    const char *g[2] = {"GET", key}, *p[1] = {"PING"};
    assert_int_equal(rcl_append_argv(ctx, 2, g, NULL), 0);
    assert_int_equal(rcl_append_argv(ctx, 1, p, NULL), 0);
    assert_int_equal(rcl_append_argv(ctx, 2, g, NULL), 0);
    redisReply *r;
    assert_int_equal(rcl_get_reply(ctx, &r), 0);
    expect_str(r, "after");
    assert_int_equal(rcl_get_reply(ctx, &r), 0);
    expect_status(r);
    assert_int_equal(rcl_get_reply(ctx, &r), 0);
    expect_str(r, "after");
}

static void test_ask_during_migration(void **state)
{
    char err[512], from_id[41], to_id[41];
    const char *k1 = "{asking}one", *k2 = "{asking}two", *k3 = "{asking}new";
    int slot = rcl_keyslot(k1, strlen(k1));
    expect_status(cmd("SET", k1, "1"));
    expect_status(cmd("SET", k2, "2"));
    int from = sk_test_cluster_master_of(cl, slot), to = sk_test_cluster_other_master(cl, slot);
    assert_int_equal(sk_test_cluster_node_id(cl, from, from_id), 0);
    assert_int_equal(sk_test_cluster_node_id(cl, to, to_id), 0);
    redisReply *r = sk_test_cluster_cmd(cl, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id);
    expect_status(r);
    r = sk_test_cluster_cmd(cl, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id);
    expect_status(r);
    r = sk_test_cluster_cmd(cl, from, "MIGRATE 127.0.0.1 %d %s 0 5000 AUTH %s",
                            sk_test_cluster_port(cl, to), k1, PASS);
    expect_status(r);
    /* k1 has moved (the source answers ASK), k2 has not, k3 is new (ASK too). */
    expect_str(cmd("GET", k1, NULL), "1");
    expect_str(cmd("GET", k2, NULL), "2");
    expect_status(cmd("SET", k3, "3"));
    r = sk_test_cluster_cmd(cl, to, "ASKING");
    freeReplyObject(r);
    redisContext *tc = sk_test_cluster_connect(cl, to);
    r = redisCommand(tc, "ASKING");
    freeReplyObject(r);
    r = redisCommand(tc, "GET %s", k3);
    expect_str(r, "3"); /* it was written on the target */
    redisFree(tc);
    /* A multi-key command whose keys are split: TRYAGAIN, retried with backoff, then
     * handed to the caller (the split lasts until the migration ends). */
    const char *mg[3] = {"MGET", k1, k2};
    int64_t t0 = now_ms();
    r = rcl_command_argv(ctx, 3, mg, NULL);
    int64_t took = now_ms() - t0;
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_memory_equal(r->str, "TRYAGAIN", 8);
    freeReplyObject(r);
    assert_true(took >= 1000 && took < 6000);
    /* The ASKs did not change our map: k2 still comes from the source. */
    expect_str(cmd("GET", k2, NULL), "2");
    if (sk_test_cluster_migrate_slot(cl, slot, to, err, sizeof(err)) != 0)
        fail_msg("finish migration: %s", err);
    r = rcl_command_argv(ctx, 3, mg, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str, "1");
    assert_string_equal(r->element[1]->str, "2");
    freeReplyObject(r);
}

static void test_noscript_per_node(void **state)
{
    const char *body = "return redis.call('GET', KEYS[1])";
    char sha[41];
    assert_int_equal(rcl_script_add(ctx, body, sha), 0);
    /* One key per master: each node loads the script when it first answers NOSCRIPT. */
    char keys[3][32];
    int found = 0;
    for (int i = 0; found < 3 && i < 1000; i++) {
        char k[32];
        snprintf(k, sizeof(k), "ns:%d", i);
        int m = sk_test_cluster_master_of(cl, rcl_keyslot(k, strlen(k)));
        int dup = 0;
        for (int j = 0; j < found; j++)
            dup |= sk_test_cluster_master_of(cl, rcl_keyslot(keys[j], strlen(keys[j]))) == m;
        if (!dup)
            snprintf(keys[found++], sizeof(keys[0]), "%s", k);
    }
    assert_int_equal(found, 3);
    for (int i = 0; i < 3; i++) {
        expect_status(cmd("SET", keys[i], keys[i]));
        const char *v[4] = {"EVALSHA", sha, "1", keys[i]};
        expect_str(rcl_command_argv(ctx, 4, v, NULL), keys[i]);
    }
    /* Flush one master's cache: the next call there is NOSCRIPT, loaded, retried. */
    int m0 = sk_test_cluster_master_of(cl, rcl_keyslot(keys[0], strlen(keys[0])));
    redisReply *r = sk_test_cluster_cmd(cl, m0, "SCRIPT FLUSH");
    expect_status(r);
    r = sk_test_cluster_cmd(cl, m0, "SCRIPT EXISTS %s", sha);
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    const char *v[4] = {"EVALSHA", sha, "1", keys[0]};
    expect_str(rcl_command_argv(ctx, 4, v, NULL), keys[0]);
    /* Pipelined too. */
    r = sk_test_cluster_cmd(cl, m0, "SCRIPT FLUSH");
    expect_status(r);
    for (int i = 0; i < 3; i++) {
        const char *pv[4] = {"EVALSHA", sha, "1", keys[i]};
        assert_int_equal(rcl_append_argv(ctx, 4, pv, NULL), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rcl_get_reply(ctx, &r), 0);
        expect_str(r, keys[i]);
    }
    /* An unregistered digest is the caller's: NOSCRIPT is handed back. */
    const char *u[4] = {"EVALSHA", "0123456789012345678901234567890123456789", "1", keys[0]};
    r = rcl_command_argv(ctx, 4, u, NULL);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_memory_equal(r->str, "NOSCRIPT", 8);
    freeReplyObject(r);
    /* SCRIPT LOAD on every master. */
    const char *sl[3] = {"SCRIPT", "LOAD", "return 42"};
    assert_int_equal(rcl_command_all_masters(ctx, 3, sl, NULL), 0);
}

static void test_pubsub_node_and_auth(void **state)
{
    char err[512];
    redisContext *sub = rcl_connect_node(ctx, "chan", 4, err, sizeof(err));
    assert_non_null(sub);
    redisReply *r = redisCommand(sub, "SUBSCRIBE chan");
    freeReplyObject(r);
    /* PUBLISH from whichever node: the cluster broadcasts it. */
    r = cmd("PUBLISH", "chan", "hello");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[2]->str, "hello");
    freeReplyObject(r);
    redisFree(sub);
    /* A wrong password fails and is not shown. */
    char url[1024];
    snprintf(url, sizeof(url), "redis-cluster://:wrongpass@127.0.0.1:%d", sk_test_cluster_port(cl, 0));
    assert_null(rcl_connect(url, TV, err, sizeof(err)));
    assert_null(strstr(err, "wrongpass"));
    assert_null(rcl_connect("redis-cluster://127.0.0.1:1,", TV, err, sizeof(err)));
}

/* kill -9 of a key's master: the same context serves the key again once its replica is
 * promoted (refused connections refresh the map from any live node). Written with WAIT
 * first, so the replica has it. Last in the cluster tests: it leaves a node down. */
static void test_failover_same_context(void **state)
{
    char err[512];
    const char *key = "{failover}k";
    expect_status(cmd("SET", key, "kept"));
    const char *w[3] = {"WAIT", "1", "2000"};
    const char *g[2] = {"GET", key};
    assert_int_equal(rcl_append_argv(ctx, 2, g, NULL), 0);
    assert_int_equal(rcl_append_argv(ctx, 3, w, NULL), 0); /* goes to the key's master */
    redisReply *r;
    assert_int_equal(rcl_get_reply(ctx, &r), 0);
    expect_str(r, "kept");
    assert_int_equal(rcl_get_reply(ctx, &r), 0);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    int slot = rcl_keyslot(key, strlen(key));
    int m = sk_test_cluster_master_of(cl, slot);
    sk_test_redis_stop(sk_test_cluster_node(cl, m), SIGKILL);
    int64_t t0 = now_ms(), served = -1;
    while (now_ms() - t0 < 20000) {
        r = cmd("GET", key, NULL);
        if (r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "kept") == 0) {
            served = now_ms() - t0;
            freeReplyObject(r);
            break;
        }
        if (r)
            freeReplyObject(r);
    }
    print_message("failover: served again after %lld ms\n", (long long)served);
    assert_true(served >= 0);
    assert_int_not_equal(sk_test_cluster_master_of(cl, slot), m);
    if (sk_test_cluster_wait_ok(cl, slot, 20000, err, sizeof(err)) != 0)
        fail_msg("%s", err);
}

static void test_pass_through(void **state)
{
    char err[512];
    sk_test_redis *r1 = sk_test_redis_start(NULL, err, sizeof(err));
    assert_non_null(r1);
    rcl_ctx *p = rcl_connect(sk_test_redis_url(r1), TV, err, sizeof(err));
    assert_non_null(p);
    assert_int_equal(rcl_is_cluster(p), 0);
    assert_int_equal(rcl_master_count(p), 1);
    /* Keys of different slots are fine on one server. */
    const char *ms[5] = {"MSET", "xa", "1", "xb", "2"};
    expect_status(rcl_command_argv(p, 5, ms, NULL));
    const char *body = "return redis.call('GET', KEYS[1])";
    char sha[41];
    assert_int_equal(rcl_script_add(p, body, sha), 0);
    for (int i = 0; i < 2; i++) {
        const char *v[4] = {"EVALSHA", sha, "1", "xa"};
        assert_int_equal(rcl_append_argv(p, 4, v, NULL), 0);
        const char *g[2] = {"GET", "xb"};
        assert_int_equal(rcl_append_argv(p, 2, g, NULL), 0);
        redisReply *r;
        assert_int_equal(rcl_get_reply(p, &r), 0);
        expect_str(r, "1");
        assert_int_equal(rcl_get_reply(p, &r), 0);
        expect_str(r, "2");
        const char *fl[2] = {"SCRIPT", "FLUSH"};
        expect_status(rcl_command_argv(p, 2, fl, NULL));
    }
    /* The server restarts: one transparent retry on a fresh connection. */
    assert_int_equal(sk_test_redis_restart(r1, err, sizeof(err)), 0);
    const char *g[2] = {"GET", "xb"};
    expect_str(rcl_command_argv(p, 2, g, NULL), "2");
    redisContext *n = rcl_connect_node(p, NULL, 0, err, sizeof(err));
    assert_non_null(n);
    redisFree(n);
    rcl_free(p);
    sk_test_redis_free(r1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyslot_matches_server),
        cmocka_unit_test(test_routing_every_master),
        cmocka_unit_test(test_crossslot_refused_before_sending),
        cmocka_unit_test(test_pipeline_across_nodes_in_order),
        cmocka_unit_test(test_moved_after_migration),
        cmocka_unit_test(test_ask_during_migration),
        cmocka_unit_test(test_noscript_per_node),
        cmocka_unit_test(test_pubsub_node_and_auth),
        cmocka_unit_test(test_failover_same_context),
        cmocka_unit_test(test_pass_through),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
