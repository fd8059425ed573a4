/* order_events: this instance's cache of events for GET /api/v1/events/{id} (issue 17).
 *
 * The page a buyer refreshes while waiting for the start is answered from memory: an
 * event's fixed fields (name, stock_total, window) are loaded once from PostgreSQL, its
 * stock_left is read from the Redis gate at most once per `stock_refresh_ms` per event
 * per instance, whatever the request rate. No I/O here: the cache tells its caller what
 * to fetch (LOAD: PostgreSQL; REFRESH: the gate) and the caller reports the result; the
 * requests that came meanwhile wait on the entry (WAIT) and are handed back to their
 * caller to look up again. So one read of each kind is in flight per event, and a value
 * older than stock_refresh_ms is never served (a served stock_left was read from Redis
 * at most stock_refresh_ms before, plus a round trip).
 *
 * Bounded: `capacity` entries; a new one evicts the least recently used entry that no
 * request waits on. Unknown ids are kept as negative entries for `negative_ttl_ms`, ids
 * whose libidgen time lies in the future are refused without a lookup, and at most
 * `miss_per_s` PostgreSQL loads start per second (BUSY past it): a flood of random ids
 * costs the database a bounded number of queries.
 *
 * Thread-safe: one mutex around every call (each holds it for a table probe and a copy;
 * loads and refreshes happen outside it). Waiters are the caller's memory, borrowed
 * from the WAIT answer until they are handed back. */
#ifndef ORDER_EVENTS_H
#define ORDER_EVENTS_H

#include "order_body.h"

#include <stddef.h>
#include <stdint.h>

typedef struct order_events order_events;

/* A request waiting on an entry; embedded in the caller's request. */
typedef struct order_events_waiter {
    struct order_events_waiter *next;
    int failed; /* set when handed back: 1 if the load failed (answer 503), 0: look up again */
} order_events_waiter;

typedef enum {
    ORDER_EVENTS_FRESH = 0, /* *out is filled: answer it */
    ORDER_EVENTS_LOAD,      /* the caller loads the fixed fields: order_events_loaded/absent/failed */
    ORDER_EVENTS_REFRESH,   /* the caller reads the gate: order_events_stock */
    ORDER_EVENTS_WAIT,      /* the waiter is queued on the entry; handed back by a loaded/stock/failed call */
    ORDER_EVENTS_ABSENT,    /* no such event (negative entry, or an id from the future): 404 */
    ORDER_EVENTS_BUSY,      /* the table is full of waited-on entries or the load budget is spent: 503 */
} order_events_status;

/* The body of GET /api/v1/events/{id} without its closing brace (the caller appends
 * "now"), and its entity tag. */
#define ORDER_EVENTS_BODY_MAX 1600
typedef struct order_event_view {
    char body[ORDER_EVENTS_BODY_MAX];
    size_t body_len;
    char etag[24]; /* W/"<16 hex digits>", NUL-terminated */
} order_event_view;

typedef struct order_events_limits {
    size_t capacity;         /* entries (>= 4) */
    int64_t stock_refresh_ms; /* >= 1 */
    int64_t negative_ttl_ms;  /* how long an unknown id stays known as unknown */
    int64_t miss_per_s;       /* PostgreSQL loads started per second at most */
} order_events_limits;

/** @brief A cache with these limits. @returns NULL on OOM or a limit out of range. */
order_events *order_events_new(const order_events_limits *lim);
/** @brief Frees the cache (no waiter may be queued). NULL is fine. */
void order_events_free(order_events *c);

/** @brief Looks `id` up at wall-clock `now_ms`; on WAIT, `w` is queued.
 *  @returns the status; on FRESH, *out is filled. */
order_events_status order_events_lookup(order_events *c, uint64_t id, int64_t now_ms,
                                        order_events_waiter *w, order_event_view *out);

/** @brief Like order_events_lookup, for the fast path: FRESH with *out filled, or
 *  ORDER_EVENTS_WAIT meaning "not answerable at once, call lookup" (nothing is queued,
 *  claimed or counted). */
order_events_status order_events_peek(order_events *c, uint64_t id, int64_t now_ms,
                                      order_event_view *out);

/** @brief The load of `id` found the event: fixed fields from `spec`, and `stock_left`
 *  (PostgreSQL's figure, kept if the gate has none) to be refreshed at once.
 *  @returns the waiters to hand back (failed = 0), detached from the cache. */
order_events_waiter *order_events_loaded(order_events *c, uint64_t id, const order_event_spec *spec,
                                         int64_t stock_left, int64_t now_ms);

/** @brief The load of `id` found nothing: a negative entry until now + negative_ttl_ms.
 *  @returns the waiters (failed = 0: they will find it absent). */
order_events_waiter *order_events_absent(order_events *c, uint64_t id, int64_t now_ms);

/** @brief The load failed (database down): the entry is dropped. @returns the waiters
 *  (failed = 1). */
order_events_waiter *order_events_failed(order_events *c, uint64_t id);

/** @brief The gate's stock of `id` read at now_ms; `have` 0 when Redis had none or
 *  failed (the previous figure stays, for one more interval). @returns the waiters. */
order_events_waiter *order_events_stock(order_events *c, uint64_t id, int have, int64_t stock_left,
                                        int64_t now_ms);

/** @brief An admin changed `id` (issue 32): its fixed fields are loaded again by the next
 *  lookup (a negative entry is dropped; a load under way is followed by another). */
void order_events_forget(order_events *c, uint64_t id);

/** @brief 1 if an If-None-Match header value (a list of tags, or "*") matches etag. */
int order_events_etag_match(const char *if_none_match, const char *etag);

/** @brief The weak entity tag of a body: W/"<FNV-1a 64 of the bytes, 16 hex digits>".
 *  The same bytes give the same tag on every instance. */
void order_events_etag(const char *body, size_t len, char out[24]);

/** @brief Empties the list at *head and marks each waiter `failed`. @returns the list. */
order_events_waiter *order_events_waiters_take(order_events_waiter **head, int failed);

/** @brief Counters for tests and metrics: PostgreSQL loads started, entries evicted. */
void order_events_counts(order_events *c, uint64_t *loads, uint64_t *evictions);

#endif
