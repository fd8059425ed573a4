/* order_soldout: expiring sold-out flags per event and per segment. See order_soldout.h. */
#include "order_soldout.h"

#include "order_msg.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define SLOTS 1024

typedef struct {
    /* Both halves of a slot are written one after the other; a reader that sees the new
     * id with an old deadline (or the reverse) at worst asks Redis once more.
     * until_ms > 0: flagged until then (expired: the next get claims the probe);
     * < 0: the probe is out, the others are answered 409 until -until_ms; 0: no flag. */
    _Atomic uint64_t event_id;
    _Atomic int64_t until_ms;
    /* per segment: (tag << 42) | deadline in ms (42 bits: until the year 2109) */
    _Atomic uint64_t seg[ORDER_SOLDOUT_SEGS];
} slot;

#define DEADLINE_BITS 42
#define DEADLINE_MASK ((UINT64_C(1) << DEADLINE_BITS) - 1)

_Static_assert(ORDER_SOLDOUT_SEGS >= ORDER_SEGMENTS_MAX, "a flag per segment");

/* How long the probe of an expired flag holds it for the other requests (ms, at most
 * ttl_ms): a reserve.lua round trip, an fsync under appendfsync always included, with
 * room to spare. */
#define PROBE_MS 50

struct order_soldout {
    int64_t ttl_ms, probe_ms;
    slot slots[SLOTS];
};

order_soldout *order_soldout_new(int64_t ttl_ms)
{
    order_soldout *s = calloc(1, sizeof(*s));
    if (s) {
        s->ttl_ms = ttl_ms;
        s->probe_ms = ttl_ms < PROBE_MS ? ttl_ms : PROBE_MS;
    }
    return s;
}

void order_soldout_free(order_soldout *s)
{
    free(s);
}

static slot *slot_of(order_soldout *s, uint64_t event_id)
{
    return &s->slots[(event_id ^ (event_id >> 17) ^ (event_id >> 32)) & (SLOTS - 1)];
}

void order_soldout_set(order_soldout *s, uint64_t event_id, int64_t now_ms)
{
    slot *sl = slot_of(s, event_id);
    atomic_store_explicit(&sl->until_ms, 0, memory_order_relaxed);
    atomic_store_explicit(&sl->event_id, event_id, memory_order_relaxed);
    atomic_store_explicit(&sl->until_ms, now_ms + s->ttl_ms, memory_order_relaxed);
}

/* The event's tag in a segment word: high bits of a multiplicative hash, independent of
 * the slot index (which comes from the low bits of a different mix). */
static uint64_t tag_of(uint64_t event_id)
{
    return (event_id * UINT64_C(0x9E3779B97F4A7C15)) >> DEADLINE_BITS << DEADLINE_BITS;
}

void order_soldout_clear(order_soldout *s, uint64_t event_id)
{
    slot *sl = slot_of(s, event_id);
    if (atomic_load_explicit(&sl->event_id, memory_order_relaxed) == event_id)
        atomic_store_explicit(&sl->until_ms, 0, memory_order_relaxed);
    uint64_t tag = tag_of(event_id);
    for (unsigned i = 0; i < ORDER_SOLDOUT_SEGS; i++)
        if ((atomic_load_explicit(&sl->seg[i], memory_order_relaxed) & ~DEADLINE_MASK) == tag)
            atomic_store_explicit(&sl->seg[i], 0, memory_order_relaxed);
}

void order_soldout_probe_done(order_soldout *s, uint64_t event_id)
{
    slot *sl = slot_of(s, event_id);
    if (atomic_load_explicit(&sl->event_id, memory_order_relaxed) != event_id)
        return;
    int64_t until = atomic_load_explicit(&sl->until_ms, memory_order_relaxed);
    /* only a hold (negative) is lifted; a set that came meanwhile stays */
    if (until < 0)
        atomic_compare_exchange_strong_explicit(&sl->until_ms, &until, 0, memory_order_relaxed,
                                                memory_order_relaxed);
}

int order_soldout_seg_get(order_soldout *s, uint64_t event_id, unsigned seg, int64_t now_ms)
{
    if (seg >= ORDER_SOLDOUT_SEGS)
        return 0;
    uint64_t w = atomic_load_explicit(&slot_of(s, event_id)->seg[seg], memory_order_relaxed);
    return (w & ~DEADLINE_MASK) == tag_of(event_id) && (uint64_t)now_ms < (w & DEADLINE_MASK);
}

int order_soldout_seg_set(order_soldout *s, uint64_t event_id, unsigned seg, unsigned k,
                          int64_t now_ms)
{
    if (seg >= ORDER_SOLDOUT_SEGS || k > ORDER_SOLDOUT_SEGS || now_ms < 0)
        return 0;
    uint64_t until = (uint64_t)(now_ms + s->ttl_ms) & DEADLINE_MASK;
    atomic_store_explicit(&slot_of(s, event_id)->seg[seg], tag_of(event_id) | until,
                          memory_order_relaxed);
    for (unsigned i = 0; i < k; i++)
        if (!order_soldout_seg_get(s, event_id, i, now_ms))
            return 0;
    order_soldout_set(s, event_id, now_ms);
    return 1;
}

int order_soldout_get(order_soldout *s, uint64_t event_id, int64_t now_ms)
{
    slot *sl = slot_of(s, event_id);
    if (atomic_load_explicit(&sl->event_id, memory_order_relaxed) != event_id)
        return 0;
    int64_t until = atomic_load_explicit(&sl->until_ms, memory_order_relaxed);
    if (until > 0 && now_ms >= until) {
        /* Expired: one caller (this one, if it wins) asks Redis; the flag holds for
         * the others while its answer comes (a sold out sets it again for ttl_ms). */
        if (atomic_compare_exchange_strong_explicit(&sl->until_ms, &until, -(now_ms + s->probe_ms),
                                                    memory_order_relaxed, memory_order_relaxed))
            return 0;
        /* another caller claimed it, or a set/clear came: until holds the new value */
    }
    if (until < 0) /* the probe is out: 409 until its answer sets the flag, or its hold ends */
        return now_ms < -until;
    return now_ms < until;
}
