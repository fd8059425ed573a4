/* order_segs: per-event segment counts. See order_segs.h. */
#include "order_segs.h"

#include <stdatomic.h>
#include <stdlib.h>

#define SLOTS 1024

/* One word per slot: the event id's upper 56 bits and K in the low 8 bits (K <= 64), so
 * that a reader never pairs one event's id with another's K. Event ids that differ only
 * in their low 8 bits share a slot's tag only if they also share the slot, which the
 * index (from the low bits) rules out. */
struct order_segs {
    _Atomic uint64_t slots[SLOTS];
};

order_segs *order_segs_new(void)
{
    return calloc(1, sizeof(order_segs));
}

void order_segs_free(order_segs *s)
{
    free(s);
}

static _Atomic uint64_t *slot_of(order_segs *s, uint64_t event_id)
{
    return &s->slots[event_id & (SLOTS - 1)];
}

void order_segs_set(order_segs *s, uint64_t event_id, unsigned k)
{
    uint64_t v = (event_id & ~(uint64_t)0xff) | (k & 0xff);
    atomic_store_explicit(slot_of(s, event_id), v, memory_order_relaxed);
}

unsigned order_segs_get(order_segs *s, uint64_t event_id)
{
    uint64_t v = atomic_load_explicit(slot_of(s, event_id), memory_order_relaxed);
    unsigned k = (unsigned)(v & 0xff);
    if (k == 0 || (v & ~(uint64_t)0xff) != (event_id & ~(uint64_t)0xff))
        return 1;
    return k;
}
