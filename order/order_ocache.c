/* order_ocache: final order outcomes in memory (see order_ocache.h). */
#include "order_ocache.h"
#include "order_msg.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define STRIPES 64

typedef struct slot {
    uint64_t order_id; /* 0: empty (ids are >= 1) */
    uint64_t event_id, user_id;
    int64_t until_ms;        /* the outcome answers until then */
    int64_t lookup_until_ms; /* no PostgreSQL lookup of this order before then */
    int64_t pay_by_ms;       /* created or paid: the order's pay_by (0 unknown) */
    char outcome;            /* 'c' created, 'r' rejected, 0 none (only a lookup's mark) */
} slot;

struct order_ocache {
    slot *s;
    size_t mask;
    int64_t ttl_ms, every_ms, per_s;
    _Atomic int64_t window; /* second << 32 | lookups started in it */
    pthread_mutex_t mu[STRIPES];
};

order_ocache *order_ocache_new(size_t slots, int64_t ttl_ms, int64_t every_ms, int64_t per_s)
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
    c->every_ms = every_ms;
    c->per_s = per_s;
    atomic_init(&c->window, 0);
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
                      char outcome, int64_t pay_by_ms, int64_t now_ms)
{
    if (!c || !order_index_status_name(outcome)) /* a status letter of order_msg.h, not 'd' */
        return;
    size_t i = index_of(c, order_id);
    pthread_mutex_t *mu = &c->mu[i % STRIPES];
    pthread_mutex_lock(mu);
    slot *s = &c->s[i];
    int64_t looked = s->order_id == order_id ? s->lookup_until_ms : 0; /* the mark stays */
    /* An outcome a lookup found answers until the next lookup may start: without it, an
     * order the index lost would read 404 between its lookups. */
    int64_t until = now_ms + c->ttl_ms > looked ? now_ms + c->ttl_ms : looked;
    *s = (slot){order_id, event_id, user_id, until, looked, pay_by_ms, outcome};
    pthread_mutex_unlock(mu);
}

int order_ocache_get(order_ocache *c, uint64_t order_id, int64_t now_ms, uint64_t *event_id,
                     uint64_t *user_id, char *outcome, int64_t *pay_by_ms)
{
    if (!c)
        return 0;
    size_t i = index_of(c, order_id);
    pthread_mutex_t *mu = &c->mu[i % STRIPES];
    pthread_mutex_lock(mu);
    const slot *s = &c->s[i];
    int hit = s->order_id == order_id && s->outcome && now_ms < s->until_ms;
    if (hit) {
        *event_id = s->event_id;
        *user_id = s->user_id;
        *outcome = s->outcome;
        if (pay_by_ms)
            *pay_by_ms = s->pay_by_ms;
    }
    pthread_mutex_unlock(mu);
    return hit;
}

/* One more lookup this second, if the budget allows: a CAS on (second, count), the second
 * kept to 31 bits so that the shift never overflows (it only has to change each second). */
static int budget_take(order_ocache *c, int64_t now_ms)
{
    int64_t sec = (now_ms / 1000) & 0x7fffffff, cur = atomic_load(&c->window);
    for (;;) {
        int64_t n = (cur >> 32) == sec ? (cur & 0xffffffff) : 0;
        if (n >= c->per_s)
            return 0;
        if (atomic_compare_exchange_weak(&c->window, &cur, (sec << 32) | (n + 1)))
            return 1;
    }
}

int order_ocache_claim_lookup(order_ocache *c, uint64_t order_id, int64_t now_ms)
{
    if (!c)
        return 1; /* no table (a test's app): unbounded, as before the table */
    size_t i = index_of(c, order_id);
    pthread_mutex_t *mu = &c->mu[i % STRIPES];
    pthread_mutex_lock(mu);
    slot *s = &c->s[i];
    int ok = !(s->order_id == order_id && now_ms < s->lookup_until_ms) && budget_take(c, now_ms);
    if (ok && s->order_id == order_id)
        s->lookup_until_ms = now_ms + c->every_ms;
    else if (ok)
        *s = (slot){.order_id = order_id, .lookup_until_ms = now_ms + c->every_ms};
    pthread_mutex_unlock(mu);
    return ok;
}
