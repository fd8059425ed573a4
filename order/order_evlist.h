/* order_evlist: this instance's list of current and upcoming events for
 * GET /api/v1/events (issue 17), paginated, from memory.
 *
 * How it stays fresh: a snapshot of the events that have not ended, read from
 * PostgreSQL at most once per `refresh_ms` per instance, on demand: the first request
 * after the interval starts the one refresh (the caller runs the query) and every
 * request meanwhile is answered from the snapshot it replaces (so a page is at most
 * refresh_ms plus one query old). PostgreSQL is the only place that knows every event
 * whatever front created it, so an event created on another instance shows up within
 * refresh_ms; one query a second per instance is nothing to the database, and no
 * request ever waits for it except the very first. Items carry PostgreSQL's
 * stock_left as of the refresh (the live figure is on the event's own page). An event
 * is left out from the moment it ends, whatever the snapshot's age.
 *
 * No I/O here (the caller runs the query). Thread-safe: one mutex. */
#ifndef ORDER_EVLIST_H
#define ORDER_EVLIST_H

#include "order_body.h"
#include "order_events.h"

#include <stddef.h>
#include <stdint.h>

typedef struct order_evlist order_evlist;

/* One event of a refresh (the query's row). */
typedef struct order_evlist_row {
    uint64_t id;
    order_event_spec spec;
    int64_t stock_left;
} order_evlist_row;

#define ORDER_EVLIST_LIMIT_MAX 100

/** @brief A list refreshed at most every refresh_ms (>= 1). @returns NULL on OOM. */
order_evlist *order_evlist_new(int64_t refresh_ms);
void order_evlist_free(order_evlist *l);

/** @brief The page [offset, offset + limit) of the events not ended at now_ms, ordered by
 *  starts_at then id. On FRESH: *body is a malloc'd `{"events":[...],"offset":O,
 *  "next_offset":N|null` (no closing brace: the caller appends "now"), *etag its tag,
 *  and *refresh 1 when the caller must run the refresh (the snapshot is older than
 *  refresh_ms; it is still answered). LOAD: no snapshot yet, the caller runs the first
 *  query; WAIT: `w` is queued until it lands. */
order_events_status order_evlist_page(order_evlist *l, int64_t now_ms, size_t offset, size_t limit,
                                      order_events_waiter *w, char **body, size_t *len,
                                      char etag[24], int *refresh);

/** @brief An event changed (issue 32): the snapshot is refreshed by the next page asked
 *  (which is still answered from it, as any stale snapshot is). */
void order_evlist_stale(order_evlist *l);

/** @brief A refresh's rows (copied). @returns the waiters to hand back (failed = 0). */
order_events_waiter *order_evlist_loaded(order_evlist *l, const order_evlist_row *rows, size_t n,
                                         int64_t now_ms);

/** @brief The refresh failed: a snapshot stays in use (tried again after refresh_ms);
 *  without one the waiters come back failed. */
order_events_waiter *order_evlist_failed(order_evlist *l, int64_t now_ms);

/** @brief The ids of the snapshot's events not ended at now_ms, in the list's order, up
 *  to cap (a buyer's orders over the current events, issue 31). *have: whether a
 *  snapshot was loaded (without one, nothing: order_event_list_warm starts the load).
 *  @returns how many were written. */
size_t order_evlist_ids(order_evlist *l, int64_t now_ms, uint64_t *ids, size_t cap, int *have);

#endif
