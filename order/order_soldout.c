/* order_soldout: expiring per-event sold-out flags. See order_soldout.h. */
#include "order_soldout.h"

#include <stdatomic.h>
#include <stdlib.h>

#define SLOTS 1024

typedef struct {
    /* Both halves of a slot are written one after the other; a reader that sees the new
     * id with an old deadline (or the reverse) at worst asks Redis once more. */
    _Atomic uint64_t event_id;
    _Atomic int64_t until_ms;
} slot;

struct order_soldout {
    int64_t ttl_ms;
    slot slots[SLOTS];
};

order_soldout *order_soldout_new(int64_t ttl_ms)
{
    order_soldout *s = calloc(1, sizeof(*s));
    if (s)
        s->ttl_ms = ttl_ms;
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

void order_soldout_clear(order_soldout *s, uint64_t event_id)
{
    slot *sl = slot_of(s, event_id);
    if (atomic_load_explicit(&sl->event_id, memory_order_relaxed) == event_id)
        atomic_store_explicit(&sl->until_ms, 0, memory_order_relaxed);
}

int order_soldout_get(order_soldout *s, uint64_t event_id, int64_t now_ms)
{
    slot *sl = slot_of(s, event_id);
    return atomic_load_explicit(&sl->event_id, memory_order_relaxed) == event_id &&
           now_ms < atomic_load_explicit(&sl->until_ms, memory_order_relaxed);
}
