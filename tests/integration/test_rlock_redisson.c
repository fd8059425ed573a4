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
/* This binary: the locks (reentrant, fair, the wake-ups both ways, the watchdog);
 * test_rlock_redisson_sync.c has the synchronizers; both use rlock_redisson_harness.h. */
#include "rlock_redisson_harness.h"

/* The lock is the name's hash, each owner a field "<id>:<thread>", counts shared both ways. */
static void test_layout_and_reentrancy(void **state)
{
    (void)state;
    char name[128];
    rt_name(name, sizeof(name), "rs-layout");
    rlock_client_t *c = rs_client(0, 60000);
    rlock_t *l = rlock_new(c, name, RLOCK_REENTRANT);
    assert_non_null(l);

    long long jtid = drv(&A, "tid");
    drv(&A, "lock l %s 0", name);
    drv(&A, "lock l %s 0", name);
    assert_int_equal(drv(&A, "holds l %s", name), 2);
    char field[128];
    snprintf(field, sizeof(field), "%s:%lld", A.id, jtid);
    const char *hget[3] = {"HGET", name, field};
    assert_int_equal(cmd_int(3, hget), 2);
    /* held by Java: C is refused, and C cannot unlock it */
    assert_int_equal(rlock_try_lock(l, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    /* ...while librlock's own mode (other keys) does not even see it: what this test
     * set would catch without Redisson mode */
    rlock_client_t *own = rt_client(url, 0, 60000, 0);
    rlock_t *ol = rlock_new(own, name, RLOCK_REENTRANT);
    assert_int_equal(rlock_try_lock(ol, 0, 5000, NULL), 0);
    assert_int_equal(rlock_unlock(ol), 0);
    rlock_free(ol);
    rlock_client_free(own);
    assert_int_equal(rlock_unlock(l), RLOCK_ERR_NOT_HELD);
    assert_int_equal(cmd_int(3, hget), 2);
    drv(&A, "unlock l %s", name);
    assert_int_equal(rlock_try_lock(l, 0, 0, NULL), RLOCK_ERR_TIMEOUT);
    drv(&A, "unlock l %s", name);

    /* C reentrant: three holds in one field of the same form, a UUID and a thread id */
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_try_lock(l, 0, 0, NULL), 0);
    const char *hkeys[2] = {"HKEYS", name};
    redisReply *r = cmd(2, hkeys);
    assert_int_equal(r->elements, 1);
    const char *f = r->element[0]->str;
    assert_int_equal(strlen(rlock_client_id(c)), 36);
    assert_true(strncmp(f, rlock_client_id(c), 36) == 0 && f[36] == ':' && atoll(f + 37) > 0);
    assert_int_equal(rlock_client_id(c)[14], '4');
    assert_true(strcmp(rlock_client_id(c), A.id) != 0);
    const char *hget2[3] = {"HGET", name, f};
    assert_int_equal(cmd_int(3, hget2), 3);
    freeReplyObject(r);
    /* Redisson sees it held, and cannot unlock it */
    char line[256];
    drv_send(&A, "trylock l %s 0 0", name);
    drv_reply(&A, line, sizeof(line));
    assert_true(strncmp(line, "ok 0", 4) == 0);
    drv_send(&A, "unlock l %s", name);
    assert_int_equal(drv_recv(&A, line, sizeof(line), 60000), 1);
    assert_string_equal(line, "err not-held");
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), 0);
    const char *exists[2] = {"EXISTS", name};
    assert_int_equal(cmd_int(2, exists), 0);
    assert_int_equal(drv(&A, "trylock l %s 0 0", name), 1);
    drv(&A, "unlock l %s", name);
    rlock_free(l);
    rlock_client_free(c);
}

