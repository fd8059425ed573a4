/* librlock: the Redis lock family (Redisson's RLock and friends) in C, with fencing tokens.
 *
 * One rlock_client_t per process (or per Redis) holds a command connection, a process-
 * unique id and the watchdog thread. Lock-like objects are opaque handles made from it:
 *
 *   rlock_t          simple (SET NX PX), reentrant, fair, read, write, spin and fenced locks
 *   rlock_sem_t      semaphore (permits)          rlock_latch_t   countdown latch
 *   rlock_redlock_t  Redlock over N independent Redis servers (its own connections)
 *   rlock_multi_*    all of several rlock_t or none (MultiLock)
 *
 * Threads: the client is thread-safe: its threads share its command connection, their
 * concurrent commands pipelined together, and its threads waiting for one exclusive lock
 * queue in the client, one of them at a time asking Redis (lock/README.md). A handle
 * (rlock_t, rlock_sem_t, rlock_latch_t, rlock_redlock_t) belongs to one thread at a time:
 * threads that contend for one lock each make their own handle for the same name. The
 * reentrant, fair, read and write locks are owned by (client id, thread id), as in
 * Redisson, so two handles of one thread re-enter each other's hold.
 *
 * Errors: functions return 0 or a negative rlock_err_t; the handle keeps a message
 * (rlock_errstr, rlock_sem_errstr, ...); constructors fill the caller's errstr.
 * Libraries never print. */
#ifndef RLOCK_H
#define RLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "rlock_version.h" /* RLOCK_VERSION: generated from project() in CMakeLists.txt */

/* RLOCK_EXPORT marks the public API. librlock is built with -fvisibility=hidden and
 * RLOCK_BUILDING defined, so only what carries this macro is exported from the shared
 * library; for users it expands to nothing (as libuv's UV_EXTERN, librdkafka's RD_EXPORT). */
#if defined(RLOCK_BUILDING) && defined(__GNUC__)
#define RLOCK_EXPORT __attribute__((visibility("default")))
#else
#define RLOCK_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlock_err {
    RLOCK_OK = 0,
    RLOCK_ERR_IO = -1,       /* connection or timeout talking to Redis: retriable */
    RLOCK_ERR_REDIS = -2,    /* Redis answered an error (script, OOM, READONLY...) */
    RLOCK_ERR_TIMEOUT = -3,  /* not acquired within the wait: retriable */
    RLOCK_ERR_NOT_HELD = -4, /* unlock/renew by a caller that does not hold it (Java's
                              * IllegalMonitorStateException): a bug or a lost lock */
    RLOCK_ERR_ARG = -5,      /* bad argument */
    RLOCK_ERR_NOMEM = -6,    /* out of memory */
    RLOCK_ERR_STATE = -7,    /* call not valid now (count already set, not held here...) */
} rlock_err_t;

/** @returns a short static description of `err`. */
RLOCK_EXPORT const char *rlock_strerror(int err);
/** @returns 1 when trying the same call again later may succeed (IO, TIMEOUT). */
RLOCK_EXPORT int rlock_err_retriable(int err);

/* ------------------------------------------------------------------ client */

typedef struct rlock_client rlock_client_t;

typedef struct rlock_client_opts {
    int connect_timeout_ms;  /* connect and per-command timeout; 0: 2000 */
    int watchdog_timeout_ms; /* lease of watchdog locks, renewed every third; 0: 30000 */
    int wait_poll_ms;        /* pub/sub wait falls back to a retry this often; 0: 1000 */
    int fair_waiter_timeout_ms; /* a fair-lock waiter silent this long is dropped; 0: 5000 */
    int redisson; /* 1: Redisson mode: reentrant, read and write locks, semaphores and
                   * latches of this client use Redisson's keys, hash fields, channels and
                   * messages, so they exclude (and wake) Redisson's RLock, RFairLock,
                   * RReadWriteLock, RSemaphore and RCountDownLatch of the same name; the
                   * client id is a UUID like Redisson's. Simple locks and Redlock keep
                   * librlock's own keys. See lock/README.md. */
    int64_t fence_retention_ms; /* a lock's fencing counter is kept this long after its
                                 * last acquisition, then expires; tokens stay strictly
                                 * increasing across the expiry (lua/rlock_fence.lua:
                                 * a new counter starts at the server's clock in µs).
                                 * 0: 3600000 (an hour) */
} rlock_client_opts;

