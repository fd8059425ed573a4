/* Integration tests of the gate's scripts with several units per order (issue 31), on a
 * real Redis, through SCRIPT LOAD + EVALSHA of the embedded text: a per_user_limit of 1
 * refuses "order_id:q" and changes nothing; above 1, reserve.lua takes an order's units
 * all or none (S<left>, Q<limit>, L<held>:<order>), counts a user's units over their
 * orders in one call and across calls, and cancel.lua, release.lua, borrow.lua and
 * event_reload.lua count units. Fresh event ids per run, keys deleted at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <inttypes.h>

#include "order_msg.h"
#include "seckill_lua.h"
#include "sk_test_redis.h"
#include "test_order_support.h"

#define NOW 1795341600000LL

static redisContext *rc;
static uint64_t next_event;

/* The script's SHA1 as Redis computes it on SCRIPT LOAD (the service's own path). */
static void script_sha(const char *name, char sha[41])
{
    redisReply *r = redisCommand(rc, "SCRIPT LOAD %s", seckill_lua_find(name));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    snprintf(sha, 41, "%s", r->str);
    freeReplyObject(r);
}

/* EVALSHA name, nkeys, then args (keys first); the reply (caller frees). */
static redisReply *run(const char *name, int nkeys, int n, const char *const *args)
{
    char sha[41], nk[8];
    script_sha(name, sha);
    snprintf(nk, sizeof(nk), "%d", nkeys);
    const char *argv[40] = {"EVALSHA", sha, nk};
    assert_true(3 + n <= 40);
    for (int i = 0; i < n; i++)
        argv[3 + i] = args[i];
    redisReply *r = redisCommandArgv(rc, 3 + n, argv, NULL);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", name, r->str);
    return r;
}

static long long run_int(const char *name, int nkeys, int n, const char *const *args)
{
    redisReply *r = run(name, nkeys, n, args);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

typedef struct {
    char k[ORDER_KEY_COUNT][ORDER_KEY_MAX];
    char pattern[ORDER_KEY_MAX];
} ukeys;

static void ukeys_of(uint64_t id, unsigned seg, ukeys *e)
{
    for (int i = 0; i < ORDER_KEY_COUNT; i++)
        order_key_seg(id, seg, (order_key_kind)i, e->k[i], ORDER_KEY_MAX);
    if (seg)
        snprintf(e->pattern, sizeof(e->pattern), "seckill:{e%" PRIu64 ".%u}:*", id, seg);
    else
        snprintf(e->pattern, sizeof(e->pattern), "seckill:{e%" PRIu64 "}:*", id);
}

static void drop(const ukeys *e)
{
    for (int i = 0; i < ORDER_KEY_COUNT; i++)
        freeReplyObject(redisCommand(rc, "DEL %s", e->k[i]));
}

/* event_load.lua: stock, the sale open around NOW, per_user_limit, K segments. */
static void load(const ukeys *e, const char *stock, const char *limit, const char *segs)
{
    const char *args[] = {e->k[ORDER_KEY_STOCK], e->k[ORDER_KEY_META], stock, "1795341500000",
                          "1795345200000", limit, segs};
    assert_int_equal(run_int("event_load", 2, 7, args), 1);
}

/* reserve.lua with the five keys for n (user, order word) pairs; each pair's answer
 * into out[i] as text (an integer code printed, or the bulk string). */
static void reserve_n(const ukeys *e, const char *now, int n, const char *const *pairs,
                      char out[][32])
{
    const char *args[32] = {e->k[ORDER_KEY_STOCK], e->k[ORDER_KEY_BUYERS], e->k[ORDER_KEY_META],
                            e->k[ORDER_KEY_PENDING], e->k[ORDER_KEY_UNITS], now};
    for (int i = 0; i < 2 * n; i++)
        args[6 + i] = pairs[i];
    redisReply *r = run("reserve", 5, 6 + 2 * n, args);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, (size_t)n);
    for (int i = 0; i < n; i++) {
        redisReply *x = r->element[i];
        if (x->type == REDIS_REPLY_STRING)
            snprintf(out[i], 32, "%s", x->str);
        else
            snprintf(out[i], 32, "%lld", x->integer);
    }
    freeReplyObject(r);
}

