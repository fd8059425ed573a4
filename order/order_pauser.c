/* order_pauser: the periodic read of the paused events. See order_pauser.h. */
#include "order_pauser.h"
#include "order_route.h"
#include "sk_log.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

struct order_pauser {
    struct event *timer;
    order_redis *redis;
    order_pause *table;
    int inflight;
    int warned_full;
};

static void on_members(redisReply *reply, void *arg)
{
    order_pauser *p = arg;
    p->inflight = 0;
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
    order_pause_replace(p->table, ids, n);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    order_pauser *p = arg;
    if (p->inflight || !order_redis_connected(p->redis))
        return;
    const char *argv[2] = {"SMEMBERS", ORDER_PAUSE_KEY};
    size_t lens[2] = {8, strlen(ORDER_PAUSE_KEY)};
    if (order_redis_command(p->redis, 2, argv, lens, on_members, p) == 0)
        p->inflight = 1;
}

order_pauser *order_pauser_new(struct event_base *base, order_redis *redis, order_pause *table,
                               int64_t interval_ms)
{
    order_pauser *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->redis = redis;
    p->table = table;
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
