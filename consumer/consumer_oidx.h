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
 * Not thread-safe: one per writer thread. */
#ifndef CONSUMER_OIDX_H
#define CONSUMER_OIDX_H

#include "consumer_batch.h"

typedef struct consumer_oidx consumer_oidx;

/** @brief A recorder for `url` (redis:// or redis-cluster://, copied); connects lazily.
 *  @returns NULL on OOM. */
consumer_oidx *consumer_oidx_new(const char *url, long long ttl_s, int timeout_ms);
void consumer_oidx_free(consumer_oidx *o);

/** @brief Records the outcome of every message of `b` that has one (after
 *  consumer_db_write succeeded). @returns the number recorded, or -1 (Redis failed;
 *  the connection is dropped and made again on the next call). */
long consumer_oidx_record(consumer_oidx *o, consumer_batch *b);

/** @brief The last error, "" if none. */
const char *consumer_oidx_errstr(const consumer_oidx *o);

#endif
