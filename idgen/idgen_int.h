/* idgen_int: the seam between the generator logic (idgen_gen.c) and its counter store.
 *
 * The generator only needs one operation from Redis: "add n to the day key and tell me
 * the new value". idgen_redis.c implements it over hiredis; the unit tests implement it
 * in memory (and make it fail, lose data or run out) to drive every path of
 * idgen_gen.c without a network. Internal header: not installed. */
#ifndef IDGEN_INT_H
#define IDGEN_INT_H

#include "idgen.h"

#include <stddef.h>
#include <stdint.h>

typedef struct idgen_backend {
    /* INCRBY key n (INCR when n == 1) and, when ttl_s > 0, EXPIRE key ttl_s, in one round
     * trip. Stores the counter's value after the increment in *last. Called from many
     * threads at once (incr mode) or from the refill thread (segment mode): must be
     * thread-safe. @returns IDGEN_OK, or IDGEN_ERR_REDIS with a message in err. A failed
     * call may still have incremented the counter: those numbers are skipped, never
     * reused. Bounded by the backend's own timeout. */
    int (*incrby)(void *arg, const char *key, uint64_t n, int64_t ttl_s, uint64_t *last,
                  char *err, size_t errsz);
    /* Floor mode (idgen_floor.c; NULL in a backend without it). lua/idgen_floor_lease.lua:
     * stores the value after INCRBY key n, or -1 when the key is missing (not created). */
    int (*floor_lease)(void *arg, const char *key, uint64_t n, int64_t ttl_s, int64_t *value,
                       char *err, size_t errsz);
    /* SET key value NX EX ttl_s: a restore; losing the race to another restorer is fine. */
    int (*floor_set)(void *arg, const char *key, int64_t value, int64_t ttl_s, char *err,
                     size_t errsz);
    /* GET key: the value, or -1 when missing. */
    int (*floor_get)(void *arg, const char *key, int64_t *value, char *err, size_t errsz);
    /* Frees arg (closes connections). */
    void (*destroy)(void *arg);
    void *arg;
} idgen_backend;

/** @brief Creates a generator over `be`. Takes ownership of be->arg in every case
 *  (destroyed on failure). @returns the context or NULL with a message in errstr. */
idgen_t *idgen_new_with_backend(const idgen_backend *be, const char *prefix,
                                const idgen_opts *opts, char *errstr, size_t errstr_size);

/* ---- floor mode (idgen_floor.c) ---- */

typedef struct idgen_floor idgen_floor;

/** @brief The floor state of one generator over `be` and `store` (neither owned).
 *  @returns it, or NULL (out of memory). */
idgen_floor *idgen_floor_new(const idgen_backend *be, const idgen_floor_store *store,
                             const char *prefix, uint32_t step);
void idgen_floor_free(idgen_floor *f);

/** @brief Leases n numbers of `day`'s counter under the floor rules: restores a missing
 *  counter from the store, raises the store's floor ahead of the lease before any number
 *  of it may be handed out, and drops a lease a restore overtook. Stores the sequence
 *  after the increment in *last (as incrby does). ttl_s: EXPIRE with the lease (0: none);
 *  restore_ttl_s: the expiry a restored key gets. @returns IDGEN_OK, IDGEN_ERR_REDIS,
 *  IDGEN_ERR_FLOOR or IDGEN_ERR_EXHAUSTED, with a message in err. Thread-safe. */
int idgen_floor_lease(idgen_floor *f, const char *key, int64_t day, uint64_t n, int64_t ttl_s,
                      int64_t restore_ttl_s, uint64_t *last, char *err, size_t errsz);

/** @brief Floors raised and counters restored so far. */
void idgen_floor_counts(idgen_floor *f, uint64_t *writes, uint64_t *restores);

/* How long a segment should last at the measured consumption rate. Long enough that a
 * lease is rare, short enough that a crash or a day rollover loses little. */
#define IDGEN_SEGMENT_TARGET_MS 1000

#endif
