/* librlock against the shared Redis (deploy/local.sh up): simple, reentrant, fair and
 * read-write locks, pub/sub wake-up, semaphore, latch, MultiLock, watchdog renewal and
 * the lost-lock callback; and the NOSCRIPT fallback on a throwaway server. Every name
 * carries the pid, so runs never meet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rlock_test_util.h"
#include "sk_test_redis.h"

static const char *url;
static redisContext *raw;

static int setup(void **state)
{
    (void)state;
    url = rt_redis_url();
    if (url == NULL)
        return 0;
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

#define NEED_REDIS()                                                                     \
    do {                                                                                 \
        if (url == NULL)                                                                 \
            skip();                                                                      \
    } while (0)

static void test_simple(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "simple");
    rlock_client_t *c = rt_client(url, 0, 0, 0);
    rlock_t *a = rlock_new(c, name, RLOCK_SIMPLE), *b = rlock_new(c, name, RLOCK_SIMPLE);
    uint64_t f1 = 0, f2 = 0;
    assert_int_equal(rlock_try_lock(a, 0, 5000, &f1), 0);
    assert_true(f1 > 0);
    assert_true(rlock_is_held(a));
    assert_int_equal(rlock_is_held_remote(a), 1);
    assert_int_equal(rlock_try_lock(b, 0, 5000, &f2), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_try_lock(a, 0, 5000, NULL), RLOCK_ERR_STATE); /* not reentrant */
    assert_int_equal(rlock_unlock(b), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_unlock(a), 0);
    assert_false(rlock_is_held(a));
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}", name), 0);
    assert_int_equal(rlock_try_lock(b, 0, 5000, &f2), 0);
    assert_true(f2 > f1);
    assert_int_equal(rlock_fence(b), f2);
    /* a's old token cannot free b's hold */
    assert_int_equal(rlock_unlock(a), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_is_held_remote(b), 1);
    assert_int_equal(rlock_unlock(b), 0);

    /* a lease runs out without renewal; the waiter gets it when it does, no message needed */
    assert_int_equal(rlock_try_lock(a, 0, 300, NULL), 0);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(b, 5000, 5000, NULL), 0);
    int64_t waited = rt_now_ms() - t0;
    assert_true(waited >= 200 && waited < 2000);
    assert_false(rlock_is_held(a));
    assert_int_equal(rlock_unlock(a), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_unlock(b), 0);
    rt_int(raw, "DEL rlock:{%s}:fence", name);
    rlock_free(a);
    rlock_free(b);
    rlock_client_free(c);
}

struct other_unlock {
    rlock_t *l;
    int rv;
};

static void *other_thread_unlock(void *p)
{
    struct other_unlock *o = p;
    o->rv = rlock_unlock(o->l);
    return NULL;
}

static void test_reentrant(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "reent");
    rlock_client_t *c = rt_client(url, 0, 0, 0);
    rlock_t *a = rlock_new(c, name, RLOCK_REENTRANT), *b = rlock_new(c, name, RLOCK_REENTRANT);
    uint64_t f[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_try_lock(a, 0, 10000, &f[i]), 0);
    assert_true(f[0] < f[1] && f[1] < f[2]);
    char owner[128];
    snprintf(owner, sizeof(owner), "%s:%ld", rlock_client_id(c), (long)gettid());
    assert_int_equal(rt_int(raw, "HGET rlock:{%s} %s", name, owner), 3);

    /* another thread (another owner) is refused, and the hold is untouched */
    struct other_unlock o = {.l = b};
    pthread_t t;
    pthread_create(&t, NULL, other_thread_unlock, &o);
    pthread_join(t, NULL);
    assert_int_equal(o.rv, RLOCK_ERR_NOT_HELD);
    assert_int_equal(rt_int(raw, "HGET rlock:{%s} %s", name, owner), 3);

    assert_int_equal(rlock_unlock(a), 0);
    assert_int_equal(rlock_unlock(a), 0);
    assert_int_equal(rt_int(raw, "HGET rlock:{%s} %s", name, owner), 1);
    assert_int_equal(rlock_is_held_remote(a), 1);
    assert_int_equal(rlock_unlock(a), 0);
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}", name), 0);
    assert_int_equal(rlock_unlock(a), RLOCK_ERR_NOT_HELD);
    rt_int(raw, "DEL rlock:{%s}:fence", name);
    rlock_free(a);
    rlock_free(b);
    rlock_client_free(c);
}

