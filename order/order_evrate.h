/* order_evrate: this front's share of each event's cluster-wide admission rate (issue 19
 * section 2, the per-event level).
 *
 * The rate (limits.event_rate orders per second for the whole event, all fronts) is one
 * token bucket in Redis (ratelimit.lua on seckill:{e<ID>}:rate, the event's hash tag).
 * A front takes tokens from it in batches (limits.event_batch) and spends them here, so
 * the check costs a Redis call per batch, not per order. Tokens taken but not spent
 * within `valid_ms` are dropped: spending them later would let a front exceed the rate
 * (a dropped token is a sale slot lost, never one too many). When many requests meet an
 * empty pool at once each takes its own batch: more Redis calls for that moment and
 * tokens left to expire, never more orders than the bucket gave. When the bucket gave
 * nothing, the event is dry here for `valid_ms`: its orders are refused from memory (so
 * a flood past the rate costs one Redis call per front per valid_ms, not one per
 * request), at the price of tokens the bucket makes meanwhile going to other fronts.
 *
 * A fixed table of 1024 slots by event id, one mutex per slot (a collision evicts the
 * other event's tokens: a lost share, never an extra one). Pure and thread-safe. */
#ifndef ORDER_EVRATE_H
#define ORDER_EVRATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct order_evrate order_evrate;

/** @brief Tokens expire valid_ms after they were taken. @returns NULL on OOM or valid_ms < 1. */
order_evrate *order_evrate_new(int64_t valid_ms);
/** @brief NULL is fine. */
void order_evrate_free(order_evrate *t);

/** @brief Spends one local token of event_id at now_ms. @returns 1 spent, 0 none here
 *  (ask Redis), -1 dry (refuse without Redis). */
int order_evrate_take(order_evrate *t, uint64_t event_id, int64_t now_ms);

/** @brief Redis gave nothing at now_ms: event_id is dry here for valid_ms. */
void order_evrate_dry(order_evrate *t, uint64_t event_id, int64_t now_ms);

/** @brief Adds n tokens taken from Redis at now_ms (the unexpired ones are kept; all
 *  expire valid_ms from now). */
void order_evrate_add(order_evrate *t, uint64_t event_id, int64_t n, int64_t now_ms);

/** @brief Redis key of the event's bucket, "seckill:{e<ID>}:rate". @returns the length. */
size_t order_evrate_key(uint64_t event_id, char *out, size_t outsz);

#endif