/** @brief Connects to `redis_url` (redis://[user:pass@]host:port/db or unix:///path?db=N).
 *  @param opts NULL for defaults.
 *  @returns the client (free with rlock_client_free) or NULL with errstr set. */
RLOCK_EXPORT rlock_client_t *rlock_client_new(const char *redis_url, const rlock_client_opts *opts,
                                              char *errstr, size_t errstr_size);

/** @brief Stops the watchdog (held watchdog locks then expire within one timeout),
 *  closes connections, frees. Free every handle first. NULL is fine. */
RLOCK_EXPORT void rlock_client_free(rlock_client_t *c);

/** @returns this process's client id (32 hex chars; a UUID in Redisson mode), the owner
 *  prefix in Redis. */
RLOCK_EXPORT const char *rlock_client_id(const rlock_client_t *c);

/* ------------------------------------------------------------------ locks */

typedef enum rlock_kind {
    RLOCK_SIMPLE = 0,    /* SET key token NX PX; not reentrant */
    RLOCK_REENTRANT = 1, /* hash owner -> hold count */
    RLOCK_FAIR = 2,      /* reentrant, granted in request order */
    RLOCK_READ = 3,      /* read side of a read-write lock: shared, reentrant */
    RLOCK_WRITE = 4,     /* write side: exclusive, reentrant */
    RLOCK_SPIN = 5,      /* reentrant (RLock's data, so it excludes REENTRANT of the name);
                          * waits by polling with exponential back-off (1 to 128 ms,
                          * jittered), no pub/sub connection (Redisson's RSpinLock) */
    RLOCK_FENCED = 6,    /* reentrant with a token to the caller (Redisson's RFencedLock).
                          * Native mode: REENTRANT itself (every kind hands a token). Redisson
                          * mode: Redisson's counter redisson_lock_token:{name}, shared with
                          * Java holders, kept for ever as Redisson keeps it */
} rlock_kind_t;

typedef struct rlock rlock_t;

/** @brief A handle on the lock called `name`, of `kind`.
 *  Keys: a name without '{' becomes `rlock:{name}` (+ `:fence`, `:queue`, ...); a name
 *  that carries its own hash tag is used as is (`seckill:{e42}:lock`, `seckill:{e42}:lock:fence`),
 *  so the lock lives in that slot. READ and WRITE handles of one name are one RW lock.
 *  A Redisson-mode client (rlock_client_opts.redisson) uses Redisson's keys instead for
 *  REENTRANT, FAIR, READ and WRITE: the name itself is the lock (lock/README.md).
 *  @returns the handle (free with rlock_free) or NULL (out of memory or bad name). */
RLOCK_EXPORT rlock_t *rlock_new(rlock_client_t *c, const char *name, rlock_kind_t kind);

/** @brief Frees the handle. A lock still held is not released (it expires: a lease
 *  lock at its lease, a watchdog lock one watchdog timeout later). NULL is fine.
 *  @remark Must not be called from the lost-lock callback. */
RLOCK_EXPORT void rlock_free(rlock_t *l);

/** @brief Waits until the lock is acquired (rlock_try_lock with an endless wait). */
RLOCK_EXPORT int rlock_lock(rlock_t *l, int64_t lease_ms, uint64_t *fence);

/** @brief Tries to acquire for up to `wait_ms` (0: one attempt).
 *  Waiting is woken by a pub/sub message on unlock (a second connection per handle,
 *  opened on first wait and kept subscribed until rlock_free), with a jittered retry
 *  every wait_poll_ms, and at the holder's lease end, as a fallback.
 *  @param lease_ms  > 0: the lock expires after it and is never renewed;
 *                   0: a watchdog lock, kept alive while this client lives.
 *  @param fence     NULL, or receives the fencing token: strictly greater than every
 *                   token of an earlier acquisition of this lock (name), also after
 *                   its counter expired (fence_retention_ms); at least the server's
 *                   clock in microseconds since the epoch, so not small numbers.
 *  @returns 0, RLOCK_ERR_TIMEOUT when not acquired in time, or an error. */
RLOCK_EXPORT int rlock_try_lock(rlock_t *l, int64_t wait_ms, int64_t lease_ms, uint64_t *fence);

/** @brief Releases one hold (reentrant kinds count holds) and wakes waiters.
 *  @returns 0, RLOCK_ERR_NOT_HELD when this owner does not hold it in Redis (never
 *  held, expired, taken by another), or an IO/REDIS error. */
RLOCK_EXPORT int rlock_unlock(rlock_t *l);