/* Two JVMs and two C threads bump one counter under one lock, GET then SET. */
static void run_counter(const char *kind_s, rlock_kind_t kind, const char *tag)
{
    char name[128], counter[192];
    rt_name(name, sizeof(name), tag);
    snprintf(counter, sizeof(counter), "{%s}:counter", name);
    rlock_client_t *c = rs_client(0, 1000);
    drv_send(&A, "mutex %s %s %d %s", kind_s, name, ROUNDS, counter);
    drv_send(&B, "mutex %s %s %d %s", kind_s, name, ROUNDS, counter);
    struct worker w[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (struct worker){.c = c, .name = name, .counter = counter, .kind = kind, .rounds = ROUNDS};
        assert_int_equal(pthread_create(&w[i].th, NULL, mutex_worker, &w[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].th, NULL);
        assert_int_equal(w[i].bad, 0);
    }
    char line[128];
    drv_reply(&A, line, sizeof(line));
    drv_reply(&B, line, sizeof(line));
    const char *get[2] = {"GET", counter};
    long long v = cmd_int(2, get);
    printf("# %s: counter %lld of %d\n", tag, v, 4 * ROUNDS);
    assert_int_equal(v, 4 * ROUNDS);
    const char *del[2] = {"DEL", counter};
    freeReplyObject(cmd(2, del));
    rlock_client_free(c);
}

static void test_mutex(void **state)
{
    (void)state;
    run_counter("l", RLOCK_REENTRANT, "rs-mutex");
}

/* A release on one side wakes the other side's waiter within WAKE_MS. The C waiter's
 * fallback poll is 60 s and the holder's lease 30 s: only the message can wake it. */
static void test_wake_both_ways(void **state)
{
    (void)state;
    char name[128], channel[192], line[256];
    rt_name(name, sizeof(name), "rs-wake");
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
    rlock_client_t *c = rs_client(0, 60000);
    rlock_t *mine = rlock_new(c, name, RLOCK_REENTRANT);
    int64_t to_c[WAKE_ROUNDS], to_java[WAKE_ROUNDS];
    for (int round = 0; round < WAKE_ROUNDS; round++) {
        /* Java holds, a C thread waits, Java releases */
        drv(&A, "lock l %s 0", name);
        struct waiter w = {.l = rlock_new(c, name, RLOCK_REENTRANT), .rv = -99};
        assert_int_equal(pthread_create(&w.th, NULL, waiter_main, &w), 0);
        wait_subscribers(channel, 1);
        drv_send(&A, "unlock l %s", name);
        int64_t sent = wall_ms();
        drv_reply(&A, line, sizeof(line));
        int64_t unlocked = strtoll(line + 3, NULL, 10);
        pthread_join(w.th, NULL);
        assert_int_equal(w.rv, 0);
        /* from the moment the unlock was asked (the JVM answers after it) */
        printf("# wake Java->C: %" PRId64 " ms after the unlock request (Java reported %" PRId64 ")\n",
               w.at - sent, unlocked - sent);
        assert_true(w.at - sent < WAKE_MAX_MS);
        to_c[round] = w.at - sent;
        assert_int_equal(w.unlock_rv, 0);
        rlock_free(w.l);

        /* C holds, Java waits in tryLock, C releases */
        assert_int_equal(rlock_try_lock(mine, 0, 0, NULL), 0);
        /* Redisson drops its subscription after a wait, asynchronously: the next one
         * counted must be the new waiter's, made after its first attempt failed */
        wait_subscribers(channel, 0);
        drv_send(&A, "trylock l %s 20000 0", name);
        wait_subscribers(channel, 1);
        /* Redisson looks again once subscribed: give it that moment, then it sleeps on
         * the lock's TTL (30 s) unless a message comes */
        rt_sleep_ms(200);
        int64_t t0 = wall_ms();
        assert_int_equal(rlock_unlock(mine), 0);
        drv_reply(&A, line, sizeof(line));
        long long got = 0, at = 0;
        assert_int_equal(sscanf(line, "ok %lld %lld", &got, &at), 2);
        assert_int_equal(got, 1);
        printf("# wake C->Java: %lld ms after the unlock\n", at - t0);
        assert_true(at - t0 < WAKE_MAX_MS);
        to_java[round] = at - t0;
        drv(&A, "unlock l %s", name);
    }
    int64_t mc = median(to_c, WAKE_ROUNDS), mj = median(to_java, WAKE_ROUNDS);
    printf("# wake medians over %d rounds: Java->C %" PRId64 " ms, C->Java %" PRId64 " ms\n", WAKE_ROUNDS, mc, mj);
    assert_true(mc < WAKE_MS);
    assert_true(mj < WAKE_MS);
    rlock_free(mine);
    rlock_client_free(c);
}

/* ------------------------------------------------------------------ fair lock */

static void wait_llen(const char *key, long long n)
{
    const char *llen[2] = {"LLEN", key};
    int64_t end = rt_now_ms() + 60000;
    while (cmd_int(2, llen) != n) {
        if (rt_now_ms() > end)
            fail_msg("%s never had %lld waiters", key, n);
        rt_sleep_ms(5);
    }
}

/* RFairLock and the C fair lock share one queue: Java holds, a C waiter queues first and
 * a Java waiter second; the Java release wakes the C head (its own channel), whose
 * release then wakes the Java waiter. */
static void test_fair(void **state)
{
    (void)state;
    char name[128], queue[192], line[128];
    rt_name(name, sizeof(name), "rs-fair");
    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
    rlock_client_t *c = rs_client(0, 60000);
    drv(&A, "lock f %s 0", name);
    struct waiter w = {.l = rlock_new(c, name, RLOCK_FAIR), .rv = -99};
    assert_non_null(w.l);
    assert_int_equal(pthread_create(&w.th, NULL, waiter_main, &w), 0);
    wait_llen(queue, 1);
    drv_send(&B, "trylock f %s 20000 0", name);
    wait_llen(queue, 2);
    const char *lindex[3] = {"LINDEX", queue, "0"};
    redisReply *r = cmd(3, lindex);
    assert_int_equal(strncmp(r->str, rlock_client_id(c), 36), 0); /* C first in the queue */
    freeReplyObject(r);
    const char *zcard[2] = {"ZCARD", NULL};
    char tmo[192];
    snprintf(tmo, sizeof(tmo), "redisson_lock_timeout:{%s}", name);
    zcard[1] = tmo;
    assert_int_equal(cmd_int(2, zcard), 2);
    int64_t sent = wall_ms();
    drv(&A, "unlock f %s", name);
    pthread_join(w.th, NULL);
    assert_int_equal(w.rv, 0);
    assert_int_equal(w.unlock_rv, 0);
    long long got = 0, at = 0;
    drv_reply(&B, line, sizeof(line));
    assert_int_equal(sscanf(line, "ok %lld %lld", &got, &at), 2);
    assert_int_equal(got, 1);
    printf("# fair: C head woken %" PRId64 " ms after Java's unlock request; Java next %lld ms after C got it\n",
           w.at - sent, at - w.at);
    assert_true(w.at - sent < WAKE_MAX_MS); /* includes the JVM's turn-around: see WAKE_MAX_MS */
    assert_true(at >= w.at - 2); /* in queue order (wall clocks of one machine) */
    assert_true(at - w.at < WAKE_MAX_MS); /* a JVM wake-up: see WAKE_MAX_MS */
    drv(&B, "unlock f %s", name);
    const char *ex[3] = {"EXISTS", queue, tmo};
    assert_int_equal(cmd_int(3, ex), 0);
    rlock_free(w.l);

    /* the other order: C holds, Java queues first, a C waiter second; the C release
     * goes to Java only, Java's release then wakes the C waiter on its own channel */
    rlock_t *mine = rlock_new(c, name, RLOCK_FAIR);
    assert_int_equal(rlock_try_lock(mine, 0, 0, NULL), 0);
    drv_send(&B, "trylock f %s 20000 0", name);
    wait_llen(queue, 1);
    struct waiter w2 = {.l = rlock_new(c, name, RLOCK_FAIR), .rv = -99};
    assert_int_equal(pthread_create(&w2.th, NULL, waiter_main, &w2), 0);
    wait_llen(queue, 2);
    int64_t t0 = wall_ms();
    assert_int_equal(rlock_unlock(mine), 0);
    drv_reply(&B, line, sizeof(line));
    assert_int_equal(sscanf(line, "ok %lld %lld", &got, &at), 2);
    assert_int_equal(got, 1);
    assert_true(at - t0 < WAKE_MAX_MS);
    const char *llen[2] = {"LLEN", queue};
    assert_int_equal(cmd_int(2, llen), 1); /* the C waiter still queued behind */
    sent = wall_ms();
    drv(&B, "unlock f %s", name);
    pthread_join(w2.th, NULL);
    assert_int_equal(w2.rv, 0);
    assert_int_equal(w2.unlock_rv, 0);
    printf("# fair, other order: Java head got it %lld ms after our unlock; C next %" PRId64 " ms after Java's\n",
           at - t0, w2.at - sent);
    assert_true(w2.at - sent < WAKE_MAX_MS);
    assert_int_equal(cmd_int(3, ex), 0);
    rlock_free(w2.l);
    rlock_free(mine);
    rlock_client_free(c);
}

/* ------------------------------------------------------------------ watchdog */

/* A C watchdog hold outlives several leases; after its unlock it is never renewed
 * (Redisson issue #7272): a Java lease lock taken right after ends at its lease. */
static void test_watchdog_not_after_unlock(void **state)
{
    (void)state;
    /* WD is the watchdog timeout, renewed every WD/3: a hold lapses only if the renewal
     * thread (or Redis) stalls for 2/3 of it. On CI's busy two cores a read hold lapsed
     * once with WD 600 (a stall past 400 ms), so WD leaves a second of slack. */
    enum { WD = 1500, JAVA_LEASE = 1000 };
    char name[128];
    rt_name(name, sizeof(name), "rs-wd");
    rlock_client_t *c = rs_client(WD, 60000);
    rlock_t *l = rlock_new(c, name, RLOCK_REENTRANT);
    assert_int_equal(rlock_try_lock(l, 0, 0, NULL), 0);
    /* Java waits two of our leases and never gets it: our watchdog renewed it */
    assert_int_equal(drv(&A, "trylock l %s %d 0", name, 2 * WD), 0);
    assert_true(rlock_is_held(l));
    assert_int_equal(rlock_unlock(l), 0);
    /* Redisson's #7272: a renewal outliving the unlock keeps re-arming the same owner's
     * field. Same thread, same field, now a 1000 ms lease hold: it must end on time,
     * where a leftover renewal (every WD/3 = 500 ms) would keep it alive for ever. */
    int64_t t1 = wall_ms();
    assert_int_equal(rlock_try_lock(l, 0, JAVA_LEASE, NULL), 0);
    char line[128];
    long long got = 0, at = 0;
    drv_send(&A, "trylock l %s %d 0", name, 5 * JAVA_LEASE);
    drv_reply(&A, line, sizeof(line));
    assert_int_equal(sscanf(line, "ok %lld %lld", &got, &at), 2);
    printf("# our %d ms lease hold after a watchdog hold ended after %lld ms\n", JAVA_LEASE, at - t1);
    assert_int_equal(got, 1);
    assert_true(at - t1 >= JAVA_LEASE - 50 && at - t1 < JAVA_LEASE + 2 * WD);
    drv(&A, "unlock l %s", name);
    rlock_unlock(l); /* our lease ran out: NOT_HELD, which is fine here */
    int64_t t0 = wall_ms();
    drv(&A, "lock l %s %d", name, JAVA_LEASE);
    /* the Java lease ends on time: our C waiter gets the lock then */
    assert_int_equal(rlock_try_lock(l, 5 * JAVA_LEASE, 0, NULL), 0);
    int64_t took = wall_ms() - t0;
    printf("# after our unlock, Java's %d ms lease ended after %" PRId64 " ms\n", JAVA_LEASE, took);
    assert_true(took >= JAVA_LEASE - 50 && took < JAVA_LEASE + WD);
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);

    /* read and write holds are renewed the Redisson way too: a C read hold keeps its
     * rwlock_timeout key and the hash alive past 2 leases, a C write hold likewise */
    rlock_t *rd = rlock_new(c, name, RLOCK_READ), *wr = rlock_new(c, name, RLOCK_WRITE);
    assert_int_equal(rlock_try_lock(rd, 0, 0, NULL), 0);
    assert_int_equal(drv(&A, "trylock w %s %d 0", name, 2 * WD), 0);
    char owner[RLOCK_OWNER_SIZE_T], key[512];
    snprintf(owner, sizeof(owner), "%s:%ld", rlock_client_id(c), (long)gettid());
    snprintf(key, sizeof(key), "{%s}:%s:rwlock_timeout:1", name, owner);
    const char *pttl[2] = {"PTTL", key};
    assert_true(cmd_int(2, pttl) > 0);
    assert_int_equal(rlock_unlock(rd), 0);
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), 0);
    assert_int_equal(drv(&A, "trylock r %s %d 0", name, 2 * WD), 0);
    assert_int_equal(rlock_unlock(wr), 0);
    const char *ex[3] = {"EXISTS", name, key};
    assert_int_equal(cmd_int(3, ex), 0);
    rlock_free(rd);
    rlock_free(wr);
    rlock_client_free(c);
}