static void reserve1(const ukeys *e, const char *user, const char *word, const char *want)
{
    char out[1][32];
    const char *pair[] = {user, word};
    reserve_n(e, "1795341600000", 1, pair, out);
    assert_string_equal(out[0], want);
}

static long long stock_of(const ukeys *e)
{
    redisReply *r = redisCommand(rc, "GET %s", e->k[ORDER_KEY_STOCK]);
    long long v = r && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* HGET key field as text ("" when absent). */
static void hget(const char *key, const char *field, char *out, size_t outsz)
{
    redisReply *r = redisCommand(rc, "HGET %s %s", key, field);
    snprintf(out, outsz, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

static void assert_hget(const char *key, const char *field, const char *want)
{
    char v[64];
    hget(key, field, v, sizeof(v));
    assert_string_equal(v, want);
}

static long long cancel4(const ukeys *e, const char *order, const char *user)
{
    const char *args[] = {e->k[ORDER_KEY_STOCK], e->k[ORDER_KEY_BUYERS], e->k[ORDER_KEY_PENDING],
                          e->k[ORDER_KEY_UNITS], order, user};
    return run_int("cancel", 4, 6, args);
}

/* per_user_limit 1: an order of several units is "Q1" and touches nothing; one unit
 * goes the way of before (no units hash). */
static void test_limit_one(void **state)
{
    (void)state;
    ukeys e;
    ukeys_of(next_event++, 0, &e);
    load(&e, "5", "1", "1");
    char before[4096], after[4096];
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    reserve1(&e, "1", "101:2", "Q1");
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    reserve1(&e, "1", "102", "0");
    reserve1(&e, "1", "103", "102"); /* the duplicate names the held order */
    assert_int_equal(stock_of(&e), 4);
    assert_int_equal(to_cmd_int(rc, "EXISTS %s", e.k[ORDER_KEY_UNITS]), 0);
    drop(&e);
}

/* per_user_limit 3, stock 5: all or none, the limit across a user's orders, the
 * answers' forms, and cancel.lua giving back units. */
static void test_units_all_or_none(void **state)
{
    (void)state;
    ukeys e;
    ukeys_of(next_event++, 0, &e);
    load(&e, "5", "3", "1");
    reserve1(&e, "1", "101:2", "0");
    assert_int_equal(stock_of(&e), 3);
    assert_hget(e.k[ORDER_KEY_UNITS], "1", "2");
    assert_hget(e.k[ORDER_KEY_BUYERS], "1", "101");
    assert_hget(e.k[ORDER_KEY_PENDING], "101", "1:1795341600000:2");

    char before[4096], after[4096];
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    reserve1(&e, "1", "102:2", "L2:101"); /* 2 held + 2 > 3 */
    reserve1(&e, "2", "201:4", "Q3");     /* over the limit alone */
    reserve1(&e, "2", "202:0", "Q3");
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);

    reserve1(&e, "1", "103", "0"); /* the third unit of user 1, in a second order */
    assert_hget(e.k[ORDER_KEY_UNITS], "1", "3");
    assert_hget(e.k[ORDER_KEY_BUYERS], "1", "103");
    assert_hget(e.k[ORDER_KEY_PENDING], "103", "1:1795341600000");
    reserve1(&e, "1", "104", "L3:103");
    assert_int_equal(stock_of(&e), 2);

    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    reserve1(&e, "2", "203:3", "S2"); /* more than is left: none taken */
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);

    /* one call: user 2 takes one, user 4 wants 2 of the 1 left, then takes it; user 5
     * finds none */
    char out[4][32];
    const char *pairs[] = {"2", "204", "4", "401:2", "4", "402", "5", "501"};
    reserve_n(&e, "1795341600000", 4, pairs, out);
    assert_string_equal(out[0], "0");
    assert_string_equal(out[1], "S1");
    assert_string_equal(out[2], "0");
    assert_string_equal(out[3], "1");
    assert_int_equal(stock_of(&e), 0);
    assert_hget(e.k[ORDER_KEY_UNITS], "4", "1");

    /* cancel gives back q units; the buyer stays while units remain */
    assert_int_equal(cancel4(&e, "101", "1"), 1);
    assert_int_equal(stock_of(&e), 2);
    assert_hget(e.k[ORDER_KEY_UNITS], "1", "1");
    assert_hget(e.k[ORDER_KEY_BUYERS], "1", "103");
    assert_int_equal(cancel4(&e, "101", "1"), 0); /* twice: nothing */
    assert_int_equal(cancel4(&e, "103", "1"), 1);
    assert_int_equal(stock_of(&e), 3);
    assert_hget(e.k[ORDER_KEY_UNITS], "1", "");
    assert_hget(e.k[ORDER_KEY_BUYERS], "1", "");
    reserve1(&e, "1", "105:3", "0"); /* the user may buy up to the limit again */
    assert_int_equal(stock_of(&e), 0);
    drop(&e);
}

/* One call counts a user's units over its own pairs: 2, then 2 more past the limit of
 * 3 (refused, naming the first), then 1 more; the units hash ends at 3. */
static void test_units_one_call(void **state)
{
    (void)state;
    ukeys e;
    ukeys_of(next_event++, 0, &e);
    load(&e, "10", "3", "1");
    char out[3][32];
    const char *pairs[] = {"3", "301:2", "3", "302:2", "3", "303"};
    reserve_n(&e, "1795341600000", 3, pairs, out);
    assert_string_equal(out[0], "0");
    assert_string_equal(out[1], "L2:301");
    assert_string_equal(out[2], "0");
    assert_int_equal(stock_of(&e), 7);
    assert_hget(e.k[ORDER_KEY_UNITS], "3", "3");
    assert_hget(e.k[ORDER_KEY_BUYERS], "3", "303");
    assert_hget(e.k[ORDER_KEY_PENDING], "302", "");
    drop(&e);
}

/* release.lua with a quantity: q units back, exactly once; with rebuy the units leave
 * the user's count (the buyer with the last), without rebuy they stay counted. */
static void test_release_units(void **state)
{
    (void)state;
    ukeys e;
    ukeys_of(next_event++, 0, &e);
    load(&e, "6", "4", "1");
    reserve1(&e, "1", "101:3", "0");
    reserve1(&e, "2", "201:2", "0");
    assert_int_equal(stock_of(&e), 1);
    const char *rel[] = {e.k[ORDER_KEY_STOCK], e.k[ORDER_KEY_BUYERS], e.k[ORDER_KEY_RELEASED],
                         e.k[ORDER_KEY_UNITS], "101", "1", "1", "3"};
    assert_int_equal(run_int("release", 4, 8, rel), 1);
    assert_int_equal(run_int("release", 4, 8, rel), 0);
    assert_int_equal(stock_of(&e), 4);
    assert_hget(e.k[ORDER_KEY_UNITS], "1", "");
    assert_hget(e.k[ORDER_KEY_BUYERS], "1", "");
    const char *keep[] = {e.k[ORDER_KEY_STOCK], e.k[ORDER_KEY_BUYERS], e.k[ORDER_KEY_RELEASED],
                          e.k[ORDER_KEY_UNITS], "201", "2", "0", "2"};
    assert_int_equal(run_int("release", 4, 8, keep), 1);
    assert_int_equal(stock_of(&e), 6);
    assert_hget(e.k[ORDER_KEY_UNITS], "2", "2"); /* kept out: still counted */
    reserve1(&e, "2", "202:3", "L2:201");
    drop(&e);
}

/* K = 2: an empty home segment claims q units (6, "user:ts:q:c"), borrow.lua takes all
 * q from one lender or none, and cancel.lua gives back exactly what each entry holds. */
static void test_segments_units(void **state)
{
    (void)state;
    uint64_t id = next_event++;
    ukeys s0, s1;
    ukeys_of(id, 0, &s0);
    ukeys_of(id, 1, &s1);
    load(&s0, "0", "3", "2");
    load(&s1, "2", "3", "2");
    char out[1][32];
    const char *pair[] = {"7", "701:3"};
    reserve_n(&s0, "1795341600000:2", 1, pair, out);
    assert_string_equal(out[0], "6");
    assert_hget(s0.k[ORDER_KEY_PENDING], "701", "7:1795341600000:3:c");
    assert_hget(s0.k[ORDER_KEY_UNITS], "7", "3");
    const char *bw[] = {s1.k[ORDER_KEY_STOCK], s1.k[ORDER_KEY_PENDING], "1795341600000", "7",
                        "701:3", "8", "801:2"};
    redisReply *r = run("borrow", 2, 7, bw);
    assert_int_equal(r->element[0]->integer, 1); /* 3 wanted, 2 there: none taken */
    assert_int_equal(r->element[1]->integer, 0);
    freeReplyObject(r);
    assert_int_equal(stock_of(&s1), 0);
    assert_hget(s1.k[ORDER_KEY_PENDING], "801", "8:1795341600000:2");
    assert_int_equal(cancel4(&s0, "701", "7"), 1); /* the claim: no stock at home */
    assert_int_equal(stock_of(&s0), 0);
    assert_hget(s0.k[ORDER_KEY_UNITS], "7", "");
    assert_int_equal(cancel4(&s1, "801", "8"), 1); /* the borrowed units to their lender */
    assert_int_equal(stock_of(&s1), 2);
    drop(&s0);
    drop(&s1);
}

/* event_reload.lua rebuilds the units hash from "user:order:units" buyers, whole. */
static void test_reload_units(void **state)
{
    (void)state;
    ukeys e;
    ukeys_of(next_event++, 0, &e);
    freeReplyObject(redisCommand(rc, "HSET %s 9 9", e.k[ORDER_KEY_UNITS])); /* stale */
    const char *args[] = {e.k[ORDER_KEY_STOCK], e.k[ORDER_KEY_META], e.k[ORDER_KEY_BUYERS],
                          e.k[ORDER_KEY_RELEASED], e.k[ORDER_KEY_UNITS], "4", "1795341500000",
                          "1795345200000", "3", "0", "0", "0", "0", "2", "5:501:2", "6:601:1"};
    assert_int_equal(run_int("event_reload", 5, 16, args), 1);
    assert_hget(e.k[ORDER_KEY_UNITS], "5", "2");
    assert_hget(e.k[ORDER_KEY_UNITS], "6", "1");
    assert_hget(e.k[ORDER_KEY_UNITS], "9", "");
    assert_hget(e.k[ORDER_KEY_BUYERS], "5", "501");
    reserve1(&e, "5", "502:2", "L2:501");
    reserve1(&e, "5", "503", "0");
    assert_int_equal(stock_of(&e), 3);
    drop(&e);
}

static int setup(void **state)
{
    (void)state;
    if (!to_stack_available()) {
        fprintf(stderr, "SECKILL_REDIS_URL not set: run deploy/local.sh up and source .run/env\n");
        return -1;
    }
    rc = to_redis(getenv("SECKILL_REDIS_URL"));
    /* ids far above libidgen's and test_order_lua's, unique per run */
    next_event = 8100000000000000000ULL + (uint64_t)getpid() * 1000000ULL +
                 (uint64_t)(sk_test_now_ms() % 1000) * 1000;
    return rc ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (rc)
        redisFree(rc);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_one),
        cmocka_unit_test(test_units_all_or_none),
        cmocka_unit_test(test_units_one_call),
        cmocka_unit_test(test_release_units),
        cmocka_unit_test(test_segments_units),
        cmocka_unit_test(test_reload_units),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