struct waiter {
    rlock_client_t *c;
    const char *name;
    rlock_kind_t kind;
    int64_t wait_ms;
    int rv;
    int64_t got_at;
};

static void *waiter_main(void *p)
{
    struct waiter *w = p;
    rlock_t *l = rlock_new(w->c, w->name, w->kind);
    w->rv = rlock_try_lock(l, w->wait_ms, 10000, NULL);
    w->got_at = rt_now_ms();
    if (w->rv == 0)
        rlock_unlock(l);
    rlock_free(l);
    return NULL;
}

/* The fallback retry is 10 s and the holder's lease 30 s: only the unlock message can
 * wake the waiter within a second. */
static void test_pubsub_wakeup(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "pubsub");
    rlock_client_t *c = rt_client(url, 0, 10000, 0);
    rlock_t *h = rlock_new(c, name, RLOCK_REENTRANT);
    assert_int_equal(rlock_try_lock(h, 0, 30000, NULL), 0);
    struct waiter w = {.c = c, .name = name, .kind = RLOCK_REENTRANT, .wait_ms = 8000};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    rt_sleep_ms(300); /* let it subscribe and sleep */
    int64_t t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(h), 0);
    pthread_join(t, NULL);
    assert_int_equal(w.rv, 0);
    assert_true(w.got_at - t_unlock < 1000);
    rt_int(raw, "DEL rlock:{%s}:fence", name);
    rlock_free(h);
    rlock_client_free(c);
}

static void test_rw(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "rw");
    rlock_client_t *c = rt_client(url, 0, 0, 0);
    rlock_t *r1 = rlock_new(c, name, RLOCK_READ);
    rlock_t *w1 = rlock_new(c, name, RLOCK_WRITE);
    /* readers overlap: this thread and another both hold the read side */
    assert_int_equal(rlock_try_lock(r1, 0, 10000, NULL), 0);
    struct waiter rd = {.c = c, .name = name, .kind = RLOCK_READ, .wait_ms = 0};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &rd);
    pthread_join(t, NULL);
    assert_int_equal(rd.rv, 0);
    /* a writer (another thread) is excluded while a reader holds */
    struct waiter wr = {.c = c, .name = name, .kind = RLOCK_WRITE, .wait_ms = 0};
    pthread_create(&t, NULL, waiter_main, &wr);
    pthread_join(t, NULL);
    assert_int_equal(wr.rv, RLOCK_ERR_TIMEOUT);
    /* ... and gets in, woken, once the reader leaves */
    wr.wait_ms = 5000;
    pthread_create(&t, NULL, waiter_main, &wr);
    rt_sleep_ms(200);
    assert_int_equal(rlock_unlock(r1), 0);
    pthread_join(t, NULL);
    assert_int_equal(wr.rv, 0);
    /* a writer excludes readers and other writers, and re-enters */
    assert_int_equal(rlock_try_lock(w1, 0, 10000, NULL), 0);
    assert_int_equal(rlock_try_lock(w1, 0, 10000, NULL), 0);
    rd.wait_ms = 0;
    pthread_create(&t, NULL, waiter_main, &rd);
    pthread_join(t, NULL);
    assert_int_equal(rd.rv, RLOCK_ERR_TIMEOUT);
    wr.wait_ms = 0;
    pthread_create(&t, NULL, waiter_main, &wr);
    pthread_join(t, NULL);
    assert_int_equal(wr.rv, RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_unlock(w1), 0);
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}:rw", name), 1);
    assert_int_equal(rlock_unlock(w1), 0);
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}:rw", name), 0);
    assert_int_equal(rlock_unlock(w1), RLOCK_ERR_NOT_HELD);
    /* a dead reader (lease ran out, never released) does not block a writer for ever */
    assert_int_equal(rlock_try_lock(r1, 0, 300, NULL), 0);
    pthread_create(&t, NULL, waiter_main, &wr);
    pthread_join(t, NULL);
    assert_int_equal(wr.rv, RLOCK_ERR_TIMEOUT);
    wr.wait_ms = 3000;
    pthread_create(&t, NULL, waiter_main, &wr);
    pthread_join(t, NULL);
    assert_int_equal(wr.rv, 0);
    rt_int(raw, "DEL rlock:{%s}:fence rlock:{%s}:rw rlock:{%s}:rw:readers", name, name, name);
    rlock_free(r1);
    rlock_free(w1);
    rlock_client_free(c);
}