/** @brief Local check, no round trip: 1 when this handle holds the lock, the watchdog
 *  has not found it lost, and a lease lock's lease has not run out. */
RLOCK_EXPORT int rlock_is_held(const rlock_t *l);

/** @brief Asks Redis: 1 held by this owner (handle token, or client id + thread),
 *  0 not, or a negative error. */
RLOCK_EXPORT int rlock_is_held_remote(rlock_t *l);

/** @brief Force-deletes the lock whoever holds it (admin/tests). @returns 1 deleted, 0 none. */
RLOCK_EXPORT int rlock_force_unlock(rlock_t *l);

/** @returns the last fencing token this handle got (0 before any). */
RLOCK_EXPORT uint64_t rlock_fence(const rlock_t *l);

/** @returns the last error message on this handle. */
RLOCK_EXPORT const char *rlock_errstr(const rlock_t *l);

/** @brief Called once when the watchdog finds a held lock gone (expired, deleted or
 *  taken by another) or could not renew it for a whole timeout.
 *  @remark Runs on the client's watchdog thread. It may call rlock_is_held and
 *  rlock_unlock (which then answers RLOCK_ERR_NOT_HELD), not rlock_free. Keep it short. */
typedef void(rlock_lost_cb)(rlock_t *l, const char *name, void *arg);
/** @brief Sets the lost-lock callback of a handle (before locking). */
RLOCK_EXPORT void rlock_set_lost_cb(rlock_t *l, rlock_lost_cb *cb, void *arg);

/* ------------------------------------------------------------------ multilock */

/** @brief Acquires all `n` locks or none (Redisson's MultiLock), waiting up to wait_ms.
 *  Each lock is tried in turn; on a refusal the ones taken are released and the round
 *  starts again after a jittered pause. @returns 0 or RLOCK_ERR_TIMEOUT/an error. */
RLOCK_EXPORT int rlock_multi_lock(rlock_t *const *locks, size_t n, int64_t wait_ms,
                                  int64_t lease_ms);
/** @brief Unlocks every one of `locks`. @returns the first error met, after trying all. */
RLOCK_EXPORT int rlock_multi_unlock(rlock_t *const *locks, size_t n);

/* ------------------------------------------------------------------ semaphore */

typedef struct rlock_sem rlock_sem_t;

/** @brief A handle on the semaphore `name` (key `rlock:{name}:sem`; Redisson mode: `name`,
 *  RSemaphore's). Free with rlock_sem_free. */
RLOCK_EXPORT rlock_sem_t *rlock_sem_new(rlock_client_t *c, const char *name);
RLOCK_EXPORT void rlock_sem_free(rlock_sem_t *s);
/** @brief Sets the permits when the semaphore does not exist yet.
 *  @returns 1 set, 0 already existed, or an error. */
RLOCK_EXPORT int rlock_sem_try_set_permits(rlock_sem_t *s, int64_t permits);
/** @brief Takes `n` permits, waiting up to wait_ms for releases (pub/sub woken).
 *  @returns 0, RLOCK_ERR_TIMEOUT, or an error. Permits of a dead holder are not given
 *  back (as Redisson's RSemaphore): use a lock with a lease for that. */
RLOCK_EXPORT int rlock_sem_try_acquire(rlock_sem_t *s, int64_t n, int64_t wait_ms);
/** @brief Gives `n` permits back and wakes waiters. @returns 0 or an error. */
RLOCK_EXPORT int rlock_sem_release(rlock_sem_t *s, int64_t n);
/** @returns permits available now (>= 0), or a negative error. */
RLOCK_EXPORT int64_t rlock_sem_available(rlock_sem_t *s);
/** @brief Deletes the semaphore. @returns 0 or an error. */
RLOCK_EXPORT int rlock_sem_delete(rlock_sem_t *s);
RLOCK_EXPORT const char *rlock_sem_errstr(const rlock_sem_t *s);

/* ------------------------------------------------------------------ expirable permits */

typedef struct rlock_psem rlock_psem_t;

#define RLOCK_PERMIT_ID_SIZE 33 /* 32 hex chars + NUL */

/** @brief A handle on the expirable-permit semaphore `name` (Redisson's
 *  RPermitExpirableSemaphore): each permit has an id and a lease, and comes back by itself
 *  when the lease ends (its holder died). Keys `rlock:{name}:psem` (free permits) and
 *  `rlock:{name}:psem:timeout` (id -> deadline); Redisson mode: `name` and `{name}:timeout`,
 *  channel `redisson_sc:{name}`, shared with Java. Deadlines are client wall clocks, as
 *  in Redisson: hosts sharing one need synchronised clocks. Free with rlock_psem_free. */
