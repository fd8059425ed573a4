/* idgen_gen: the generator: stamps, both modes, reset detection, the segment double
 * buffer and its refill thread. All counter I/O goes through an idgen_backend
 * (idgen_redis.c in production, an in-memory fake in the unit tests).
 *
 * Design notes
 * - Stamps. Every ID is stamped with max(clock, the latest second this generator has
 *   stamped) (g->hw_sec). A clock that steps back keeps stamping that second until it
 *   catches up; a UTC day, once left, never comes back. The sequence always comes from
 *   the key of the stamp's day, so an ID's time lies in the day of its counter key and
 *   (day, sequence) is unique while the counter never goes back.
 * - Resets. g->seen keeps the highest number this generator got per day. A lease whose
 *   first number is not above the value seen *before it was sent* means the counter
 *   went back (Redis lost writes): the lease is dropped, the counter is pushed past the
 *   highest number seen plus every number still in flight (INCRBY), and the caller gets
 *   IDGEN_ERR_RESET once. Numbers
 *   handed out by other processes are not known here: that is why Redis must persist
 *   every increment before answering (appendfsync always, or WAIT; see README.md).
 * - Segment mode. The current block is published through one 64-bit atomic cursor,
 *   generation << 40 | offset, and two slots (the double buffer) that hold each
 *   generation's first number, length and day under a seqlock. A caller takes 64
 *   numbers at a time into a per-thread chunk with one fetch_add and a few loads: no
 *   lock, no Redis, and most calls touch nothing shared. When the offset reaches the
 *   refill mark (80% used) the one caller that crosses it wakes the refill thread,
 *   which leases the next block into the standby; the caller that runs past the end
 *   publishes the standby under g->mu (the slow path), or waits for it at most
 *   timeout_ms. A block (or chunk) whose day is over is dropped, never used for a
 *   later day. */
#include "idgen_int.h"

#include "idgen_core.h"
#include "idgen_scramble.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OFF_BITS   40
#define OFF_MASK   ((UINT64_C(1) << OFF_BITS) - 1)
/* Failed fetch_adds past the end of a block only waste offsets; pull the cursor back
 * before they could ever carry into the generation bits. */
#define OFF_CLAMP  (UINT64_C(1) << 36)
#define SLOT_BUSY  UINT64_MAX
#define ERR_MAX    256

typedef struct seg_slot {
    _Atomic uint64_t gen; /* the generation held, SLOT_BUSY while being rewritten */
    _Atomic uint64_t first;
    _Atomic uint64_t len;
    _Atomic int64_t day;
} seg_slot;

struct idgen_s {
    idgen_backend be;
    idgen_opts o;
    uint64_t uid; /* names this generator in per-thread chunks (see idgen_next) */
    char prefix[IDGEN_PREFIX_MAX + 1];
    idgen_floor *floor; /* floor mode (opts.floor), else NULL: see idgen_floor.c */
    int scrambled; /* the unguessable layout: key below, derived from opts.secret */
    idgen_scramble_key key;

    _Atomic int64_t hw_sec; /* the latest second stamped (never decreases) */

    /* Highest number seen per day, in two slots by day parity: days only move forward,
     * and in incr mode two threads may straddle midnight. */
    pthread_mutex_t seen_mu;
    idgen_day_mark seen;

    _Atomic int64_t ttl_day; /* incr mode: the day whose key got its EXPIRE from us */
    /* Numbers requested whose replies are not yet in `seen`: a reset's jump must clear
     * them too, or a reply still on its way could be handed out twice. */
    _Atomic uint64_t inflight;

    _Atomic uint64_t st_leases, st_resets, st_dropped, st_redis_errors;

    /* ---- segment mode ---- */
    _Atomic uint64_t cursor; /* gen << OFF_BITS | offset into the current block */
    seg_slot slot[2];        /* slot[gen & 1] holds generation gen */