/* Redisson's rule in native mode (issue 34): the write holder takes reads inside its
 * write, its last write unlock turns the lock into a read lock held by it (downgrade),
 * waiting readers wake then; a reader cannot take the write side (no upgrade). Watchdog
 * holds too: the read's deadline is renewed under the write, so it outlives it. */
static void test_rw_downgrade(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "rwdown");
    rlock_client_t *c = rt_client(url, 600, 0, 0);
    rlock_t *r1 = rlock_new(c, name, RLOCK_READ), *w1 = rlock_new(c, name, RLOCK_WRITE);
    assert_int_equal(rlock_try_lock(w1, 0, 0, NULL), 0);
    assert_int_equal(rlock_try_lock(r1, 0, 0, NULL), 0); /* read inside own write */
    assert_int_equal(rlock_try_lock(r1, 0, 0, NULL), 0);
    struct waiter rd = {.c = c, .name = name, .kind = RLOCK_READ, .wait_ms = 0};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &rd); /* another thread: still excluded */
    pthread_join(t, NULL);
    assert_int_equal(rd.rv, RLOCK_ERR_TIMEOUT);
    rt_sleep_ms(1000); /* past the first lease (600 ms): the watchdog kept both holds */
    /* downgrade: the write goes, the lock is a read lock held by this thread */
    rd.wait_ms = 5000;
    pthread_create(&t, NULL, waiter_main, &rd);
    rt_sleep_ms(100);
    int64_t sent = rt_now_ms();
    assert_int_equal(rlock_unlock(w1), 0);
    pthread_join(t, NULL);
    assert_int_equal(rd.rv, 0); /* another reader now gets in, woken */
    assert_true(rd.got_at - sent < 2000);
    assert_int_equal(rlock_is_held_remote(r1), 1);
    redisReply *r = redisCommand(raw, "HGET rlock:{%s}:rw mode", name);
    assert_non_null(r);
    assert_string_equal(r->str, "read");
    freeReplyObject(r);
    struct waiter wr = {.c = c, .name = name, .kind = RLOCK_WRITE, .wait_ms = 0};
    pthread_create(&t, NULL, waiter_main, &wr);
    pthread_join(t, NULL);
    assert_int_equal(wr.rv, RLOCK_ERR_TIMEOUT);
    rt_sleep_ms(1000); /* the read hold outlives the write's lease and deadline */
    assert_int_equal(rlock_is_held_remote(r1), 1);
    /* no upgrade: this reader cannot take the write side */
    assert_int_equal(rlock_try_lock(w1, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_unlock(r1), 0);
    assert_int_equal(rlock_unlock(r1), 0);
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}:rw", name), 0);
    assert_int_equal(rlock_try_lock(w1, 0, 0, NULL), 0);
    assert_int_equal(rlock_unlock(w1), 0);
    rt_int(raw, "DEL rlock:{%s}:fence", name);
    rlock_free(r1);
    rlock_free(w1);
    rlock_client_free(c);
}

/* Spin lock: RLock's data (excludes a reentrant lock of the name), re-enters, waits by
 * polling with back-off and never subscribes. Fenced lock (native): the reentrant lock,
 * its token to the caller. */
