/* order_admit: a sliding-window p99 of the gate's answers and the shed decision.
 * See order_admit.h. */
#include "order_admit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 10

typedef struct {
    int64_t epoch; /* now_us / slot_us when this slot was last reset */
    uint32_t count[ORDER_ADMIT_BUCKETS];
} slot;

struct order_admit {
    int64_t bound_us, slot_us, min_samples;
    long long retry_after_s;
    pthread_mutex_t mu;
    slot slots[SLOTS];
    atomic_int shedding;
    _Atomic int64_t next_eval_us;
};

int64_t order_admit_bucket_bound(int i)
{
    return (int64_t)100 << i;
}

int order_admit_bucket(int64_t latency_us)
{
    for (int i = 0; i < ORDER_ADMIT_BUCKETS - 1; i++)
        if (latency_us <= order_admit_bucket_bound(i))
            return i;
    return ORDER_ADMIT_BUCKETS - 1;
}

order_admit *order_admit_new(int64_t p99_bound_us, int64_t window_ms, int64_t min_samples)
{
    if (window_ms < SLOTS)
        return NULL;
    order_admit *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->bound_us = p99_bound_us;
    a->slot_us = window_ms * 1000 / SLOTS;
    a->min_samples = min_samples < 1 ? 1 : min_samples;
    a->retry_after_s = (window_ms + 999) / 1000;
    pthread_mutex_init(&a->mu, NULL);
    for (int i = 0; i < SLOTS; i++)
        a->slots[i].epoch = -1;
    return a;
}

void order_admit_free(order_admit *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void order_admit_record(order_admit *a, int64_t now_us, int64_t latency_us)
{
    if (a->bound_us <= 0)
        return;
    int64_t e = now_us / a->slot_us;
    slot *s = &a->slots[e % SLOTS];
    pthread_mutex_lock(&a->mu);
    if (s->epoch != e) {
        memset(s->count, 0, sizeof(s->count));
        s->epoch = e;
    }
    s->count[order_admit_bucket(latency_us)]++;
    pthread_mutex_unlock(&a->mu);
}

/* The histogram bucket of the window's p99, or -1 when empty. Caller holds mu. */
static int p99_locked(order_admit *a, int64_t now_us, int64_t *n)
{
    int64_t e = now_us / a->slot_us, total = 0;
    uint64_t sum[ORDER_ADMIT_BUCKETS] = {0};
    for (int i = 0; i < SLOTS; i++) {
        const slot *s = &a->slots[i];
        if (s->epoch < 0 || s->epoch <= e - SLOTS || s->epoch > e)
            continue;
        for (int b = 0; b < ORDER_ADMIT_BUCKETS; b++) {
            sum[b] += s->count[b];
            total += s->count[b];
        }
    }
    *n = total;
    if (total == 0)
        return -1;
    /* The smallest bucket under which at least 99% of the answers lie. */
    int64_t need = total - total / 100, seen = 0;
    for (int b = 0; b < ORDER_ADMIT_BUCKETS; b++) {
        seen += (int64_t)sum[b];
        if (seen >= need)
            return b;
    }
    return ORDER_ADMIT_BUCKETS - 1;
}

int64_t order_admit_p99(order_admit *a, int64_t now_us, int64_t *n)
{
    pthread_mutex_lock(&a->mu);
    int b = p99_locked(a, now_us, n);
    pthread_mutex_unlock(&a->mu);
    return b < 0 ? 0 : order_admit_bucket_bound(b);
}

int order_admit_check(order_admit *a, int64_t now_us, long long *retry_after_s)
{
    if (a->bound_us <= 0)
        return 1;
    if (now_us >= atomic_load_explicit(&a->next_eval_us, memory_order_relaxed) &&
        pthread_mutex_trylock(&a->mu) == 0) {
        int64_t n;
        int b = p99_locked(a, now_us, &n);
        /* The bucket's lower bound: shed only when the p99 is surely past the bound (the
         * histogram knows it to a factor of 2; a doubt admits). */
        int64_t low = b <= 0 ? 0 : order_admit_bucket_bound(b - 1);
        atomic_store_explicit(&a->shedding, n >= a->min_samples && low >= a->bound_us,
                              memory_order_relaxed);
        atomic_store_explicit(&a->next_eval_us, now_us + a->slot_us, memory_order_relaxed);
        pthread_mutex_unlock(&a->mu);
    }
    if (!atomic_load_explicit(&a->shedding, memory_order_relaxed))
        return 1;
    *retry_after_s = a->retry_after_s;
    return 0;
}
