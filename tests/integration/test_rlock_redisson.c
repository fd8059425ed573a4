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
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rcluster.h"
#include "rlock_test_util.h"
#ifdef RLOCK_REDISSON_CLUSTER
#include "sk_test_cluster.h"
static sk_test_cluster *cl;
#endif

#define ROUNDS 150   /* per participant in the counter runs */
#define WAKE_MS 100  /* a release on one side wakes the other side's waiter within this */
#define WAKE_ROUNDS 5
#define RLOCK_OWNER_SIZE_T 128
/* Every single wake-up must come long before any fallback (C polls every 60 s here,
 * Redisson sleeps for the holder's 30 s TTL): a JVM on two busy cores sometimes
 * answers late (GC, JIT), so the 100 ms bound is on the median of the lock's rounds
 * (test_wake_both_ways) and on wake-ups timed by C alone; a single time that includes
 * a JVM's turn-around (a command to it, or its reply) is bounded by WAKE_MAX_MS. */
#define WAKE_MAX_MS 1000

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_i64);
    return v[n / 2];
}
#define B_WATCHDOG 2000

static const char *url;
static rcl_ctx *raw; /* plain commands on the same Redis (or cluster) */
static pthread_mutex_t raw_mu = PTHREAD_MUTEX_INITIALIZER; /* rcl_ctx: one thread at a time */

/* ------------------------------------------------------------------ wall clock */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ Java driver */

typedef struct driver {
    pid_t pid;
    int in, out; /* its stdin (we write), its stdout (we read) */
    char buf[4096];
    size_t len;
    char id[64]; /* Redisson's connection-manager id */
} driver;

static driver A, B;

static int drv_start(driver *d, int watchdog_ms)
{
    const char *jar = getenv("RLOCK_REDISSON_JAR");
    if (jar == NULL)
        return -1;
    int pin[2], pout[2];
    if (pipe(pin) != 0 || pipe(pout) != 0)
        return -1;
    char wd[24];
    snprintf(wd, sizeof(wd), "%d", watchdog_ms);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        close(pin[1]);
        close(pout[0]);
        /* C1 only and the serial collector: a quick start on 2 busy cores */
        execlp("java", "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar, url, wd, (char *)NULL);
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    memset(d, 0, sizeof(*d));
    d->pid = pid;
    d->in = pin[1];
    d->out = pout[0];
    return 0;
}

/* Reads one reply line into line (without '\n') within timeout_ms (0: only what is
 * already there). @returns 1 got one, 0 none in time, -1 the driver is gone. */
static int drv_recv(driver *d, char *line, size_t size, int timeout_ms)
{
    int64_t end = rt_now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(d->buf, '\n', d->len);
        if (nl != NULL) {
            size_t n = (size_t)(nl - d->buf);
            snprintf(line, size, "%.*s", (int)n, d->buf);
            memmove(d->buf, nl + 1, d->len - n - 1);
            d->len -= n + 1;
            return 1;
        }
        int64_t left = end - rt_now_ms();
        struct pollfd p = {.fd = d->out, .events = POLLIN};
        int pr = poll(&p, 1, left > 0 ? (int)left : 0);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return 0;
        ssize_t r = read(d->out, d->buf + d->len, sizeof(d->buf) - 1 - d->len);
        if (r <= 0)
            return -1;
        d->len += (size_t)r;
    }
}

static void drv_send(driver *d, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    assert_int_equal(write(d->in, line, (size_t)n), n);
}

/* Reads the reply of a command sent before; fails the test on "err" or no answer. */
static void drv_reply(driver *d, char *line, size_t size)
{
    int r = drv_recv(d, line, size, 120000);
    if (r != 1)
        fail_msg("driver %d: no reply (%d)", (int)d->pid, r);
    if (strncmp(line, "ok", 2) != 0)
        fail_msg("driver %d: %s", (int)d->pid, line);
}

/* Sends a command and waits for its "ok ..." reply; returns the first number after ok. */
static long long drv(driver *d, const char *fmt, ...)
{
    char cmd[512], line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    drv_send(d, "%s", cmd);
    drv_reply(d, line, sizeof(line));
    return strtoll(line + 2, NULL, 10);
}

static void drv_ready(driver *d)
{
    char line[256];
    if (drv_recv(d, line, sizeof(line), 120000) != 1 || strncmp(line, "ready ", 6) != 0)
        fail_msg("driver did not start (is the jar built? %s)", getenv("RLOCK_REDISSON_JAR"));
    /* "ready <id> <Redisson version>" */
    char *sp = strchr(line + 6, ' ');
    if (sp)
        *sp++ = '\0';
    if (strlen(line + 6) >= sizeof(d->id))
        fail_msg("driver id too long: %s", line + 6);
    memcpy(d->id, line + 6, strlen(line + 6) + 1);
    printf("# driver %d: Redisson %s, id %s\n", (int)d->pid, sp ? sp : "?", d->id);
}

