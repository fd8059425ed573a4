/* order_pause: the paused events, read without locks. See order_pause.h. */
#include "order_pause.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct order_pause {
    pthread_mutex_t wmu; /* writers only */
    _Atomic uint32_t seq; /* odd while a write is under way */
    _Atomic uint32_t n;
    _Atomic uint64_t ids[ORDER_PAUSE_MAX];
    _Atomic uint64_t version; /* order_pause_set calls, bumped under wmu */
};

order_pause *order_pause_new(void)
{
    order_pause *p = calloc(1, sizeof(*p));
    if (p)
        pthread_mutex_init(&p->wmu, NULL);
    return p;
}

void order_pause_free(order_pause *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->wmu);
    free(p);
}

int order_pause_has(order_pause *p, uint64_t event_id)
{
    for (;;) {
        uint32_t q = atomic_load_explicit(&p->seq, memory_order_acquire);
        if (q & 1)
            continue; /* a writer holds it for a few stores */
        uint32_t n = atomic_load_explicit(&p->n, memory_order_relaxed);
        int found = 0;
        for (uint32_t i = 0; i < n && i < ORDER_PAUSE_MAX && !found; i++)
            found = atomic_load_explicit(&p->ids[i], memory_order_relaxed) == event_id;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&p->seq, memory_order_relaxed) == q)
            return found;
    }
}

/* Caller holds wmu. */
static void write_begin(order_pause *p)
{
    atomic_store_explicit(&p->seq, atomic_load_explicit(&p->seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void write_end(order_pause *p)
{
    atomic_store_explicit(&p->seq, atomic_load_explicit(&p->seq, memory_order_relaxed) + 1,
                          memory_order_release);
}

int order_pause_set(order_pause *p, uint64_t event_id, int paused)
{
    int rc = 0;
    pthread_mutex_lock(&p->wmu);
    uint32_t n = atomic_load_explicit(&p->n, memory_order_relaxed), at = n;
    atomic_fetch_add_explicit(&p->version, 1, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load_explicit(&p->ids[i], memory_order_relaxed) == event_id)
            at = i;
    write_begin(p);
    if (paused && at == n) {
        if (n == ORDER_PAUSE_MAX)
            rc = -1;
        else {
            atomic_store_explicit(&p->ids[n], event_id, memory_order_relaxed);
            atomic_store_explicit(&p->n, n + 1, memory_order_relaxed);
        }
    } else if (!paused && at < n) {
        /* the last one takes its place */
        atomic_store_explicit(&p->ids[at], atomic_load_explicit(&p->ids[n - 1], memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&p->n, n - 1, memory_order_relaxed);
    }
    write_end(p);
    pthread_mutex_unlock(&p->wmu);
    return rc;
}

/* Caller holds wmu. */
static void replace_locked(order_pause *p, const uint64_t *ids, size_t n)
{
    if (n > ORDER_PAUSE_MAX)
        n = ORDER_PAUSE_MAX;
    write_begin(p);
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&p->ids[i], ids[i], memory_order_relaxed);
    atomic_store_explicit(&p->n, (uint32_t)n, memory_order_relaxed);
    write_end(p);
}

void order_pause_replace(order_pause *p, const uint64_t *ids, size_t n)
{
    pthread_mutex_lock(&p->wmu);
    replace_locked(p, ids, n);
    pthread_mutex_unlock(&p->wmu);
}

uint64_t order_pause_version(order_pause *p)
{
    return atomic_load_explicit(&p->version, memory_order_relaxed);
}

int order_pause_replace_since(order_pause *p, const uint64_t *ids, size_t n, uint64_t version)
{
    pthread_mutex_lock(&p->wmu); /* order_pause_set bumps version under it: no set slips between */
    int fresh = atomic_load_explicit(&p->version, memory_order_relaxed) == version;
    if (fresh)
        replace_locked(p, ids, n);
    pthread_mutex_unlock(&p->wmu);
    return fresh;
}

size_t order_pause_count(order_pause *p)
{
    return atomic_load_explicit(&p->n, memory_order_relaxed);
}
