/* librlock leaves no key behind (issue 34): the fencing counter expires
 * fence_retention_ms after its last use, and tokens stay strictly increasing across that
 * expiry (lua/rlock_fence.lua). Against the shared Redis of deploy/local.sh up, with a
 * short retention configured for the test.
 *
 * RLOCK_RETENTION_NAMES distinct names (default 10,000; test_rlock_retention_long, label
 * long: 100,000) are locked by 4 threads with a client each; half are unlocked, half left
 * to their lease; after the leases and the retention a SCAN finds no key of the run, in
 * native mode and (a tenth as many) in Redisson mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlock_test_util.h"

#define RETAIN_MS 500
#define LEASE_MS 3000 /* above a stalled round trip of the shared, loaded Redis */
#define THREADS 4

static const char *url;
static redisContext *raw;

static int setup(void **state)
{
    (void)state;
    url = rt_redis_url();
    if (url)
        raw = rt_connect(url);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (raw)
        redisFree(raw);
    return 0;
}

static rlock_client_t *client(int redisson)
{
    char err[256];
    rlock_client_opts o = {.redisson = redisson, .fence_retention_ms = RETAIN_MS};
    rlock_client_t *c = rlock_client_new(url, &o, err, sizeof(err));
    if (c == NULL)
        fail_msg("rlock_client_new: %s", err);
    return c;
}

/* Keys whose name contains `pat` (SCAN, so a busy shared Redis is not blocked). */
static long long count_keys(const char *pat)
{
    char cursor[32] = "0";
    long long n = 0;
    do {
        redisReply *r = redisCommand(raw, "SCAN %s MATCH *%s* COUNT 5000", cursor, pat);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        n += (long long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

/* Waits up to wait_ms for no key matching pat. @returns the count left. */
static long long wait_no_keys(const char *pat, int64_t wait_ms)
{
    int64_t end = rt_now_ms() + wait_ms;
    long long n;
    while ((n = count_keys(pat)) > 0 && rt_now_ms() < end)
        rt_sleep_ms(100);
    return n;
}

static const char *fence_key(char *buf, size_t sz, int redisson, const char *name)
{
    if (redisson)
        snprintf(buf, sz, "{%s}:rlock_fence", name);
    else
        snprintf(buf, sz, "rlock:{%s}:fence", name);
    return buf;
}

/* Every kind, both modes: tokens grow, the counter carries the retention as its TTL,
 * expires, and the next token is above every token before it. A counter found ahead of
 * the clock (as after a burst faster than one grant per microsecond) goes on from its
 * value + 1. */
static void test_fence_across_expiry(void **state)
{
    (void)state;
    if (url == NULL)
        skip();
    for (int rs = 0; rs <= 1; rs++) {
        rlock_client_t *c = client(rs);
        for (int k = RLOCK_SIMPLE; k <= RLOCK_WRITE; k++) {
            if (rs && k == RLOCK_SIMPLE)
                continue; /* Redisson mode keeps librlock's keys for simple locks */
            char name[128], fk[192];
            rt_name(name, sizeof(name), "fexp");
            rlock_t *l = rlock_new(c, name, (rlock_kind_t)k);
            assert_non_null(l);
            uint64_t max = 0, f = 0;
            for (int i = 0; i < 50; i++) {
                assert_int_equal(rlock_try_lock(l, 0, 5000, &f), 0);
                assert_true(f > max);
                max = f;
                assert_int_equal(rlock_unlock(l), 0);
            }
            fence_key(fk, sizeof(fk), rs, name);
            long long pttl = rt_int(raw, "PTTL %s", fk);
            assert_true(pttl > 0 && pttl <= RETAIN_MS);
            int64_t end = rt_now_ms() + 5000;
            while (rt_int(raw, "EXISTS %s", fk) == 1 && rt_now_ms() < end)
                rt_sleep_ms(20);
            assert_int_equal(rt_int(raw, "EXISTS %s", fk), 0);
            assert_int_equal(rlock_try_lock(l, 0, 5000, &f), 0);
            assert_true(f > max);
            assert_int_equal(rlock_unlock(l), 0);
            /* ahead of the clock: +1 from there, not back to the clock */
            uint64_t ahead = f + 1000000000ULL;
            rt_int(raw, "SET %s %" PRIu64 " PX 5000", fk, ahead);
            assert_int_equal(rlock_try_lock(l, 0, 5000, &f), 0);
            assert_true(f == ahead + 1);
            assert_int_equal(rlock_unlock(l), 0);
            rt_int(raw, "DEL %s", fk);
            rlock_free(l);
        }
        rlock_client_free(c);
    }
}

struct many {
    const char *tag;
    int from, to;
    int redisson;
    int failed;
};

/* Locks names tag-i for i in [from, to): simple ones (reentrant in Redisson mode) all,
 * and every 50th as each other kind; unlocks the even ones. */
static void *lock_many(void *p)
{
    struct many *m = p;
    char err[256];
    rlock_client_opts o = {.redisson = m->redisson, .fence_retention_ms = RETAIN_MS};
    rlock_client_t *c = rlock_client_new(url, &o, err, sizeof(err));
    if (c == NULL) {
        m->failed = 1;
        return NULL;
    }
    for (int i = m->from; i < m->to && !m->failed; i++) {
        char name[96];
        snprintf(name, sizeof(name), "%s-%d", m->tag, i);
        rlock_kind_t kind = m->redisson ? RLOCK_REENTRANT : RLOCK_SIMPLE;
        if (i % 50 == 0)
            kind = (rlock_kind_t)(i / 50 % 5);
        rlock_t *l = rlock_new(c, name, kind);
        int rv = l == NULL ? RLOCK_ERR_NOMEM : rlock_try_lock(l, 0, LEASE_MS, NULL);
        if (rv == 0 && i % 2 == 0)
            rv = rlock_unlock(l);
        if (rv != 0) {
            print_error("%s (kind %d): %s\n", name, (int)kind, l ? rlock_errstr(l) : "no handle");
            m->failed = 1;
        }
        rlock_free(l);
    }
    rlock_client_free(c);
    return NULL;
}

static void run_many(int redisson, int names)
{
    char tag[64];
    snprintf(tag, sizeof(tag), "ret%ldx%d", (long)getpid(), redisson);
    struct many m[THREADS];
    pthread_t th[THREADS];
    int64_t t0 = rt_now_ms();
    for (int i = 0; i < THREADS; i++) {
        m[i] = (struct many){.tag = tag, .from = names * i / THREADS, .to = names * (i + 1) / THREADS,
                             .redisson = redisson};
        assert_int_equal(pthread_create(&th[i], NULL, lock_many, &m[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(m[i].failed, 0);
    }
    int64_t took = rt_now_ms() - t0;
    long long during = count_keys(tag);
    assert_true(during > 0); /* the fence counters at least: there was something to expire */
    /* Redis expires in the background (sampling): allow it seconds beyond lease and retention */
    long long left = wait_no_keys(tag, LEASE_MS + RETAIN_MS + 30000);
    print_message("%s mode: %d names locked in %" PRId64 " ms, %lld keys after, %lld left after %d ms\n",
                  redisson ? "Redisson" : "native", names, took, during, left, LEASE_MS + RETAIN_MS);
    assert_int_equal(left, 0);
}

static void test_no_key_left(void **state)
{
    (void)state;
    if (url == NULL)
        skip();
    const char *e = getenv("RLOCK_RETENTION_NAMES");
    int names = e && atoi(e) > 0 ? atoi(e) : 10000;
    run_many(0, names);
    run_many(1, names / 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fence_across_expiry),
        cmocka_unit_test(test_no_key_left),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
