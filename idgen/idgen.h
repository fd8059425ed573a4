/* libidgen: globally unique 64-bit IDs from Redis (INCR of a per-day counter plus a timestamp).
 *
 * Layout of an ID (bit 63 is always 0, so IDs are positive int64 everywhere):
 *   bits 62..32  whole seconds since 2024-01-01T00:00:00Z (31 bits, about 68 years)
 *   bits 31..0   the sequence from INCR icr:<prefix>:<yyyymmdd> on that UTC day
 * Invariant: an ID's timestamp always lies in the UTC day of the counter key its
 * sequence came from, so (day, sequence) pairs are unique as long as the counter never
 * goes back, and this library detects when it does.
 *
 * Unguessable layout (an option: idgen_opts.secret): bits 31..0 are the sequence passed
 * through a keyed permutation (a Feistel network over its two 16-bit halves, SipHash-2-4
 * round function, the ID's second as the tweak). IDs stay unique, positive and ordered by
 * second, but within a second they are in no visible order and the low bits do not count
 * the day's IDs; idgen_decode_keyed with the same secret gives the sequence back.
 *
 * Modes: IDGEN_MODE_INCR, one INCR per ID; IDGEN_MODE_SEGMENT, a block of sequence
 * numbers leased with one INCRBY and handed out in process, the next block fetched in
 * the background before the current one runs out (a double buffer, like Meituan Leaf).
 *
 * Threads: one idgen_t may be used from many threads at once; every function is
 * thread-safe except idgen_free, which the caller must not race with other calls.
 * Errors: functions return IDGEN_OK (0) or a negative idgen_err; the last message is
 * kept in the context (idgen_errstr) and is per thread. */
#ifndef IDGEN_H
#define IDGEN_H

#include <stddef.h>
#include <stdint.h>

#include "idgen_version.h" /* IDGEN_VERSION: generated from project() in CMakeLists.txt */

/* IDGEN_EXPORT marks the public API. libidgen is built with -fvisibility=hidden and
 * IDGEN_BUILDING defined, so only what carries this macro is exported from the shared
 * library; for users it expands to nothing (as libuv's UV_EXTERN, librdkafka's RD_EXPORT). */
#if defined(IDGEN_BUILDING) && defined(__GNUC__)
#define IDGEN_EXPORT __attribute__((visibility("default")))
#else
#define IDGEN_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct idgen_s idgen_t;

typedef enum {
    IDGEN_OK = 0,
    IDGEN_ERR_ARG = -1,       /* a bad argument: not retriable */
    IDGEN_ERR_REDIS = -2,     /* Redis unreachable, timed out or answered an error: retriable */
    IDGEN_ERR_EXHAUSTED = -3, /* the day's 32-bit sequence ran out: retriable next UTC day */
    IDGEN_ERR_RESET = -4,     /* the day counter went backwards (Redis lost data): reported
                               * once, the counter already pushed past every number this
                               * generator saw; retriable. See README.md */
    IDGEN_ERR_NOMEM = -5,
    IDGEN_ERR_CLOCK = -6,     /* the clock is before the epoch or past the layout: not
                               * retriable; worker mode: it stepped back past the bound,
                               * retriable once it has caught up */
    IDGEN_ERR_FLOOR = -7,     /* the floor store (opts.floor) failed: retriable */
    IDGEN_ERR_LEASE = -8,     /* worker mode: the worker lease is lost or its reservation
                               * ran out (Redis unreachable): retriable, a lease is retaken
                               * in the background */
} idgen_err;

typedef enum {
    IDGEN_MODE_INCR = 0,
    IDGEN_MODE_SEGMENT = 1,
} idgen_mode;

/* The floor store (opts.floor): a record of each day counter's floor kept outside Redis,
 * so that a Redis that lost the counter (no AOF, a failover that dropped writes) is
 * restored above every number any process handed out, instead of restarting at 1.
 * idgen_floor_pg.h implements it in PostgreSQL. Called from the refill thread (segment
 * mode) or the callers' threads (incr mode): both functions must be thread-safe and
 * bounded in time. Each returns 0, or -1 with a message in err. */
typedef struct idgen_floor_store {
    /* Raises the floor of (prefix, day) to at least `floor` (never lowers it), durably,
     * before returning. `day` is the UTC day number (days since 1970-01-01). */
    int (*raise)(void *arg, const char *prefix, int64_t day, uint64_t floor, char *err,
                 size_t errsz);
    /* For a counter found missing: starts a new restore epoch of (prefix, day) and stores
     * the floor and that epoch (1, 2, ...; never the same twice for one day, < 2^20). */
    int (*restore)(void *arg, const char *prefix, int64_t day, uint64_t *floor,
                   uint32_t *epoch, char *err, size_t errsz);
    void *arg;
} idgen_floor_store;