static void drv_stop(driver *d)
{
    if (d->pid <= 0)
        return;
    drv_send(d, "quit");
    close(d->in);
    int st;
    waitpid(d->pid, &st, 0);
    close(d->out);
    d->pid = 0;
}

/* ------------------------------------------------------------------ raw Redis */

static redisReply *cmd(int argc, const char **argv)
{
    size_t vl[8];
    for (int i = 0; i < argc; i++)
        vl[i] = strlen(argv[i]);
    pthread_mutex_lock(&raw_mu);
    redisReply *r = rcl_command_argv(raw, argc, argv, vl);
    pthread_mutex_unlock(&raw_mu);
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        fail_msg("redis %s: %s", argv[0], r ? r->str : rcl_errstr(raw));
    return r;
}

static long long cmd_int(int argc, const char **argv)
{
    redisReply *r = cmd(argc, argv);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
}

/* Subscribers of `channel`, plain and sharded, on every node. */
static long long subscribers(const char *channel)
{
    long long n = 0;
#ifdef RLOCK_REDISSON_CLUSTER
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++) {
        for (int k = 0; k < 2; k++) {
            redisReply *r = sk_test_cluster_cmd(cl, i, k ? "PUBSUB SHARDNUMSUB %s" : "PUBSUB NUMSUB %s", channel);
            if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
                n += r->element[1]->integer;
            if (r)
                freeReplyObject(r);
        }
    }
#else
    const char *argv[3] = {"PUBSUB", "NUMSUB", channel};
    redisReply *r = cmd(3, argv);
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        n = r->element[1]->integer;
    freeReplyObject(r);
#endif
    return n;
}

/* Waits until `channel` has at least n subscribers (n > 0), or none (n == 0). */
static void wait_subscribers(const char *channel, long long n)
{
    int64_t end = rt_now_ms() + 60000;
    for (;;) {
        long long now = subscribers(channel);
        if (n > 0 ? now >= n : now == 0)
            return;
        if (rt_now_ms() > end)
            fail_msg("%s: %lld subscribers, want %s%lld", channel, now, n > 0 ? ">= " : "", n);
        rt_sleep_ms(5);
    }
}

static rlock_client_t *rs_client(int watchdog_ms, int poll_ms)
{
    char err[256];
    rlock_client_opts o = {.watchdog_timeout_ms = watchdog_ms, .wait_poll_ms = poll_ms, .redisson = 1};
    rlock_client_t *c = rlock_client_new(url, &o, err, sizeof(err));
    if (c == NULL)
        fail_msg("rlock_client_new: %s", err);
    return c;
}

/* ------------------------------------------------------------------ C workers */

struct worker {
    rlock_client_t *c;
    const char *name, *counter;
    rlock_kind_t kind;
    int rounds;
    int bad;      /* mutex: errors; sem: users over the total; read check: counter moved */
    long long total;
    pthread_t th;
};

/* GET then SET under the lock (as the driver's "mutex") */
static void *mutex_worker(void *p)
{
    struct worker *w = p;
    rlock_t *l = rlock_new(w->c, w->name, w->kind);
    for (int i = 0; i < w->rounds && l; i++) {
        if (rlock_lock(l, 0, NULL) != 0) {
            w->bad++;
            continue;
        }
        const char *get[2] = {"GET", w->counter};
        long long v = cmd_int(2, get);
        char s[24];
        snprintf(s, sizeof(s), "%lld", v + 1);
        const char *set[3] = {"SET", w->counter, s};
        freeReplyObject(cmd(3, set));
        if (rlock_unlock(l) != 0)
            w->bad++;
    }
    rlock_free(l);
    return NULL;
}

