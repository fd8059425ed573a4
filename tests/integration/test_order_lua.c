/* Integration tests of seckill-order's Lua scripts on a real Redis, through SCRIPT LOAD
 * + EVALSHA as the service runs them (the embedded text: what is tested is what ships).
 * Every reserve.lua outcome, "a rejected request changes nothing", one call deciding many
 * orders in arrival order (mixed outcomes), cancel.lua idempotent and batched,
 * confirm.lua, event_load.lua, ratelimit.lua, and the NOSCRIPT
 * fallback on a throwaway redis-server whose script cache is flushed.
 * Fresh event ids per run, keys deleted at the end; nothing else is touched. */
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
#include <openssl/evp.h>

#include "order_msg.h"
#include "seckill_lua.h"
#include "sk_test_redis.h"
#include "test_order_support.h"

static redisContext *rc;
static uint64_t next_event;

static uint64_t fresh_event(void)
{
    return next_event++;
}

static void sha1_hex(const char *text, char out[41])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(text, strlen(text), md, &len, EVP_sha1(), NULL);
    for (unsigned i = 0; i < 20; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* EVALSHA name with keys and args (strings); returns the reply (caller frees). */
static redisReply *evalsha(redisContext *c, const char *name, int nkeys, int n, const char **args)
{
    char sha[41], nk[8];
    sha1_hex(seckill_lua_find(name), sha);
    snprintf(nk, sizeof(nk), "%d", nkeys);
    const char *argv[64] = {"EVALSHA", sha, nk};
    assert_true(3 + n <= 64);
    for (int i = 0; i < n; i++)
        argv[3 + i] = args[i];
    return redisCommandArgv(c, 3 + n, argv, NULL);
}

static long long evalsha_int(const char *name, int nkeys, int n, const char **args)
{
    redisReply *r = evalsha(rc, name, nkeys, n, args);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("%s: reply type %d %s", name, r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

typedef struct {
    char k[ORDER_KEY_COUNT][ORDER_KEY_MAX];
    char pattern[ORDER_KEY_MAX];
    uint64_t id;
} ev_keys;

static void keys_of(uint64_t id, ev_keys *e)
{
    e->id = id;
    for (int i = 0; i < ORDER_KEY_COUNT; i++)
        order_key(id, (order_key_kind)i, e->k[i], ORDER_KEY_MAX);
    snprintf(e->pattern, sizeof(e->pattern), "seckill:{e%" PRIu64 "}:*", id);
}

static void load_event(const ev_keys *e, long long stock, int64_t starts, int64_t ends, long long want)
{
    char s[24], a[24], b[24];
    snprintf(s, sizeof(s), "%lld", stock);
    snprintf(a, sizeof(a), "%" PRId64, starts);
    snprintf(b, sizeof(b), "%" PRId64, ends);
    const char *args[] = {e->k[ORDER_KEY_STOCK], e->k[ORDER_KEY_META], s, a, b, "1"};
    assert_int_equal(evalsha_int("event_load", 2, 6, args), want);
}

/* The order a duplicate named, per pair of the last reserve_batch ("" when none). */
static char held[30][24];

/* reserve.lua for n (users[i], orders[i]) pairs in one call, as the front sends the
 * orders of one loop turn: KEYS stock, buyers, meta, pending; ARGV now_ms, then the
 * pairs. Each pair's code into codes[i]; the reply must be an array of n integers, but
 * for a duplicate: the id of the order the user holds (code 2, the id into held[i]). */
static void reserve_batch(const ev_keys *e, int64_t now, int n, const char *const *users,
                          const char *const *orders, long long *codes)
{
    char nows[24];
    snprintf(nows, sizeof(nows), "%" PRId64, now);
    const char *args[60] = {e->k[ORDER_KEY_STOCK], e->k[ORDER_KEY_BUYERS], e->k[ORDER_KEY_META],
                            e->k[ORDER_KEY_PENDING], nows};
    assert_true(5 + 2 * n <= 60);
    for (int i = 0; i < n; i++) {
        args[5 + 2 * i] = users[i];
        args[6 + 2 * i] = orders[i];
    }
    redisReply *r = evalsha(rc, "reserve", 4, 5 + 2 * n, args);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ARRAY)
        fail_msg("reserve: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    assert_int_equal(r->elements, n);
    for (int i = 0; i < n; i++) {
        held[i][0] = 0;
        if (r->element[i]->type == REDIS_REPLY_STRING) {
            snprintf(held[i], sizeof(held[i]), "%s", r->element[i]->str);
            codes[i] = 2;
            continue;
        }
        assert_int_equal(r->element[i]->type, REDIS_REPLY_INTEGER);
        codes[i] = r->element[i]->integer;
    }
    freeReplyObject(r);
}

/* One pair: its code. */
static long long reserve(const ev_keys *e, const char *user, const char *order, int64_t now)
{
    long long code;
    reserve_batch(e, now, 1, &user, &order, &code);
    return code;
}

static long long cancel(const ev_keys *e, const char *order, const char *user)
{
    const char *args[] = {e->k[ORDER_KEY_STOCK], e->k[ORDER_KEY_BUYERS], e->k[ORDER_KEY_PENDING],
                          order, user};
    return evalsha_int("cancel", 3, 5, args);
}

static long long confirm(const ev_keys *e, const char *order)
{
    const char *args[] = {e->k[ORDER_KEY_PENDING], order};
    return evalsha_int("confirm", 1, 2, args);
}

static long long get_int(const char *key)
{
    redisReply *r = redisCommand(rc, "GET %s", key);
    long long v = (r && r->type == REDIS_REPLY_STRING) ? strtoll(r->str, NULL, 10) : -999;
    freeReplyObject(r);
    return v;
}

static long long cmd_int(const char *fmt, const char *key, const char *arg)
{
    redisReply *r = arg ? redisCommand(rc, fmt, key, arg) : redisCommand(rc, fmt, key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void drop(const ev_keys *e)
{
    for (int i = 0; i < ORDER_KEY_COUNT; i++)
        freeReplyObject(redisCommand(rc, "DEL %s", e->k[i]));
}

static void test_script_load(void **state)
{
    const char *names[] = {"reserve", "cancel", "confirm", "ratelimit", "event_load", "event_reload", "borrow"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *body = seckill_lua_find(names[i]);
        assert_non_null(body);
        char sha[41];
        sha1_hex(body, sha);
        redisReply *r = redisCommand(rc, "SCRIPT LOAD %s", body);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, sha); /* the SHA the service computes locally */
        freeReplyObject(r);
    }
}

static void test_reserve_outcomes(void **state)
{
    int64_t now = 1795341600000LL;
    ev_keys e, future, past;
    keys_of(fresh_event(), &e);
    keys_of(fresh_event(), &future);
    keys_of(fresh_event(), &past);
    char before[8192], after[8192];

    /* 5: event not loaded, and nothing is created by asking */
    assert_int_equal(reserve(&e, "1", "101", now), 5);
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(after, "");

    load_event(&e, 2, now - 1000, now + 3600000, 1);
    load_event(&e, 999, now, now + 1, 0); /* already loaded: untouched */
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 2);
    load_event(&future, 5, now + 60000, now + 120000, 1);
    load_event(&past, 5, now - 120000, now - 60000, 1);

    /* 3 not started, 4 ended: nothing changes */
    to_redis_snapshot(rc, future.pattern, before, sizeof(before));
    assert_int_equal(reserve(&future, "1", "102", now), 3);
    to_redis_snapshot(rc, future.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    to_redis_snapshot(rc, past.pattern, before, sizeof(before));
    assert_int_equal(reserve(&past, "1", "103", now), 4);
    assert_int_equal(reserve(&past, "1", "103", now - 60000), 4); /* ends_at is exclusive */
    to_redis_snapshot(rc, past.pattern, after, sizeof(after));
    assert_string_equal(before, after);

    /* 0 ok: DECR, HSET buyers user -> order, HSET pending order -> user:ts */
    assert_int_equal(reserve(&e, "1", "104", now), 0);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 1);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_BUYERS], "1"), 1);
    redisReply *r = redisCommand(rc, "HGET %s 1", e.k[ORDER_KEY_BUYERS]);
    assert_string_equal(r->str, "104");
    freeReplyObject(r);
    r = redisCommand(rc, "HGET %s 104", e.k[ORDER_KEY_PENDING]);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "1:1795341600000");
    freeReplyObject(r);

    /* 2 duplicate, however many times, naming the order held: nothing changes */
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    for (int i = 0; i < 5; i++) {
        assert_int_equal(reserve(&e, "1", "105", now), 2);
        assert_string_equal(held[0], "104");
    }
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);

    /* the last unit, then 1 sold out (also for a buyer: stock is checked first) */
    assert_int_equal(reserve(&e, "2", "106", now), 0);
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    assert_int_equal(reserve(&e, "3", "107", now), 1);
    assert_int_equal(reserve(&e, "1", "108", now), 1);
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 0); /* never below zero */
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_BUYERS], NULL), 2);
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_PENDING], NULL), 2);
    drop(&e);
    drop(&future);
    drop(&past);
}