static void test_spin_fenced(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "spin");
    rlock_client_t *c = rt_client(url, 0, 0, 0);
    rlock_t *sp = rlock_new(c, name, RLOCK_SPIN);
    assert_non_null(sp);
    assert_int_equal(rlock_try_lock(sp, 0, 400, NULL), 0);
    assert_int_equal(rlock_try_lock(sp, 0, 400, NULL), 0); /* reentrant */
    struct waiter re = {.c = c, .name = name, .kind = RLOCK_REENTRANT, .wait_ms = 0};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &re);
    pthread_join(t, NULL);
    assert_int_equal(re.rv, RLOCK_ERR_TIMEOUT);
    /* another thread spins until the lease ends (400 ms), with no subscription */
    struct waiter sw = {.c = c, .name = name, .kind = RLOCK_SPIN, .wait_ms = 3000};
    int64_t t0 = rt_now_ms();
    pthread_create(&t, NULL, waiter_main, &sw);
    rt_sleep_ms(150);
    redisReply *r = redisCommand(raw, "PUBSUB NUMSUB rlock:{%s}:ch", name);
    assert_non_null(r);
    assert_int_equal(r->element[1]->integer, 0);
    freeReplyObject(r);
    pthread_join(t, NULL);
    assert_int_equal(sw.rv, 0);
    assert_true(sw.got_at - t0 >= 250 && sw.got_at - t0 < 2000);
    rlock_free(sp);

    rlock_t *fl = rlock_new(c, name, RLOCK_FENCED);
    uint64_t f1 = 0, f2 = 0;
    assert_int_equal(rlock_try_lock(fl, 0, 5000, &f1), 0);
    assert_int_equal(rlock_try_lock(fl, 0, 5000, &f2), 0);
    assert_true(f2 > f1);
    assert_int_equal(rlock_fence(fl), f2);
    assert_int_equal(rlock_unlock(fl), 0);
    assert_int_equal(rlock_unlock(fl), 0);
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}", name), 0);
    rt_int(raw, "DEL rlock:{%s}:fence", name);
    rlock_free(fl);
    rlock_client_free(c);
}

struct sem_run {
    rlock_client_t *c;
    const char *name;
    const char *inside_key;
    atomic_int max_inside;
    atomic_int errors;
};

static void *sem_worker(void *p)
{
    struct sem_run *s = p;
    rlock_sem_t *sem = rlock_sem_new(s->c, s->name);
    redisContext *rc = rt_connect(url);
    for (int i = 0; i < 25; i++) {
        if (rlock_sem_try_acquire(sem, 1, 20000) != 0) {
            atomic_fetch_add(&s->errors, 1);
            continue;
        }
        redisReply *r = redisCommand(rc, "INCR %s", s->inside_key);
        int in = r ? (int)r->integer : 99;
        freeReplyObject(r);
        int m = atomic_load(&s->max_inside);
        while (in > m && !atomic_compare_exchange_weak(&s->max_inside, &m, in))
            ;
        rt_sleep_ms(2);
        freeReplyObject(redisCommand(rc, "DECR %s", s->inside_key));
        if (rlock_sem_release(sem, 1) != 0)
            atomic_fetch_add(&s->errors, 1);
    }
    redisFree(rc);
    rlock_sem_free(sem);
    return NULL;
}

static void test_semaphore(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128], inside[160];
    rt_name(name, sizeof(name), "sem");
    snprintf(inside, sizeof(inside), "rlock:{%s}:inside", name);
    rlock_client_t *c = rt_client(url, 0, 200, 0);
    rlock_sem_t *sem = rlock_sem_new(c, name);
    assert_int_equal(rlock_sem_try_set_permits(sem, 3), 1);
    assert_int_equal(rlock_sem_try_set_permits(sem, 5), 0);
    assert_int_equal(rlock_sem_available(sem), 3);
    /* more than there are: refused after the wait */
    assert_int_equal(rlock_sem_try_acquire(sem, 4, 100), RLOCK_ERR_TIMEOUT);
    struct sem_run s = {.c = c, .name = name, .inside_key = inside};
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, sem_worker, &s);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&s.errors), 0);
    assert_true(atomic_load(&s.max_inside) <= 3);
    assert_true(atomic_load(&s.max_inside) >= 2); /* there was contention */
    assert_int_equal(rlock_sem_available(sem), 3);
    assert_int_equal(rlock_sem_delete(sem), 0);
    rt_int(raw, "DEL %s", inside);
    rlock_sem_free(sem);
    rlock_client_free(c);
}

struct latch_waiter {
    rlock_client_t *c;
    const char *name;
    int rv;
    int64_t woke_at;
};