static int test_setup(void **state)
{
    (void)state;
    char err[512];
#ifdef RLOCK_REDISSON_CLUSTER
    cl = sk_test_cluster_start(NULL, err, sizeof(err));
    if (cl == NULL) {
        fprintf(stderr, "sk_test_cluster_start: %s\n", err);
        return -1;
    }
    url = sk_test_cluster_url(cl);
#else
    url = rt_redis_url();
    if (url == NULL) {
        fprintf(stderr, "SECKILL_REDIS_URL not set\n");
        return -1;
    }
#endif
    struct timeval tv = {5, 0};
    raw = rcl_connect(url, tv, err, sizeof(err));
    if (raw == NULL) {
        fprintf(stderr, "rcl_connect: %s\n", err);
        return -1;
    }
    /* both JVMs start at once: their start-up is the slow part */
    if (drv_start(&A, 30000) != 0 || drv_start(&B, B_WATCHDOG) != 0) {
        fprintf(stderr, "cannot start the Redisson driver (RLOCK_REDISSON_JAR=%s)\n", getenv("RLOCK_REDISSON_JAR"));
        return -1;
    }
    return 0;
}

static int test_teardown(void **state)
{
    (void)state;
    drv_stop(&A);
    drv_stop(&B);
    rcl_free(raw);
#ifdef RLOCK_REDISSON_CLUSTER
    sk_test_cluster_free(cl);
#endif
    return 0;
}

/* ------------------------------------------------------------------ tests */

static void test_ready(void **state)
{
    (void)state;
    drv_ready(&A);
    drv_ready(&B);
}

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

/* A C waiter in its own thread: try_lock for up to 20 s, then notes when it got it. */
struct waiter {
    rlock_t *l;
    int rv, unlock_rv;
    int64_t at;
    pthread_t th;
};

/* The hold is the thread's: it releases it itself. */
static void *waiter_main(void *p)
{
    struct waiter *w = p;
    w->rv = rlock_try_lock(w->l, 20000, 0, NULL);
    w->at = wall_ms();
    w->unlock_rv = w->rv == 0 ? rlock_unlock(w->l) : -99;
    return NULL;
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

/* ------------------------------------------------------------------ watchdog */

/* A C watchdog hold outlives several leases; after its unlock it is never renewed
 * (Redisson issue #7272): a Java lease lock taken right after ends at its lease. */
static void test_watchdog_not_after_unlock(void **state)
{
    (void)state;
    enum { WD = 600, JAVA_LEASE = 1000 };
    char name[128];
    rt_name(name, sizeof(name), "rs-wd");
    rlock_client_t *c = rs_client(WD, 60000);
    rlock_t *l = rlock_new(c, name, RLOCK_REENTRANT);
    assert_int_equal(rlock_try_lock(l, 0, 0, NULL), 0);
    /* Java waits three of our leases and never gets it: our watchdog renewed it */
    assert_int_equal(drv(&A, "trylock l %s %d 0", name, 3 * WD), 0);
    assert_true(rlock_is_held(l));
    assert_int_equal(rlock_unlock(l), 0);
    /* Redisson's #7272: a renewal outliving the unlock keeps re-arming the same owner's
     * field. Same thread, same field, now a 1000 ms lease hold: it must end on time,
     * where a leftover renewal (every WD/3 = 200 ms) would keep it alive for ever. */
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
     * rwlock_timeout key and the hash alive past 3 leases, a C write hold likewise */
    rlock_t *rd = rlock_new(c, name, RLOCK_READ), *wr = rlock_new(c, name, RLOCK_WRITE);
    assert_int_equal(rlock_try_lock(rd, 0, 0, NULL), 0);
    assert_int_equal(drv(&A, "trylock w %s %d 0", name, 3 * WD), 0);
    char owner[RLOCK_OWNER_SIZE_T], key[512];
    snprintf(owner, sizeof(owner), "%s:%ld", rlock_client_id(c), (long)gettid());
    snprintf(key, sizeof(key), "{%s}:%s:rwlock_timeout:1", name, owner);
    const char *pttl[2] = {"PTTL", key};
    assert_true(cmd_int(2, pttl) > 0);
    assert_int_equal(rlock_unlock(rd), 0);
    assert_int_equal(rlock_try_lock(wr, 0, 0, NULL), 0);
    assert_int_equal(drv(&A, "trylock r %s %d 0", name, 3 * WD), 0);
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
        cmocka_unit_test(test_semaphore),
        cmocka_unit_test(test_latch),
        cmocka_unit_test(test_read_write),
        cmocka_unit_test(test_rw_downgrade),
        cmocka_unit_test(test_spin_fenced),
        cmocka_unit_test(test_permit_expirable),
        cmocka_unit_test(test_rate_limiter),
        cmocka_unit_test(test_watchdog_not_after_unlock),
        cmocka_unit_test(test_java_holder_killed), /* last: it kills driver B */
    };
    if (getenv("RLOCK_TEST_FILTER"))
        cmocka_set_test_filter(getenv("RLOCK_TEST_FILTER"));
    return cmocka_run_group_tests(tests, test_setup, test_teardown);
}
