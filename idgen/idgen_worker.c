/* idgen_worker: worker mode. See idgen_worker.h for the contract.
 *
 * Design note
 * - The hot path is one atomic word, state = second << 33 | worker << 23 | next sequence
 *   (23 bits: 2^22 means the second is used up), advanced by compare-and-swap: no lock, no
 *   Redis. The worker id lives in the word too, so a retake (a new worker id) and the
 *   callers never disagree about which worker a (second, sequence) pair belongs to.
 * - Safety does not rest on the lock alone: its holder learns of a loss only at the
 *   watchdog's next renewal, while a new holder may already issue. So the keeper thread
 *   reserves, every reserve_ms / 3, the seconds up to now + reserve_ms in Redis
 *   (lua/idgen_worker_reserve.lua, fenced by the lock's token: a stale holder's write is
 *   refused), callers never stamp past the reservation, and a new holder of a worker id
 *   starts after the last holder's reservation. A holder cut off from Redis stops when its
 *   reservation runs out; a lost lock stops it at once.
 * - The stamp never goes back: a clock behind the latest stamp keeps that second while its
 *   sequence lasts, waits for the clock when it runs out, and is refused when it is more
 *   than clock_back_max_ms behind. */
#include "idgen_worker.h"

#include "idgen_worker_lua.h" /* generated: lua/idgen_worker_reserve.lua */
#include "rcluster.h"
#include "rlock.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPOCH_UNIX  1704067200LL /* libidgen's: 2024-01-01T00:00:00Z */
#define SEQ_FIELD   23
#define SEQ_LIMIT   (UINT64_C(1) << IDGEN_WSEQ_BITS)
#define SEQ_FMASK   ((UINT64_C(1) << SEQ_FIELD) - 1)
#define SEC_SHIFT   (SEQ_FIELD + IDGEN_WORKER_BITS)
#define RESERVE_TTL 86400 /* the reservation outlives any worker that could still use it */
#define ERR_MAX     256

struct idgen_worker {
    idgen_worker_opts o;
    char prefix[201];
    char url[1024];
    rlock_client_t *client;
    rcl_ctx *rc; /* the keeper's connection for the reservations (keeper thread only) */
    char sha[41];

    _Atomic uint64_t state;   /* see the design note */
    _Atomic int active;       /* a lease is held and not known lost */
    _Atomic int64_t reserved; /* the last Unix second this holder may stamp */
    _Atomic int64_t not_before; /* the first Unix second it may stamp (after the last holder's) */
    _Atomic int lost_flag;    /* set by the watchdog's callback */
    _Atomic uint64_t taken, lost;

    /* Keeper thread only. */
    rlock_t *lock;
    int worker;
    uint64_t fence;

    pthread_t keeper;
    pthread_mutex_t mu; /* guards stopping, with cv */
    pthread_cond_t cv;
    int stopping, started;
};

/* ---- errors, clocks ---- */

static __thread const idgen_worker_t *t_err_w;
static __thread char t_err_msg[ERR_MAX];

static int fail(const idgen_worker_t *w, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const idgen_worker_t *w, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_err_msg, sizeof(t_err_msg), fmt, ap);
    va_end(ap);
    t_err_w = w;
    return rc;
}

const char *idgen_worker_errstr(const idgen_worker_t *w)
{
    return (w && t_err_w == w) ? t_err_msg : "";
}

