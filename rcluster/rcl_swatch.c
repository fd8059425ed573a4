/* rcl_swatch: an async context's ear on the sentinels (sentinel URLs only): a SUBSCRIBE
 * +switch-master on one sentinel at a time, so that a failover moves rcl_async's
 * connection to the new master when the sentinels announce it, instead of when the old
 * master is found dead (a timeout) or demoted (-READONLY, which Sentinel does only
 * seconds after the old master is back in reach: until then it takes writes that the
 * failover throws away). A lost or refused subscription moves on to the next sentinel
 * after a pause, and so does one not connected within the context's timeout; an open
 * one has TCP keepalive. The sentinels are reached without AUTH, as in
 * sk_redis_sentinel.c. The subscription only speeds the move up: a lost connection and
 * -READONLY (rcl_async.c) still lead back to the sentinels without it.
 * Runs on the event_base's thread; see rcl_int.h. */
#include "rcl_int.h"

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWATCH_RETRY_MS 500

struct rcl_swatch {
    struct event_base *base;
    const sk_redis_url *url;
    rcl_swatch_fn *moved;
    void *arg;
    int next;                 /* the sentinel to try next */
    redisAsyncContext *ac;    /* the subscription, NULL between tries */
    int connected;
    struct timeval tv;        /* connect deadline */
    struct event *retry_ev, *deadline_ev;
};

static void swatch_try(evutil_socket_t fd, short what, void *arg);

static void swatch_later(rcl_swatch *w)
{
    struct timeval tv = {0, SWATCH_RETRY_MS * 1000};
    evtimer_add(w->retry_ev, &tv);
}

static void on_sw_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    rcl_swatch *w = ac->data;
    if (w && w->ac == ac) {
        w->ac = NULL;
        swatch_later(w);
    }
}

static void on_sw_connect(const redisAsyncContext *ac, int status)
{
    rcl_swatch *w = ac->data;
    if (status != REDIS_OK) {
        on_sw_disconnect(ac, status); /* hiredis frees it after this */
        return;
    }
    if (w && w->ac == ac) {
        w->connected = 1;
        redisEnableKeepAlive((redisContext *)&ac->c);
    }
}

/* Not connected within the timeout: dropped, the next sentinel after a pause. */
static void on_sw_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_swatch *w = arg;
    if (!w->ac || w->connected)
        return;
    redisAsyncContext *ac = w->ac;
    w->ac = NULL;
    ac->data = NULL;
    redisAsyncFree(ac);
    swatch_later(w);
}

/* A message: ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"]. */
static void on_sw_message(redisAsyncContext *ac, void *reply, void *priv)
{
    (void)ac;
    rcl_swatch *w = priv;
    redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[2]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0)
        return;
    char name[128], oldh[256], newh[256];
    int oldp, newp;
    if (sscanf(r->element[2]->str, "%127s %255s %d %255s %d", name, oldh, &oldp, newh, &newp) == 5 &&
        strcmp(name, w->url->master_name) == 0 && newp > 0 && newp <= 65535)
        w->moved(w->arg, newh, newp);
}

static void swatch_try(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    rcl_swatch *w = arg;
    int i = w->next++ % w->url->nsentinels;
    redisAsyncContext *ac =
        redisAsyncConnect(w->url->sentinels[i].host, w->url->sentinels[i].port);
    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        swatch_later(w);
        return;
    }
    ac->data = w;
    w->connected = 0;
    evtimer_add(w->deadline_ev, &w->tv);
    redisLibeventAttach(ac, w->base);
    redisAsyncSetConnectCallback(ac, on_sw_connect);
    redisAsyncSetDisconnectCallback(ac, on_sw_disconnect);
    w->ac = ac;
    redisAsyncCommand(ac, on_sw_message, w, "SUBSCRIBE +switch-master");
}

rcl_swatch *rcl_swatch_new(struct event_base *base, const sk_redis_url *url, struct timeval tv,
                           rcl_swatch_fn *moved, void *arg)
{
    rcl_swatch *w = calloc(1, sizeof(*w));
    if (!w || !(w->retry_ev = evtimer_new(base, swatch_try, w)) ||
        !(w->deadline_ev = evtimer_new(base, on_sw_deadline, w))) {
        if (w && w->retry_ev)
            event_free(w->retry_ev);
        free(w);
        return NULL;
    }
    w->tv = tv;
    w->base = base;
    w->url = url;
    w->moved = moved;
    w->arg = arg;
    swatch_try(-1, 0, w);
    return w;
}

void rcl_swatch_free(rcl_swatch *w)
{
    if (!w)
        return;
    if (w->ac) {
        redisAsyncContext *ac = w->ac;
        w->ac = NULL;
        ac->data = NULL;
        redisAsyncFree(ac);
    }
    event_free(w->retry_ev);
    event_free(w->deadline_ev);
    free(w);
}
