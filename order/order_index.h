/* order_index: the order index writes of one worker (the index is read by GET
 * /api/v1/orders/{id}: which event an order belongs to, and whether Kafka acknowledged it).
 *
 * A hash per second of the order ids' own time ("seckill:oidx:<second>", order_msg.h),
 * field order id, value an order_index_entry ("<event>:<user>:a|p"), expiring ttl_s after
 * its first write (EXPIRE ... LT, order_iwrite.h). The entries added in one loop turn go out at the end of that turn as one
 * HSET (and one EXPIRE) per second they were issued in, nearly always one: Redis bounds the
 * accept path, and a command per order cost it a parse and an AOF record each
 * (order/README.md). Sent in the turn that answered the orders, on the worker's one Redis
 * connection, they are in Redis before anything the client sends after its answer.
 * Writes are fire and forget: a lost entry only makes GET answer 404 until the consumer
 * has written the order (errors are counted in the Redis error metric).
 *
 * Threads: an order_index belongs to one worker; every call runs on that worker's loop. */
#ifndef ORDER_INDEX_H
#define ORDER_INDEX_H

#include "order_redis.h"

#include <stdint.h>

struct event_base;

typedef struct order_index order_index;

/** @brief A writer on `base` through `redis` (both must outlive it), entries expiring
 *  ttl_s after their hash's first write. @returns NULL on OOM. */
order_index *order_index_new(struct event_base *base, order_redis *redis, long long ttl_s);

/** @brief Queues the entry of `order_id` for the end of this loop turn (acked: Kafka
 *  acknowledged it; 0: it may or may not have landed). @returns 0, or -1 on OOM (the
 *  entry is lost, as if its write had failed). */
int order_index_add(order_index *ix, uint64_t order_id, uint64_t event_id, uint64_t user_id,
                    int acked);

/** @brief Sends what is queued now (the end-of-turn event does this; call it once more
 *  after the loop ended, before the Redis connection is freed). */
void order_index_flush(order_index *ix);

/** @brief Frees the writer; entries still queued are dropped. NULL is fine. */
void order_index_free(order_index *ix);

#endif
