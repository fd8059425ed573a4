/* librlock's shared command pipeline and its per-process waiter queue (rlock_gate.c),
 * on a throwaway Redis of their own, so the server's counters are theirs alone:
 * - 16 threads on 16 names through one client: every reply reaches its own caller
 *   (each thread's fence rises, its hold is seen held, then free);
 * - 8 threads on one name through one client: mutual exclusion, one subscription for
 *   the process (not one per waiter), and no thundering herd: the lock script runs
 *   at most 4.5 times per pair, where every unlock sent every waiter back to Redis;
 * - a holder of this process that never unlocks: its lease's end wakes the waiter
 *   (no message is sent then), not the minute-long poll;
 * - waiters queued behind the one in Redis give up at their own deadline, and the queue
 *   still works after them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_test_util.h"
#include "sk_test_redis.h"

static sk_test_redis *srv;
static redisContext *raw;

static int setup(void **state)
{
    (void)state;
    char err[256];
    srv = sk_test_redis_start(NULL, err, sizeof(err));
    if (srv == NULL) {
        fprintf(stderr, "sk_test_redis_start: %s\n", err);
        return -1;
    }
    raw = rt_connect(sk_test_redis_url(srv));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (raw)
        redisFree(raw);
    sk_test_redis_free(srv);
    return 0;
}

/* calls of one command so far (INFO commandstats), 0 if it never ran */
static long long cmd_calls(const char *cmd)
{
    redisReply *r = redisCommand(raw, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char pat[64];
    snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(r->str, pat);
    long long n = p ? strtoll(p + strlen(pat), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

#define PIPE_THREADS 16
#define PIPE_PAIRS 150

struct pipe_arg {
    rlock_client_t *c;
    int i;
    int failed;
};

static void *pipe_main(void *p)
{
    struct pipe_arg *a = p;
    char name[64];
    snprintf(name, sizeof(name), "pipe-%d", a->i);
    rlock_t *l = rlock_new(a->c, name, a->i % 2 ? RLOCK_REENTRANT : RLOCK_SIMPLE);
    uint64_t last = 0, f = 0;
    for (int k = 0; l && k < PIPE_PAIRS && !a->failed; k++) {
        if (rlock_try_lock(l, 0, 10000, &f) != 0 || f <= last || rlock_is_held_remote(l) != 1 ||
            rlock_unlock(l) != 0 || rlock_is_held_remote(l) != 0)
            a->failed = 1;
        last = f;
    }
    if (l == NULL)
        a->failed = 1;
    rlock_free(l);
    return NULL;
}

static void test_pipeline_distinct_names(void **state)
{
    (void)state;
    rlock_client_t *c = rt_client(sk_test_redis_url(srv), 0, 0, 0);
    pthread_t th[PIPE_THREADS];
    struct pipe_arg a[PIPE_THREADS];
    for (int i = 0; i < PIPE_THREADS; i++) {
        a[i] = (struct pipe_arg){.c = c, .i = i};
        assert_int_equal(pthread_create(&th[i], NULL, pipe_main, &a[i]), 0);
    }
    for (int i = 0; i < PIPE_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].failed, 0);
    }
    rlock_client_free(c);
}

#define HERD_THREADS 8
#define HERD_PAIRS 100

struct herd {
    rlock_client_t *c;
    rlock_t *l[HERD_THREADS];
    atomic_int inside;
    atomic_int overlap;
    atomic_int failed;
};

struct herd_arg {
    struct herd *h;
    int i;
};

static void *herd_main(void *p)
{
    struct herd_arg *a = p;
    struct herd *h = a->h;
    rlock_t *l = h->l[a->i];
    for (int k = 0; k < HERD_PAIRS; k++) {
        if (rlock_try_lock(l, 20000, 10000, NULL) != 0) {
            atomic_store(&h->failed, 1);
            return NULL;
        }
        if (atomic_fetch_add(&h->inside, 1) != 0)
            atomic_store(&h->overlap, 1);
        atomic_fetch_sub(&h->inside, 1);
        if (rlock_unlock(l) != 0) {
            atomic_store(&h->failed, 1);
            return NULL;
        }
    }
    return NULL;
}

static void test_one_waiter_per_process(void **state)
{
    (void)state;
    /* a minute's poll: only messages and leases may wake anyone in time */
    rlock_client_t *c = rt_client(sk_test_redis_url(srv), 0, 60000, 0);
    struct herd h = {.c = c};
    for (int i = 0; i < HERD_THREADS; i++)
        assert_non_null(h.l[i] = rlock_new(c, "herd", RLOCK_REENTRANT));
    long long e0 = cmd_calls("evalsha");
    pthread_t th[HERD_THREADS];
    struct herd_arg a[HERD_THREADS];
    for (int i = 0; i < HERD_THREADS; i++) {
        a[i] = (struct herd_arg){.h = &h, .i = i};
        assert_int_equal(pthread_create(&th[i], NULL, herd_main, &a[i]), 0);
    }
    for (int i = 0; i < HERD_THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&h.failed), 0);
    assert_int_equal(atomic_load(&h.overlap), 0);
    /* Every pair is one lock and one unlock script; a refused attempt is an extra one.
     * Waking every waiter per unlock costs up to 7 refused attempts per pair (9 scripts);
     * with one waiter per process, a grant costs at most the waiter's refused attempt
     * per message, a releaser's refused try when the waiter won, and a new waiter's
     * first look (measured 2.8 to 3.0 in all under ASan). */
    long long pairs = HERD_THREADS * HERD_PAIRS;
    long long scripts = cmd_calls("evalsha") - e0;
    printf("# %lld pairs, %lld scripts (%.2f per pair)\n", pairs, scripts, (double)scripts / (double)pairs);
    assert_true(scripts >= 2 * pairs);
    assert_true(2 * scripts <= 9 * pairs); /* 4.5 per pair */
    /* One subscription for the name in this process, whoever waited. */
    redisReply *r = redisCommand(raw, "PUBSUB NUMSUB rlock:{herd}:ch");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_int_equal(r->element[1]->integer, 1);
    freeReplyObject(r);
    for (int i = 0; i < HERD_THREADS; i++)
        rlock_free(h.l[i]);
    rlock_client_free(c);
}

