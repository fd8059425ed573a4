/* consumer_oidx: the outcome of each written order, recorded in the order index that
 * seckill-order reads for GET /api/v1/orders/{id} (issue 17).
 *
 * After a batch's PostgreSQL COMMIT, each order's outcome goes into the field
 * "<order_id>:o" of its "seckill:oidx:<second>" hash (order_msg.h: the same hash as the
 * front's "<order_id>" entry, written the same way), valued "<event>:<user>:c" (created),
 * ":r" (rejected) or ":d" (already in PostgreSQL: a replay, whose status the front reads
 * there). A field of its own, not the front's entry, so neither writer can overwrite the
 * other whatever the order in which they land. The hash's expiry is set again to
 * order.index_ttl_s, as the front does on each write. So a buyer polling a young order
 * sees `created` within a Redis round trip of the commit, and the front never asks
 * PostgreSQL for it.
 *
 * Best effort: one pipelined round trip per batch (HSET per second of ids, EXPIRE); if
 * Redis fails, the batch's outcomes are not recorded (logged and counted) and the front
 * answers `queued` for them until the index expires (order/README.md). The offsets are
 * not held back for Redis: the orders are durable, which is the consumer's promise.
 *
 * Off the writer's path: each recorder has a thread of its own, which writes what the
 * writer submits after its commit, so the writer's next transaction does not wait for
 * Redis's round trip and its work on a thousand fields (about 2 ms of each ~25 ms batch
 * on the bench machine, when the writers are what the drain waits for; A/B in
 * docs/benchmarks.md, round 13). One batch waits behind the one being written; a writer
 * that submits a third waits, so a slow Redis still slows the writer rather than piling
 * batches up in memory. Freeing the recorder writes what was submitted first (each
 * Redis call has timeout_ms), so a stopping consumer records its last batch.
 * One recorder per writer; submit and free from one thread at a time. */
#ifndef CONSUMER_OIDX_H
#define CONSUMER_OIDX_H

#include "consumer_batch.h"

#include <stdatomic.h>

typedef struct consumer_oidx consumer_oidx;

/** @brief A recorder for `url` (redis:// or redis-cluster://, copied), which connects
 *  lazily, and its thread. A failed write adds 1 to *failures (atomic; the metrics' own,
 *  which outlive the recorder) and logs event=order_index_failed with `writer`.
 *  @returns NULL on OOM or when no thread can be started. */
consumer_oidx *consumer_oidx_new(const char *url, long long ttl_s, int timeout_ms, int writer,
                                 atomic_uint_fast64_t *failures);

/** @brief Writes what was submitted (within timeout_ms per Redis call), stops the thread
 *  and frees o. NULL is fine. */
void consumer_oidx_free(consumer_oidx *o);

/** @brief Hands the outcome of every message of `b` that has one (after consumer_db_write
 *  succeeded) to the recorder's thread: copied, so b is the caller's again on return.
 *  Waits while a batch is already queued behind the one being written.
 *  @returns 0, or -1 when out of memory (nothing submitted). */
int consumer_oidx_submit(consumer_oidx *o, consumer_batch *b);

#endif