static void test_cancel_idempotent(void **state)
{
    int64_t now = 1795341600000LL;
    ev_keys e;
    keys_of(fresh_event(), &e);
    load_event(&e, 1, now - 1000, now + 3600000, 1);
    assert_int_equal(reserve(&e, "7", "201", now), 0);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 0);
    char before[8192], after[8192];
    /* another user's cancel of the order changes nothing */
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    assert_int_equal(cancel(&e, "201", "8"), -1);
    assert_int_equal(cancel(&e, "201", "77"), -1); /* "7" is a prefix of "77": still refused */
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    /* the first cancel gives everything back */
    assert_int_equal(cancel(&e, "201", "7"), 1);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 1);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_BUYERS], "7"), 0);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_PENDING], "201"), 0);
    /* a second (and third) changes nothing */
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    assert_int_equal(cancel(&e, "201", "7"), 0);
    assert_int_equal(cancel(&e, "201", "7"), 0);
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    /* the stock sells again; a confirmed order cannot be cancelled */
    assert_int_equal(reserve(&e, "7", "202", now), 0);
    assert_int_equal(confirm(&e, "202"), 1);
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    assert_int_equal(cancel(&e, "202", "7"), 0);
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    drop(&e);
}

static void test_confirm_and_status(void **state)
{
    int64_t now = 1795341600000LL;
    ev_keys e;
    keys_of(fresh_event(), &e);
    load_event(&e, 10, now - 1000, now + 3600000, 1);
    assert_int_equal(reserve(&e, "9", "301", now), 0);
    /* what GET reads for a 'p' index entry (order_read.c): the pending hash's field */
    redisReply *r = redisCommand(rc, "HGET %s %s", e.k[ORDER_KEY_PENDING], "301");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "9:1795341600000");
    freeReplyObject(r);
    assert_int_equal(confirm(&e, "301"), 1);
    assert_int_equal(confirm(&e, "301"), 0); /* once */
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_PENDING], "301"), 0);
    /* several ids in one call (the front's per-loop-turn batch): one HDEL, the count of
     * the pending ones, a repeat confirms nothing */
    assert_int_equal(reserve(&e, "13", "306", now), 0);
    assert_int_equal(reserve(&e, "14", "307", now), 0);
    const char *batch[] = {e.k[ORDER_KEY_PENDING], "306", "308", "307"};
    assert_int_equal(evalsha_int("confirm", 1, 4, batch), 2);
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_PENDING], NULL), 0);
    assert_int_equal(evalsha_int("confirm", 1, 4, batch), 0);
    /* the retired accepted hash: a caller still naming it as KEYS[2] gets the plain
     * HDEL, and nothing is moved there any more */
    char accepted[ORDER_KEY_MAX];
    snprintf(accepted, sizeof(accepted), "%s", e.k[ORDER_KEY_PENDING]);
    memcpy(strstr(accepted, ":pending"), ":accepted", sizeof(":accepted"));
    assert_int_equal(reserve(&e, "15", "309", now), 0);
    const char *old_form[] = {e.k[ORDER_KEY_PENDING], accepted, "309"};
    assert_int_equal(evalsha_int("confirm", 2, 3, old_form), 1);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_PENDING], "309"), 0);
    assert_int_equal(cmd_int("EXISTS %s", accepted, NULL), 0);
    drop(&e);
}