struct late {
    rlock_t *l;
    int64_t waited_ms;
    int rv;
};

static void *late_main(void *p)
{
    struct late *w = p;
    int64_t t0 = rt_now_ms();
    w->rv = rlock_try_lock(w->l, 10000, 5000, NULL);
    w->waited_ms = rt_now_ms() - t0;
    if (w->rv == 0)
        rlock_unlock(w->l);
    return NULL;
}

/* a 300 ms wait that ends in a timeout while the lock stays held */
static void *late_short_main(void *p)
{
    struct late *w = p;
    int64_t t0 = rt_now_ms();
    w->rv = rlock_try_lock(w->l, 300, 5000, NULL);
    w->waited_ms = rt_now_ms() - t0;
    return NULL;
}

static void test_local_holder_lease_ends(void **state)
{
    (void)state;
    rlock_client_t *c = rt_client(sk_test_redis_url(srv), 0, 60000, 0);
    rlock_t *holder = rlock_new(c, "stall", RLOCK_SIMPLE);
    assert_int_equal(rlock_try_lock(holder, 0, 400, NULL), 0); /* never unlocked */
    struct late w = {.l = rlock_new(c, "stall", RLOCK_SIMPLE), .rv = -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, late_main, &w), 0);
    pthread_join(th, NULL);
    assert_int_equal(w.rv, 0);
    printf("# waited %lld ms for a 400 ms lease\n", (long long)w.waited_ms);
    assert_true(w.waited_ms >= 300);
    assert_true(w.waited_ms < 5000); /* the lease's end, not the 60 s poll */
    assert_int_equal(rlock_unlock(holder), RLOCK_ERR_NOT_HELD);
    rlock_free(w.l);
    rlock_free(holder);
    rlock_client_free(c);
}

#define QUEUED 4

static void test_queued_waiters_time_out(void **state)
{
    (void)state;
    rlock_client_t *c = rt_client(sk_test_redis_url(srv), 0, 60000, 0);
    rlock_t *holder = rlock_new(c, "queued", RLOCK_REENTRANT);
    assert_int_equal(rlock_try_lock(holder, 0, 30000, NULL), 0);
    struct late w[QUEUED];
    pthread_t th[QUEUED];
    for (int i = 0; i < QUEUED; i++) {
        w[i] = (struct late){.l = rlock_new(c, "queued", RLOCK_REENTRANT), .rv = -1};
        assert_int_equal(pthread_create(&th[i], NULL, late_short_main, &w[i]), 0);
    }
    for (int i = 0; i < QUEUED; i++) {
        pthread_join(th[i], NULL);
        printf("# queued waiter %d: %d after %lld ms\n", i, w[i].rv, (long long)w[i].waited_ms);
        assert_int_equal(w[i].rv, RLOCK_ERR_TIMEOUT);
        assert_true(w[i].waited_ms >= 250);
        assert_true(w[i].waited_ms < 3000); /* its own 300 ms, not the holder's 30 s lease */
    }
    /* after the timeouts, a release still reaches a new waiter at once */
    struct late n = {.l = w[0].l, .rv = -1};
    pthread_t nt;
    assert_int_equal(pthread_create(&nt, NULL, late_main, &n), 0);
    rt_sleep_ms(100);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(holder), 0);
    pthread_join(nt, NULL);
    assert_int_equal(n.rv, 0);
    printf("# woken %lld ms after the release\n", (long long)(rt_now_ms() - t0));
    assert_true(rt_now_ms() - t0 < 5000); /* a message, not the 60 s poll */
    for (int i = 0; i < QUEUED; i++)
        rlock_free(w[i].l);
    rlock_free(holder);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_distinct_names),
        cmocka_unit_test(test_one_waiter_per_process),
        cmocka_unit_test(test_local_holder_lease_ends),
        cmocka_unit_test(test_queued_waiters_time_out),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
