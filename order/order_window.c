/* order_window: known sale windows, read without locks. See order_window.h. */
#include "order_window.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 4096

typedef struct {
    _Atomic uint32_t seq; /* odd while a write is under way */
    _Atomic uint64_t event_id;
    _Atomic int64_t starts_ms, ends_ms;
    _Atomic int64_t ip_rate, user_rate, event_rate, challenge_bits; /* order_event_limits */
} slot;

struct order_window {
    pthread_mutex_t wmu; /* writers only */
    slot slots[SLOTS];
};

order_window *order_window_new(void)
{
    order_window *t = calloc(1, sizeof(*t));
    if (t)
        pthread_mutex_init(&t->wmu, NULL);
    return t;
}

void order_window_free(order_window *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->wmu);
    free(t);
}

static slot *slot_of(order_window *t, uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdULL;
    id ^= id >> 33;
    return &t->slots[id & (SLOTS - 1)];
}

void order_window_set(order_window *t, uint64_t event_id, int64_t starts_at_ms, int64_t ends_at_ms,
                      const order_event_limits *lim)
{
    static const order_event_limits none;
    if (!lim)
        lim = &none;
    slot *s = slot_of(t, event_id);
    pthread_mutex_lock(&t->wmu);
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->event_id, event_id, memory_order_relaxed);
    atomic_store_explicit(&s->starts_ms, starts_at_ms, memory_order_relaxed);
    atomic_store_explicit(&s->ends_ms, ends_at_ms, memory_order_relaxed);
    atomic_store_explicit(&s->ip_rate, lim->ip_rate, memory_order_relaxed);
    atomic_store_explicit(&s->user_rate, lim->user_rate, memory_order_relaxed);
    atomic_store_explicit(&s->event_rate, lim->event_rate, memory_order_relaxed);
    atomic_store_explicit(&s->challenge_bits, lim->challenge_bits, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 2, memory_order_release);
    pthread_mutex_unlock(&t->wmu);
}

void order_window_forget(order_window *t, uint64_t event_id)
{
    slot *s = slot_of(t, event_id);
    pthread_mutex_lock(&t->wmu);
    if (atomic_load_explicit(&s->event_id, memory_order_relaxed) == event_id) {
        uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
        atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&s->event_id, 0, memory_order_relaxed);
        atomic_store_explicit(&s->seq, q + 2, memory_order_release);
    }
    pthread_mutex_unlock(&t->wmu);
}

order_window_state order_window_get(order_window *t, uint64_t event_id, int64_t now_ms)
{
    slot *s = slot_of(t, event_id);
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (q & 1)
        return ORDER_WINDOW_UNKNOWN;
    uint64_t id = atomic_load_explicit(&s->event_id, memory_order_relaxed);
    int64_t a = atomic_load_explicit(&s->starts_ms, memory_order_relaxed);
    int64_t b = atomic_load_explicit(&s->ends_ms, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != q || id != event_id)
        return ORDER_WINDOW_UNKNOWN;
    if (now_ms < a)
        return ORDER_WINDOW_NOT_STARTED;
    if (now_ms >= b)
        return ORDER_WINDOW_ENDED;
    return ORDER_WINDOW_UNKNOWN;
}

int order_window_limits(order_window *t, uint64_t event_id, order_event_limits *out)
{
    slot *s = slot_of(t, event_id);
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
    order_event_limits l = {
        atomic_load_explicit(&s->ip_rate, memory_order_relaxed),
        atomic_load_explicit(&s->user_rate, memory_order_relaxed),
        atomic_load_explicit(&s->event_rate, memory_order_relaxed),
        atomic_load_explicit(&s->challenge_bits, memory_order_relaxed),
    };
    uint64_t id = atomic_load_explicit(&s->event_id, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    /* a write under way, or another event's entry: unknown (the caller learns it again) */
    if ((q & 1) || atomic_load_explicit(&s->seq, memory_order_relaxed) != q || id != event_id) {
        memset(out, 0, sizeof(*out));
        return 0;
    }
    *out = l;
    return 1;
}
