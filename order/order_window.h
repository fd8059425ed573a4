/* order_window: this instance's copy of each known event's sale window, so that an order
 * before starts_at (or after ends_at) is answered 403 from memory, without Redis, like a
 * sold-out flag (issue 19 section 2); and of its rate overrides (order_event_limits),
 * fixed at creation like the window, which the limit levels read on every order.
 *
 * Filled when this front learns an event's window (it created the event, or loaded it
 * from PostgreSQL for the event page buyers refresh before the start, or read the gate's
 * meta for an order). An admin's change of the window or the limits (issue 32,
 * order_event_change.h) sets the entry on the front that took it and forgets it on the
 * others when they see the change (order_pauser.h): their next order reads the meta
 * again. A slot taken by another event only costs a Redis call. reserve.lua judges with the front's clock (ARGV now_ms), so the
 * answer is the one Redis would give.
 *
 * A fixed table of 4096 slots by event id. Readers never block (a per-slot sequence
 * count: a read that overlaps a write answers "unknown" and the order goes to Redis);
 * writers, rare, are serialised by one mutex. Thread-safe. */
#ifndef ORDER_WINDOW_H
#define ORDER_WINDOW_H

#include "order_body.h"

#include <stdint.h>

typedef struct order_window order_window;

typedef enum {
    ORDER_WINDOW_UNKNOWN = 0, /* not known here, or open: ask the gate */
    ORDER_WINDOW_NOT_STARTED, /* now < starts_at: 403 not_started */
    ORDER_WINDOW_ENDED,       /* now >= ends_at: 403 ended */
} order_window_state;

/** @brief @returns the table (order_window_free) or NULL on OOM. */
order_window *order_window_new(void);
/** @brief NULL is fine. */
void order_window_free(order_window *t);

/** @brief Remembers event_id's window [starts_at_ms, ends_at_ms) and its rate overrides
 *  (`lim`, copied; NULL: none). */
void order_window_set(order_window *t, uint64_t event_id, int64_t starts_at_ms, int64_t ends_at_ms,
                      const order_event_limits *lim);

/** @brief Forgets event_id's entry, if it holds one (its window or limits changed): the
 *  next order learns them again. */
void order_window_forget(order_window *t, uint64_t event_id);

/** @brief event_id's rate overrides into *out, if its entry is here. @returns 1 known
 *  (*out filled, zeros where the default applies), 0 unknown (*out zeroed). */
int order_window_limits(order_window *t, uint64_t event_id, order_event_limits *out);

/** @brief Where wall-clock now_ms lies in event_id's window, if known. */
order_window_state order_window_get(order_window *t, uint64_t event_id, int64_t now_ms);

#endif