    pthread_mutex_t mu; /* guards what follows, and publishing */
    pthread_cond_t refill_cv; /* wakes the refill thread */
    pthread_cond_t ready_cv;  /* wakes callers waiting for a block or an outcome */
    pthread_t refill_thread;
    int thread_started;
    int stopping;
    int refill_wanted;
    int sb_ready; /* the standby block */
    uint64_t sb_first, sb_len;
    int64_t sb_day;
    uint64_t cur_gen;        /* the published generation */
    int64_t cur_pub_mono_ms; /* when it was published, for the size adaptation */
    uint32_t next_size;
    uint64_t attempts; /* finished lease attempts */
    int last_rc;       /* outcome of the latest attempt */
    char last_err[ERR_MAX];
    int reset_pending; /* a reset to report to the next caller */
    char reset_msg[ERR_MAX];
    int64_t backoff_ms;
};

/* ---- per-thread error messages ---- */

static __thread const idgen_t *t_err_g;
static __thread char t_err_msg[ERR_MAX];

static int fail(const idgen_t *g, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(const idgen_t *g, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_err_msg, sizeof(t_err_msg), fmt, ap);
    va_end(ap);
    t_err_g = g;
    return rc;
}

const char *idgen_errstr(const idgen_t *g)
{
    return (g && t_err_g == g) ? t_err_msg : "";
}

/* ---- clocks ---- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whole seconds of the wall clock. The real clock is read coarse (one tick, a few ms):
 * stamps are whole seconds and the coarse read costs a few ns instead of tens. */