/* One call with mixed outcomes, decided in arrival order: a user twice (the second is a
 * duplicate), the stock running out inside the call (sold out from there on, also for
 * a user who already holds an order), and the state equal to what one call per pair
 * would leave: stock 0, only the accepted pairs in buyers and pending. */
static void test_reserve_batch_mixed(void **state)
{
    (void)state;
    int64_t now = 1795341600000LL;
    ev_keys e, future;
    keys_of(fresh_event(), &e);
    keys_of(fresh_event(), &future);
    load_event(&e, 3, now - 1000, now + 3600000, 1);
    load_event(&future, 5, now + 60000, now + 120000, 1);
    assert_int_equal(reserve(&e, "40", "400", now), 0); /* a buyer from an earlier call */
    const char *users[] = {"41", "41", "40", "42", "43", "41", "44"};
    const char *orders[] = {"401", "402", "403", "404", "405", "406", "407"};
    long long codes[7];
    reserve_batch(&e, now, 7, users, orders, codes);
    long long want[7] = {0, 2, 2, 0, 1, 1, 1};
    for (int i = 0; i < 7; i++)
        assert_int_equal(codes[i], want[i]);
    assert_string_equal(held[1], "401"); /* the same user earlier in this call */
    assert_string_equal(held[2], "400"); /* a buyer from an earlier call */
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 0);
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_BUYERS], NULL), 3); /* 40 41 42 */
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_BUYERS], "43"), 0);
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_PENDING], NULL), 3);
    redisReply *r = redisCommand(rc, "HGET %s 401", e.k[ORDER_KEY_PENDING]);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "41:1795341600000");
    freeReplyObject(r);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_PENDING], "402"), 0);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_PENDING], "404"), 1);

    /* an event not started, and one not loaded: every pair refused, nothing changed */
    char before[8192], after[8192];
    to_redis_snapshot(rc, future.pattern, before, sizeof(before));
    reserve_batch(&future, now, 3, users, orders, codes);
    for (int i = 0; i < 3; i++)
        assert_int_equal(codes[i], 3);
    to_redis_snapshot(rc, future.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    ev_keys none;
    keys_of(fresh_event(), &none);
    reserve_batch(&none, now, 2, users + 3, orders + 3, codes);
    assert_int_equal(codes[0], 5);
    assert_int_equal(codes[1], 5);
    to_redis_snapshot(rc, none.pattern, after, sizeof(after));
    assert_string_equal(after, "");

    /* ARGV that is not now_ms plus pairs: an error, nothing changed */
    load_event(&none, 5, now - 1000, now + 3600000, 1);
    to_redis_snapshot(rc, none.pattern, before, sizeof(before));
    const char *odd[] = {none.k[ORDER_KEY_STOCK], none.k[ORDER_KEY_BUYERS], none.k[ORDER_KEY_META],
                         none.k[ORDER_KEY_PENDING], "1795341600000", "50"};
    r = evalsha(rc, "reserve", 4, 6, odd);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    r = evalsha(rc, "reserve", 4, 5, odd); /* now_ms alone */
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    to_redis_snapshot(rc, none.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    drop(&e);
    drop(&future);
    drop(&none);
}

/* cancel.lua with several pairs (the front's batched cancels): one code per pair in an
 * array, each as a call of its own would answer; the stock comes back once per order. */
static void test_cancel_batch(void **state)
{
    (void)state;
    int64_t now = 1795341600000LL;
    ev_keys e;
    keys_of(fresh_event(), &e);
    load_event(&e, 5, now - 1000, now + 3600000, 1);
    const char *users[] = {"51", "52", "53"};
    const char *orders[] = {"501", "502", "503"};
    long long codes[3];
    reserve_batch(&e, now, 3, users, orders, codes);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 2);
    /* 501 by its owner; 502 by someone else; 501 again; 509 never reserved; 503 */
    const char *args[] = {e.k[ORDER_KEY_STOCK], e.k[ORDER_KEY_BUYERS], e.k[ORDER_KEY_PENDING],
                          "501", "51", "502", "9", "501", "51", "509", "59", "503", "53"};
    redisReply *r = evalsha(rc, "cancel", 3, 13, args);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 5);
    long long want[5] = {1, -1, 0, 0, 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(r->element[i]->integer, want[i]);
    freeReplyObject(r);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 4);
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_BUYERS], NULL), 1); /* 52 */
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_PENDING], NULL), 1);  /* 502 */
    /* an odd ARGV: an error, nothing changed */
    char before[8192], after[8192];
    to_redis_snapshot(rc, e.pattern, before, sizeof(before));
    r = evalsha(rc, "cancel", 3, 4, args);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    to_redis_snapshot(rc, e.pattern, after, sizeof(after));
    assert_string_equal(before, after);
    drop(&e);
}

