/* order_bucket: bounded per-user token buckets. See order_bucket.h. */
#include "order_bucket.h"

#include <pthread.h>
#include <stdlib.h>

#define WAYS 4

typedef struct {
    uint64_t user; /* 0: empty (user ids are never 0) */
    double tokens;
    int64_t last_us;
} bucket;

typedef struct {
    pthread_mutex_t mu;
    bucket b[WAYS];
} bucket_set;

struct order_bucket_table {
    size_t nsets; /* a power of two */
    double rate_per_us, burst;
    bucket_set *sets;
};

uint64_t order_bucket_mix(uint64_t x)
{
    /* splitmix64 finaliser: user ids are sequential, spread them over the sets. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

order_bucket_table *order_bucket_new(size_t capacity, double rate, double burst)
{
    if (capacity < WAYS || rate <= 0 || burst < 1)
        return NULL;
    order_bucket_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    size_t n = 1;
    while (n * WAYS < capacity)
        n <<= 1;
    t->nsets = n;
    t->rate_per_us = rate / 1e6;
    t->burst = burst;
    t->sets = calloc(n, sizeof(bucket_set));
    if (!t->sets) {
        free(t);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        pthread_mutex_init(&t->sets[i].mu, NULL);
    return t;
}

int order_bucket_take(order_bucket_table *t, uint64_t user, int64_t now_us)
{
    return order_bucket_take_rate(t, user, now_us, t->rate_per_us * 1e6, t->burst);
}

int order_bucket_take_rate(order_bucket_table *t, uint64_t user, int64_t now_us, double rate,
                           double burst)
{
    double rate_per_us = rate / 1e6;
    bucket_set *s = &t->sets[order_bucket_mix(user) & (t->nsets - 1)];
    pthread_mutex_lock(&s->mu);
    bucket *b = NULL, *victim = &s->b[0];
    for (int i = 0; i < WAYS; i++) {
        if (s->b[i].user == user) {
            b = &s->b[i];
            break;
        }
        /* The victim is an empty way if any, else the least recently seen user. */
        if (victim->user != 0 && (s->b[i].user == 0 || s->b[i].last_us < victim->last_us))
            victim = &s->b[i];
    }
    if (!b) {
        b = victim;
        b->user = user;
        b->tokens = burst;
        b->last_us = now_us;
    } else if (now_us > b->last_us) {
        b->tokens += (double)(now_us - b->last_us) * rate_per_us;
        if (b->tokens > burst)
            b->tokens = burst;
        b->last_us = now_us;
    }
    int ok = 0;
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        ok = 1;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void order_bucket_free(order_bucket_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nsets; i++)
        pthread_mutex_destroy(&t->sets[i].mu);
    free(t->sets);
    free(t);
}
