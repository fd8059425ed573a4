/* Mutual exclusion, the way the seeds show it: 8 processes x 2,000 increments of a plain
 * GET-then-SET counter (not INCR) under the lock end at exactly 16,000, for the simple,
 * reentrant, fair and Redlock locks. The same loop without the lock ends below 16,000:
 * the race is real. A yield between GET and SET widens the window so the unlocked
 * run loses thousands of updates every time rather than a few by luck.
 * Built a second time with RLOCK_MUTEX_CLUSTER (test_rlock_mutex_cluster): the same runs
 * for the simple and reentrant locks on a throwaway Redis Cluster (a redis-cluster://
 * URL; the counter shares the lock's hash tag, so it is read on that slot's master). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rlock_test_util.h"
#include "sk_test_redis.h"
#ifdef RLOCK_MUTEX_CLUSTER
#include "rcluster.h"
#include "sk_test_cluster.h"
#endif

#define PROCS 8
#define ITERS 2000
#define NSERVERS 5

enum mode { M_NONE = -1 };

struct run {
    int mode; /* rlock_kind_t, M_NONE, or 100 for Redlock */
    const char *url;
    char name[128];
    char counter[192];
    const char *redlock_urls[NSERVERS];
};

/* GET, pause, SET: the window in which an unprotected writer loses an update. */
static int bump(redisContext *rc, const char *key)
{
    redisReply *r = redisCommand(rc, "GET %s", key);
    if (r == NULL)
        return -1;
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    sched_yield();
    r = redisCommand(rc, "SET %s %lld", key, v + 1);
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* A plain connection that serves `key`: the server, or its slot's master. */
static redisContext *counter_conn(const char *url, const char *key)
{
#ifdef RLOCK_MUTEX_CLUSTER
    char err[256];
    struct timeval tv = {5, 0};
    rcl_ctx *c = rcl_connect(url, tv, err, sizeof(err));
    redisContext *rc = c ? rcl_connect_node(c, key, strlen(key), err, sizeof(err)) : NULL;
    rcl_free(c);
    if (rc == NULL)
        fail_msg("cluster %s: %s", url, err);
    return rc;
#else
    (void)key;
    return rt_connect(url);
#endif
}

static int child(int i, void *arg)
{
    (void)i;
    struct run *run = arg;
    redisContext *rc = counter_conn(run->url, run->counter);
    rlock_client_t *c = NULL;
    rlock_t *l = NULL;
    rlock_redlock_t *rl = NULL;
    char err[256];
    if (run->mode == 100) {
        rl = rlock_redlock_new(run->redlock_urls, NSERVERS, run->name, 200, err, sizeof(err));
        if (rl == NULL)
            return 2;
        rlock_redlock_set_retry_delay(rl, 2);
    } else if (run->mode != M_NONE) {
        c = rt_client(run->url, 0, 0, 0);
        l = rlock_new(c, run->name, (rlock_kind_t)run->mode);
    }
    int bad = 0;
    for (int k = 0; k < ITERS && !bad; k++) {
        if (rl && rlock_redlock_lock(rl, 10000, 60000, NULL) != 0)
            bad = 3;
        if (l && rlock_lock(l, 10000, NULL) != 0)
            bad = 4;
        if (!bad && bump(rc, run->counter) != 0)
            bad = 5;
        if (!bad && rl && rlock_redlock_unlock(rl) != 0)
            bad = 6;
        if (!bad && l && rlock_unlock(l) != 0)
            bad = 7;
    }
    if (bad && l)
        fprintf(stderr, "child %d: %s\n", i, rlock_errstr(l));
    if (bad && rl)
        fprintf(stderr, "child %d: %s\n", i, rlock_redlock_errstr(rl));
    rlock_free(l);
    rlock_client_free(c);
    rlock_redlock_free(rl);
    redisFree(rc);
    return bad;
}

/* A private server without AOF for these 80,000 lock round trips: the shared one
 * fsyncs every write (appendfsync always) and is busy with everyone's tests. */
#ifdef RLOCK_MUTEX_CLUSTER
static sk_test_cluster *cl;

static const char *server_url(void) { return sk_test_cluster_url(cl); }

static int setup(void **state)
{
    (void)state;
    char err[512];
    cl = sk_test_cluster_start(NULL, err, sizeof(err));
    if (cl == NULL)
        fprintf(stderr, "sk_test_cluster_start: %s\n", err);
    return cl == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    sk_test_cluster_free(cl);
    return 0;
}
#else
static sk_test_redis *srv;

static const char *server_url(void) { return sk_test_redis_url(srv); }

static int setup(void **state)
{
    (void)state;
    char err[256];
    const char *const noaof[] = {"--appendonly", "no", NULL};
    srv = sk_test_redis_start(noaof, err, sizeof(err));
    if (srv == NULL)
        fprintf(stderr, "sk_test_redis_start: %s\n", err);
    return srv == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    sk_test_redis_free(srv);
    return 0;
}
#endif

static void run_init(struct run *run, int mode, const char *tag, const char *const *redlock_urls)
{
    memset(run, 0, sizeof(*run));
    run->mode = mode;
    run->url = server_url();
    rt_name(run->name, sizeof(run->name), tag);
    snprintf(run->counter, sizeof(run->counter), "rlock:{%s}:counter", run->name);
    if (redlock_urls)
        memcpy(run->redlock_urls, redlock_urls, sizeof(run->redlock_urls));
}

/* Runs PROCS children on each of runs[0..n) at the same time and returns each counter
 * in out[]. */
static void run_counters(struct run *runs, int n, long long *out)
{
    pid_t pids[64];
    int64_t t0 = rt_now_ms(), done_at[8] = {0};
    int left[8];
    fflush(NULL);
    for (int k = 0; k < n; k++) {
        left[k] = PROCS;
        for (int i = 0; i < PROCS; i++) {
            pid_t p = fork();
            assert_true(p >= 0);
            if (p == 0)
                _exit(child(i, &runs[k]));
            pids[k * PROCS + i] = p;
        }
    }
    int failed = 0;
    for (int j = 0; j < n * PROCS; j++) {
        int st;
        pid_t p = wait(&st);
        assert_true(p > 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
        for (int x = 0; x < n * PROCS; x++)
            if (pids[x] == p && --left[x / PROCS] == 0)
                done_at[x / PROCS] = rt_now_ms();
    }
    for (int k = 0; k < n; k++) {
        redisContext *raw = counter_conn(server_url(), runs[k].counter);
        out[k] = rt_int(raw, "GET %s", runs[k].counter);
        fprintf(stderr, "# %-26s counter %lld after %d x %d in %lld ms\n", runs[k].name, out[k], PROCS,
                ITERS, (long long)(done_at[k] - t0));
        rt_int(raw, "DEL %s rlock:{%s}:fence", runs[k].counter, runs[k].name);
        redisFree(raw);
    }
    assert_int_equal(failed, 0);
}

static void test_without_lock_loses_updates(void **state)
{
    (void)state;
    struct run run;
    long long v;
    run_init(&run, M_NONE, "nolock", NULL);
    run_counters(&run, 1, &v);
    assert_true(v < PROCS * ITERS);
    assert_true(v > 0);
}

static void check_locked(int mode, const char *tag, const char *const *redlock_urls)
{
    struct run run;
    long long v;
    run_init(&run, mode, tag, redlock_urls);
    run_counters(&run, 1, &v);
    assert_int_equal(v, PROCS * ITERS);
}

static void test_simple(void **state)
{
    (void)state;
    check_locked(RLOCK_SIMPLE, "mx-simple", NULL);
}

static void test_reentrant(void **state)
{
    (void)state;
    check_locked(RLOCK_REENTRANT, "mx-reent", NULL);
}

#ifndef RLOCK_MUTEX_CLUSTER
static void test_fair(void **state)
{
    (void)state;
    check_locked(RLOCK_FAIR, "mx-fair", NULL);
}

static void test_redlock(void **state)
{
    (void)state;
    sk_test_redis *rl_srv[NSERVERS];
    const char *urls[NSERVERS];
    char err[256];
    const char *const noaof[] = {"--appendonly", "no", NULL};
    for (int i = 0; i < NSERVERS; i++) {
        rl_srv[i] = sk_test_redis_start(noaof, err, sizeof(err));
        if (rl_srv[i] == NULL)
            fail_msg("sk_test_redis_start: %s", err);
        urls[i] = sk_test_redis_url(rl_srv[i]);
    }
    check_locked(100, "mx-redlock", urls);
    for (int i = 0; i < NSERVERS; i++)
        sk_test_redis_free(rl_srv[i]);
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_without_lock_loses_updates),
        cmocka_unit_test(test_simple),
        cmocka_unit_test(test_reentrant),
#ifndef RLOCK_MUTEX_CLUSTER /* Redlock's servers are independent by design; fair: not asked */
        cmocka_unit_test(test_fair),
        cmocka_unit_test(test_redlock),
#endif
    };
    if (getenv("RLOCK_TEST_FILTER")) /* e.g. RLOCK_TEST_FILTER=test_redlock */
        cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