static void test_ratelimit(void **state)
{
    char key[ORDER_KEY_MAX];
    order_key_ratelimit(next_event++, key, sizeof(key)); /* a user id nobody else uses */
    const char *at0[] = {key, "1", "3", "1000000"};
    int ok = 0;
    for (int i = 0; i < 6; i++)
        ok += (int)evalsha_int("ratelimit", 1, 4, at0);
    assert_int_equal(ok, 3); /* the burst */
    const char *at500[] = {key, "1", "3", "1000500"};
    assert_int_equal(evalsha_int("ratelimit", 1, 4, at500), 0);
    const char *at1000[] = {key, "1", "3", "1001000"};
    assert_int_equal(evalsha_int("ratelimit", 1, 4, at1000), 1);
    assert_int_equal(evalsha_int("ratelimit", 1, 4, at1000), 0);
    long long ttl = cmd_int("PTTL %s", key, NULL);
    assert_true(ttl > 0 && ttl <= 4000);
    freeReplyObject(redisCommand(rc, "DEL %s", key));
    /* taken in batches (the per-event bucket): as many whole tokens as there are, up to
     * the number wanted */
    const char *b0[] = {key, "2", "3", "2000000", "5"};
    assert_int_equal(evalsha_int("ratelimit", 1, 5, b0), 3);
    assert_int_equal(evalsha_int("ratelimit", 1, 5, b0), 0);
    const char *b1[] = {key, "2", "3", "2000750", "5"}; /* 1.5 tokens back */
    assert_int_equal(evalsha_int("ratelimit", 1, 5, b1), 1);
    const char *b2[] = {key, "2", "3", "2001000", "5"}; /* 0.5 + 0.5 */
    assert_int_equal(evalsha_int("ratelimit", 1, 5, b2), 1);
    freeReplyObject(redisCommand(rc, "DEL %s", key));
}