RLOCK_EXPORT rlock_psem_t *rlock_psem_new(rlock_client_t *c, const char *name);
RLOCK_EXPORT void rlock_psem_free(rlock_psem_t *s);
/** @brief Sets the permits when the semaphore does not exist yet. @returns 1 set, 0 it existed, or an error. */
RLOCK_EXPORT int rlock_psem_try_set_permits(rlock_psem_t *s, int64_t permits);
/** @brief Takes one permit for lease_ms (0: it never expires), waiting up to wait_ms (< 0:
 *  for ever) for a release or an expiry. @param id receives the permit's id (to release it).
 *  @returns 0, RLOCK_ERR_TIMEOUT, or an error. */
RLOCK_EXPORT int rlock_psem_try_acquire(rlock_psem_t *s, int64_t wait_ms, int64_t lease_ms,
                                        char id[RLOCK_PERMIT_ID_SIZE]);
/** @brief Gives permit `id` back and wakes waiters. @returns 0, or RLOCK_ERR_NOT_HELD when
 *  the id is unknown or its lease had ended (it was given back already or is now). */
RLOCK_EXPORT int rlock_psem_release(rlock_psem_t *s, const char *id);
/** @returns free permits now, expired ones given back first (>= 0), or a negative error. */
RLOCK_EXPORT int64_t rlock_psem_available(rlock_psem_t *s);
RLOCK_EXPORT const char *rlock_psem_errstr(const rlock_psem_t *s);

/* ------------------------------------------------------------------ rate limiter */

typedef struct rlock_rate rlock_rate_t;

typedef enum rlock_rate_type {
    RLOCK_RATE_OVERALL = 0,    /* one budget for every client */
    RLOCK_RATE_PER_CLIENT = 1, /* a budget per client (client id) */
} rlock_rate_type_t;

/** @brief A handle on the rate limiter `name` (Redisson's RRateLimiter): at most `rate`
 *  permits per sliding interval. Keys `rlock:{name}:rate` (+ `:value`, `:permits`, and
 *  `:<client id>` of each for per-client limits); Redisson mode: `name`, `{name}:value`,
 *  `{name}:permits` (...), one budget with Java's. Times are client wall clocks, as in
 *  Redisson. No pub/sub: a waiter sleeps until enough permits may be back. */
RLOCK_EXPORT rlock_rate_t *rlock_rate_new(rlock_client_t *c, const char *name);
RLOCK_EXPORT void rlock_rate_free(rlock_rate_t *r);
/** @brief Sets the rate when none is set: `rate` permits per `interval_ms`; keep_alive_ms
 *  > 0: every key of the limiter expires when it has not been used that long (0: kept).
 *  @returns 1 set, 0 a rate was there, or an error. */
RLOCK_EXPORT int rlock_rate_try_set(rlock_rate_t *r, rlock_rate_type_t type, int64_t rate,
                                    int64_t interval_ms, int64_t keep_alive_ms);
/** @brief Takes `permits` (<= rate), waiting up to wait_ms (< 0: for ever).
 *  @returns 0, RLOCK_ERR_TIMEOUT, or an error (RLOCK_ERR_REDIS: no rate set, or more
 *  permits asked than the rate). */
RLOCK_EXPORT int rlock_rate_try_acquire(rlock_rate_t *r, int64_t permits, int64_t wait_ms);
RLOCK_EXPORT const char *rlock_rate_errstr(const rlock_rate_t *r);

/* ------------------------------------------------------------------ countdown latch */

typedef struct rlock_latch rlock_latch_t;

/** @brief A handle on the latch `name` (key `rlock:{name}:latch`; Redisson mode: `name`,
 *  RCountDownLatch's). */
RLOCK_EXPORT rlock_latch_t *rlock_latch_new(rlock_client_t *c, const char *name);
RLOCK_EXPORT void rlock_latch_free(rlock_latch_t *l);
/** @brief Sets the count when the latch is not counting. @returns 1 set, 0 not, or an error. */
RLOCK_EXPORT int rlock_latch_try_set_count(rlock_latch_t *l, int64_t count);
/** @brief Counts down by one; at zero the latch is deleted and waiters wake. @returns 0 or an error. */
RLOCK_EXPORT int rlock_latch_count_down(rlock_latch_t *l);
/** @returns the count now (0 when not counting), or a negative error. */
RLOCK_EXPORT int64_t rlock_latch_count(rlock_latch_t *l);
/** @brief Waits until the count is zero, up to wait_ms (< 0: for ever).
 *  @returns 0 at zero, RLOCK_ERR_TIMEOUT, or an error. */
