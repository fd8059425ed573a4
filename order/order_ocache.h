/* order_ocache: this instance's memory of orders whose outcome is final (created or
 * rejected), for GET /api/v1/orders/{id} (issue 17).
 *
 * A buyer polls its order after the 202; once the index says created or rejected the
 * answer will not change within the API's statuses, so the next polls of that order on
 * this instance are answered from here for `ttl_ms` (the bound on how stale an answer
 * can be: a later change in PostgreSQL, such as a payment, shows after it) instead of a
 * Redis round trip each. Queued orders are never kept (their outcome must show within a
 * second of the consumer's commit). A fixed direct-mapped table: a collision only costs
 * a Redis read. Thread-safe: striped mutexes. The owner check stays with the caller:
 * the entry carries the buyer. */
#ifndef ORDER_OCACHE_H
#define ORDER_OCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct order_ocache order_ocache;

/** @brief A table of `slots` entries (rounded up to a power of two, >= 64) keeping each
 *  for ttl_ms. @returns NULL on OOM. */
order_ocache *order_ocache_new(size_t slots, int64_t ttl_ms);
void order_ocache_free(order_ocache *c);

/** @brief Remembers an outcome: a status letter of order_msg.h ('c' created, 'r'
 *  rejected, 'P' paid, 'X' cancelled, 'E' expired; anything else is ignored). A pay or
 *  cancel made on this instance replaces the entry at once; on the others an entry
 *  says "created" for at most ttl_ms after it changed. */
void order_ocache_put(order_ocache *c, uint64_t order_id, uint64_t event_id, uint64_t user_id,
                      char outcome, int64_t now_ms);

/** @returns 1 and the fields if order_id is remembered at now_ms, 0 otherwise. */
int order_ocache_get(order_ocache *c, uint64_t order_id, int64_t now_ms, uint64_t *event_id,
                     uint64_t *user_id, char *outcome);

#endif