static void *latch_main(void *p)
{
    struct latch_waiter *w = p;
    rlock_latch_t *l = rlock_latch_new(w->c, w->name);
    w->rv = rlock_latch_await(l, 10000);
    w->woke_at = rt_now_ms();
    rlock_latch_free(l);
    return NULL;
}

static void test_latch(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "latch");
    rlock_client_t *c = rt_client(url, 0, 10000, 0); /* wake by message, not by polling */
    rlock_latch_t *l = rlock_latch_new(c, name);
    assert_int_equal(rlock_latch_try_set_count(l, 3), 1);
    assert_int_equal(rlock_latch_try_set_count(l, 3), 0);
    assert_int_equal(rlock_latch_count(l), 3);
    struct latch_waiter w[2] = {{.c = c, .name = name}, {.c = c, .name = name}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, latch_main, &w[i]);
    rt_sleep_ms(200);
    assert_int_equal(rlock_latch_count_down(l), 0);
    rt_sleep_ms(100);
    assert_int_equal(rlock_latch_count_down(l), 0);
    rt_sleep_ms(300);
    assert_int_equal(w[0].woke_at, 0); /* not before zero */
    assert_int_equal(w[1].woke_at, 0);
    int64_t zero_at = rt_now_ms();
    assert_int_equal(rlock_latch_count_down(l), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].rv, 0);
        assert_true(w[i].woke_at >= zero_at && w[i].woke_at - zero_at < 1000);
    }
    assert_int_equal(rlock_latch_count(l), 0);
    /* time out when the count stays above zero */
    assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_latch_await(l, 300), RLOCK_ERR_TIMEOUT);
    assert_true(rt_now_ms() - t0 >= 290);
    assert_int_equal(rlock_latch_count_down(l), 0);
    assert_int_equal(rlock_latch_await(l, 0), 0);
    rlock_latch_free(l);
    rlock_client_free(c);
}

struct fair_run {
    rlock_client_t *c;
    const char *name;
    pthread_mutex_t mu;
    int order[8];
    int n;
};

struct fair_arg {
    struct fair_run *run;
    int idx;
};

static void *fair_main(void *p)
{
    struct fair_arg *a = p;
    rlock_t *l = rlock_new(a->run->c, a->run->name, RLOCK_FAIR);
    if (rlock_try_lock(l, 20000, 10000, NULL) == 0) {
        pthread_mutex_lock(&a->run->mu);
        a->run->order[a->run->n++] = a->idx;
        pthread_mutex_unlock(&a->run->mu);
        rt_sleep_ms(20);
        rlock_unlock(l);
    }
    rlock_free(l);
    return NULL;
}

static void wait_queue_len(const char *name, long long n)
{
    int64_t deadline = rt_now_ms() + 10000;
    while (rt_int(raw, "LLEN rlock:{%s}:queue", name) != n) {
        if (rt_now_ms() > deadline)
            fail_msg("fair queue of %s never reached %lld", name, n);
        rt_sleep_ms(5);
    }
}

