/* test_rlock_redisson (issue 20): librlock in Redisson mode against real Redisson.
 *
 * Two JVMs run tests/redisson's driver (RedissonDriver.java, Redisson pinned in its
 * pom.xml), each one Redisson client driven line by line over its stdin/stdout: A with
 * Redisson's default watchdog (30 s), B with a 2 s watchdog (the kill -9 case). The C
 * side is librlock with rlock_client_opts.redisson = 1 on the same Redis: the shared
 * test Redis ($SECKILL_REDIS_URL), or, built with RLOCK_REDISSON_CLUSTER
 * (test_rlock_redisson_cluster), a throwaway 3+3 Redis Cluster where Redisson uses
 * sharded pub/sub (SPUBLISH/SSUBSCRIBE) and so must librlock.
 *
 * What a lost exclusion, a missed wake-up or a wrong key would break: a shared counter
 * bumped by GET then SET under the lock from both sides; waiters on each side woken by
 * the other side's release (the C waiter's fallback poll is 60 s, so only the message
 * can wake it in time); Redisson's own answers (trySetPermits/trySetCount say the object
 * exists, tryLock refuses while C holds). */
/* This binary (test_rlock_redisson_sync): the synchronizers (semaphore, latch, read-write
 * lock, spin lock, expirable permits, rate limiter); test_rlock_redisson.c has the locks;
 * both use rlock_redisson_harness.h. */
#include "rlock_redisson_harness.h"

/* ------------------------------------------------------------------ semaphore */

static void *sem_worker(void *p)
{
    struct worker *w = p;
    rlock_sem_t *sem = rlock_sem_new(w->c, w->name);
    for (int i = 0; i < w->rounds && sem; i++) {
        if (rlock_sem_try_acquire(sem, 1, -1) != 0) {
            w->bad++;
            continue;
        }
        const char *incr[2] = {"INCR", w->counter}, *decr[2] = {"DECR", w->counter};
        if (cmd_int(2, incr) > w->total)
            w->bad++;
        cmd_int(2, decr);
        if (rlock_sem_release(sem, 1) != 0)
            w->bad++;
    }
    rlock_sem_free(sem);
    return NULL;
}

struct sem_waiter_arg {
    rlock_sem_t *s;
    int rv;
    int64_t at;
};

static void *sem_waiter_main(void *p)
{
    struct sem_waiter_arg *w = p;
    w->rv = rlock_sem_try_acquire(w->s, 1, 20000);
    w->at = wall_ms();
    return NULL;
}