static void test_noscript_fallback(void **state)
{
    char err[256];
    sk_test_redis *tr = sk_test_redis_start(NULL, err, sizeof(err));
    if (!tr)
        fail_msg("redis-server: %s", err);
    redisContext *c = to_redis(sk_test_redis_url(tr));
    assert_non_null(c);
    freeReplyObject(redisCommand(c, "SCRIPT FLUSH"));
    const char *args[] = {"seckill:{e1}:stock", "seckill:{e1}:buyers", "seckill:{e1}:meta",
                          "seckill:{e1}:pending", "3", "1", "2"};
    redisReply *r = evalsha(c, "reserve", 4, 7, args);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_memory_equal(r->str, "NOSCRIPT", 8);
    freeReplyObject(r);
    /* the fallback: EVAL with the body, which caches it; EVALSHA works afterwards */
    const char *argv[10] = {"EVAL", seckill_lua_find("reserve"), "4"};
    for (int i = 0; i < 7; i++)
        argv[3 + i] = args[i];
    r = redisCommandArgv(c, 10, argv, NULL);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    assert_int_equal(r->element[0]->integer, 5);
    freeReplyObject(r);
    r = evalsha(c, "reserve", 4, 7, args);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 5);
    freeReplyObject(r);
    redisFree(c);
    sk_test_redis_free(tr);
}