static void test_fair_order(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "fair");
    rlock_client_t *c = rt_client(url, 0, 0, 2000);
    rlock_t *h = rlock_new(c, name, RLOCK_FAIR);
    assert_int_equal(rlock_try_lock(h, 0, 10000, NULL), 0);
    struct fair_run run = {.c = c, .name = name, .mu = PTHREAD_MUTEX_INITIALIZER};
    struct fair_arg args[5];
    pthread_t t[5];
    for (int i = 0; i < 5; i++) {
        args[i] = (struct fair_arg){.run = &run, .idx = i};
        pthread_create(&t[i], NULL, fair_main, &args[i]);
        wait_queue_len(name, i + 1); /* i is queued before i+1 asks */
    }
    assert_int_equal(rlock_unlock(h), 0);
    for (int i = 0; i < 5; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(run.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(run.order[i], i);
    rt_int(raw, "DEL rlock:{%s}:fence", name);
    rlock_free(h);
    rlock_client_free(c);
}

static int fair_dead_child(int i, void *arg)
{
    (void)i;
    rlock_client_t *c = rt_client(url, 0, 0, 600);
    rlock_t *l = rlock_new(c, arg, RLOCK_FAIR);
    rlock_try_lock(l, 60000, 10000, NULL); /* queued, then killed */
    return 1;
}

/* A waiter that dies in the queue is dropped after its waiter timeout (600 ms here) and
 * the one behind it gets the lock. */
static void test_fair_dead_waiter(void **state)
{
    (void)state;
    NEED_REDIS();
    char name[128];
    rt_name(name, sizeof(name), "fairdead");
    rlock_client_t *c = rt_client(url, 0, 0, 600);
    rlock_t *h = rlock_new(c, name, RLOCK_FAIR);
    assert_int_equal(rlock_try_lock(h, 0, 10000, NULL), 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(fair_dead_child(0, name));
    wait_queue_len(name, 1);
    struct waiter w = {.c = c, .name = name, .kind = RLOCK_FAIR, .wait_ms = 10000};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    wait_queue_len(name, 2);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    int64_t killed_at = rt_now_ms();
    assert_int_equal(rlock_unlock(h), 0);
    pthread_join(t, NULL);
    assert_int_equal(w.rv, 0);
    /* the dead one stood in front until its deadline (<= 600 ms after its last ask) */
    assert_true(w.got_at - killed_at >= 150);
    assert_true(w.got_at - killed_at < 600 + 1500);
    rt_int(raw, "DEL rlock:{%s}:fence rlock:{%s}:queue rlock:{%s}:timeouts", name, name, name);
    rlock_free(h);
    rlock_client_free(c);
}

static void test_multilock(void **state)
{
    (void)state;
    NEED_REDIS();
    char n[3][128];
    rlock_client_t *c = rt_client(url, 0, 0, 0);
    rlock_t *ls[3];
    for (int i = 0; i < 3; i++)
        ls[i] = rlock_new(c, rt_name(n[i], sizeof(n[i]), "multi"), RLOCK_SIMPLE);
    rlock_t *other = rlock_new(c, n[1], RLOCK_SIMPLE);
    assert_int_equal(rlock_try_lock(other, 0, 10000, NULL), 0);
    assert_int_equal(rlock_multi_lock(ls, 3, 300, 10000), RLOCK_ERR_TIMEOUT);
    /* none or all: nothing of the failed attempt stays */
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}", n[0]), 0);
    assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}", n[2]), 0);
    assert_int_equal(rlock_unlock(other), 0);
    assert_int_equal(rlock_multi_lock(ls, 3, 1000, 10000), 0);
    for (int i = 0; i < 3; i++)
        assert_true(rlock_is_held(ls[i]));
    assert_int_equal(rlock_try_lock(other, 0, 10000, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_multi_unlock(ls, 3), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rt_int(raw, "EXISTS rlock:{%s}", n[i]), 0);
        rt_int(raw, "DEL rlock:{%s}:fence", n[i]);
        rlock_free(ls[i]);
    }
    rlock_free(other);
    rlock_client_free(c);
}

static atomic_llong lost_at;
static atomic_int lost_calls;

static void on_lost(rlock_t *l, const char *name, void *arg)
{
    (void)name, (void)arg;
    atomic_fetch_add(&lost_calls, 1);
    atomic_store(&lost_at, rt_now_ms());
    if (rlock_is_held(l)) /* already marked when we are told (no cmocka assert off the test thread) */
        atomic_store(&lost_calls, 100);
}

/* Watchdog timeout 600 ms (renewal every 200 ms). On a private server without AOF: the
 * bounds here are a few hundred ms, and the shared server fsyncs every write. */