/* RSemaphore and rlock_sem share one counter: users never exceed the total. */
static void test_semaphore(void **state)
{
    (void)state;
    enum { TOTAL = 2 };
    char name[128], inuse[192], line[128];
    rt_name(name, sizeof(name), "rs-sem");
    snprintf(inuse, sizeof(inuse), "{%s}:inuse", name);
    rlock_client_t *c = rs_client(0, 1000);
    rlock_sem_t *sem = rlock_sem_new(c, name);
    assert_int_equal(rlock_sem_try_set_permits(sem, TOTAL), 1);
    assert_int_equal(drv(&A, "sem_set %s 7", name), 0); /* Redisson sees our permits */
    const char *get[2] = {"GET", name};
    assert_int_equal(cmd_int(2, get), TOTAL);
    drv_send(&A, "sem %s %d %s %d", name, ROUNDS, inuse, TOTAL);
    drv_send(&B, "sem %s %d %s %d", name, ROUNDS, inuse, TOTAL);
    struct worker w[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (struct worker){.c = c, .name = name, .counter = inuse, .rounds = ROUNDS, .total = TOTAL};
        assert_int_equal(pthread_create(&w[i].th, NULL, sem_worker, &w[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].th, NULL);
        assert_int_equal(w[i].bad, 0);
    }
    driver *d[2] = {&A, &B};
    for (int i = 0; i < 2; i++) {
        long long over = -1, max = -1;
        drv_reply(d[i], line, sizeof(line));
        assert_int_equal(sscanf(line, "ok %lld %lld", &over, &max), 2);
        printf("# semaphore: Java %d saw at most %lld users of %d\n", i, max, TOTAL);
        assert_int_equal(over, 0);
    }
    assert_int_equal(rlock_sem_available(sem), TOTAL);

    /* wake-ups through redisson_sc:{name}: a C waiter by a Java release, a Java
     * waiter by a C release (C's fallback poll: 60 s) */
    rlock_client_t *c2 = rs_client(0, 60000);
    rlock_sem_t *s2 = rlock_sem_new(c2, name);
    assert_int_equal(rlock_sem_try_acquire(s2, TOTAL, 0), 0);
    struct sem_waiter_arg sw = {rlock_sem_new(c2, name), -99, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sem_waiter_main, &sw), 0);
    char channel[192];
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    wait_subscribers(channel, 1);
    int64_t sent = wall_ms();
    drv(&A, "sem_release %s 1", name);
    pthread_join(th, NULL);
    assert_int_equal(sw.rv, 0);
    printf("# semaphore wake Java->C: %" PRId64 " ms\n", sw.at - sent);
    assert_true(sw.at - sent < WAKE_MAX_MS);
    rlock_sem_free(sw.s); /* a handle listens until freed */
    /* no permit left: a Java waiter, then a C release */
    wait_subscribers(channel, 0);
    drv_send(&A, "sem_try %s 20000", name);
    wait_subscribers(channel, 1);
    rt_sleep_ms(200); /* as in test_wake_both_ways: let Redisson's post-subscribe try pass */
    int64_t t0 = wall_ms();
    assert_int_equal(rlock_sem_release(s2, 1), 0);
    long long got = 0, at = 0;
    drv_reply(&A, line, sizeof(line));
    assert_int_equal(sscanf(line, "ok %lld %lld", &got, &at), 2);
    assert_int_equal(got, 1);
    printf("# semaphore wake C->Java: %lld ms\n", at - t0);
    assert_true(at - t0 < WAKE_MAX_MS);
    assert_int_equal(rlock_sem_available(sem), 0);
    rlock_sem_free(s2);
    rlock_client_free(c2);
    rlock_sem_delete(sem);
    rlock_sem_free(sem);
    rlock_client_free(c);
}

/* ------------------------------------------------------------------ countdown latch */

struct latch_waiter {
    rlock_latch_t *l;
    int rv;
    atomic_int done;
    int64_t at;
    pthread_t th;
};

static void *latch_waiter_main(void *p)
{
    struct latch_waiter *w = p;
    w->rv = rlock_latch_await(w->l, 20000);
    w->at = wall_ms();
    atomic_store(&w->done, 1);
    return NULL;
}

/* Counted down from both sides, the latch releases a C and a Java waiter, not before zero. */
static void test_latch(void **state)
{
    (void)state;
    char name[128], channel[192], line[128];
    rlock_client_t *c = rs_client(0, 60000);
    for (int round = 0; round < 2; round++) {
        rt_name(name, sizeof(name), "rs-latch");
        snprintf(channel, sizeof(channel), "redisson_countdownlatch__channel__{%s}", name);
        rlock_latch_t *l = rlock_latch_new(c, name);
        assert_int_equal(rlock_latch_try_set_count(l, 4), 1);
        assert_int_equal(drv(&B, "latch_set %s 9", name), 0);
        const char *get[2] = {"GET", name};
        assert_int_equal(cmd_int(2, get), 4);
        struct latch_waiter w = {.l = rlock_latch_new(c, name), .rv = -99};
        atomic_init(&w.done, 0);
        assert_int_equal(pthread_create(&w.th, NULL, latch_waiter_main, &w), 0);
        drv_send(&A, "latch_await %s 20000", name);
        wait_subscribers(channel, 2);
        assert_int_equal(rlock_latch_count_down(l), 0);
        drv(&B, "latch_down %s", name);
        /* the last count: from Java in round 0, from C in round 1 */
        if (round == 0)
            assert_int_equal(rlock_latch_count_down(l), 0);
        else
            drv(&B, "latch_down %s", name);
        assert_int_equal(rlock_latch_count(l), 1);
        assert_int_equal(atomic_load(&w.done), 0);
        assert_int_equal(drv_recv(&A, line, sizeof(line), 0), 0);
        int64_t t0 = wall_ms();
        if (round == 0)
            drv(&B, "latch_down %s", name);
        else
            assert_int_equal(rlock_latch_count_down(l), 0);
        pthread_join(w.th, NULL);
        assert_int_equal(w.rv, 0);
        long long done = 0, at = 0;
        drv_reply(&A, line, sizeof(line));
        assert_int_equal(sscanf(line, "ok %lld %lld", &done, &at), 2);
        assert_int_equal(done, 1);
        printf("# latch (last count from %s): C waiter %" PRId64 " ms, Java waiter %lld ms after it\n",
               round == 0 ? "Java" : "C", w.at - t0, at - t0);
        /* counted last by C: C's own wake-up; by Java: + the JVM's turn-around */
        assert_true(w.at - t0 < (round == 0 ? WAKE_MAX_MS : WAKE_MS));
        assert_int_equal(rlock_latch_count(l), 0);
        rlock_latch_free(w.l);
        rlock_latch_free(l);
    }
    rlock_client_free(c);
}