/* Options; start from idgen_opts_init and change what you need. */
typedef struct idgen_opts {
    idgen_mode mode;
    int timeout_ms;          /* connect and command timeout; default 1000 */
    uint32_t segment_min;    /* smallest block leased in segment mode; default 1000 */
    uint32_t segment_max;    /* largest block; default 1000000 */
    int key_ttl_days;        /* the day key expires this many days after its day; default 3 */
    /* Injected wall clock in milliseconds since the Unix epoch (tests); NULL: the real one
     * (CLOCK_REALTIME_COARSE). Called from every thread that calls idgen_next and from the
     * refill thread: it must be thread-safe. */
    int64_t (*clock_ms)(void *arg);
    void *clock_arg;
    /* With replicas: every lease is followed by WAIT wait_replicas wait_timeout_ms (in the
     * same round trip), and a lease that fewer replicas acknowledged is dropped and
     * reported as IDGEN_ERR_REDIS, so a failover cannot hand its numbers out again.
     * 0 (default): no WAIT; rely on appendfsync always. See README.md. */
    int wait_replicas;
    int wait_timeout_ms; /* default 100; counts against the caller's wait in incr mode */
    /* The unguessable layout: a secret of 16..1024 bytes (NULL: the plain layout). Only a
     * key derived from it is kept; the caller keeps ownership of the bytes. Every process
     * issuing one prefix must use the same secret: the permutation is what makes two
     * sequences two different IDs, so mixing layouts on one prefix may collide. */
    const void *secret;
    size_t secret_len;
    /* Floor mode: no reissue after Redis lost the counter. NULL (default): none. The
     * store is the caller's and must outlive the generator. The day key then holds
     * epoch * 2^33 + sequence and is leased by a script that refuses a missing key; every
     * process of one prefix must use the floor (see README.md, "Floor mode"). */
    const idgen_floor_store *floor;
    /* How far past a lease the floor is written, so that most leases need no write (the
     * numbers a restore may skip, as a sequence's cache). 0 (default): max(1000, 4 x the
     * lease). */
    uint32_t floor_step;
} idgen_opts;

typedef struct idgen_parts {
    int64_t unix_seconds; /* the ID's time, seconds since the Unix epoch */
    uint32_t sequence;
} idgen_parts;

/** @brief Fills opts with the defaults. */
IDGEN_EXPORT void idgen_opts_init(idgen_opts *opts);

/** @brief Creates a generator on the Redis at `redis_url` (redis://..., unix://...),
 *  for counter keys icr:<prefix>:<yyyymmdd>. `opts` may be NULL (defaults).
 *  @returns the context (free with idgen_free) or NULL with a message in errstr.
 *  @remark Connects lazily: a Redis that is down now is not an error here. */
IDGEN_EXPORT idgen_t *idgen_new(const char *redis_url, const char *prefix, const idgen_opts *opts,
                                char *errstr, size_t errstr_size);

/** @brief Stores a new unique ID in *id. @returns IDGEN_OK or a negative idgen_err;
 *  never a made-up ID. Bounded by timeout_ms when Redis is unreachable. */
IDGEN_EXPORT int idgen_next(idgen_t *g, uint64_t *id);

/** @brief Stores n new unique IDs in ids[0..n-1]. @returns IDGEN_OK or an error, in
 *  which case none of ids is valid. */
IDGEN_EXPORT int idgen_next_batch(idgen_t *g, uint64_t *ids, size_t n);

/** @brief The calling thread's last error message on g ("" if none). Valid until the
 *  thread's next call on g. */
IDGEN_EXPORT const char *idgen_errstr(const idgen_t *g);

/** @brief A static description of an idgen_err. */
IDGEN_EXPORT const char *idgen_strerror(int err);

/** @brief Whether err is worth a retry (Redis errors, exhaustion on a later day). */
IDGEN_EXPORT int idgen_err_retriable(int err);

/** @brief Splits an ID into its time and sequence. @returns IDGEN_OK, or IDGEN_ERR_ARG
 *  when bit 63 is set. Pure: no context needed. */
IDGEN_EXPORT int idgen_decode(uint64_t id, idgen_parts *out);

/** @brief Builds an ID from a time and a sequence. @returns IDGEN_OK or IDGEN_ERR_CLOCK
 *  when unix_seconds is outside the layout. */
IDGEN_EXPORT int idgen_encode(int64_t unix_seconds, uint32_t sequence, uint64_t *id);

/** @brief idgen_encode for the unguessable layout: the sequence permuted under `secret`
 *  (16..1024 bytes). @returns IDGEN_OK, IDGEN_ERR_ARG (bad secret) or IDGEN_ERR_CLOCK. */
IDGEN_EXPORT int idgen_encode_keyed(int64_t unix_seconds, uint32_t sequence, const void *secret,
                                    size_t secret_len, uint64_t *id);

/** @brief idgen_decode for the unguessable layout: the time, and the sequence recovered
 *  with `secret`. @returns IDGEN_OK or IDGEN_ERR_ARG (bit 63 set, or a bad secret). A
 *  wrong secret gives a wrong sequence, not an error: the layout has no check bits. */
IDGEN_EXPORT int idgen_decode_keyed(uint64_t id, const void *secret, size_t secret_len,
                                    idgen_parts *out);

/* Counters since idgen_new, for metrics and tests. */
typedef struct idgen_stats {
    uint64_t leases;       /* INCR/INCRBY round trips that returned numbers */
    uint64_t resets;       /* times the day counter was found to have gone backwards */
    uint64_t dropped;      /* leased numbers never handed out (day rollover, reset, end of
                            * the 32-bit space); does not count the few (< 64) a thread
                            * still holds in its own chunk (segment mode) */
    uint64_t redis_errors; /* failed round trips (unreachable, timeout, error reply) */
    uint32_t segment_size; /* segment mode: the size of the next lease; 0 in incr mode */
    uint64_t floor_writes;   /* floor mode: floors raised in the store */
    uint64_t floor_restores; /* floor mode: counters found missing and restored */
} idgen_stats;

/** @brief Copies g's counters into *out. Thread-safe; a consistent snapshot only when no
 *  other thread is calling into g. */
IDGEN_EXPORT void idgen_get_stats(const idgen_t *g, idgen_stats *out);

/** @brief Stops the background refill, closes the connections, frees. NULL is fine. */
IDGEN_EXPORT void idgen_free(idgen_t *g);

#ifdef __cplusplus
}
#endif

#endif
