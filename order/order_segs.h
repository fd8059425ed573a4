/* order_segs: this instance's idea of how many stock segments (issue 19) each event has.
 *
 * The accept path reads it to find a user's home segment without any Redis or
 * PostgreSQL call; an event it does not know is taken as K = 1, the event's own keys.
 * It is never trusted: reserve.lua compares the K the front sent with the event's
 * (meta "segments") and answers 100 + K, changing nothing, when they differ; the front
 * then records K here and sends the order to its home segment. So a front that never saw
 * the event created learns K from its first order (from the event's meta, read once with
 * its window and rate overrides, or else from reserve.lua's answer), and a collision in
 * this table costs one more Redis call, never a wrong sale.
 * A fixed table of 1024 slots by event id. Lock-free and thread-safe (relaxed atomics). */
#ifndef ORDER_SEGS_H
#define ORDER_SEGS_H

#include <stdint.h>

typedef struct order_segs order_segs;

/** @returns a table (free with order_segs_free), or NULL on OOM. */
order_segs *order_segs_new(void);
void order_segs_free(order_segs *s);

/** @brief Records that event_id has k segments (1 .. ORDER_SEGMENTS_MAX). */
void order_segs_set(order_segs *s, uint64_t event_id, unsigned k);

/** @returns the recorded K of event_id, or 1 when it is not known here. */
unsigned order_segs_get(order_segs *s, uint64_t event_id);

#endif
