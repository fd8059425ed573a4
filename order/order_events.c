/* order_events: the event cache (see order_events.h). A fixed array of entries, a
 * chained hash of indices over it, least-recently-used eviction by a scan at insert
 * (inserts are bounded by the load budget, so the scan is not on the hot path). */
#include "order_events.h"

#include "order_reply.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libidgen's layout: bits 62..32 are seconds since 2024-01-01T00:00:00Z (idgen.h). An
 * event id whose time is this far past the wall clock was never issued. */
#define IDGEN_EPOCH_S 1704067200LL
#define FUTURE_SLACK_S 300
/* A refresh or load unanswered this long is taken over by the next request (a reply
 * lost with its connection must not leave the entry waiting for ever). */
#define STUCK_MS 2000

typedef enum { E_FREE = 0, E_LOADING, E_PRESENT, E_ABSENT } entry_state;

typedef struct entry {
    uint64_t id;
    entry_state state;
    int32_t next;       /* hash chain, -1 ends */
    int refreshing;     /* a gate read is in flight */
    int stale;          /* an admin changed the event: load its fields again */
    int64_t since_ms;   /* LOADING / refreshing: when it started; ABSENT: when it was found absent */
    int64_t stock_at_ms; /* when stock_left was read (0: never) */
    int64_t used_ms;
    order_event_spec spec;
    int64_t stock_left;
    char *body; /* rendered head (no closing brace), malloc'd; NULL until PRESENT */
    size_t body_len;
    char etag[24];
    order_events_waiter *waiters;
} entry;

struct order_events {
    pthread_mutex_t mu;
    order_events_limits lim;
    entry *e;
    int32_t *heads;
    size_t nheads; /* a power of two */
    size_t used;
    int64_t window_s, window_loads;
    uint64_t loads, evictions;
};

static size_t slot_of(const order_events *c, uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdULL;
    id ^= id >> 33;
    return (size_t)(id & (c->nheads - 1));
}

