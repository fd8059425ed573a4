/* order_evrate: per-event local token pools. See order_evrate.h. */
#include "order_evrate.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 1024

typedef struct {
    pthread_mutex_t mu;
    uint64_t event_id;
    int64_t tokens, until_ms;
    int64_t dry_until_ms; /* the bucket gave nothing: refuse until then */
} slot;

struct order_evrate {
    int64_t valid_ms;
    slot slots[SLOTS];
};

order_evrate *order_evrate_new(int64_t valid_ms)
{
    if (valid_ms < 1)
        return NULL;
    order_evrate *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->valid_ms = valid_ms;
    for (int i = 0; i < SLOTS; i++)
        pthread_mutex_init(&t->slots[i].mu, NULL);
    return t;
}

void order_evrate_free(order_evrate *t)
{
    if (!t)
        return;
    for (int i = 0; i < SLOTS; i++)
        pthread_mutex_destroy(&t->slots[i].mu);
    free(t);
}

static slot *slot_of(order_evrate *t, uint64_t id)
{
    return &t->slots[(id ^ (id >> 17) ^ (id >> 32)) & (SLOTS - 1)];
}

int order_evrate_take(order_evrate *t, uint64_t event_id, int64_t now_ms)
{
    slot *s = slot_of(t, event_id);
    int ok = 0;
    pthread_mutex_lock(&s->mu);
    if (s->event_id == event_id && now_ms < s->until_ms && s->tokens > 0) {
        s->tokens--;
        ok = 1;
    } else if (s->event_id == event_id && now_ms < s->dry_until_ms) {
        ok = -1;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void order_evrate_add(order_evrate *t, uint64_t event_id, int64_t n, int64_t now_ms)
{
    slot *s = slot_of(t, event_id);
    pthread_mutex_lock(&s->mu);
    if (s->event_id != event_id || now_ms >= s->until_ms)
        s->tokens = 0;
    s->event_id = event_id;
    s->tokens += n;
    s->until_ms = now_ms + t->valid_ms;
    s->dry_until_ms = 0;
    pthread_mutex_unlock(&s->mu);
}

void order_evrate_dry(order_evrate *t, uint64_t event_id, int64_t now_ms)
{
    slot *s = slot_of(t, event_id);
    pthread_mutex_lock(&s->mu);
    if (s->event_id != event_id || now_ms >= s->until_ms)
        s->tokens = 0;
    s->event_id = event_id;
    s->dry_until_ms = now_ms + t->valid_ms;
    pthread_mutex_unlock(&s->mu);
}

size_t order_evrate_key(uint64_t event_id, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "seckill:{e%" PRIu64 "}:rate", event_id);
    return n > 0 ? (size_t)n : 0;
}
