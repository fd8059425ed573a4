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
    /* Frees arg (closes connections). */
    void (*destroy)(void *arg);
    void *arg;
} idgen_backend;

/** @brief Creates a generator over `be`. Takes ownership of be->arg in every case
 *  (destroyed on failure). @returns the context or NULL with a message in errstr. */
idgen_t *idgen_new_with_backend(const idgen_backend *be, const char *prefix,
                                const idgen_opts *opts, char *errstr, size_t errstr_size);

/* How long a segment should last at the measured consumption rate. Long enough that a
 * lease is rare, short enough that a crash or a day rollover loses little. */
#define IDGEN_SEGMENT_TARGET_MS 1000

#endif