/* release.lua on e's keys (EVAL: the body, whether loaded or not). */
static long long release_unit(const ev_keys *e, const char *order, const char *user)
{
    redisReply *r = redisCommand(rc, "EVAL %s 3 %s %s %s %s %s 0", seckill_lua_find("release"),
                                 e->k[ORDER_KEY_STOCK], e->k[ORDER_KEY_BUYERS],
                                 e->k[ORDER_KEY_RELEASED], order, user);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("release: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* An EVALSHA of event_reload.lua too long for evalsha() (argv: EVALSHA, sha, the rest);
 * on NOSCRIPT argv becomes an EVAL of the source, for this call and the next ones. */
static redisReply *script_argv(int n, const char **argv)
{
    redisReply *r = redisCommandArgv(rc, n, argv, NULL);
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(r);
        argv[0] = "EVAL";
        argv[1] = seckill_lua_find("event_reload");
        r = redisCommandArgv(rc, n, argv, NULL);
    }
    return r;
}

/* event_reload.lua: a lost gate rebuilt (stock, meta, buyers in chunks, the closed
 * orders into the released set, in chunks too), never over a live stock; a release
 * owed for a closed order the reload counted answers 0 and gives nothing. */
static void test_event_reload(void **state)
{
    (void)state;
    ev_keys e;
    keys_of(fresh_event(), &e);
    enum { USERS = 2500, CLOSED = 1200 }; /* more than one HSET/SADD chunk each */
    const char **argv = calloc(4 + 4 + 9 + USERS + CLOSED, sizeof(*argv));
    char (*ids)[24] = calloc(USERS + CLOSED, sizeof(*ids));
    char nusers[12];
    snprintf(nusers, sizeof(nusers), "%d", USERS);
    assert_non_null(argv);
    assert_non_null(ids);
    char sha[41];
    sha1_hex(seckill_lua_find("event_reload"), sha);
    int n = 0;
    argv[n++] = "EVALSHA";
    argv[n++] = sha;
    argv[n++] = "4";
    argv[n++] = e.k[ORDER_KEY_STOCK];
    argv[n++] = e.k[ORDER_KEY_META];
    argv[n++] = e.k[ORDER_KEY_BUYERS];
    argv[n++] = e.k[ORDER_KEY_RELEASED];
    argv[n++] = "7";
    argv[n++] = "1000";
    argv[n++] = "9000000000000";
    argv[n++] = "1";
    argv[n++] = "5"; /* ip_rate */
    argv[n++] = "0"; /* user_rate: none */
    argv[n++] = "9"; /* event_rate */
    argv[n++] = "20"; /* challenge_bits */
    argv[n++] = nusers;
    for (int i = 0; i < USERS; i++) { /* user:order (the buyers hash) */
        snprintf(ids[i], sizeof(ids[i]), "%d:%d", 1000 + i, 5000000 + i);
        argv[n++] = ids[i];
    }
    for (int i = USERS; i < USERS + CLOSED; i++) { /* closed orders' ids */
        snprintf(ids[i], sizeof(ids[i]), "%d", 7000000 + i);
        argv[n++] = ids[i];
    }
    /* a stale buyer left in the set is dropped: the set is rebuilt whole */
    freeReplyObject(redisCommand(rc, "HSET %s 42 1", e.k[ORDER_KEY_BUYERS]));
    /* a buyer that is not user:order is refused, nothing written */
    const char *buyer0 = argv[16];
    argv[16] = "1000";
    redisReply *bad = script_argv(n, argv);
    assert_non_null(bad);
    assert_int_equal(bad->type, REDIS_REPLY_ERROR);
    freeReplyObject(bad);
    assert_int_equal(cmd_int("EXISTS %s", e.k[ORDER_KEY_STOCK], NULL), 0);
    argv[16] = buyer0;
    /* a count that does not fit the ARGV is refused, nothing written */
    argv[15] = "999999";
    bad = script_argv(n, argv);
    assert_non_null(bad);
    assert_int_equal(bad->type, REDIS_REPLY_ERROR);
    freeReplyObject(bad);
    assert_int_equal(cmd_int("EXISTS %s", e.k[ORDER_KEY_STOCK], NULL), 0);
    assert_int_equal(cmd_int("SCARD %s", e.k[ORDER_KEY_RELEASED], NULL), 0);
    argv[15] = nusers;
    redisReply *r = script_argv(n, argv);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 7);
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_BUYERS], NULL), USERS);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_BUYERS], "42"), 0);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_BUYERS], "3499"), 1);
    assert_int_equal(cmd_int("SCARD %s", e.k[ORDER_KEY_RELEASED], NULL), CLOSED);
    /* the rate overrides are back in meta ("0": none), for fronts that learn them there */
    redisReply *m = redisCommand(rc, "HMGET %s ip_rate event_rate", e.k[ORDER_KEY_META]);
    assert_non_null(m);
    assert_int_equal(m->elements, 2);
    assert_string_equal(m->element[0]->str, "5");
    assert_string_equal(m->element[1]->str, "9");
    freeReplyObject(m);
    assert_int_equal(cmd_int("HEXISTS %s %s", e.k[ORDER_KEY_META], "user_rate"), 0);
    /* and the challenge's bits (issue 31): a rebuilt gate keeps its challenge */
    redisReply *cb = redisCommand(rc, "HGET %s challenge_bits", e.k[ORDER_KEY_META]);
    assert_non_null(cb);
    assert_string_equal(cb->str, "20");
    freeReplyObject(cb);
    /* a release owed for a closed order: the reloaded stock counts its unit already */
    assert_int_equal(release_unit(&e, ids[USERS + CLOSED - 1], "1001"), 0);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 7);
    /* an order closed after the reload's read is not in the set: its unit comes back */
    assert_int_equal(release_unit(&e, "6999999", "1002"), 1);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 8);
    freeReplyObject(redisCommand(rc, "DECR %s", e.k[ORDER_KEY_STOCK]));
    assert_int_equal(reserve(&e, "1000", "1", 5000), 2); /* a buyer before the loss */
    assert_string_equal(held[0], "5000000");             /* finds the order it holds */
    assert_int_equal(reserve(&e, "9", "2", 5000), 0);
    /* Loaded: a second reload changes nothing (the live stock is 6 now). */
    argv[0] = "EVAL";
    argv[1] = seckill_lua_find("event_reload");
    r = redisCommandArgv(rc, n, argv, NULL);
    assert_non_null(r);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    assert_int_equal(get_int(e.k[ORDER_KEY_STOCK]), 6);
    assert_int_equal(cmd_int("HLEN %s", e.k[ORDER_KEY_BUYERS], NULL), USERS + 1);
    free(argv);
    free(ids);
    drop(&e);
}