/* ------------------------------------------------------------------ read-write lock */

static void *read_check_worker(void *p)
{
    struct worker *w = p;
    rlock_t *l = rlock_new(w->c, w->name, RLOCK_READ);
    const char *get[2] = {"GET", w->counter};
    for (int i = 0; i < w->rounds && l; i++) {
        if (rlock_lock(l, 0, NULL) != 0) {
            w->bad++;
            continue;
        }
        long long v = cmd_int(2, get);
        sched_yield();
        if (cmd_int(2, get) != v)
            w->bad++;
        if (rlock_unlock(l) != 0)
            w->bad++;
    }
    rlock_free(l);
    return NULL;
}

static void test_read_write(void **state)
{
    (void)state;
    char name[128], channel[192], key[512], line[128];
    rt_name(name, sizeof(name), "rs-rw");
    snprintf(channel, sizeof(channel), "redisson_rwlock:{%s}", name);
    rlock_client_t *c = rs_client(0, 60000);
    rlock_t *rd = rlock_new(c, name, RLOCK_READ), *wr = rlock_new(c, name, RLOCK_WRITE);
    assert_non_null(rd);
    assert_non_null(wr);
    long long jtid = drv(&A, "tid");

    /* C and Java readers together; a writer on either side is refused */
    assert_int_equal(rlock_try_lock(rd, 0, 0, NULL), 0);
    const char *hmode[3] = {"HGET", name, "mode"};
    redisReply *r = cmd(3, hmode);
    assert_string_equal(r->str, "read");
    freeReplyObject(r);
    char owner[128];
    const char *hkeys[2] = {"HKEYS", name};
    r = cmd(2, hkeys);
    owner[0] = '\0';
    for (size_t i = 0; i < r->elements; i++)
        if (strcmp(r->element[i]->str, "mode") != 0)
            snprintf(owner, sizeof(owner), "%s", r->element[i]->str);
    freeReplyObject(r);
    snprintf(key, sizeof(key), "{%s}:%s:rwlock_timeout:1", name, owner);
    const char *ex[2] = {"EXISTS", key};
    assert_int_equal(cmd_int(2, ex), 1); /* Redisson's per-hold timeout key */
    assert_int_equal(drv(&A, "trylock r %s 0 0", name), 1);
    assert_int_equal(drv(&A, "trylock w %s 0 0", name), 0);
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    drv(&A, "unlock r %s", name);
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(drv(&B, "trylock w %s 0 0", name), 0);
    assert_int_equal(rlock_unlock(rd), 0);
    const char *exn[2] = {"EXISTS", name};
    assert_int_equal(cmd_int(2, exn), 0);

    /* a Java writer excludes C readers and writers; its release wakes a C reader */
    drv(&A, "lock w %s 0", name);
    char wfield[128];
    snprintf(wfield, sizeof(wfield), "%s:%lld:write", A.id, jtid);
    const char *hget[3] = {"HGET", name, wfield};
    assert_int_equal(cmd_int(3, hget), 1);
    assert_int_equal(rlock_try_lock(rd, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    struct waiter w = {.l = rlock_new(c, name, RLOCK_READ), .rv = -99};
    assert_int_equal(pthread_create(&w.th, NULL, waiter_main, &w), 0);
    wait_subscribers(channel, 1);
    int64_t sent = wall_ms();
    drv(&A, "unlock w %s", name);
    pthread_join(w.th, NULL);
    assert_int_equal(w.rv, 0);
    assert_int_equal(w.unlock_rv, 0);
    printf("# rw wake Java writer -> C reader: %" PRId64 " ms\n", w.at - sent);
    assert_true(w.at - sent < WAKE_MAX_MS);
    rlock_free(w.l);

    /* a C writer excludes Java readers and writers */
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), 0);
    r = cmd(3, hmode);
    assert_string_equal(r->str, "write");
    freeReplyObject(r);
    assert_int_equal(drv(&A, "trylock r %s 0 0", name), 0);
    assert_int_equal(drv(&B, "trylock w %s 0 0", name), 0);
    assert_int_equal(rlock_unlock(wr), 0);
    assert_int_equal(cmd_int(2, exn), 0);

    /* writers on both sides bump a counter that readers on both sides watch */
    char counter[192];
    snprintf(counter, sizeof(counter), "{%s}:counter", name);
    drv_send(&A, "mutex w %s %d %s", name, ROUNDS, counter);
    drv_send(&B, "rcheck %s %d %s", name, ROUNDS, counter);
    struct worker ww = {.c = c, .name = name, .counter = counter, .kind = RLOCK_WRITE, .rounds = ROUNDS};
    struct worker wr2 = {.c = c, .name = name, .counter = counter, .rounds = ROUNDS};
    assert_int_equal(pthread_create(&ww.th, NULL, mutex_worker, &ww), 0);
    assert_int_equal(pthread_create(&wr2.th, NULL, read_check_worker, &wr2), 0);
    pthread_join(ww.th, NULL);
    pthread_join(wr2.th, NULL);
    assert_int_equal(ww.bad, 0);
    assert_int_equal(wr2.bad, 0);
    drv_reply(&A, line, sizeof(line));
    drv_reply(&B, line, sizeof(line));
    assert_string_equal(line, "ok 0"); /* Java readers never saw the counter move */
    const char *get[2] = {"GET", counter};
    assert_int_equal(cmd_int(2, get), 2 * ROUNDS);
    const char *del[2] = {"DEL", counter};
    freeReplyObject(cmd(2, del));
    rlock_free(rd);
    rlock_free(wr);
    rlock_client_free(c);
}