order_events *order_events_new(const order_events_limits *lim)
{
    if (lim->capacity < 4 || lim->capacity > (1u << 30) || lim->stock_refresh_ms < 1 ||
        lim->negative_ttl_ms < 0 || lim->miss_per_s < 1)
        return NULL;
    order_events *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->lim = *lim;
    c->nheads = 1;
    while (c->nheads < 2 * lim->capacity)
        c->nheads <<= 1;
    c->e = calloc(lim->capacity, sizeof(*c->e));
    c->heads = malloc(c->nheads * sizeof(*c->heads));
    if (!c->e || !c->heads) {
        free(c->e);
        free(c->heads);
        free(c);
        return NULL;
    }
    for (size_t i = 0; i < c->nheads; i++)
        c->heads[i] = -1;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void order_events_free(order_events *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->lim.capacity; i++)
        free(c->e[i].body);
    free(c->e);
    free(c->heads);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static entry *find(order_events *c, uint64_t id)
{
    for (int32_t i = c->heads[slot_of(c, id)]; i >= 0; i = c->e[i].next)
        if (c->e[i].id == id)
            return &c->e[i];
    return NULL;
}

static void unlink_entry(order_events *c, entry *x)
{
    int32_t idx = (int32_t)(x - c->e);
    for (int32_t *pp = &c->heads[slot_of(c, x->id)]; *pp >= 0; pp = &c->e[*pp].next) {
        if (*pp == idx) {
            *pp = x->next;
            break;
        }
    }
    free(x->body);
    memset(x, 0, sizeof(*x));
    c->used--;
}

/* A free entry, evicting the least recently used one nobody waits on. NULL if none. */
static entry *take_entry(order_events *c)
{
    if (c->used < c->lim.capacity) {
        for (size_t i = 0; i < c->lim.capacity; i++)
            if (c->e[i].state == E_FREE)
                return &c->e[i];
    }
    entry *victim = NULL;
    for (size_t i = 0; i < c->lim.capacity; i++) {
        entry *x = &c->e[i];
        if (x->waiters || x->state == E_LOADING || x->refreshing)
            continue;
        if (!victim || x->used_ms < victim->used_ms)
            victim = x;
    }
    if (!victim)
        return NULL;
    c->evictions++;
    unlink_entry(c, victim);
    return victim;
}

static void insert(order_events *c, entry *x, uint64_t id, entry_state st, int64_t now_ms)
{
    x->id = id;
    x->state = st;
    x->since_ms = now_ms;
    x->used_ms = now_ms;
    size_t s = slot_of(c, id);
    x->next = c->heads[s];
    c->heads[s] = (int32_t)(x - c->e);
    c->used++;
}

/* Whether one more PostgreSQL load may start this second. */
static int load_allowed(order_events *c, int64_t now_ms)
{
    int64_t s = now_ms / 1000;
    if (s != c->window_s) {
        c->window_s = s;
        c->window_loads = 0;
    }
    if (c->window_loads >= c->lim.miss_per_s)
        return 0;
    c->window_loads++;
    c->loads++;
    return 1;
}

static void enqueue(entry *x, order_events_waiter *w)
{
    w->failed = 0;
    w->next = x->waiters;
    x->waiters = w;
}

order_events_status order_events_lookup(order_events *c, uint64_t id, int64_t now_ms,
                                        order_events_waiter *w, order_event_view *out)
{
    if ((int64_t)(id >> 32) + IDGEN_EPOCH_S > now_ms / 1000 + FUTURE_SLACK_S)
        return ORDER_EVENTS_ABSENT;
    order_events_status st;
    pthread_mutex_lock(&c->mu);
    entry *x = find(c, id);
    if (x && x->state == E_ABSENT && now_ms - x->since_ms >= c->lim.negative_ttl_ms) {
        unlink_entry(c, x);
        x = NULL;
    }
    if (!x) {
        if (!load_allowed(c, now_ms)) {
            st = ORDER_EVENTS_BUSY;
        } else if (!(x = take_entry(c))) {
            c->loads--; /* it did not start */
            st = ORDER_EVENTS_BUSY;
        } else {
            insert(c, x, id, E_LOADING, now_ms);
            st = ORDER_EVENTS_LOAD;
        }
        goto out;
    }
    x->used_ms = now_ms;
    switch (x->state) {
    case E_ABSENT:
        st = ORDER_EVENTS_ABSENT;
        break;
    case E_LOADING:
        if (now_ms - x->since_ms >= STUCK_MS) {
            x->since_ms = now_ms;
            st = ORDER_EVENTS_LOAD;
        } else {
            enqueue(x, w);
            st = ORDER_EVENTS_WAIT;
        }
        break;
    default: /* E_PRESENT */
        if (x->stale && !x->refreshing && !x->waiters) {
            x->stale = 0;
            x->state = E_LOADING;
            x->since_ms = now_ms;
            st = ORDER_EVENTS_LOAD;
        } else if (now_ms - x->stock_at_ms < c->lim.stock_refresh_ms && !x->stale) {
            memcpy(out->body, x->body, x->body_len);
            out->body_len = x->body_len;
            memcpy(out->etag, x->etag, sizeof(out->etag));
            st = ORDER_EVENTS_FRESH;
        } else if (!x->refreshing || now_ms - x->since_ms >= STUCK_MS) {
            x->refreshing = 1;
            x->since_ms = now_ms;
            st = ORDER_EVENTS_REFRESH;
        } else {
            enqueue(x, w);
            st = ORDER_EVENTS_WAIT;
        }
    }
out:
    pthread_mutex_unlock(&c->mu);
    return st;
}

order_events_status order_events_peek(order_events *c, uint64_t id, int64_t now_ms,
                                      order_event_view *out)
{
    order_events_status st = ORDER_EVENTS_WAIT;
    pthread_mutex_lock(&c->mu);
    entry *x = find(c, id);
    if (x && x->state == E_PRESENT && !x->stale && now_ms - x->stock_at_ms < c->lim.stock_refresh_ms) {
        x->used_ms = now_ms;
        memcpy(out->body, x->body, x->body_len);
        out->body_len = x->body_len;
        memcpy(out->etag, x->etag, sizeof(out->etag));
        st = ORDER_EVENTS_FRESH;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* Renders the entry's body head and tag from its fields. @returns 0 or -1 (OOM). */
static int render(entry *x)
{
    char *full = order_reply_event(x->id, x->spec.name, x->spec.stock, x->stock_left,
                                   x->spec.starts_at_ms, x->spec.ends_at_ms, &x->spec.limits);
    if (!full)
        return -1;
    size_t n = strlen(full);
    if (n < 2 || n > ORDER_EVENTS_BODY_MAX) {
        free(full);
        return -1;
    }
    full[n - 1] = '\0'; /* the caller appends ,"now":"..."} */
    free(x->body);
    x->body = full;
    x->body_len = n - 1;
    /* the same event and stock give the same tag on every instance, so a proxy or a
     * client moving between fronts still gets its 304 */
    order_events_etag(x->body, x->body_len, x->etag);
    return 0;
}

void order_events_etag(const char *body, size_t len, char out[24])
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)body[i];
        h *= 0x100000001b3ULL;
    }
    snprintf(out, 24, "W/\"%016" PRIx64 "\"", h);
}