static int64_t wall_ms(const idgen_worker_t *w)
{
    if (w->o.clock_ms)
        return w->o.clock_ms(w->o.clock_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* ---- the reservation (keeper thread) ---- */

/* Runs the reserve script. @returns the previous `until` (>= 0), -1 refused (a later
 * holder), or -2 on a Redis error. */
static int64_t reserve(idgen_worker_t *w, int worker, uint64_t fence, int64_t until)
{
    char key[300], fbuf[24], ubuf[24], tbuf[16];
    snprintf(key, sizeof(key), "idgen:%s:w%d:reserve", w->prefix, worker);
    snprintf(fbuf, sizeof(fbuf), "%llu", (unsigned long long)fence);
    snprintf(ubuf, sizeof(ubuf), "%lld", (long long)until);
    snprintf(tbuf, sizeof(tbuf), "%d", RESERVE_TTL);
    if (!w->rc) {
        char err[256];
        struct timeval tv = {w->o.timeout_ms / 1000, (w->o.timeout_ms % 1000) * 1000};
        if (!(w->rc = rcl_connect(w->url, tv, err, sizeof(err))))
            return -2;
        if (rcl_script_add(w->rc, idgen_wlua_reserve, w->sha) != 0) {
            rcl_free(w->rc);
            w->rc = NULL;
            return -2;
        }
    }
    const char *argv[7] = {"EVALSHA", w->sha, "1", key, fbuf, ubuf, tbuf};
    redisReply *r = rcl_command_argv(w->rc, 7, argv, NULL);
    if (!r) {
        rcl_free(w->rc); /* broken or timed out: a fresh one next time */
        w->rc = NULL;
        return -2;
    }
    int64_t v = r->type == REDIS_REPLY_INTEGER ? (int64_t)r->integer : -2;
    freeReplyObject(r);
    return v;
}

static void on_lost(rlock_t *l, const char *name, void *arg)
{
    (void)l;
    (void)name;
    idgen_worker_t *w = arg;
    atomic_store(&w->lost_flag, 1);
    atomic_store(&w->active, 0); /* callers stop now, not at the keeper's next turn */
}

/* Takes a free worker id and reserves its first seconds. @returns 0, or -1 with err. */
static int acquire(idgen_worker_t *w, char *err, size_t errsz)
{
    snprintf(err, errsz, "every worker id in %d..%d is taken", w->o.worker_min, w->o.worker_max);
    for (int n = w->o.worker_min; n <= w->o.worker_max; n++) {
        char name[260];
        snprintf(name, sizeof(name), "idgen:%s:w%d", w->prefix, n);
        rlock_t *l = rlock_new(w->client, name, RLOCK_SIMPLE);
        if (!l) {
            snprintf(err, errsz, "out of memory");
            return -1;
        }
        rlock_set_lost_cb(l, on_lost, w);
        uint64_t fence = 0;
        int rc = rlock_try_lock(l, 0, 0, &fence); /* 0: a watchdog lock */
        if (rc == RLOCK_ERR_TIMEOUT) {
            rlock_free(l);
            continue;
        }
        if (rc != 0) {
            snprintf(err, errsz, "worker lock %.100s: %.120s", name, rlock_errstr(l));
            rlock_free(l);
            return -1;
        }
        /* Start after the last holder's reservation; reserve ours from there. */
        int64_t last = reserve(w, n, fence, 0);
        int64_t now_s = wall_ms(w) / 1000;
        int64_t start = last >= now_s ? last + 1 : now_s;
        int64_t until = start + (w->o.reserve_ms + 999) / 1000;
        if (last < 0 || reserve(w, n, fence, until) < 0) {
            snprintf(err, errsz, "worker %d: reservation %s", n,
                     last == -1 ? "refused (a later holder)" : "failed (Redis)");
            rlock_unlock(l);
            rlock_free(l);
            return -1;
        }
        w->lock = l;
        w->worker = n;
        w->fence = fence;
        atomic_store(&w->lost_flag, 0);
        atomic_store(&w->reserved, until);
        atomic_store(&w->not_before, start);
        /* The second before `start`, marked used up: the first ID waits for the clock to
         * reach start (stamps never run ahead of the clock), and `start` is past anything
         * stamped under this worker id before, ours included. */
        atomic_store(&w->state,
                     (uint64_t)(start - 1 - EPOCH_UNIX) << SEC_SHIFT | (uint64_t)n << SEQ_FIELD |
                         SEQ_LIMIT);
        atomic_store(&w->active, 1);
        atomic_fetch_add(&w->taken, 1);
        return 0;
    }
    return -1;
}

/* Drops the lease: lowers the reservation to the last second stamped (a clean release)
 * when `clean`, unlocks, frees the handle. */
static void drop(idgen_worker_t *w, int clean)
{
    atomic_store(&w->active, 0);
    if (!w->lock)
        return;
    if (clean) {
        int64_t last = (int64_t)(atomic_load(&w->state) >> SEC_SHIFT) + EPOCH_UNIX;
        int64_t r = atomic_load(&w->reserved);
        reserve(w, w->worker, w->fence, last < r ? last : r);
    }
    rlock_unlock(w->lock);
    rlock_free(w->lock);
    w->lock = NULL;
}

static void *keeper_main(void *arg)
{
    idgen_worker_t *w = arg;
    int every = w->o.reserve_ms / 3 > 0 ? w->o.reserve_ms / 3 : 1;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        pthread_mutex_unlock(&w->mu);
        if (w->lock && (atomic_load(&w->lost_flag) || !rlock_is_held(w->lock))) {
            atomic_fetch_add(&w->lost, 1);
            drop(w, 0); /* not clean: the reservation stays, the next holder starts after it */
        }
        if (!w->lock) {
            char err[256];
            acquire(w, err, sizeof(err)); /* retried next turn when it fails */
        } else {
            uint64_t st = atomic_load(&w->state);
            int64_t now_s = wall_ms(w) / 1000, hw = (int64_t)(st >> SEC_SHIFT) + EPOCH_UNIX;
            int64_t until = (now_s > hw ? now_s : hw) + (w->o.reserve_ms + 999) / 1000;
            int64_t r = reserve(w, w->worker, w->fence, until);
            if (r == -1) { /* a later holder: we lost it, whatever the watchdog says */
                atomic_fetch_add(&w->lost, 1);
                drop(w, 0);
            } else if (r >= 0) {
                atomic_store(&w->reserved, until);
            } /* -2: Redis unreachable; callers stop when the reservation runs out */
        }
        pthread_mutex_lock(&w->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += every / 1000;
        ts.tv_nsec += (long)(every % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        while (!w->stopping && pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- public API ---- */

void idgen_worker_opts_init(idgen_worker_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->timeout_ms = 1000;
    o->lease_timeout_ms = 10000;
    o->reserve_ms = 5000;
    o->clock_back_max_ms = 1000;
    o->worker_min = 0;
    o->worker_max = IDGEN_WORKER_MAX;
}

idgen_worker_t *idgen_worker_new(const char *redis_url, const char *prefix,
                                 const idgen_worker_opts *opts, char *errstr, size_t errsz)
{
    idgen_worker_opts o;
    if (opts)
        o = *opts;
    else
        idgen_worker_opts_init(&o);
    const char *bad = NULL;
    if (!redis_url || !*redis_url || strlen(redis_url) >= 1024)
        bad = "a Redis URL is needed";
    else if (!prefix || !*prefix || strlen(prefix) > 200 || strpbrk(prefix, " :{}"))
        bad = "prefix must be 1..200 characters without spaces, ':' or braces";
    else if (o.timeout_ms < 1 || o.lease_timeout_ms < 300 || o.reserve_ms < 300 ||
             o.clock_back_max_ms < 0)
        bad = "need timeout_ms >= 1, lease_timeout_ms >= 300, reserve_ms >= 300, "
              "clock_back_max_ms >= 0";
    else if (o.worker_min < 0 || o.worker_max > IDGEN_WORKER_MAX || o.worker_min > o.worker_max)
        bad = "need 0 <= worker_min <= worker_max <= 1023";
    if (bad) {
        snprintf(errstr, errsz, "idgen worker: %s", bad);
        return NULL;
    }
    idgen_worker_t *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(errstr, errsz, "idgen worker: out of memory");
        return NULL;
    }
    w->o = o;
    snprintf(w->prefix, sizeof(w->prefix), "%s", prefix);
    snprintf(w->url, sizeof(w->url), "%s", redis_url);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    rlock_client_opts co = {.connect_timeout_ms = o.timeout_ms,
                            .watchdog_timeout_ms = o.lease_timeout_ms};
    char err[256];
    if (!(w->client = rlock_client_new(redis_url, &co, err, sizeof(err)))) {
        snprintf(errstr, errsz, "idgen worker: %s", err);
        idgen_worker_free(w);
        return NULL;
    }
    if (acquire(w, err, sizeof(err)) != 0) {
        snprintf(errstr, errsz, "idgen worker: %s", err);
        idgen_worker_free(w);
        return NULL;
    }
    if (pthread_create(&w->keeper, NULL, keeper_main, w) != 0) {
        snprintf(errstr, errsz, "idgen worker: cannot start the keeper thread");
        idgen_worker_free(w);
        return NULL;
    }
    w->started = 1;
    return w;
}

/* One ID. @returns IDGEN_OK or an error (message set). */
static int next_one(idgen_worker_t *w, uint64_t *id)
{
    int64_t waited = 0;
    for (;;) {
        if (!atomic_load_explicit(&w->active, memory_order_acquire))
            return fail(w, IDGEN_ERR_LEASE, "no worker lease (lost; retaking in the background)");
        uint64_t st = atomic_load_explicit(&w->state, memory_order_acquire);
        int64_t sec = (int64_t)(st >> SEC_SHIFT);
        uint64_t wid = (st >> SEQ_FIELD) & IDGEN_WORKER_MAX, seq = st & SEQ_FMASK;
        int64_t now_ms = wall_ms(w), now = now_ms / 1000 - EPOCH_UNIX;
        int64_t reserved = atomic_load_explicit(&w->reserved, memory_order_acquire) - EPOCH_UNIX;
        uint64_t next;
        int64_t nb = atomic_load(&w->not_before);
        if (sec + EPOCH_UNIX < nb && now + EPOCH_UNIX < nb) /* nothing stamped since the take */
            return fail(w, IDGEN_ERR_LEASE, "worker %d just taken over: its stamps start at "
                        "%lld, after the last holder's reservation", (int)wid,
                        (long long)nb);
        if (now > sec) {
            sec = now;
            seq = 0;
        } else if ((sec + EPOCH_UNIX) * 1000 - now_ms > w->o.clock_back_max_ms) {
            return fail(w, IDGEN_ERR_CLOCK, "the clock is %lld ms behind the latest stamp "
                        "(bound %d ms): refused until it catches up",
                        (long long)((sec + EPOCH_UNIX) * 1000 - now_ms), w->o.clock_back_max_ms);
        } else if (seq >= SEQ_LIMIT) {
            /* This second is used up: wait for the clock, within the bound. */
            if (waited >= w->o.clock_back_max_ms)
                return fail(w, IDGEN_ERR_CLOCK, "second used up and the clock did not move "
                            "within %d ms", w->o.clock_back_max_ms);
            pause_ms(1);
            waited++;
            continue;
        }
        if (sec > reserved || sec > 0x7FFFFFFFLL)
            return fail(w, IDGEN_ERR_LEASE, "second %lld is past the reservation (Redis "
                        "unreachable for over %d ms?)", (long long)(sec + EPOCH_UNIX),
                        w->o.reserve_ms);
        next = (uint64_t)sec << SEC_SHIFT | wid << SEQ_FIELD | (seq + 1);
        if (atomic_compare_exchange_weak_explicit(&w->state, &st, next, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            *id = (uint64_t)sec << 32 | wid << IDGEN_WSEQ_BITS | seq;
            return IDGEN_OK;
        }
    }
}

int idgen_worker_next(idgen_worker_t *w, uint64_t *id)
{
    if (!w || !id)
        return IDGEN_ERR_ARG;
    return next_one(w, id);
}

int idgen_worker_next_batch(idgen_worker_t *w, uint64_t *ids, size_t n)
{
    if (!w || (!ids && n))
        return IDGEN_ERR_ARG;
    for (size_t i = 0; i < n; i++) {
        int rc = next_one(w, &ids[i]);
        if (rc)
            return rc;
    }
    return IDGEN_OK;
}

int idgen_worker_id(const idgen_worker_t *w)
{
    idgen_worker_t *m = (idgen_worker_t *)w; /* the atomics */
    if (!w || !atomic_load(&m->active))
        return -1;
    return (int)((atomic_load(&m->state) >> SEQ_FIELD) & IDGEN_WORKER_MAX);
}

void idgen_worker_counts(const idgen_worker_t *w, uint64_t *taken, uint64_t *lost)
{
    idgen_worker_t *m = (idgen_worker_t *)w;
    *taken = w ? atomic_load(&m->taken) : 0;
    *lost = w ? atomic_load(&m->lost) : 0;
}

int idgen_worker_decode(uint64_t id, int64_t *unix_seconds, int *worker, uint32_t *sequence)
{
    if (id >> 63)
        return IDGEN_ERR_ARG;
    if (unix_seconds)
        *unix_seconds = (int64_t)(id >> 32) + EPOCH_UNIX;
    if (worker)
        *worker = (int)((id >> IDGEN_WSEQ_BITS) & IDGEN_WORKER_MAX);
    if (sequence)
        *sequence = (uint32_t)(id & (SEQ_LIMIT - 1));
    return IDGEN_OK;
}

void idgen_worker_free(idgen_worker_t *w)
{
    if (!w)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stopping = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->keeper, NULL);
    }
    drop(w, 1);
    rcl_free(w->rc);
    rlock_client_free(w->client);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
