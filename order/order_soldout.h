/* order_soldout: this instance's "sold out" flags, one per event, that expire.
 *
 * Once reserve.lua answers "sold out" for an event, requests for it are answered 409
 * here without asking Redis, until the flag expires (ttl_ms, below one second). Expiry
 * is how stock given back by cancel.lua becomes sellable again on every instance
 * within a second, with no pub/sub to lose: after expiry the next request asks Redis
 * again and either sells or sets the flag again (one Redis call per event per ttl).
 * A fixed table of 1024 slots by event id; a collision only costs a Redis call.
 * Lock-free and thread-safe (relaxed atomics: a stale read errs towards asking Redis). */
#ifndef ORDER_SOLDOUT_H
#define ORDER_SOLDOUT_H

#include <stdint.h>

typedef struct order_soldout order_soldout;

order_soldout *order_soldout_new(int64_t ttl_ms);
void order_soldout_free(order_soldout *s);

/** @brief Marks event_id sold out from now_ms for ttl_ms. */
void order_soldout_set(order_soldout *s, uint64_t event_id, int64_t now_ms);

/** @brief Lifts event_id's flag on this instance now (a unit came back: issue 22). */
void order_soldout_clear(order_soldout *s, uint64_t event_id);

/** @brief @returns 1 if event_id is flagged sold out at now_ms. */
int order_soldout_get(order_soldout *s, uint64_t event_id, int64_t now_ms);

#endif
