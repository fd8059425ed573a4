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
 * the entry carries the buyer.
 *
 * It also bounds the PostgreSQL lookups of young orders (order_ocache_claim_lookup): an
 * order the index still calls queued long after it was issued (a lagging consumer, or
 * an outcome Redis lost) and a young id the index does not know may be looked up in
 * PostgreSQL, but each at most once per `every_ms` on this instance, and all of them
 * together at most `per_s` times a second, so neither a stuck order polled by its buyer
 * nor a flood of made-up ids puts a query per request on the database. */
#ifndef ORDER_OCACHE_H
#define ORDER_OCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct order_ocache order_ocache; /* calls take NULL: nothing kept, lookups unbounded */

/** @brief A table of `slots` entries (rounded up to a power of two, >= 64) keeping each
 *  outcome for ttl_ms; lookups bounded to one per order per every_ms and per_s in all
 *  (see above). @returns NULL on OOM. */
order_ocache *order_ocache_new(size_t slots, int64_t ttl_ms, int64_t every_ms, int64_t per_s);
void order_ocache_free(order_ocache *c);

/** @brief Remembers an outcome: a status letter of order_msg.h ('c' created, 'r'
 *  rejected, 'P' paid, 'X' cancelled, 'E' expired; anything else is ignored) and the
 *  order's pay_by (0 unknown; shown for created and paid), for ttl_ms,
 *  or until the order's lookup mark ends if that is later (the outcome a lookup found
 *  answers until the next lookup may start). A pay or cancel made on this instance
 *  replaces the entry at once; on the others an entry may say "created" for at most
 *  ttl_ms after it changed (order.pg_lookup_every_ms for an order found in PostgreSQL). */
void order_ocache_put(order_ocache *c, uint64_t order_id, uint64_t event_id, uint64_t user_id,
                      char outcome, int64_t pay_by_ms, int64_t now_ms);

/** @returns 1 and the fields if order_id is remembered at now_ms, 0 otherwise. pay_by_ms
 *  (NULL: not wanted) is what put was given: 0 when unknown. */
int order_ocache_get(order_ocache *c, uint64_t order_id, int64_t now_ms, uint64_t *event_id,
                     uint64_t *user_id, char *outcome, int64_t *pay_by_ms);

/** @brief Whether a PostgreSQL lookup of the young order `order_id` may start at now_ms:
 *  1 (and the lookup is counted, and remembered for every_ms in place of a final outcome
 *  of this order), or 0 when this order was looked up less than every_ms ago or this
 *  second's lookups are spent. A final outcome put afterwards replaces the mark. */
int order_ocache_claim_lookup(order_ocache *c, uint64_t order_id, int64_t now_ms);

#endif
