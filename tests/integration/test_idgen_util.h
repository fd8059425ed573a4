/* Helpers shared by the idgen integration tests: a direct Redis connection for set-up and
 * clean-up, duplicate checks, spawning the idgen CLI, and generator threads that collect
 * IDs and errors while the test does something nasty to Redis or the clock.
 * Header-only (static functions): each test is one executable. */
#ifndef TEST_IDGEN_UTIL_H
#define TEST_IDGEN_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
#include "sk_test_proc.h"

/* The shared Redis of deploy/local.sh up, or NULL (the test then skips). */
static inline const char *tu_shared_url(void)
{
    const char *u = getenv("SECKILL_REDIS_URL");
    return u && *u ? u : NULL;
}

/* A direct connection for set-up and clean-up (redis://host:port only). */
static inline redisContext *tu_connect(const char *url)
{
    char host[256] = "127.0.0.1";
    int port = 6379;
    if (sscanf(url, "redis://%255[^:/]:%d", host, &port) < 1)
        return NULL;
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

static inline long long tu_get(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    long long v = (r && r->type == REDIS_REPLY_STRING) ? atoll(r->str) : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

static inline void tu_cmd(redisContext *c, const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(c, fmt, a, b);
    assert_non_null(r);
    assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
}

/* Deletes every icr:<prefix>:* key. */
static inline void tu_cleanup(const char *url, const char *prefix)
{
    redisContext *c = tu_connect(url);
    if (!c)
        return;
    char pattern[256];
    snprintf(pattern, sizeof(pattern), "icr:%s:*", prefix);
    redisReply *r = redisCommand(c, "KEYS %s", pattern);
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *d = redisCommand(c, "DEL %s", r->element[i]->str);
        if (d)
            freeReplyObject(d);
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
}

static int tu_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts ids and returns how many duplicates there are. */
static inline size_t tu_count_dups(uint64_t *ids, size_t n)
{
    qsort(ids, n, sizeof(*ids), tu_cmp_u64);
    size_t d = 0;
    for (size_t i = 1; i < n; i++)
        if (ids[i] == ids[i - 1])
            d++;
    return d;
}

/* ---- the CLI ---- */

static inline const char *tu_cli_path(void)
{
    static char path[1024];
    const char *dir = getenv("SECKILL_BIN_DIR");
    snprintf(path, sizeof(path), "%s/idgen", dir && *dir ? dir : ".");
    return path;
}

/* Starts the CLI with argv (argv[0] ignored), stdout to out_path (or /dev/null), stderr
 * to err_path (or inherited). @returns the pid. */
static inline pid_t tu_spawn(char *const argv[], const char *out_path, const char *err_path)
{
    size_t n = 0;
    while (argv[n])
        n++;
    const char **args = calloc(n + 1, sizeof(*args));
    assert_non_null(args);
    args[0] = tu_cli_path();
    for (size_t i = 1; i < n; i++)
        args[i] = argv[i];
    sk_test_spawn_opts o = {.out_path = out_path ? out_path : "/dev/null", .err_path = err_path};
    pid_t pid = sk_test_spawn(args, &o);
    free(args);
    assert_true(pid >= 0);
    return pid;
}

/* Waits for the CLI's exit. @returns its status, 128+signal if killed. */
static inline int tu_wait(pid_t pid)
{
    return sk_test_proc_stop(pid, 0, -1);
}

/* Reads decimal IDs, one a line, appending to *ids. @returns how many were read. */
static inline size_t tu_read_ids(const char *path, uint64_t **ids, size_t *n, size_t *cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[64];
    size_t got = 0;
    while (fgets(line, sizeof(line), f)) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 1 << 20;
            *ids = realloc(*ids, *cap * sizeof(**ids));
            assert_non_null(*ids);
        }
        char *end;
        (*ids)[(*n)++] = strtoull(line, &end, 10);
        assert_true(*end == '\n');
        got++;
    }
    fclose(f);
    return got;
}

/* ---- generator threads that run until told to stop ---- */

typedef struct tu_gen_thread {
    pthread_t th;
    idgen_t *g;
    uint64_t *ids;
    _Atomic size_t n; /* IDs collected so far */
    size_t cap;
    _Atomic uint64_t errors, resets, exhausted, other_errors;
    _Atomic int64_t max_fail_ms; /* the slowest failing call */
    _Atomic int stop;
    int last_rc;
    char last_err[256];
} tu_gen_thread;

static void *tu_gen_main(void *arg)
{
    tu_gen_thread *t = arg;
    while (!atomic_load(&t->stop) && atomic_load(&t->n) < t->cap) {
        uint64_t id;
        int64_t t0 = sk_test_now_ms();
        int rc = idgen_next(t->g, &id);
        if (rc == IDGEN_OK) {
            t->ids[atomic_load(&t->n)] = id;
            /* 1 ms off every 100 IDs: segment mode would fill memory in a second. */
            if (atomic_fetch_add(&t->n, 1) % 100 == 99)
                sk_test_pause_ms(1);
            continue;
        }
        int64_t took = sk_test_now_ms() - t0;
        if (took > atomic_load(&t->max_fail_ms))
            atomic_store(&t->max_fail_ms, took);
        atomic_fetch_add(&t->errors, 1);
        if (rc == IDGEN_ERR_RESET)
            atomic_fetch_add(&t->resets, 1);
        else if (rc != IDGEN_ERR_REDIS)
            atomic_fetch_add(&t->other_errors, 1);
        t->last_rc = rc;
        snprintf(t->last_err, sizeof(t->last_err), "%s", idgen_errstr(t->g));
        if (rc == IDGEN_ERR_REDIS)
            sk_test_pause_ms(5); /* a real caller would back off too */
    }
    return NULL;
}

static inline void tu_gen_start(tu_gen_thread *t, idgen_t *g, size_t cap)
{
    memset(t, 0, sizeof(*t));
    t->g = g;
    t->cap = cap;
    t->ids = malloc(cap * sizeof(uint64_t));
    assert_non_null(t->ids);
    assert_int_equal(pthread_create(&t->th, NULL, tu_gen_main, t), 0);
}

static inline void tu_gen_stop(tu_gen_thread *t)
{
    atomic_store(&t->stop, 1);
    pthread_join(t->th, NULL);
}

/* Polls cond(arg) until it holds or ms pass. @returns whether it held. */
static inline int tu_wait_for(int (*cond)(void *), void *arg, int ms)
{
    int64_t deadline = sk_test_now_ms() + ms;
    while (!cond(arg)) {
        if (sk_test_now_ms() > deadline)
            return 0;
        sk_test_pause_ms(2);
    }
    return 1;
}

#endif