static int setup(void **state)
{
    if (!to_stack_available()) {
        fprintf(stderr, "SECKILL_REDIS_URL not set: run deploy/local.sh up and source .run/env\n");
        return -1;
    }
    rc = to_redis(getenv("SECKILL_REDIS_URL"));
    /* ids far above libidgen's (which start near 2^58 now) and unique per run */
    next_event = 8000000000000000000ULL + (uint64_t)getpid() * 1000000ULL + (uint64_t)(sk_test_now_ms() % 1000) * 1000;
    return rc ? 0 : -1;
}

/* Segmented stock (issue 19) on one Redis: K = 2 segments of one event, each loaded with
 * its share by event_load.lua (meta "segments" = 2). reserve.lua with the front's K
 * ("now:2"); a front that still believes K = 1 gets 100 + K and nothing changes; an empty
 * home segment holds the claim (6) and the unit is borrowed from segment 1 (borrow.lua);
 * the claim keeps the user to one order; cancel.lua gives a claim back without stock,
 * and a borrowed unit back to its lender; borrow.lua on an empty segment answers 1. */
static void test_segments(void **state)
{
    (void)state;
    int64_t now = 1795341600000LL;
    uint64_t id = fresh_event();
    ev_keys s0, s1;
    keys_of(id, &s0);
    s1.id = id;
    for (int i = 0; i < ORDER_KEY_COUNT; i++)
        order_key_seg(id, 1, (order_key_kind)i, s1.k[i], ORDER_KEY_MAX);
    char want[ORDER_KEY_MAX];
    snprintf(want, sizeof(want), "seckill:{e%" PRIu64 ".1}:stock", id);
    assert_string_equal(s1.k[ORDER_KEY_STOCK], want);
    char a[24], b[24];
    snprintf(a, sizeof(a), "%" PRId64, now - 1000);
    snprintf(b, sizeof(b), "%" PRId64, now + 3600000);
    const char *l0[] = {s0.k[ORDER_KEY_STOCK], s0.k[ORDER_KEY_META], "1", a, b, "1", "2"};
    const char *l1[] = {s1.k[ORDER_KEY_STOCK], s1.k[ORDER_KEY_META], "1", a, b, "1", "2"};
    assert_int_equal(evalsha_int("event_load", 2, 7, l0), 1);
    assert_int_equal(evalsha_int("event_load", 2, 7, l1), 1);

    /* a front that believes K = 1: 102, and nothing changes */
    char before[8192], after[8192];
    to_redis_snapshot(rc, s0.pattern, before, sizeof(before));
    assert_int_equal(reserve(&s0, "7", "700", now), 102);
    to_redis_snapshot(rc, s0.pattern, after, sizeof(after));
    assert_string_equal(before, after);

    char nowk[32];
    snprintf(nowk, sizeof(nowk), "%" PRId64 ":2", now);
    /* user 7 takes segment 0's only unit; user 8 (home 0 too, as the front says) gets a claim */
    const char *r7[] = {s0.k[0], s0.k[1], s0.k[2], s0.k[3], nowk, "7", "701"};
    redisReply *r = evalsha(rc, "reserve", 4, 7, r7);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    const char *r8[] = {s0.k[0], s0.k[1], s0.k[2], s0.k[3], nowk, "8", "801", "8", "802"};
    r = evalsha(rc, "reserve", 4, 9, r8);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 6); /* claim held */
    assert_int_equal(r->element[1]->type, REDIS_REPLY_STRING); /* one claim per user: */
    assert_string_equal(r->element[1]->str, "801");            /* a duplicate of 801 */
    freeReplyObject(r);
    assert_int_equal(get_int(s0.k[ORDER_KEY_STOCK]), 0);
    r = redisCommand(rc, "HGET %s 801", s0.k[ORDER_KEY_PENDING]);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char claim[48];
    snprintf(claim, sizeof(claim), "8:%" PRId64 ":c", now);
    assert_string_equal(r->str, claim);
    freeReplyObject(r);

    /* the borrow from segment 1: its unit, then empty */
    char nows[24];
    snprintf(nows, sizeof(nows), "%" PRId64, now);
    const char *bw[] = {s1.k[ORDER_KEY_STOCK], s1.k[ORDER_KEY_PENDING], nows, "8", "801", "9", "901"};
    r = evalsha(rc, "borrow", 2, 7, bw);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 0);
    assert_int_equal(r->element[1]->integer, 1);
    freeReplyObject(r);
    assert_int_equal(get_int(s1.k[ORDER_KEY_STOCK]), 0);
    assert_int_equal(cmd_int("HLEN %s", s1.k[ORDER_KEY_PENDING], NULL), 1);

    /* giving back: the claim releases the buyer and no stock at home; the borrowed unit
     * goes back to segment 1 */
    assert_int_equal(cancel(&s0, "801", "8"), 1);
    assert_int_equal(get_int(s0.k[ORDER_KEY_STOCK]), 0);
    assert_int_equal(cmd_int("HEXISTS %s %s", s0.k[ORDER_KEY_BUYERS], "8"), 0);
    assert_int_equal(cancel(&s1, "801", "8"), 1);
    assert_int_equal(get_int(s1.k[ORDER_KEY_STOCK]), 1);
    /* a segment not loaded: 5 */
    ev_keys s2;
    for (int i = 0; i < ORDER_KEY_COUNT; i++)
        order_key_seg(id, 2, (order_key_kind)i, s2.k[i], ORDER_KEY_MAX);
    const char *bw2[] = {s2.k[ORDER_KEY_STOCK], s2.k[ORDER_KEY_PENDING], nows, "8", "803"};
    r = evalsha(rc, "borrow", 2, 5, bw2);
    assert_int_equal(r->element[0]->integer, 5);
    freeReplyObject(r);
    drop(&s0);
    drop(&s1);
}

static int teardown(void **state)
{
    if (rc)
        redisFree(rc);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_script_load),
        cmocka_unit_test(test_reserve_outcomes),
        cmocka_unit_test(test_cancel_idempotent),
        cmocka_unit_test(test_reserve_batch_mixed),
        cmocka_unit_test(test_cancel_batch),
        cmocka_unit_test(test_confirm_and_status),
        cmocka_unit_test(test_ratelimit),
        cmocka_unit_test(test_noscript_fallback),
        cmocka_unit_test(test_event_reload),
        cmocka_unit_test(test_segments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