order_events_waiter *order_events_waiters_take(order_events_waiter **head, int failed)
{
    order_events_waiter *list = *head;
    *head = NULL;
    for (order_events_waiter *w = list; w; w = w->next)
        w->failed = failed;
    return list;
}

static order_events_waiter *detach(entry *x, int failed)
{
    return order_events_waiters_take(&x->waiters, failed);
}

order_events_waiter *order_events_loaded(order_events *c, uint64_t id, const order_event_spec *spec,
                                         int64_t stock_left, int64_t now_ms)
{
    pthread_mutex_lock(&c->mu);
    order_events_waiter *list = NULL;
    entry *x = find(c, id);
    if (x) {
        x->spec = *spec;
        x->stock_left = stock_left;
        if (render(x) != 0) {
            list = detach(x, 1);
            unlink_entry(c, x);
        } else {
            x->state = E_PRESENT;
            x->stock_at_ms = 0; /* PostgreSQL's figure lags: read the gate first */
            x->refreshing = 0;
            x->used_ms = now_ms;
            list = detach(x, 0);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return list;
}

order_events_waiter *order_events_absent(order_events *c, uint64_t id, int64_t now_ms)
{
    pthread_mutex_lock(&c->mu);
    order_events_waiter *list = NULL;
    entry *x = find(c, id);
    if (x) {
        x->state = E_ABSENT;
        x->since_ms = now_ms;
        free(x->body);
        x->body = NULL;
        list = detach(x, 0);
    }
    pthread_mutex_unlock(&c->mu);
    return list;
}

order_events_waiter *order_events_failed(order_events *c, uint64_t id)
{
    pthread_mutex_lock(&c->mu);
    order_events_waiter *list = NULL;
    entry *x = find(c, id);
    if (x && x->state == E_LOADING) {
        list = detach(x, 1);
        unlink_entry(c, x);
    }
    pthread_mutex_unlock(&c->mu);
    return list;
}

order_events_waiter *order_events_stock(order_events *c, uint64_t id, int have, int64_t stock_left,
                                        int64_t now_ms)
{
    pthread_mutex_lock(&c->mu);
    order_events_waiter *list = NULL;
    entry *x = find(c, id);
    if (x && x->state == E_PRESENT) {
        x->refreshing = 0;
        x->stock_at_ms = now_ms;
        if (have && stock_left != x->stock_left) {
            int64_t old = x->stock_left;
            x->stock_left = stock_left;
            if (render(x) != 0)
                x->stock_left = old; /* the previous body stays, with its figure */
        }
        list = detach(x, 0);
    }
    pthread_mutex_unlock(&c->mu);
    return list;
}

void order_events_forget(order_events *c, uint64_t id)
{
    pthread_mutex_lock(&c->mu);
    entry *x = find(c, id);
    if (x && x->state == E_ABSENT)
        unlink_entry(c, x);
    else if (x)
        x->stale = 1;
    pthread_mutex_unlock(&c->mu);
}

int order_events_etag_match(const char *inm, const char *etag)
{
    if (!inm || !etag)
        return 0;
    size_t elen = strlen(etag);
    /* Weak comparison (RFC 9110 13.1.2): W/ prefixes are ignored on both sides. */
    const char *eo = etag;
    if (strncmp(eo, "W/", 2) == 0)
        eo += 2, elen -= 2;
    const char *p = inm;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            return 0;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, ",");
        size_t t = n;
        while (t > 0 && (p[t - 1] == ' ' || p[t - 1] == '\t'))
            t--;
        if (t == elen && memcmp(p, eo, elen) == 0)
            return 1;
        p += n;
    }
}

void order_events_counts(order_events *c, uint64_t *loads, uint64_t *evictions)
{
    pthread_mutex_lock(&c->mu);
    *loads = c->loads;
    *evictions = c->evictions;
    pthread_mutex_unlock(&c->mu);
}
