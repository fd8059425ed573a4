/* order_pauser: the periodic read of the paused and the changed events. See
 * order_pauser.h. */
#include "order_pauser.h"
#include "order_route.h"
#include "sk_log.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

/* One followed event's change count. */
typedef struct changed {
    uint64_t id;
    long long count;
} changed;

struct order_pauser {
    struct event *timer;
    order_redis *redis;
    order_pauser_tables t;
    int inflight; /* replies still to come this turn */
    uint64_t members_version; /* order_pause_version when this turn's SMEMBERS was sent */
    int warned_full, warned_changed;
    int have_counts; /* the first HGETALL landed */
    changed seen[ORDER_CHANGED_MAX];
    size_t nseen;
};

static void on_members(redisReply *reply, void *arg)
{
    order_pauser *p = arg;
    p->inflight--;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return; /* keep what we know */
    uint64_t ids[ORDER_PAUSE_MAX];
    size_t n = 0;
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        uint64_t id;
        if (e->type != REDIS_REPLY_STRING || order_parse_id(e->str, e->len, &id) != 0)
            continue; /* not an id of ours: nobody's order is refused for it */
        if (n == ORDER_PAUSE_MAX) {
            if (!p->warned_full)
                sk_log(SK_LOG_WARN, "pause_table_full", "max=%d", ORDER_PAUSE_MAX);
            p->warned_full = 1;
            break;
        }
        ids[n++] = id;
    }
    /* A pause or resume made here since the read was sent wins over it (order_pause.h). */
    order_pause_replace_since(p->t.paused, ids, n, p->members_version);
}

static long long count_of(const order_pauser *p, uint64_t id)
{
    for (size_t i = 0; i < p->nseen; i++)
        if (p->seen[i].id == id)
            return p->seen[i].count;
    return -1;
}

/* HGETALL ORDER_CHANGED_KEY: field event id, value its change count. */
static void on_changed(redisReply *reply, void *arg)
{
    order_pauser *p = arg;
    p->inflight--;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0)
        return; /* keep what we know: the next turn sees the change */
    changed now[ORDER_CHANGED_MAX];
    size_t n = 0;
    int forgot = 0;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *f = reply->element[i], *v = reply->element[i + 1];
        uint64_t id;
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            order_parse_id(f->str, f->len, &id) != 0)
            continue;
        if (n == ORDER_CHANGED_MAX) {
            if (!p->warned_changed)
                sk_log(SK_LOG_WARN, "changed_table_full", "max=%d", ORDER_CHANGED_MAX);
            p->warned_changed = 1;
            break;
        }
        long long c = strtoll(v->str, NULL, 10);
        if (p->have_counts && count_of(p, id) != c) {
            order_window_forget(p->t.window, id);
            order_events_forget(p->t.events, id);
            forgot = 1;
        }
        now[n].id = id;
        now[n++].count = c;
    }
    if (forgot)
        order_evlist_stale(p->t.evlist);
    memcpy(p->seen, now, n * sizeof(now[0]));
    p->nseen = n;
    p->have_counts = 1;
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    order_pauser *p = arg;
    if (p->inflight || !order_redis_connected(p->redis))
        return;
    p->members_version = order_pause_version(p->t.paused);
    const char *argv[2] = {"SMEMBERS", ORDER_PAUSE_KEY};
    size_t lens[2] = {8, strlen(ORDER_PAUSE_KEY)};
    if (order_redis_command(p->redis, 2, argv, lens, on_members, p) == 0)
        p->inflight++;
    const char *hv[2] = {"HGETALL", ORDER_CHANGED_KEY};
    size_t hl[2] = {7, strlen(ORDER_CHANGED_KEY)};
    if (order_redis_command(p->redis, 2, hv, hl, on_changed, p) == 0)
        p->inflight++;
}

order_pauser *order_pauser_new(struct event_base *base, order_redis *redis,
                               const order_pauser_tables *t, int64_t interval_ms)
{
    order_pauser *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->redis = redis;
    p->t = *t;
    p->timer = event_new(base, -1, EV_PERSIST, tick, p);
    struct timeval tv = {(time_t)(interval_ms / 1000), (suseconds_t)(interval_ms % 1000) * 1000};
    if (!p->timer || event_add(p->timer, &tv) != 0) {
        order_pauser_free(p);
        return NULL;
    }
    return p;
}

void order_pauser_free(order_pauser *p)
{
    if (!p)
        return;
    if (p->timer)
        event_free(p->timer);
    free(p);
}