/* Redisson's rule for a read inside one's own write and the downgrade (issue 34), seen
 * from the other side both ways: a C writer's reads, then its write unlock, as Java sees
 * them; a Java writer's reads (RedissonReadLock inside RedissonWriteLock) and its write
 * unlock, as C sees them. */
static void test_rw_downgrade(void **state)
{
    (void)state;
    char name[128];
    rt_name(name, sizeof(name), "rs-rwdown");
    rlock_client_t *c = rs_client(0, 60000);
    rlock_t *rd = rlock_new(c, name, RLOCK_READ), *wr = rlock_new(c, name, RLOCK_WRITE);
    assert_non_null(rd);
    assert_non_null(wr);
    const char *hmode[3] = {"HGET", name, "mode"};
    const char *exn[2] = {"EXISTS", name};

    /* C writes, reads inside, downgrades: Java readers wait until the write goes */
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), 0);
    assert_int_equal(rlock_try_lock(rd, 0, 0, NULL), 0);
    assert_int_equal(drv(&A, "trylock r %s 0 0", name), 0);
    assert_int_equal(rlock_unlock(wr), 0);
    redisReply *r = cmd(3, hmode);
    assert_string_equal(r->str, "read");
    freeReplyObject(r);
    assert_int_equal(drv(&A, "trylock r %s 0 0", name), 1);
    assert_int_equal(drv(&B, "trylock w %s 0 0", name), 0);
    drv(&A, "unlock r %s", name);
    /* no upgrade: the C reader cannot take the write side */
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_unlock(rd), 0);
    assert_int_equal(cmd_int(2, exn), 0);

    /* Java writes, reads inside, downgrades: C readers wait until the write goes */
    drv(&A, "lock w %s 0", name);
    assert_int_equal(drv(&A, "trylock r %s 0 0", name), 1);
    assert_int_equal(rlock_try_lock(rd, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    drv(&A, "unlock w %s", name);
    r = cmd(3, hmode);
    assert_string_equal(r->str, "read");
    freeReplyObject(r);
    assert_int_equal(rlock_try_lock(rd, 0, 0, NULL), 0);
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_unlock(rd), 0);
    drv(&A, "unlock r %s", name);
    assert_int_equal(cmd_int(2, exn), 0);
    rlock_free(rd);
    rlock_free(wr);
    rlock_client_free(c);
}

