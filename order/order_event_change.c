/* order_event_change: an admin's change of a live event, and its end. See
 * order_event_change.h. */
#include "order_event_change.h"
#include "order_body.h"
#include "order_http_int.h"
#include "order_msg.h"
#include "order_pauser.h"
#include "order_time.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct change_req {
    order_req_head h;
    uint64_t event_id, actor;
    unsigned segments;
    int wait; /* Redis replies still to come in the current step */
    int bad;  /* one of them failed */
    void (*next)(struct change_req *r); /* the step once they all came */
    order_pg_job job;
} change_req;

static int restocking(const change_req *r)
{
    return r->job.kind == ORDER_PG_RESTOCK_EVENT;
}

static int removing(const change_req *r)
{
    return r->job.kind == ORDER_PG_REMOVE_EVENT;
}

static const char *act_of(const change_req *r)
{
    if (removing(r))
        return r->job.removed == 1 ? "event_deleted" : "event_archived";
    return restocking(r) ? "event_restocked" : r->job.ending ? "event_ended" : "event_changed";
}

/* A removal: this front forgets the event at once (its page is 404 once deleted). */
static void finish_remove(change_req *r)
{
    order_app *app = r->h.w->app;
    order_pause_set(app->paused, r->event_id, 0);
    order_window_forget(app->window, r->event_id);
    order_events_forget(app->events, r->event_id);
    order_evlist_stale(app->evlist);
    sk_log(SK_LOG_INFO, act_of(r), "event_id=%" PRIu64 " actor=%" PRIu64, r->event_id, r->actor);
    char body[96];
    int n = snprintf(body, sizeof(body), "{\"event_id\":\"%" PRIu64 "\",\"removed\":\"%s\"}",
                     r->event_id, r->job.removed == 1 ? "deleted" : "archived");
    order_req_json_free(&r->h, 200, body, (size_t)n);
}

/* The front that took the call knows at once; its GET shows the change. */
static void finish(change_req *r)
{
    if (removing(r)) {
        finish_remove(r);
        return;
    }
    order_app *app = r->h.w->app;
    const order_event_spec *s = &r->job.spec;
    if (r->job.ending)
        order_pause_set(app->paused, r->event_id, 0);
    if (restocking(r)) /* new units: this front asks the gate again at once, the others
                        * once their flag's soldout.ttl_ms is over */
        order_soldout_clear(app->soldout, r->event_id);
    order_window_set(app->window, r->event_id, s->starts_at_ms, s->ends_at_ms, &s->limits);
    order_events_forget(app->events, r->event_id);
    order_evlist_stale(app->evlist);
    sk_log(SK_LOG_INFO, act_of(r),
           "event_id=%" PRIu64 " actor=%" PRIu64 " starts_at_ms=%" PRId64 " ends_at_ms=%" PRId64
           " stock_total=%" PRId64,
           r->event_id, r->actor, s->starts_at_ms, s->ends_at_ms, s->stock);
    char *body = order_reply_event(r->event_id, s->name, s->stock, r->job.stock_left,
                                   s->starts_at_ms, s->ends_at_ms, &s->limits);
    if (!body) {
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    order_req_json_free(&r->h, 200, body, strlen(body));
    free(body);
}

static void redis_failed(change_req *r)
{
    /* PostgreSQL holds the change; the same call again writes Redis again. */
    sk_log(SK_LOG_WARN, "event_change_partial", "event_id=%" PRIu64 " actor=%" PRIu64
           " note=\"saved, Redis not updated: repeat the call\"", r->event_id, r->actor);
    order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE,
                         "the change is saved but not yet applied to the sale: repeat the call", 0);
}

/* One reply of the current step; the last one goes on to r->next (or fails the call). */
static void on_step(redisReply *reply, void *arg)
{
    change_req *r = arg;
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        r->bad = 1;
    if (--r->wait > 0)
        return;
    if (r->bad)
        redis_failed(r);
    else
        r->next(r);
}

/* Every segment's meta holds the change: the other fronts are told (their poller forgets
 * the event), and an end clears a pause. Only now: a front that forgets and reads the
 * meta again must read the new one. */
static void announce(change_req *r)
{
    char id[24];
    size_t idlen = (size_t)snprintf(id, sizeof(id), "%" PRIu64, r->event_id);
    const char *hv[4] = {"HINCRBY", ORDER_CHANGED_KEY, id, "1"};
    size_t hl[4] = {7, strlen(ORDER_CHANGED_KEY), idlen, 1};
    r->wait = 1;
    r->next = finish;
    if (order_redis_command(r->h.w->redis, 4, hv, hl, on_step, r) != 0) {
        r->wait = 0;
        redis_failed(r);
        return;
    }
    if (r->job.ending || removing(r)) {
        const char *sv[3] = {"SREM", ORDER_PAUSE_KEY, id};
        size_t sl[3] = {4, strlen(ORDER_PAUSE_KEY), idlen};
        if (order_redis_command(r->h.w->redis, 3, sv, sl, on_step, r) == 0)
            r->wait++;
        else
            r->bad = 1;
    }
}

/* One HSET per segment (K slots): the window and the limits reserve.lua and the fronts
 * read. A rate of 0 is stored as "0": no override (as order_place.c reads it). */
