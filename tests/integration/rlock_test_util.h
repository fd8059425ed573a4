/* rlock_test_util: helpers shared by librlock's integration tests: the shared Redis
 * address, unique names, a raw hiredis connection for checks, forked workers, and
 * waiting on a condition with a deadline. */
#ifndef RLOCK_TEST_UTIL_H
#define RLOCK_TEST_UTIL_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "rlock.h"

/* $SECKILL_REDIS_URL, or NULL (the test then skips). */
const char *rt_redis_url(void);
/* "<prefix>-<pid>-<n>": unique per process and call. */
const char *rt_name(char *buf, size_t size, const char *prefix);
/* Raw connection to a redis:// URL (asserts on failure). */
redisContext *rt_connect(const char *url);
/* One command, integer result (GET of a number too; nil: 0; error: asserts). */
long long rt_int(redisContext *c, const char *fmt, ...);
/* A client with options (asserts on failure). */
rlock_client_t *rt_client(const char *url, int watchdog_ms, int poll_ms, int fair_waiter_ms);
int64_t rt_now_ms(void);
void rt_sleep_ms(int64_t ms);
/* Forks n children running fn(i, arg) whose return is the exit status; waits for all.
 * @returns how many children failed (non-zero status or killed). */
typedef int(rt_child_fn)(int i, void *arg);
int rt_fork_all(int n, rt_child_fn *fn, void *arg);

#endif
