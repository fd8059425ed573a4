/* rlock_test_util: see rlock_test_util.h. */
#include "rlock_test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *rt_redis_url(void)
{
    const char *u = getenv("SECKILL_REDIS_URL");
    return u && *u ? u : NULL;
}

const char *rt_name(char *buf, size_t size, const char *prefix)
{
    static int n;
    snprintf(buf, size, "rlt-%s-%ld-%d-%lld", prefix, (long)getpid(), ++n, (long long)rt_now_ms());
    return buf;
}

redisContext *rt_connect(const char *url)
{
    int port = 6379;
    char host[128] = "127.0.0.1";
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *at = strchr(p, '@');
    if (at)
        p = at + 1;
    sscanf(p, "%127[^:/]:%d", host, &port);
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    assert_non_null(c);
    if (c->err)
        fail_msg("connect %s: %s", url, c->errstr);
    redisSetTimeout(c, tv);
    return c;
}

long long rt_int(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        fail_msg("redis: %s", c->errstr);
    long long v = 0;
    if (r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    else if (r->type == REDIS_REPLY_ERROR)
        fail_msg("redis error: %s", r->str);
    freeReplyObject(r);
    return v;
}

rlock_client_t *rt_client(const char *url, int watchdog_ms, int poll_ms, int fair_waiter_ms)
{
    char err[256];
    rlock_client_opts o = {.watchdog_timeout_ms = watchdog_ms, .wait_poll_ms = poll_ms,
                           .fair_waiter_timeout_ms = fair_waiter_ms};
    rlock_client_t *c = rlock_client_new(url, &o, err, sizeof(err));
    if (c == NULL)
        fail_msg("rlock_client_new: %s", err);
    return c;
}

int64_t rt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rt_sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int rt_fork_all(int n, rt_child_fn *fn, void *arg)
{
    pid_t pids[64];
    assert_true(n <= 64);
    fflush(NULL);
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(fn(i, arg)); /* _exit: the parent's cmocka/atexit state is not ours */
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int st;
        if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    return failed;
}
