/* order_ocache: final order outcomes in memory (see order_ocache.h). */
#include "order_ocache.h"
#include "order_msg.h"

#include <pthread.h>
#include <stdlib.h>

#define STRIPES 64

typedef struct slot {
    uint64_t order_id; /* 0: empty (ids are >= 1) */
    uint64_t event_id, user_id;
    int64_t until_ms;
    char outcome;
} slot;

struct order_ocache {
    slot *s;
    size_t mask;
    int64_t ttl_ms;
    pthread_mutex_t mu[STRIPES];
};

order_ocache *order_ocache_new(size_t slots, int64_t ttl_ms)
{
    size_t n = 64;
    while (n < slots && n < ((size_t)1 << 30))
        n <<= 1;
    order_ocache *c = calloc(1, sizeof(*c));
    if (!c || !(c->s = calloc(n, sizeof(*c->s)))) {
        free(c);
        return NULL;
    }
    c->mask = n - 1;
    c->ttl_ms = ttl_ms;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&c->mu[i], NULL);
    return c;
}

void order_ocache_free(order_ocache *c)
{
    if (!c)
        return;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&c->mu[i]);
    free(c->s);
    free(c);
}

static size_t index_of(const order_ocache *c, uint64_t id)
{
    id ^= id >> 31; /* the low bits of a libidgen id are a sequence: mix the time in */
    id *= 0x9e3779b97f4a7c15ULL;
    return (size_t)(id >> 20) & c->mask;
}

void order_ocache_put(order_ocache *c, uint64_t order_id, uint64_t event_id, uint64_t user_id,
                      char outcome, int64_t now_ms)
{
    if (!order_index_status_name(outcome)) /* a status letter of order_msg.h, not 'd' */
        return;
    size_t i = index_of(c, order_id);
    pthread_mutex_t *mu = &c->mu[i % STRIPES];
    pthread_mutex_lock(mu);
    c->s[i] = (slot){order_id, event_id, user_id, now_ms + c->ttl_ms, outcome};
    pthread_mutex_unlock(mu);
}

int order_ocache_get(order_ocache *c, uint64_t order_id, int64_t now_ms, uint64_t *event_id,
                     uint64_t *user_id, char *outcome)
{
    size_t i = index_of(c, order_id);
    pthread_mutex_t *mu = &c->mu[i % STRIPES];
    pthread_mutex_lock(mu);
    const slot *s = &c->s[i];
    int hit = s->order_id == order_id && now_ms < s->until_ms;
    if (hit) {
        *event_id = s->event_id;
        *user_id = s->user_id;
        *outcome = s->outcome;
    }
    pthread_mutex_unlock(mu);
    return hit;
}