/* A Java holder killed with kill -9: C gets the lock when Redisson's lease runs out,
 * never before. Before the kill, Redisson's watchdog kept it past several leases. */
static void test_java_holder_killed(void **state)
{
    (void)state;
    char name[128];
    rt_name(name, sizeof(name), "rs-kill");
    rlock_client_t *c = rs_client(0, 60000);
    rlock_t *l = rlock_new(c, name, RLOCK_REENTRANT);
    drv(&B, "lock l %s 0", name);
    assert_int_equal(rlock_try_lock(l, 2 * B_WATCHDOG + 500, 0, NULL), RLOCK_ERR_TIMEOUT);
    const char *pttl[2] = {"PTTL", name};
    int64_t t_pttl = wall_ms();
    long long left = cmd_int(2, pttl);
    assert_true(left > 0);
    int64_t t_kill = wall_ms();
    assert_int_equal(kill(B.pid, SIGKILL), 0);
    int st;
    waitpid(B.pid, &st, 0);
    close(B.in);
    close(B.out);
    B.pid = 0;
    assert_int_equal(rlock_try_lock(l, 3 * B_WATCHDOG, 0, NULL), 0);
    int64_t t_got = wall_ms();
    printf("# Java killed with %lld ms of lease left; C got the lock %" PRId64 " ms after the kill\n", left,
           t_got - t_kill);
    assert_true(t_got >= t_pttl + left - 5);   /* never before the lease ran out */
    assert_true(t_got - t_kill < B_WATCHDOG + 1000); /* and soon after it */
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready),
        cmocka_unit_test(test_layout_and_reentrancy),
        cmocka_unit_test(test_mutex),
        cmocka_unit_test(test_wake_both_ways),
        cmocka_unit_test(test_fair),
        cmocka_unit_test(test_watchdog_not_after_unlock),
        cmocka_unit_test(test_java_holder_killed), /* last: it kills driver B */
    };
    if (getenv("RLOCK_TEST_FILTER"))
        cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
    return cmocka_run_group_tests(tests, test_setup, test_teardown);
}