/* RSpinLock and RFencedLock (issue 34): a C spin lock and a Java one (and RLock: the same
 * hash) exclude each other; a C fenced lock and a Java one share Redisson's token counter
 * redisson_lock_token:{name}, which has no TTL, as Redisson keeps it. */
static void test_spin_fenced(void **state)
{
    (void)state;
    char name[128], tokkey[192];
    rt_name(name, sizeof(name), "rs-spin");
    rlock_client_t *c = rs_client(0, 60000);
    rlock_t *sp = rlock_new(c, name, RLOCK_SPIN);
    assert_non_null(sp);
    assert_int_equal(rlock_try_lock(sp, 0, 0, NULL), 0);
    assert_int_equal(drv(&A, "trylock s %s 0 0", name), 0);
    assert_int_equal(drv(&A, "trylock l %s 0 0", name), 0);
    assert_int_equal(rlock_unlock(sp), 0);
    assert_int_equal(drv(&A, "trylock s %s 0 0", name), 1);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_try_lock(sp, 300, 0, NULL), RLOCK_ERR_TIMEOUT); /* spun, then gave up */
    assert_true(rt_now_ms() - t0 >= 290);
    drv(&A, "unlock s %s", name);
    assert_int_equal(rlock_try_lock(sp, 1000, 5000, NULL), 0);
    assert_int_equal(rlock_unlock(sp), 0);
    rlock_free(sp);

    rt_name(name, sizeof(name), "rs-fenced");
    snprintf(tokkey, sizeof(tokkey), "redisson_lock_token:{%s}", name);
    rlock_t *fl = rlock_new(c, name, RLOCK_FENCED);
    assert_non_null(fl);
    drv(&A, "lock n %s 0", name);
    long long t1 = drv(&A, "token %s", name);
    assert_true(t1 >= 1);
    assert_int_equal(rlock_try_lock(fl, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    drv(&A, "unlock n %s", name);
    uint64_t f = 0;
    assert_int_equal(rlock_try_lock(fl, 0, 0, &f), 0);
    assert_int_equal((long long)f, t1 + 1); /* one sequence for Java and C */
    const char *get[2] = {"GET", tokkey}, *pttl[2] = {"PTTL", tokkey};
    assert_int_equal(cmd_int(2, get), t1 + 1);
    assert_int_equal(cmd_int(2, pttl), -1);
    assert_int_equal(drv(&A, "trylock n %s 0 0", name), 0);
    assert_int_equal(rlock_unlock(fl), 0);
    drv(&A, "lock n %s 0", name);
    assert_int_equal(drv(&A, "token %s", name), t1 + 2);
    drv(&A, "unlock n %s", name);
    const char *del[2] = {"DEL", tokkey};
    freeReplyObject(cmd(2, del));
    rlock_free(fl);
    rlock_client_free(c);
}

/* RPermitExpirableSemaphore (issue 34): C and Java permits are one set; a Java permit
 * whose lease ends comes back to a C waiter without a release; a C release wakes a Java
 * waiter; either side releases the other's permit by its id. */
static void test_permit_expirable(void **state)
{
    (void)state;
    char name[128], line[128], jid[64];
    rt_name(name, sizeof(name), "rs-psem");
    rlock_client_t *c = rs_client(0, 60000);
    rlock_psem_t *s = rlock_psem_new(c, name);
    assert_non_null(s);
    assert_int_equal(rlock_psem_try_set_permits(s, 1), 1);
    assert_int_equal(drv(&A, "psem_set %s 5", name), 0);
    assert_int_equal(drv(&A, "psem_avail %s", name), 1);
    drv_send(&A, "psem_acq %s 0 400", name);
    drv_reply(&A, line, sizeof(line));
    assert_int_equal(sscanf(line, "ok %63s", jid), 1);
    assert_int_equal((int)strlen(jid), 32);
    char id[RLOCK_PERMIT_ID_SIZE];
    assert_int_equal(rlock_psem_try_acquire(s, 0, 0, id), RLOCK_ERR_TIMEOUT);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_psem_try_acquire(s, 5000, 0, id), 0); /* Java's lease ended */
    assert_true(rt_now_ms() - t0 >= 300);
    assert_int_equal(drv(&A, "psem_rel %s %s", name, jid), 0); /* expired: not held */
    /* a C release wakes a Java waiter */
    drv_send(&A, "psem_acq %s 5000 0", name);
    rt_sleep_ms(300);
    assert_int_equal(rlock_psem_release(s, id), 0);
    drv_reply(&A, line, sizeof(line));
    assert_int_equal(sscanf(line, "ok %63s", jid), 1);
    assert_int_equal((int)strlen(jid), 32);
    /* one set of ids: C releases Java's permit */
    assert_int_equal(rlock_psem_available(s), 0);
    assert_int_equal(rlock_psem_release(s, jid), 0);
    assert_int_equal(drv(&A, "psem_avail %s", name), 1);
    assert_int_equal(rlock_psem_release(s, jid), RLOCK_ERR_NOT_HELD);
    const char *del[3] = {"DEL", name, NULL};
    freeReplyObject(cmd(2, del));
    rlock_psem_free(s);
    rlock_client_free(c);
}