static inline int64_t wall_s(const idgen_t *g)
{
    if (g->o.clock_ms) {
        int64_t ms = g->o.clock_ms(g->o.clock_arg);
        return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (int64_t)ts.tv_sec;
}

/* The second to stamp now: see "Stamps" above. */
static inline int64_t stamp_now(idgen_t *g)
{
    int64_t now = wall_s(g);
    int64_t hw = atomic_load_explicit(&g->hw_sec, memory_order_relaxed);
    while (now > hw) {
        if (atomic_compare_exchange_weak_explicit(&g->hw_sec, &hw, now, memory_order_relaxed,
                                                  memory_order_relaxed))
            return now;
    }
    return idgen_core_stamp(now, hw);
}

static int check_stamp(const idgen_t *g, int64_t stamp)
{
    if (idgen_core_time_ok(stamp))
        return IDGEN_OK;
    char utc[32];
    idgen_core_format_utc(stamp, utc, sizeof(utc));
    return fail(g, IDGEN_ERR_CLOCK, "clock %s is outside the ID layout (2024-01-01 + 2^31 s)",
                utc);
}

/* The ID of (stamp, seq) in this generator's layout. */
static inline uint64_t pack_id(const idgen_t *g, int64_t stamp, uint32_t seq)
{
    if (g->scrambled)
        seq = idgen_scramble_seq(&g->key, (uint32_t)(stamp - IDGEN_EPOCH_UNIX), seq);
    return idgen_core_pack(stamp, seq);
}

/* ---- highest number seen per day ---- */

static uint64_t seen_get(idgen_t *g, int64_t day)
{
    pthread_mutex_lock(&g->seen_mu);
    uint64_t v = idgen_day_mark_get(&g->seen, day);
    pthread_mutex_unlock(&g->seen_mu);
    return v;
}

static void seen_raise(idgen_t *g, int64_t day, uint64_t v)
{
    pthread_mutex_lock(&g->seen_mu);
    idgen_day_mark_raise(&g->seen, day, v);
    pthread_mutex_unlock(&g->seen_mu);
}

/* ---- one lease: n numbers of `day`'s counter ---- */

/* INCRBY of the day key, or its floor-mode lease. @returns IDGEN_OK or an error. */
static int lease_raw(idgen_t *g, const char *key, int64_t day, int64_t stamp, uint64_t n,
                     int64_t ttl, uint64_t *last, char *err, size_t errsz)
{
    if (g->floor)
        return idgen_floor_lease(g->floor, key, day, n, ttl,
                                 idgen_core_key_ttl(day, stamp, g->o.key_ttl_days), last, err,
                                 errsz);
    return g->be.incrby(g->be.arg, key, n, ttl, last, err, errsz) ? IDGEN_ERR_REDIS : IDGEN_OK;
}

static int lease_verdict(idgen_t *g, const char *key, int64_t day, int64_t stamp, uint64_t n,
                         uint64_t seen, uint64_t last, uint64_t *first, uint64_t *count,
                         char *err, size_t errsz);

/* Leases n numbers for `day` (stamp lies in it). On IDGEN_OK stores the usable range
 * [*first, *first + *count - 1] (count < n only at the end of the 32-bit space).
 * On IDGEN_ERR_RESET the counter has been pushed past every number seen, the message
 * is in err, and nothing is usable. Thread-safe. */
static int lease(idgen_t *g, int64_t day, int64_t stamp, uint64_t n, int always_ttl,
                 uint64_t *first, uint64_t *count, char *err, size_t errsz)
{
    char key[IDGEN_KEY_MAX];
    idgen_core_day_key(g->prefix, day, key, sizeof(key));
    int64_t ttl = 0;
    if (always_ttl || atomic_load_explicit(&g->ttl_day, memory_order_relaxed) != day)
        ttl = idgen_core_key_ttl(day, stamp, g->o.key_ttl_days);
    /* The snapshot must be taken before sending: any number received before then was
     * produced before our increment, so ours must be above it. */
    uint64_t seen = seen_get(g, day);
    uint64_t last;
    char berr[ERR_MAX];
    atomic_fetch_add(&g->inflight, n);
    int lrc = lease_raw(g, key, day, stamp, n, ttl, &last, berr, sizeof(berr));
    if (lrc != IDGEN_OK) {
        atomic_fetch_sub(&g->inflight, n);
        atomic_fetch_add_explicit(&g->st_redis_errors, 1, memory_order_relaxed);
        snprintf(err, errsz, "%s", berr);
        return lrc;
    }
    atomic_fetch_add_explicit(&g->st_leases, 1, memory_order_relaxed);
    if (ttl)
        atomic_store_explicit(&g->ttl_day, day, memory_order_relaxed);
    int rc = lease_verdict(g, key, day, stamp, n, seen, last, first, count, err, errsz);
    atomic_fetch_sub(&g->inflight, n); /* after `seen` took our numbers in */
    return rc;
}

/* The second half of lease: classifies the reply and handles a reset. */
static int lease_verdict(idgen_t *g, const char *key, int64_t day, int64_t stamp, uint64_t n,
                         uint64_t seen, uint64_t last, uint64_t *first, uint64_t *count,
                         char *err, size_t errsz)
{
    uint64_t f = last >= n ? last - n + 1 : 0;
    switch (idgen_core_lease_check(f, last, seen)) {
    case IDGEN_LEASE_OK:
        seen_raise(g, day, last);
        *first = f;
        *count = n;
        return IDGEN_OK;
    case IDGEN_LEASE_PARTIAL:
        seen_raise(g, day, last);
        *first = f;
        *count = IDGEN_SEQ_MAX - f + 1;
        atomic_fetch_add_explicit(&g->st_dropped, n - *count, memory_order_relaxed);
        return IDGEN_OK;
    case IDGEN_LEASE_EXHAUSTED:
        seen_raise(g, day, last);
        snprintf(err, errsz, "%.80s reached %llu: the day's 32-bit sequence is exhausted", key,
                 (unsigned long long)last);
        return IDGEN_ERR_EXHAUSTED;
    case IDGEN_LEASE_RESET:
        break;
    }
    atomic_fetch_add_explicit(&g->st_resets, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->st_dropped, n, memory_order_relaxed);
    /* Push the counter past every number we may have handed out: the highest seen plus
     * all still in flight (read first: a reply that lands in between is then in `seen`),
     * so that no later lease, ours or another process's, can hand one out again. The
     * expiry went with the lost key: set it again. */
    uint64_t pending = atomic_load(&g->inflight);
    uint64_t high = seen_get(g, day) + pending;
    uint64_t after = last;
    int jumped = 0;
    if (high > last) {
        char berr[ERR_MAX];
        int64_t ttl = idgen_core_key_ttl(day, stamp, g->o.key_ttl_days);
        if (lease_raw(g, key, day, stamp, high - last, ttl, &after, berr, sizeof(berr)) ==
            IDGEN_OK) {
            jumped = 1;
            seen_raise(g, day, after);
        } else {
            atomic_fetch_add_explicit(&g->st_redis_errors, 1, memory_order_relaxed);
        }
    }
    seen_raise(g, day, last);
    snprintf(err, errsz,
             "%.80s went back: got %llu after %llu had been seen (Redis lost writes); %s", key,
             (unsigned long long)f, (unsigned long long)seen,
             jumped ? "counter pushed past it"
             : high > last ? "pushing it past failed, will retry"
                           : "counter already past it");
    /* If the jump failed, the next lease still lands at or below `seen`, is reported
     * again and retries the jump: nothing is handed out meanwhile. */
    return IDGEN_ERR_RESET;
}

/* ---- incr mode ---- */

static int incr_next_batch(idgen_t *g, uint64_t *ids, size_t n)
{
    size_t done = 0;
    while (done < n) {
        int64_t stamp = stamp_now(g);
        int rc = check_stamp(g, stamp);
        if (rc)
            return rc;
        /* One INCRBY for the whole batch, a few MB of numbers at most per round trip. */
        uint64_t want = n - done > (1u << 20) ? (1u << 20) : n - done;
        uint64_t first, count;
        char err[ERR_MAX];
        rc = lease(g, idgen_core_day(stamp), stamp, want, 0, &first, &count, err, sizeof(err));
        if (rc)
            return fail(g, rc, "%s", err);
        if (count < want) {
            atomic_fetch_add_explicit(&g->st_dropped, count, memory_order_relaxed);
            return fail(g, IDGEN_ERR_EXHAUSTED,
                        "the day's 32-bit sequence ran out after %llu of a batch",
                        (unsigned long long)count);
        }
        for (uint64_t i = 0; i < count; i++)
            ids[done + i] = pack_id(g, stamp, (uint32_t)(first + i));
        done += count;
    }
    return IDGEN_OK;
}

/* ---- segment mode ---- */

/* Offset at which the block's refill starts: 20% left (at least one number). */
static inline uint64_t refill_mark(uint64_t len)
{
    uint64_t left = len / 5;
    return len - (left ? left : 1);
}

static void refill_kick_locked(idgen_t *g)
{
    g->refill_wanted = 1;
    pthread_cond_signal(&g->refill_cv);
}

static void refill_kick(idgen_t *g)
{
    pthread_mutex_lock(&g->mu);
    refill_kick_locked(g);
    pthread_mutex_unlock(&g->mu);
}

/* Makes the standby block the current one. Caller holds g->mu and has checked
 * g->sb_ready. The slot rewritten is the one of generation cur_gen - 1: retired. A
 * caller still reading it sees the seqlock change and retries. */
static void publish_standby_locked(idgen_t *g)
{
    uint64_t v = atomic_load_explicit(&g->cursor, memory_order_relaxed);
    seg_slot *old = &g->slot[g->cur_gen & 1];
    uint64_t old_len = atomic_load_explicit(&old->len, memory_order_relaxed);
    uint64_t used = (v & OFF_MASK) < old_len ? (v & OFF_MASK) : old_len;
    atomic_fetch_add_explicit(&g->st_dropped, old_len - used, memory_order_relaxed);

    uint64_t gen = g->cur_gen + 1;
    seg_slot *s = &g->slot[gen & 1];
    atomic_store_explicit(&s->gen, SLOT_BUSY, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->first, g->sb_first, memory_order_relaxed);
    atomic_store_explicit(&s->len, g->sb_len, memory_order_relaxed);
    atomic_store_explicit(&s->day, g->sb_day, memory_order_relaxed);
    atomic_store_explicit(&s->gen, gen, memory_order_release);
    atomic_store_explicit(&g->cursor, gen << OFF_BITS, memory_order_release);
    g->cur_gen = gen;
    g->cur_pub_mono_ms = mono_ms();
    g->sb_ready = 0;
    /* The standby is empty again: fill it once this block reaches its mark (the fast
     * path kicks), or now if this block is so small it has no mark to reach. */
    if (refill_mark(g->sb_len) == 0)
        refill_kick_locked(g);
}

/* Tries the current block. @returns 1 and fills first and count (count <= want) on a
 * hit, 2 on a hit that crossed the refill mark (the caller must wake the refill thread:
 * exactly one caller does, per block), 0 on a miss (exhausted, another generation,
 * another day). Lock-free, so callable with or without g->mu. */
static inline int seg_take(idgen_t *g, int64_t day, uint64_t want, uint64_t *first,
                           uint64_t *count)
{
    uint64_t v = atomic_fetch_add_explicit(&g->cursor, want, memory_order_acquire);
    uint64_t gen = v >> OFF_BITS, off = v & OFF_MASK;
    seg_slot *s = &g->slot[gen & 1];
    uint64_t g1 = atomic_load_explicit(&s->gen, memory_order_acquire);
    uint64_t f = atomic_load_explicit(&s->first, memory_order_relaxed);
    uint64_t len = atomic_load_explicit(&s->len, memory_order_relaxed);
    int64_t sday = atomic_load_explicit(&s->day, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    uint64_t g2 = atomic_load_explicit(&s->gen, memory_order_relaxed);
    if (g1 != gen || g2 != gen || off >= len || sday != day) {
        if (g1 == gen && g2 == gen && off < len) /* the block's day is over: these go unused */
            atomic_fetch_add_explicit(&g->st_dropped, len - off < want ? len - off : want,
                                      memory_order_relaxed);
        if (off > OFF_CLAMP) {
            /* Only offsets past the end are lowered, and the generation is kept: every
             * value the cursor goes back to was already unusable. */
            uint64_t cur = atomic_load_explicit(&g->cursor, memory_order_relaxed);
            while ((cur >> OFF_BITS) == gen && (cur & OFF_MASK) > OFF_CLAMP &&
                   !atomic_compare_exchange_weak_explicit(&g->cursor, &cur, gen << OFF_BITS | len,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed))
                ;
        }
        return 0;
    }
    uint64_t mark = refill_mark(len);
    uint64_t n = len - off < want ? len - off : want;
    *first = f + off;
    *count = n;
    return (off <= mark && mark < off + n) ? 2 : 1;
}

/* Deadline helpers for pthread_cond_timedwait on CLOCK_MONOTONIC. */
static struct timespec deadline_after_ms(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

/* The slow path: the current block missed. Publishes the standby if it fits the day,
 * else asks the refill thread and waits for a block or an outcome, at most timeout_ms.
 * On IDGEN_OK the range is in first and count, for the stamp in stamp_out. */
static int seg_slow(idgen_t *g, uint64_t want, int64_t *stamp_out, uint64_t *first,
                    uint64_t *count)
{
    struct timespec deadline = deadline_after_ms(g->o.timeout_ms);
    pthread_mutex_lock(&g->mu);
    uint64_t attempts0 = g->attempts;
    int rc;
    for (;;) {
        int64_t stamp = stamp_now(g);
        if ((rc = check_stamp(g, stamp)))
            break;
        int64_t day = idgen_core_day(stamp);
        if (g->reset_pending) {
            g->reset_pending = 0;
            rc = fail(g, IDGEN_ERR_RESET, "%s", g->reset_msg);
            break;
        }
        int hit = seg_take(g, day, want, first, count);
        if (hit) {
            if (hit == 2)
                refill_kick_locked(g);
            *stamp_out = stamp;
            rc = IDGEN_OK;
            break;
        }
        if (g->sb_ready && g->sb_day < day) { /* leased before midnight: never used */
            atomic_fetch_add_explicit(&g->st_dropped, g->sb_len, memory_order_relaxed);
            g->sb_ready = 0;
        }
        if (g->sb_ready && g->sb_day == day) {
            publish_standby_locked(g);
            continue;
        }
        /* A finished attempt that failed ends the wait; a reset does not (it is reported
         * once, through reset_pending, and the refill thread leases again at once). */
        if (g->attempts != attempts0 && g->last_rc != IDGEN_OK && g->last_rc != IDGEN_ERR_RESET) {
            rc = fail(g, g->last_rc, "%s", g->last_err);
            break;
        }
        refill_kick_locked(g);
        int w = pthread_cond_timedwait(&g->ready_cv, &g->mu, &deadline);
        if (w == ETIMEDOUT) {
            rc = fail(g, IDGEN_ERR_REDIS, "no segment within %d ms%s%s", g->o.timeout_ms,
                      g->last_rc != IDGEN_OK ? ": " : "",
                      g->last_rc != IDGEN_OK ? g->last_err : "");
            break;
        }
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static int seg_next_batch(idgen_t *g, uint64_t *ids, size_t n)
{
    size_t done = 0;
    while (done < n) {
        int64_t stamp = stamp_now(g);
        uint64_t first, count;
        uint64_t want = n - done;
        int hit = idgen_core_time_ok(stamp)
                      ? seg_take(g, idgen_core_day(stamp), want, &first, &count)
                      : 0;
        if (hit == 2)
            refill_kick(g);
        if (!hit) {
            int rc = seg_slow(g, want, &stamp, &first, &count);
            if (rc)
                return rc;
        }
        for (uint64_t i = 0; i < count; i++)
            ids[done + i] = pack_id(g, stamp, (uint32_t)(first + i));
        done += count;
    }
    return IDGEN_OK;
}

/* The refill thread: leases the standby block when asked, adapts the block size, backs
 * off while Redis fails (a waiting caller cuts the back-off short). */
static void *refill_main(void *arg)
{
    idgen_t *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stopping) {
        if (g->sb_ready || !g->refill_wanted) {
            pthread_cond_wait(&g->refill_cv, &g->mu);
            continue;
        }
        g->refill_wanted = 0;

        /* Size the next block from how fast the current one is going. */
        seg_slot *cur = &g->slot[g->cur_gen & 1];
        uint64_t len = atomic_load_explicit(&cur->len, memory_order_relaxed);
        uint64_t off = atomic_load_explicit(&g->cursor, memory_order_relaxed) & OFF_MASK;
        uint64_t used = off < len ? off : len;
        if (g->cur_gen && used > 0) {
            int64_t lasted = (mono_ms() - g->cur_pub_mono_ms) * (int64_t)len / (int64_t)used;
            g->next_size = idgen_core_next_size((uint32_t)len, lasted, IDGEN_SEGMENT_TARGET_MS,
                                                g->o.segment_min, g->o.segment_max);
        }
        uint32_t n = g->next_size;
        int64_t stamp = stamp_now(g);
        int64_t day = idgen_core_day(stamp);
        pthread_mutex_unlock(&g->mu);

        uint64_t first = 0, count = 0;
        char err[ERR_MAX] = "";
        int rc = idgen_core_time_ok(stamp)
                     ? lease(g, day, stamp, n, 1, &first, &count, err, sizeof(err))
                     : IDGEN_ERR_CLOCK;
        if (rc == IDGEN_ERR_CLOCK)
            snprintf(err, sizeof(err), "clock outside the ID layout");

        pthread_mutex_lock(&g->mu);
        g->attempts++;
        g->last_rc = rc;
        snprintf(g->last_err, sizeof(g->last_err), "%s", err);
        if (rc == IDGEN_OK) {
            g->sb_first = first;
            g->sb_len = count;
            g->sb_day = day;
            g->sb_ready = 1;
            g->backoff_ms = 0;
        } else if (rc == IDGEN_ERR_RESET) {
            /* Report it once, then lease again at once: the counter is past it now. */
            g->reset_pending = 1;
            snprintf(g->reset_msg, sizeof(g->reset_msg), "%s", err);
            g->refill_wanted = 1;
        } else {
            /* Redis down or the day ran out: retry after a back-off, or sooner when a
             * caller asks (refill_wanted). */
            g->backoff_ms = g->backoff_ms ? g->backoff_ms * 2 : 20;
            if (g->backoff_ms > 1000)
                g->backoff_ms = 1000;
            struct timespec until = deadline_after_ms(g->backoff_ms);
            pthread_cond_broadcast(&g->ready_cv);
            while (!g->stopping && !g->refill_wanted &&
                   pthread_cond_timedwait(&g->refill_cv, &g->mu, &until) != ETIMEDOUT)
                ;
            g->refill_wanted = 1;
            continue;
        }
        pthread_cond_broadcast(&g->ready_cv);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ---- public API ---- */

/* Each thread keeps a few numbers taken from the current block with one fetch_add, so
 * that most calls touch no shared cache line at all. The numbers stay valid for as long
 * as the stamp's day is their block's day; a thread that stops calling skips them. The
 * generator is named by a process-unique id, not its address, which a later idgen_new
 * may reuse. */
#define THREAD_CHUNK 64
static _Atomic uint64_t next_uid = 1;
static __thread struct {
    uint64_t uid;
    int64_t day;
    uint64_t next, end;
} t_chunk;


void idgen_opts_init(idgen_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->mode = IDGEN_MODE_SEGMENT;
    o->timeout_ms = 1000;
    o->segment_min = 1000;
    o->segment_max = 1000000;
    o->key_ttl_days = 3;
    o->wait_replicas = 0;
    o->wait_timeout_ms = 100;
}

idgen_t *idgen_new_with_backend(const idgen_backend *be, const char *prefix,
                                const idgen_opts *opts, char *errstr, size_t errsz)
{
    idgen_opts o;
    if (opts)
        o = *opts;
    else
        idgen_opts_init(&o);
    const char *bad = NULL;
    if (!idgen_core_prefix_ok(prefix))
        bad = "prefix must be 1..200 printable characters without ':' or spaces";
    else if (o.mode != IDGEN_MODE_INCR && o.mode != IDGEN_MODE_SEGMENT)
        bad = "unknown mode";
    else if (o.timeout_ms <= 0)
        bad = "timeout_ms must be > 0";
    else if (o.segment_min < 1 || o.segment_max < o.segment_min)
        bad = "need 1 <= segment_min <= segment_max";
    else if (o.key_ttl_days < 1 || o.key_ttl_days > 3650)
        bad = "key_ttl_days must be in 1..3650";
    else if (o.wait_replicas < 0 || o.wait_replicas > 100 ||
             (o.wait_replicas > 0 && o.wait_timeout_ms < 1))
        bad = "need 0 <= wait_replicas <= 100, and wait_timeout_ms >= 1 with replicas"
              " (WAIT 0 would block)";
    else if (o.secret && (o.secret_len < IDGEN_SECRET_MIN || o.secret_len > IDGEN_SECRET_MAX))
        bad = "secret must be 16..1024 bytes";
    else if (o.floor && (!o.floor->raise || !o.floor->restore || !be->floor_lease))
        bad = "floor mode needs a store with raise and restore, on a backend that has it";
    if (bad) {
        snprintf(errstr, errsz, "idgen: %s", bad);
        be->destroy(be->arg);
        return NULL;
    }
    idgen_t *g = calloc(1, sizeof(*g));
    if (!g) {
        snprintf(errstr, errsz, "idgen: out of memory");
        be->destroy(be->arg);
        return NULL;
    }
    g->be = *be;
    g->o = o;
    g->uid = atomic_fetch_add(&next_uid, 1);
    snprintf(g->prefix, sizeof(g->prefix), "%s", prefix);
    if (o.secret) {
        idgen_scramble_key_derive(o.secret, o.secret_len, &g->key);
        g->scrambled = 1;
    }
    g->o.secret = NULL; /* the caller's bytes: only the derived key is kept */
    g->o.secret_len = 0;
    g->next_size = o.segment_min;
    g->ttl_day = -1;
    idgen_day_mark_init(&g->seen);
    pthread_mutex_init(&g->seen_mu, NULL);
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->refill_cv, &ca);
    pthread_cond_init(&g->ready_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (o.floor && !(g->floor = idgen_floor_new(&g->be, o.floor, g->prefix, o.floor_step))) {
        snprintf(errstr, errsz, "idgen: out of memory");
        idgen_free(g);
        return NULL;
    }
    /* Generation 0 is an empty block: the first caller takes the slow path. */
    if (o.mode == IDGEN_MODE_SEGMENT) {
        int e = pthread_create(&g->refill_thread, NULL, refill_main, g);
        if (e) {
            snprintf(errstr, errsz, "idgen: cannot start the refill thread: %s", strerror(e));
            idgen_free(g);
            return NULL;
        }
        g->thread_started = 1;
    }
    return g;
}

int idgen_next(idgen_t *g, uint64_t *id)
{
    if (!g || !id)
        return IDGEN_ERR_ARG;
    if (g->o.mode != IDGEN_MODE_SEGMENT)
        return incr_next_batch(g, id, 1);
    int64_t stamp = stamp_now(g);
    int64_t day = idgen_core_day(stamp);
    if (__builtin_expect(t_chunk.uid == g->uid && t_chunk.day == day &&
                             t_chunk.next < t_chunk.end && idgen_core_time_ok(stamp),
                         1)) {
        *id = pack_id(g, stamp, (uint32_t)t_chunk.next++);
        return IDGEN_OK;
    }
    /* Refill this thread's chunk from the block: one fetch_add, no lock, no Redis. */
    uint64_t first, count;
    int hit = idgen_core_time_ok(stamp) ? seg_take(g, day, THREAD_CHUNK, &first, &count) : 0;
    if (hit == 2)
        refill_kick(g);
    if (!hit) {
        int rc = seg_slow(g, THREAD_CHUNK, &stamp, &first, &count);
        if (rc)
            return rc;
        day = idgen_core_day(stamp);
    }
    t_chunk.uid = g->uid;
    t_chunk.day = day;
    t_chunk.next = first + 1;
    t_chunk.end = first + count;
    *id = pack_id(g, stamp, (uint32_t)first);
    return IDGEN_OK;
}

int idgen_next_batch(idgen_t *g, uint64_t *ids, size_t n)
{
    if (!g || (!ids && n))
        return IDGEN_ERR_ARG;
    if (n == 0)
        return IDGEN_OK;
    return g->o.mode == IDGEN_MODE_SEGMENT ? seg_next_batch(g, ids, n)
                                           : incr_next_batch(g, ids, n);
}

void idgen_get_stats(const idgen_t *g, idgen_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!g)
        return;
    idgen_t *m = (idgen_t *)g; /* the atomics and the mutex, not the logical state */
    out->leases = atomic_load(&m->st_leases);
    out->resets = atomic_load(&m->st_resets);
    out->dropped = atomic_load(&m->st_dropped);
    out->redis_errors = atomic_load(&m->st_redis_errors);
    idgen_floor_counts(m->floor, &out->floor_writes, &out->floor_restores);
    if (g->o.mode == IDGEN_MODE_SEGMENT) {
        pthread_mutex_lock(&m->mu);
        out->segment_size = m->next_size;
        pthread_mutex_unlock(&m->mu);
    }
}

void idgen_free(idgen_t *g)
{
    if (!g)
        return;
    if (g->thread_started) {
        pthread_mutex_lock(&g->mu);
        g->stopping = 1;
        pthread_cond_broadcast(&g->refill_cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->refill_thread, NULL);
    }
    g->be.destroy(g->be.arg);
    idgen_floor_free(g->floor);
    pthread_cond_destroy(&g->refill_cv);
    pthread_cond_destroy(&g->ready_cv);
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->seen_mu);
    memset(&g->key, 0, sizeof(g->key));
    free(g);
}
