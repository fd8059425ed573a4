/* idgen_worker: worker mode, IDs from the clock and a leased worker id, without Redis on
 * the hot path (as Leaf's snowflake mode and Sonyflake). A library of its own
 * (seckill::idgen_worker: libidgen + librlock); the IDs and errors are libidgen's.
 *
 * Layout (the seconds where every libidgen ID has them, so idgen_decode reads the time):
 *   bit 63 0 | bits 62..32 seconds since 2024-01-01 | bits 31..22 worker id (0..1023)
 *   | bits 21..0 the sequence within that second (4,194,304 a second per worker)
 * A worker-mode prefix is an ID space of its own: do not mix it with the counter modes
 * on one table's ids.
 *
 * The worker id is a librlock watchdog lock, idgen:<prefix>:w<N> (fenced, renewed by the
 * client's watchdog, released by idgen_worker_free). Uniqueness across workers needs
 * more than the lock, whose loss its holder learns late: each holder reserves, in Redis
 * and fenced by its token, the seconds it may stamp (up to now + reserve_ms), never
 * stamps past its reservation, and a new holder of a worker id starts after the last
 * holder's reservation. So a worker keeps issuing through a Redis outage for up to
 * reserve_ms, then stops (IDGEN_ERR_LEASE); a lost lease stops it at once, and a new one
 * is taken in the background. See README.md, "Worker mode".
 *
 * Clock stepping back: the worker keeps stamping its latest second while that second's
 * sequence lasts, and when it runs out waits for the clock (at most clock_back_max_ms);
 * a clock more than clock_back_max_ms behind the latest stamp is refused (IDGEN_ERR_CLOCK)
 * until it catches up: Leaf's rule (wait a little, else refuse), never a stamp that goes
 * back.
 *
 * Threads: every function but _free is thread-safe; the lease keeper is a thread of its
 * own plus the librlock client's watchdog. */
#ifndef IDGEN_WORKER_H
#define IDGEN_WORKER_H

#include "idgen.h"

#include <stddef.h>
#include <stdint.h>

#define IDGEN_WORKER_BITS 10
#define IDGEN_WORKER_MAX  ((1 << IDGEN_WORKER_BITS) - 1)
#define IDGEN_WSEQ_BITS   22

typedef struct idgen_worker idgen_worker_t;

typedef struct idgen_worker_opts {
    int timeout_ms;        /* Redis connect and command timeout; default 1000 */
    int lease_timeout_ms;  /* the worker lock's watchdog timeout; default 10000 */
    int reserve_ms;        /* how far ahead the stamps are reserved; default 5000 */
    int clock_back_max_ms; /* default 1000: see above */
    int worker_min, worker_max; /* the worker ids this process may take; default 0..1023 */
    /* Injected wall clock in ms since the Unix epoch (tests); NULL: the real one. Must be
     * thread-safe. */
    int64_t (*clock_ms)(void *arg);
    void *clock_arg;
} idgen_worker_opts;

/** @brief Fills opts with the defaults. */
void idgen_worker_opts_init(idgen_worker_opts *opts);

/** @brief Leases a free worker id of `prefix` on the Redis at redis_url (waits up to
 *  timeout_ms for one) and reserves its first seconds. @returns the worker (free with
 *  idgen_worker_free) or NULL with a message in errstr (bad arguments, Redis down, every
 *  worker id taken). */
idgen_worker_t *idgen_worker_new(const char *redis_url, const char *prefix,
                                 const idgen_worker_opts *opts, char *errstr, size_t errstr_size);

/** @brief A new unique ID in *id. @returns IDGEN_OK, IDGEN_ERR_LEASE (lost or not renewed
 *  in time: retriable), IDGEN_ERR_CLOCK (stepped back past the bound), or IDGEN_ERR_ARG.
 *  No Redis round trip. */
int idgen_worker_next(idgen_worker_t *w, uint64_t *id);

/** @brief n IDs into ids[0..n-1]; on an error none is valid. */
int idgen_worker_next_batch(idgen_worker_t *w, uint64_t *ids, size_t n);

/** @brief The worker id held now, or -1 while none is. */
int idgen_worker_id(const idgen_worker_t *w);

/** @brief Leases taken (1 after _new, +1 per retake) and lost so far. */
void idgen_worker_counts(const idgen_worker_t *w, uint64_t *taken, uint64_t *lost);

/** @brief The calling thread's last error message on w. */
const char *idgen_worker_errstr(const idgen_worker_t *w);

/** @brief Splits a worker-mode ID. @returns IDGEN_OK or IDGEN_ERR_ARG (bit 63 set). */
int idgen_worker_decode(uint64_t id, int64_t *unix_seconds, int *worker, uint32_t *sequence);

/** @brief Stops the keeper, lowers the reservation to the last second stamped and
 *  releases the worker id. NULL is fine. */
void idgen_worker_free(idgen_worker_t *w);

#endif
