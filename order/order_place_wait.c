/* order_place_wait: the gate's WAIT before the produce. See order_place_wait.h. */
#include "order_place_wait.h"
#include "order_redis.h"
#include "sk_log.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

struct order_place_wait {
    order_worker *w;
    order_place_wait_fn *pass, *fail;
    long long replicas;
    char argv_n[24], argv_ms[24];
    order_place_req *head, **tail; /* this turn's reserved orders, linked by next */
    struct event *ev;
};

/* The orders one WAIT answers for, until its reply. */
typedef struct wait_batch {
    order_place_wait *pw;
    order_place_req *head;
} wait_batch;

static void decide(order_place_req *r, order_place_wait_fn *fn)
{
    while (r) {
        order_place_req *next = r->next;
        r->next = NULL;
        fn(r);
        r = next;
    }
}

static void on_wait(redisReply *reply, void *arg)
{
    wait_batch *b = arg;
    order_place_wait *pw = b->pw;
    long long acked = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (acked >= pw->replicas) {
        decide(b->head, pw->pass);
    } else {
        size_t n = 0;
        for (order_place_req *r = b->head; r; r = r->next)
            n++;
        sk_log(SK_LOG_WARN, "wait_replicas_short",
               "orders=%zu acked=%lld wanted=%lld err=\"%s\" note=\"cancelled, 503\"", n, acked,
               pw->replicas,
               !reply ? "no answer" : reply->type == REDIS_REPLY_ERROR ? reply->str : "");
        decide(b->head, pw->fail);
    }
    free(b);
}

static void send_wait(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    order_place_wait *pw = arg;
    if (!pw->head)
        return;
    wait_batch *b = malloc(sizeof(*b));
    order_place_req *head = pw->head;
    pw->head = NULL;
    pw->tail = &pw->head;
    const char *argv[3] = {"WAIT", pw->argv_n, pw->argv_ms};
    if (!b) {
        decide(head, pw->fail);
        return;
    }
    b->pw = pw;
    b->head = head;
    if (order_redis_command(pw->w->redis, 3, argv, NULL, on_wait, b) != 0) {
        free(b);
        decide(head, pw->fail); /* not connected: the cancel fails too, the reconciler's */
    }
}

order_place_wait *order_place_wait_new(order_worker *w, order_place_wait_fn *pass,
                                       order_place_wait_fn *fail, int *err)
{
    *err = 0;
    if (w->app->cfg.redis_wait_replicas <= 0)
        return NULL;
    order_place_wait *pw = calloc(1, sizeof(*pw));
    if (!pw || !(pw->ev = event_new(w->base, -1, 0, send_wait, pw))) {
        free(pw);
        *err = 1;
        return NULL;
    }
    pw->w = w;
    pw->pass = pass;
    pw->fail = fail;
    pw->replicas = w->app->cfg.redis_wait_replicas;
    snprintf(pw->argv_n, sizeof(pw->argv_n), "%lld", pw->replicas);
    snprintf(pw->argv_ms, sizeof(pw->argv_ms), "%lld", w->app->cfg.redis_wait_timeout_ms);
    pw->tail = &pw->head;
    return pw;
}

void order_place_wait_add(order_place_wait *pw, order_place_req *r)
{
    if (!pw->head)
        event_active(pw->ev, EV_TIMEOUT, 0); /* after this turn's other replies */
    r->next = NULL;
    *pw->tail = r;
    pw->tail = &r->next;
}

void order_place_wait_flush(order_place_wait *pw)
{
    if (pw)
        send_wait(-1, 0, pw);
}

void order_place_wait_free(order_place_wait *pw)
{
    if (!pw)
        return;
    event_free(pw->ev);
    free(pw);
}
