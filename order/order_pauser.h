/* order_pauser: reads the paused events (order_pause.h's Redis set) every interval on one
 * worker's loop and hands them to the instance's order_pause table, so that a pause
 * given on any front holds on this one within the interval plus a round trip.
 *
 * Runs on the loop of the worker that made it (one per process: worker 0), with that
 * worker's Redis connection; one read in flight at most. A failed read keeps what was
 * known (a Redis outage neither pauses nor resumes anything). */
#ifndef ORDER_PAUSER_H
#define ORDER_PAUSER_H

#include "order_pause.h"
#include "order_redis.h"

#include <stdint.h>

struct event_base;
typedef struct order_pauser order_pauser;

/** @brief Starts reading every interval_ms on `base`. `redis` and `table` must outlive it.
 *  @returns the poller or NULL on OOM. */
order_pauser *order_pauser_new(struct event_base *base, order_redis *redis, order_pause *table,
                               int64_t interval_ms);

/** @brief Frees it, after its Redis connection was freed (its pending read answered). NULL
 *  is fine. */
void order_pauser_free(order_pauser *p);

#endif
