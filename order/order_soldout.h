/* order_soldout: this instance's "sold out" flags, one per event and one per stock
 * segment (issue 19), that expire.
 *
 * Once reserve.lua answers "sold out" for an event, requests for it are answered 409
 * here without asking Redis, until the flag expires (ttl_ms, below one second). Expiry
 * is how stock given back by cancel.lua becomes sellable again on every instance
 * within a second, with no pub/sub to lose: after expiry the next request asks Redis
 * again (the probe) and either sells or sets the flag again. Only that one request
 * asks: the flag holds for the others until the probe's answer (a sold out sets it
 * again; any other answer lifts the hold at once, order_soldout_probe_done, so nobody
 * is told "sold out" while units are left) or for 50 ms (at most ttl_ms) when no
 * answer comes, after which every request asks Redis as before. Without the
 * hold, each expiry in a flash sale sent every request of the probe's round trip to
 * Redis: 3 to 23 reserve.lua calls per expiry under appendfsync always, a sixth of
 * the script calls after the stock ran out (issue 16). So one Redis call per event per
 * ttl, and stock that came back is seen within ttl_ms + 50 ms (order_soldout_clear:
 * at once, no hold).
 * A fixed table of 1024 slots by event id; a collision only costs a Redis call.
 * Lock-free and thread-safe (relaxed atomics: a stale read errs towards asking Redis).
 *
 * Segmented events (K > 1): a segment found empty (reserve.lua's claim answer 6, or
 * borrow.lua's 1) is flagged for ttl_ms, so the next orders do not ask it for a unit;
 * once all K are flagged the event's own flag is set, and orders are answered 409 from
 * memory. A segment flag is one word in the event's slot: its deadline and a 22-bit tag
 * of the event id, so a flag left by another event that shared the slot is not read as
 * this event's (a false match needs the slot and the tag to collide, about 1 in 4
 * million pairs of events live in the same second, and lasts at most ttl_ms). */
#ifndef ORDER_SOLDOUT_H
#define ORDER_SOLDOUT_H

#include <stdint.h>

typedef struct order_soldout order_soldout;

order_soldout *order_soldout_new(int64_t ttl_ms);
void order_soldout_free(order_soldout *s);

/** @brief Marks event_id sold out from now_ms for ttl_ms. */
void order_soldout_set(order_soldout *s, uint64_t event_id, int64_t now_ms);

/** @brief Lifts event_id's flag and its segments' on this instance now (a unit came
 *  back: issue 22). */
void order_soldout_clear(order_soldout *s, uint64_t event_id);

/** @brief Redis answered a reserve of event_id with anything but "sold out" (it sold,
 *  or refused for another reason, or failed): an expired flag's probe, if one is out,
 *  holds the other requests no longer. Cheap when there is none (two loads). */
void order_soldout_probe_done(order_soldout *s, uint64_t event_id);

/** @brief @returns 1 if event_id is flagged sold out at now_ms. The first call that
 *  finds the flag expired claims the probe (returns 0: the caller asks Redis, and sets
 *  the flag again on a sold out, or calls order_soldout_probe_done on any other
 *  answer); the calls after it return 1 until the probe's hold ends (above). */
int order_soldout_get(order_soldout *s, uint64_t event_id, int64_t now_ms);

/** @brief Marks segment `seg` (< k <= ORDER_SOLDOUT_SEGS) of event_id empty from now_ms
 *  for ttl_ms; when every one of the k segments is then flagged, the event is flagged
 *  too (order_soldout_set). @returns 1 if the event is now flagged, else 0. */
int order_soldout_seg_set(order_soldout *s, uint64_t event_id, unsigned seg, unsigned k,
                          int64_t now_ms);

/** @brief @returns 1 if segment `seg` of event_id is flagged empty at now_ms. */
int order_soldout_seg_get(order_soldout *s, uint64_t event_id, unsigned seg, int64_t now_ms);

/* Segments a slot keeps flags for (ORDER_SEGMENTS_MAX, order_msg.h). */
#define ORDER_SOLDOUT_SEGS 64

#endif