static void write_meta(change_req *r)
{
    const order_event_spec *s = &r->job.spec;
    char v[6][24];
    snprintf(v[0], sizeof(v[0]), "%" PRId64, s->starts_at_ms);
    snprintf(v[1], sizeof(v[1]), "%" PRId64, s->ends_at_ms);
    snprintf(v[2], sizeof(v[2]), "%d", s->per_user_limit);
    snprintf(v[3], sizeof(v[3]), "%" PRId64, s->limits.ip_rate);
    snprintf(v[4], sizeof(v[4]), "%" PRId64, s->limits.user_rate);
    snprintf(v[5], sizeof(v[5]), "%" PRId64, s->limits.event_rate);
    static const char *const fields[6] = {"starts_at_ms", "ends_at_ms", "per_user_limit",
                                          "ip_rate",      "user_rate",  "event_rate"};
    r->wait = (int)r->segments;
    r->bad = 0;
    r->next = announce;
    for (unsigned seg = 0; seg < r->segments; seg++) {
        char key[ORDER_KEY_MAX];
        const char *argv[14] = {"HSET", key};
        size_t lens[14] = {4, order_key_seg(r->event_id, seg, ORDER_KEY_META, key, sizeof(key))};
        for (int i = 0; i < 6; i++) {
            argv[2 + 2 * i] = fields[i];
            lens[2 + 2 * i] = strlen(fields[i]);
            argv[3 + 2 * i] = v[i];
            lens[3 + 2 * i] = strlen(v[i]);
        }
        if (order_redis_command(r->h.w->redis, 14, argv, lens, on_step, r) != 0)
            on_step(NULL, r);
    }
}

static void after_pg_change(order_task *t)
{
    change_req *r = ORDER_CONTAINER_OF(t, change_req, h.task);
    switch (r->job.status) {
    case ORDER_PG_OK:
        break;
    case ORDER_PG_NOT_FOUND:
        order_req_error_free(&r->h, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    case ORDER_PG_RETRY:
        order_http_set_retry_after(r->h.req, 1);
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, r->job.conflict, 0);
        return;
    case ORDER_PG_CONFLICT:
        sk_log(SK_LOG_INFO, "event_change_refused", "event_id=%" PRIu64 " actor=%" PRIu64
               " reason=\"%s\"", r->event_id, r->actor, r->job.conflict);
        order_req_error_free(&r->h, ORDER_ERR_CONFLICT, r->job.conflict, 0);
        return;
    default:
        sk_log(SK_LOG_WARN, "pg_failed", "op=change_event err=\"%s\"", r->job.err);
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    if (restocking(r) || removing(r)) { /* the gate moved inside the transaction: only the news is left */
        r->bad = 0;
        announce(r);
        return;
    }
    int k = r->job.spec.segments;
    r->segments = k > 1 && k <= ORDER_SEGMENTS_MAX ? (unsigned)k : 1;
    write_meta(r);
}

/* A request for one of the routes here, once the token and the body were checked:
 * the event, the actor, the job's kind; NULL once answered (memory is short). */
static change_req *change_new(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us, const sk_jwt_claims *claims, order_pg_kind kind)
{
    change_req *r = order_req_alloc(sizeof(*r), w, req, rt->id, start_us);
    if (!r)
        return NULL;
    r->event_id = rt->arg;
    r->actor = r->job.actor = claims->sub;
    r->job.kind = kind;
    r->job.id = rt->arg;
    r->job.now_ms = order_time_now_ms();
    r->job.loader = w->app->loader; /* restock and removal move the gate on the pool thread */
    return r;
}

static void change_submit(change_req *r)
{
    if (!r->job.loader || order_req_submit_pg(&r->h, &r->job, after_pg_change, NULL) != 0)
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is busy or absent", 0);
}

void order_event_stock_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us)
{
    sk_jwt_claims claims;
    const char *body;
    size_t blen;
    if (order_http_authorize(w, req, rt->id, start_us, "restocking events", &claims) != 0 ||
        order_http_body(w, req, rt->id, start_us, &body, &blen) != 0 ||
        !order_http_redis_ready(w, req, rt->id, start_us))
        return;
    change_req *r = change_new(w, req, rt, start_us, &claims, ORDER_PG_RESTOCK_EVENT);
    if (!r)
        return;
    char msg[160];
    if (order_body_parse_stock(body, blen, &r->job.add, &r->job.total, msg, sizeof(msg)) != 0) {
        order_req_error_free(&r->h, ORDER_ERR_BAD_REQUEST, msg, 0);
        return;
    }
    change_submit(r);
}

void order_event_remove_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                               int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, "removing events", &claims) != 0 ||
        !order_http_redis_ready(w, req, rt->id, start_us))
        return;
    change_req *r = change_new(w, req, rt, start_us, &claims, ORDER_PG_REMOVE_EVENT);
    if (r)
        change_submit(r);
}

void order_event_change_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                               int64_t start_us)
{
    int ending = rt->id == ORDER_ROUTE_EVENT_END;
    sk_jwt_claims claims;
    const char *body = NULL;
    size_t blen = 0;
    if (order_http_authorize(w, req, rt->id, start_us, ending ? "ending a sale" : "changing events",
                             &claims) != 0 ||
        (!ending && order_http_body(w, req, rt->id, start_us, &body, &blen) != 0) ||
        !order_http_redis_ready(w, req, rt->id, start_us))
        return;
    change_req *r = change_new(w, req, rt, start_us, &claims, ORDER_PG_CHANGE_EVENT);
    if (!r)
        return;
    char msg[160];
    if (!ending && order_body_parse_patch(body, blen, &r->job.patch, msg, sizeof(msg)) != 0) {
        order_req_error_free(&r->h, ORDER_ERR_BAD_REQUEST, msg, 0);
        return;
    }
    r->job.ending = ending;
    change_submit(r);
}