static void test_watchdog_and_lost(void **state)
{
    (void)state;
    char name[128], err[256];
    const char *const noaof[] = {"--appendonly", "no", NULL};
    sk_test_redis *srv = sk_test_redis_start(noaof, err, sizeof(err));
    if (srv == NULL)
        fail_msg("sk_test_redis_start: %s", err);
    redisContext *own = rt_connect(sk_test_redis_url(srv));
    rt_name(name, sizeof(name), "wd");
    rlock_client_t *c = rt_client(sk_test_redis_url(srv), 600, 0, 0);
    rlock_client_t *c2 = rt_client(sk_test_redis_url(srv), 600, 0, 0);
    rlock_t *l = rlock_new(c, name, RLOCK_REENTRANT);
    rlock_t *o = rlock_new(c2, name, RLOCK_REENTRANT);
    rlock_set_lost_cb(l, on_lost, NULL);
    assert_int_equal(rlock_lock(l, 0, NULL), 0);
    /* kept 3x past its timeout while we live */
    int64_t until = rt_now_ms() + 3 * 600 + 100;
    while (rt_now_ms() < until) {
        assert_int_equal(rlock_try_lock(o, 0, 1000, NULL), RLOCK_ERR_TIMEOUT);
        assert_true(rt_int(own, "PTTL rlock:{%s}", name) > 0);
        rt_sleep_ms(100);
    }
    assert_true(rlock_is_held(l));
    assert_int_equal(atomic_load(&lost_calls), 0);
    /* deleted behind its back: told within one renewal interval (200 ms) */
    int64_t deleted_at = rt_now_ms();
    assert_int_equal(rlock_force_unlock(o), 1);
    while (atomic_load(&lost_calls) == 0 && rt_now_ms() - deleted_at < 2000)
        rt_sleep_ms(5);
    assert_int_equal(atomic_load(&lost_calls), 1);
    assert_true(atomic_load(&lost_at) - deleted_at <= 200 + 100);
    assert_false(rlock_is_held(l));
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);

    /* a lease lock is never renewed, even on a watchdog client */
    assert_int_equal(rlock_try_lock(l, 0, 400, NULL), 0);
    rt_sleep_ms(700);
    assert_int_equal(rt_int(own, "EXISTS rlock:{%s}", name), 0);
    assert_false(rlock_is_held(l));
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_int_equal(atomic_load(&lost_calls), 1);

    /* unlock stops renewal for good: nothing brings the key back */
    assert_int_equal(rlock_lock(l, 0, NULL), 0);
    assert_int_equal(rlock_unlock(l), 0);
    rt_sleep_ms(450);
    assert_int_equal(rt_int(own, "EXISTS rlock:{%s}", name), 0);
    assert_int_equal(atomic_load(&lost_calls), 1);
    rlock_free(l);
    rlock_free(o);
    rlock_client_free(c);
    rlock_client_free(c2);
    redisFree(own);
    sk_test_redis_free(srv);
}

/* Scripts come back after the server loses its script cache (SCRIPT FLUSH here; a
 * restart or failover in life), for plain calls and for the watchdog's pipeline. */
static void test_noscript_fallback(void **state)
{
    (void)state;
    char err[256];
    sk_test_redis *srv = sk_test_redis_start(NULL, err, sizeof(err));
    if (srv == NULL)
        fail_msg("sk_test_redis_start: %s", err);
    redisContext *r = rt_connect(sk_test_redis_url(srv));
    rlock_client_t *c = rt_client(sk_test_redis_url(srv), 600, 0, 0);
    rlock_t *l = rlock_new(c, "noscript", RLOCK_REENTRANT);
    uint64_t f1, f2;
    assert_int_equal(rlock_try_lock(l, 0, 5000, &f1), 0);
    assert_int_equal(rlock_unlock(l), 0);
    assert_int_equal(rt_int(r, "SCRIPT FLUSH") , 0);
    assert_int_equal(rlock_try_lock(l, 0, 0, &f2), 0); /* watchdog hold */
    assert_true(f2 > f1);
    assert_int_equal(rt_int(r, "SCRIPT FLUSH"), 0);
    rt_sleep_ms(3 * 600);
    assert_true(rlock_is_held(l));
    assert_int_equal(rlock_is_held_remote(l), 1);
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    rlock_client_free(c);
    redisFree(r);
    sk_test_redis_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple),           cmocka_unit_test(test_reentrant),
        cmocka_unit_test(test_pubsub_wakeup),    cmocka_unit_test(test_rw),
        cmocka_unit_test(test_rw_downgrade),     cmocka_unit_test(test_spin_fenced),
        cmocka_unit_test(test_semaphore),        cmocka_unit_test(test_latch),
        cmocka_unit_test(test_fair_order),       cmocka_unit_test(test_fair_dead_waiter),
        cmocka_unit_test(test_multilock),        cmocka_unit_test(test_watchdog_and_lost),
        cmocka_unit_test(test_noscript_fallback),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
