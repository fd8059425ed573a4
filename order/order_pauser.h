/* order_pauser: reads the paused events (order_pause.h's Redis set) every interval on one
 * worker's loop and hands them to the instance's order_pause table, so that a pause
 * given on any front holds on this one within the interval plus a round trip.
 *
 * In the same turn it reads the change counts of the events an admin changed (issue 32:
 * the hash ORDER_CHANGED_KEY, event id -> count, HINCRBY'd by order_event_change.c after
 * the meta was written): an event whose count moved since the last read is forgotten by
 * this front's sale-window table and event cache, so that its next order reads the meta
 * again and its next page loads the row again (within the interval, as a pause). The
 * first read only records the counts (nothing was learnt before it that could be older).
 * At most ORDER_CHANGED_MAX events are followed; past it a change is still honoured by
 * the gate (reserve.lua reads the meta), only this front's memory may lag.
 *
 * Runs on the loop of the worker that made it (one per process: worker 0), with that
 * worker's Redis connection; one read in flight at most. A failed read keeps what was
 * known (a Redis outage neither pauses nor resumes anything). */
#ifndef ORDER_PAUSER_H
#define ORDER_PAUSER_H

#include "order_events.h"
#include "order_evlist.h"
#include "order_pause.h"
#include "order_redis.h"
#include "order_window.h"

#include <stdint.h>

#define ORDER_CHANGED_KEY "seckill:changed"
#define ORDER_CHANGED_MAX 1024

struct event_base;
typedef struct order_pauser order_pauser;

/* What the poller keeps up to date; every pointer must outlive it. */
typedef struct order_pauser_tables {
    order_pause *paused;
    order_window *window;
    order_events *events;
    order_evlist *evlist;
} order_pauser_tables;

/** @brief Starts reading every interval_ms on `base`. `redis` must outlive it; `t` is
 *  copied. @returns the poller or NULL on OOM. */
order_pauser *order_pauser_new(struct event_base *base, order_redis *redis,
                               const order_pauser_tables *t, int64_t interval_ms);

/** @brief Frees it, after its Redis connection was freed (its pending read answered). NULL
 *  is fine. */
void order_pauser_free(order_pauser *p);

#endif
