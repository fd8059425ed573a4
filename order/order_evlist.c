/* order_evlist: the list of current and upcoming events (see order_evlist.h). */
#include "order_evlist.h"

#include "order_reply.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STUCK_MS 5000 /* a refresh unanswered this long is started again */

typedef struct item {
    uint64_t id;
    int64_t ends_at_ms;
    char *json; /* the event's object, as on its own page without "now" */
    size_t len;
} item;

struct order_evlist {
    pthread_mutex_t mu;
    int64_t refresh_ms;
    item *items; /* ordered by starts_at, id (the query's order) */
    size_t n;
    int have;           /* a snapshot was loaded */
    int64_t loaded_ms;  /* when the snapshot (or a failed attempt) landed */
    int refreshing;
    int64_t refresh_started_ms;
    order_events_waiter *waiters;
};

order_evlist *order_evlist_new(int64_t refresh_ms)
{
    if (refresh_ms < 1)
        return NULL;
    order_evlist *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->refresh_ms = refresh_ms;
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

static void items_free(item *it, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(it[i].json);
    free(it);
}

void order_evlist_free(order_evlist *l)
{
    if (!l)
        return;
    items_free(l->items, l->n);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* Renders the page. @returns 0 or -1 (OOM). */
static int render(const order_evlist *l, int64_t now_ms, size_t offset, size_t limit, char **body,
                  size_t *len, char etag[24])
{
    size_t cap = 64, n = 0;
    for (size_t i = 0; i < l->n; i++)
        cap += l->items[i].len + 1;
    char *b = malloc(cap + 64);
    if (!b)
        return -1;
    n += (size_t)sprintf(b, "{\"events\":[");
    size_t live = 0, shown = 0;
    int more = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->items[i].ends_at_ms <= now_ms)
            continue; /* ended since the refresh */
        if (live++ < offset)
            continue;
        if (shown == limit) {
            more = 1;
            break;
        }
        if (shown++)
            b[n++] = ',';
        memcpy(b + n, l->items[i].json, l->items[i].len);
        n += l->items[i].len;
    }
    if (more)
        n += (size_t)sprintf(b + n, "],\"offset\":%zu,\"next_offset\":%zu", offset, offset + shown);
    else
        n += (size_t)sprintf(b + n, "],\"offset\":%zu,\"next_offset\":null", offset);
    b[n] = '\0';
    order_events_etag(b, n, etag);
    *body = b;
    *len = n;
    return 0;
}

order_events_status order_evlist_page(order_evlist *l, int64_t now_ms, size_t offset, size_t limit,
                                      order_events_waiter *w, char **body, size_t *len,
                                      char etag[24], int *refresh)
{
    order_events_status st;
    *refresh = 0;
    pthread_mutex_lock(&l->mu);
    int stale = !l->have || now_ms - l->loaded_ms >= l->refresh_ms;
    int can_start = !l->refreshing || now_ms - l->refresh_started_ms >= STUCK_MS;
    if (stale && can_start) {
        l->refreshing = 1;
        l->refresh_started_ms = now_ms;
        *refresh = 1;
    }
    if (!l->have) {
        if (*refresh) {
            st = ORDER_EVENTS_LOAD;
            *refresh = 0;
        } else {
            w->failed = 0;
            w->next = l->waiters;
            l->waiters = w;
            st = ORDER_EVENTS_WAIT;
        }
    } else {
        st = render(l, now_ms, offset, limit, body, len, etag) == 0 ? ORDER_EVENTS_FRESH
                                                                      : ORDER_EVENTS_BUSY;
    }
    pthread_mutex_unlock(&l->mu);
    return st;
}

void order_evlist_stale(order_evlist *l)
{
    pthread_mutex_lock(&l->mu);
    l->loaded_ms = 0;
    pthread_mutex_unlock(&l->mu);
}

static order_events_waiter *detach(order_evlist *l, int failed)
{
    return order_events_waiters_take(&l->waiters, failed);
}

order_events_waiter *order_evlist_loaded(order_evlist *l, const order_evlist_row *rows, size_t n,
                                         int64_t now_ms)
{
    item *it = calloc(n ? n : 1, sizeof(*it));
    size_t k = 0;
    for (; it && k < n; k++) {
        const order_evlist_row *r = &rows[k];
        it[k].json = order_reply_event(r->id, r->spec.name, r->spec.stock, r->stock_left,
                                       r->spec.starts_at_ms, r->spec.ends_at_ms, &r->spec.limits);
        if (!it[k].json)
            break;
        it[k].len = strlen(it[k].json);
        it[k].ends_at_ms = r->spec.ends_at_ms;
        it[k].id = r->id;
    }
    if (!it || k < n) { /* out of memory: as a failed refresh */
        if (it)
            items_free(it, k);
        return order_evlist_failed(l, now_ms);
    }
    pthread_mutex_lock(&l->mu);
    items_free(l->items, l->n);
    l->items = it;
    l->n = n;
    l->have = 1;
    l->loaded_ms = now_ms;
    l->refreshing = 0;
    order_events_waiter *list = detach(l, 0);
    pthread_mutex_unlock(&l->mu);
    return list;
}

order_events_waiter *order_evlist_failed(order_evlist *l, int64_t now_ms)
{
    pthread_mutex_lock(&l->mu);
    l->refreshing = 0;
    if (l->have)
        l->loaded_ms = now_ms; /* the old snapshot serves one more interval */
    order_events_waiter *list = detach(l, !l->have);
    pthread_mutex_unlock(&l->mu);
    return list;
}

size_t order_evlist_ids(order_evlist *l, int64_t now_ms, uint64_t *ids, size_t cap, int *have)
{
    size_t n = 0;
    pthread_mutex_lock(&l->mu);
    *have = l->have;
    for (size_t i = 0; i < l->n && n < cap; i++)
        if (l->items[i].ends_at_ms > now_ms)
            ids[n++] = l->items[i].id;
    pthread_mutex_unlock(&l->mu);
    return n;
}
