/* rlock_redisson_harness: what the Redisson interop tests share (test_rlock_redisson.c,
 * the locks; test_rlock_redisson_sync.c, the synchronizers): two Redisson drivers (A with
 * the default 30 s watchdog, B with B_WATCHDOG) driven line by line, a raw connection to
 * the same Redis or cluster, the C workers and waiters, and the group set-up. Split out
 * of one 1,230-line test file; the names stay the tests' (test code, one binary each).
 * Built into each test binary with the binary's RLOCK_REDISSON_CLUSTER setting. */
#ifndef RLOCK_REDISSON_HARNESS_H
#define RLOCK_REDISSON_HARNESS_H

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
extern sk_test_cluster *cl; /* the throwaway 3+3 cluster */
#endif

#define ROUNDS 150   /* per participant in the counter runs */
#define WAKE_MS 100  /* a release on one side wakes the other side's waiter within this */
#define WAKE_ROUNDS 5
#define RLOCK_OWNER_SIZE_T 128
/* Every single wake-up must come long before any fallback (C polls every 60 s here,
 * Redisson sleeps for the holder's 30 s TTL): a JVM on two busy cores sometimes
 * answers late (GC, JIT), so the 100 ms bound is on the median of the lock's rounds
 * (test_wake_both_ways) and on wake-ups timed by C alone; a single time that includes
 * a JVM's turn-around (a command to it, or its reply) is bounded by WAKE_MAX_MS, a
 * sixth of the nearest fallback. CI once saw a JVM wake-up take 1,208 ms (the other
 * rounds: 1 to 3 ms), so the bound is not a second. */
#define WAKE_MAX_MS 5000
#define B_WATCHDOG 2000

typedef struct driver {
    pid_t pid;
    int in, out; /* its stdin (we write), its stdout (we read) */
    char buf[4096];
    size_t len;
    char id[64]; /* Redisson's connection-manager id */
} driver;

extern driver A, B;
extern const char *url; /* the Redis (or cluster) both sides use */
extern rcl_ctx *raw;    /* plain commands on it (through cmd(): one thread at a time) */

int64_t median(int64_t *v, int n); /* sorts v */
int64_t wall_ms(void);
/* The driver protocol: a line out, "ok ..." back (drv: the first number after ok). */
int drv_recv(driver *d, char *line, size_t size, int timeout_ms);
void drv_send(driver *d, const char *fmt, ...);
void drv_reply(driver *d, char *line, size_t size);
long long drv(driver *d, const char *fmt, ...);
void drv_ready(driver *d);
void drv_stop(driver *d);
/* Raw Redis (fails the test on an error reply). */
redisReply *cmd(int argc, const char **argv);
long long cmd_int(int argc, const char **argv);
long long subscribers(const char *channel);
void wait_subscribers(const char *channel, long long n);
rlock_client_t *rs_client(int watchdog_ms, int poll_ms);

struct worker {
    rlock_client_t *c;
    const char *name, *counter;
    rlock_kind_t kind;
    int rounds;
    int bad;      /* mutex: errors; sem: users over the total; read check: counter moved */
    long long total;
    pthread_t th;
};

/* GET then SET under the lock (as the driver's "mutex"). */
void *mutex_worker(void *p);

/* A C waiter in its own thread: try_lock for up to 20 s, then notes when it got it. */
struct waiter {
    rlock_t *l;
    int rv, unlock_rv;
    int64_t at;
    pthread_t th;
};
void *waiter_main(void *p);

/* The group's set-up (Redis or cluster, the raw connection, both JVMs) and tear-down;
 * test_ready waits for both drivers (every group's first test). */
int test_setup(void **state);
int test_teardown(void **state);
void test_ready(void **state);

#endif