/* RRateLimiter (issue 34): a C limiter in Redisson mode and Java's of the same name are
 * one budget, whichever side set the rate. */
static void test_rate_limiter(void **state)
{
    (void)state;
    char name[128];
    rt_name(name, sizeof(name), "rs-rate");
    rlock_client_t *c = rs_client(0, 60000);
    rlock_rate_t *r = rlock_rate_new(c, name);
    assert_non_null(r);
    assert_int_equal(rlock_rate_try_set(r, RLOCK_RATE_OVERALL, 5, 1000, 0), 1);
    assert_int_equal(drv(&A, "rl_set %s 50 1000", name), 0); /* Java sees the C rate */
    for (int i = 0; i < 3; i++)
        assert_int_equal(drv(&A, "rl_try %s 1", name), 1);
    assert_int_equal(rlock_rate_try_acquire(r, 2, 0), 0);
    assert_int_equal(rlock_rate_try_acquire(r, 1, 0), RLOCK_ERR_TIMEOUT);
    assert_int_equal(drv(&A, "rl_try %s 1", name), 0);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_rate_try_acquire(r, 1, 3000), 0); /* when Java's first grant leaves */
    assert_true(rt_now_ms() - t0 >= 500);
    rlock_rate_free(r);

    /* Java sets, C follows its rate */
    rt_name(name, sizeof(name), "rs-rate2");
    assert_int_equal(drv(&A, "rl_set %s 2 5000", name), 1);
    r = rlock_rate_new(c, name);
    assert_int_equal(rlock_rate_try_set(r, RLOCK_RATE_OVERALL, 100, 1000, 0), 0);
    assert_int_equal(rlock_rate_try_acquire(r, 1, 0), 0);
    assert_int_equal(drv(&A, "rl_try %s 1", name), 1);
    assert_int_equal(rlock_rate_try_acquire(r, 1, 0), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_rate_try_acquire(r, 3, 0), RLOCK_ERR_REDIS); /* above the rate */
    rlock_rate_free(r);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready),
        cmocka_unit_test(test_semaphore),
        cmocka_unit_test(test_latch),
        cmocka_unit_test(test_read_write),
        cmocka_unit_test(test_rw_downgrade),
        cmocka_unit_test(test_spin_fenced),
        cmocka_unit_test(test_permit_expirable),
        cmocka_unit_test(test_rate_limiter),
    };
    if (getenv("RLOCK_TEST_FILTER"))
        cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
    return cmocka_run_group_tests(tests, test_setup, test_teardown);
}