RLOCK_EXPORT int rlock_latch_await(rlock_latch_t *l, int64_t wait_ms);
RLOCK_EXPORT const char *rlock_latch_errstr(const rlock_latch_t *l);

/* ------------------------------------------------------------------ Redlock */

typedef struct rlock_redlock rlock_redlock_t;

/** @brief A Redlock handle for `name` over `n` independent Redis servers (own connections,
 *  opened lazily and reopened after failures). Quorum n/2+1.
 *  @returns the handle (free with rlock_redlock_free) or NULL with errstr set. */
RLOCK_EXPORT rlock_redlock_t *rlock_redlock_new(const char *const *urls, size_t n, const char *name,
                                                int timeout_ms, char *errstr, size_t errstr_size);
RLOCK_EXPORT void rlock_redlock_free(rlock_redlock_t *r);
/** @brief Tries to acquire with lease `ttl_ms` until wait_ms passes (< 0: for ever).
 *  One attempt: SET NX PX sent to every server at once, their replies polled together
 *  (one round trip's time, the timeout of rlock_redlock_new at most); success when a
 *  quorum took it and validity = ttl - elapsed - drift (drift = ttl/100 + 2 ms) is
 *  positive. After a failed attempt the lock is released on every server that may hold
 *  it and retried after the retry delay, or sooner when an unlock is published on the
 *  server it listens to.
 *  @param validity_ms NULL or receives the time left in which the lock is safe to use.
 *  @remark Redlock gives no fencing token: counters on independent servers do not make one. */
RLOCK_EXPORT int rlock_redlock_lock(rlock_redlock_t *r, int64_t ttl_ms, int64_t wait_ms,
                                    int64_t *validity_ms);
/** @brief Extends the hold to `ttl_ms` from now on every server that still has this
 *  hold's token (redsync's Extend), all at once. @returns 0 with *validity_ms (NULL ok)
 *  when a quorum extended it with validity left, else RLOCK_ERR_NOT_HELD (the hold keeps
 *  its old validity). */
RLOCK_EXPORT int rlock_redlock_extend(rlock_redlock_t *r, int64_t ttl_ms, int64_t *validity_ms);
/** @brief Local, no round trip: ms left of the validity of the current hold (0: none). */
RLOCK_EXPORT int64_t rlock_redlock_validity_ms(const rlock_redlock_t *r);
/** @brief Asks every server (redsync's Valid): 1 when a quorum still has this hold's
 *  token and validity is left, 0 not, or a negative error. */
RLOCK_EXPORT int rlock_redlock_valid(rlock_redlock_t *r);
/** @brief Releases on every server (compare-and-delete). @returns 0 or RLOCK_ERR_NOT_HELD. */
RLOCK_EXPORT int rlock_redlock_unlock(rlock_redlock_t *r);
/** @brief Mean pause between attempts (each pause is jittered to [d/2, 3d/2)); default 20 ms. */
RLOCK_EXPORT void rlock_redlock_set_retry_delay(rlock_redlock_t *r, int64_t ms);
/** @brief The pause before attempt `tries` + 1, in ms (redsync's WithRetryDelayFunc);
 *  `tries` counts the attempts of this rlock_redlock_lock call so far, from 1. */
typedef int64_t(rlock_redlock_delay_fn)(int tries, void *arg);
/** @brief Uses fn (NULL: back to the jittered retry delay) for the pause between attempts. */
RLOCK_EXPORT void rlock_redlock_set_retry_delay_fn(rlock_redlock_t *r, rlock_redlock_delay_fn *fn,
                                                   void *arg);
/** @brief on = 1: each step stops reading replies once the quorum is reached or out of
 *  reach (redsync's WithFailFast), so a slow server costs nothing while a quorum answers;
 *  the replies left are read before that connection is used again. Default 0: every
 *  server's answer is awaited (up to the timeout), so each one's state is known. */
RLOCK_EXPORT void rlock_redlock_set_fail_fast(rlock_redlock_t *r, int on);
RLOCK_EXPORT const char *rlock_redlock_errstr(const rlock_redlock_t *r);

#ifdef __cplusplus
}
#endif
#endif
