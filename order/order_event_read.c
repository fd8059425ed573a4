/* order_event_read: GET /api/v1/events/{id} and GET /api/v1/events?offset=O&limit=L,
 * from this instance's memory, on the worker's loop.
 *  - An event (order_events.h): the fixed fields loaded once from PostgreSQL, stock_left
 *    read from the gate at most every events.stock_refresh_ms (the sum of its segments').
 *  - The list (order_evlist.h): the current and upcoming events from a snapshot,
 *    refreshed from PostgreSQL at most every events.list_refresh_ms; a stale snapshot is
 *    answered while its refresh runs.
 *  - The ended events (admin, ?state=ended): from PostgreSQL per call, newest end first,
 *    archived ones left out, so an operator can pick a sale that ended to archive it.
 * A request that finds a load or a read under way waits on the entry and is handed back
 * here (to its own worker) when it lands. Answers carry Cache-Control and an ETag (304
 * on If-None-Match) and the server's time, so a countdown can correct the client's
 * clock. */
#include "order_event_read.h"
#include "order_http_int.h"
#include "order_msg.h"
#include "order_reply.h"
#include "order_time.h"
#include "sk_http_query.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the routes' requests share: waiting on the cache, loading from PostgreSQL.
 * It is the first member of the cached routes' (and h its own), so free(r) or order_req_*_free(&r->h)
 * frees the whole request. */
typedef struct evread_req {
    order_req_head h;
    order_events_waiter wait;           /* queued on an entry or on the list */
    void (*step)(struct evread_req *r); /* where a waiter goes on once handed back */
    order_pg_job job;
} evread_req;

/* GET /api/v1/events/{id}. */
typedef struct event_get_req {
    evread_req e;
    uint64_t event_id;
    /* a stock refresh: the sum of the segments' stock, their GETs still unanswered, and
     * whether one failed (then the last figure is kept) */
    int64_t stock_sum;
    int stock_wait, stock_bad;
} event_get_req;

/* GET /api/v1/events; with h.req NULL, a refresh run behind an answered request. */
typedef struct event_list_req {
    evread_req e;
    size_t offset, limit;
} event_list_req;

#define EVREAD_OF_TASK(t)    ORDER_CONTAINER_OF(t, evread_req, h.task)
#define EVREAD_OF_WAITER(wt) ORDER_CONTAINER_OF(wt, evread_req, wait)
#define GET_OF(r)            ORDER_CONTAINER_OF(r, event_get_req, e)
#define LIST_OF(r)           ORDER_CONTAINER_OF(r, event_list_req, e)

/* A waiter handed back: 503 if the load it waited on failed, else its step again. */
static void event_waiter_resume(order_task *t)
{
    evread_req *r = EVREAD_OF_TASK(t);
    if (r->wait.failed && r->h.req) { /* (a warm-up has no answer to give: its step) */
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    r->step(r);
}

/* Hands every waiter back to its own worker (this one's included: through its inbox,
 * after the current callback), to go on in its step. */
static void event_wake(order_events_waiter *list)
{
    while (list) {
        order_events_waiter *next = list->next; /* the waiter may run at once elsewhere */
        evread_req *q = EVREAD_OF_WAITER(list);
        q->h.task.fn = event_waiter_resume;
        order_worker_post(q->h.w, &q->h.task);
        list = next;
    }
}

/* Answers a page: Cache-Control (`cc`, or NULL: public for events.max_age_s), its ETag,
 * 304 when If-None-Match matches, otherwise `head` (the body without its closing brace)
 * plus the server's time, so a countdown to starts_at can correct the client's clock. */
static void page_send(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                      const char *cc, const char *head, size_t hlen, const char *etag,
                      int64_t now_ms)
{
    order_app *app = w->app;
    char pub[48];
    snprintf(pub, sizeof(pub), "public, max-age=%lld", app->cfg.events_max_age_s);
    sk_http_add_header(req, "Cache-Control", cc ? cc : pub);
    sk_http_add_header(req, "ETag", etag);
    const char *inm = sk_http_header(req, "If-None-Match");
    if (inm && order_events_etag_match(inm, etag)) {
        order_http_reply_json(w, req, route, start_us, 304, "", 0);
        return;
    }
    char now[32], tail[48];
    order_time_format_rfc3339(now_ms, now, sizeof(now));
    int tlen = snprintf(tail, sizeof(tail), ",\"now\":\"%s\"}", now);
    char stackbuf[4096];
    char *body = hlen + (size_t)tlen <= sizeof(stackbuf) ? stackbuf : malloc(hlen + (size_t)tlen);
    if (!body) {
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    memcpy(body, head, hlen);
    memcpy(body + hlen, tail, (size_t)tlen);
    order_http_reply_json(w, req, route, start_us, 200, body, hlen + (size_t)tlen);
    if (body != stackbuf)
        free(body);
}

static void cached_reply(evread_req *r, const char *head, size_t hlen, const char *etag,
                         int64_t now_ms)
{
    page_send(r->h.w, r->h.req, r->h.route, r->h.start_us, NULL, head, hlen, etag, now_ms);
    free(r);
}

/* ---- one event ------------------------------------------------------------------- */

static void event_get_step(evread_req *r);

/* One segment's stock (all of it when K = 1); the figure is the sum once every
 * segment answered, kept from before if one did not. */
static void on_event_stock(redisReply *reply, void *arg)
{
    event_get_req *g = arg;
    order_app *app = g->e.h.w->app;
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        sk_log(SK_LOG_WARN, "event_stock_failed", "event_id=%" PRIu64 " note=\"last figure kept\"",
               g->event_id);
    if (reply && reply->type == REDIS_REPLY_STRING)
        g->stock_sum += strtoll(reply->str, NULL, 10);
    else
        g->stock_bad = 1;
    if (--g->stock_wait > 0)
        return;
    event_wake(order_events_stock(app->events, g->event_id, !g->stock_bad, g->stock_sum,
                                  order_time_now_ms()));
    event_get_step(&g->e);
}

static void after_pg_event(order_task *t)
{
    evread_req *r = EVREAD_OF_TASK(t);
    event_get_req *g = GET_OF(r);
    order_app *app = r->h.w->app;
    if (r->job.status == ORDER_PG_NOT_FOUND) {
        event_wake(order_events_absent(app->events, g->event_id, order_time_now_ms()));
        order_req_error_free(&r->h, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    }
    if (r->job.status != ORDER_PG_OK) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=get_event err=\"%s\"", r->job.err);
        event_wake(order_events_failed(app->events, g->event_id));
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    order_segs_set(app->segs, g->event_id,
                   r->job.spec.segments > 1 ? (unsigned)r->job.spec.segments : 1);
    order_window_set(app->window, g->event_id, r->job.spec.starts_at_ms, r->job.spec.ends_at_ms,
                     &r->job.spec.limits);
    event_wake(order_events_loaded(app->events, g->event_id, &r->job.spec, r->job.stock_left,
                                   order_time_now_ms()));
    event_get_step(r);
}

static void event_get_step(evread_req *r)
{
    event_get_req *g = GET_OF(r);
    order_app *app = r->h.w->app;
    int64_t now_ms = order_time_now_ms();
    order_event_view v;
    switch (order_events_lookup(app->events, g->event_id, now_ms, &r->wait, &v)) {
    case ORDER_EVENTS_FRESH:
        cached_reply(r, v.body, v.body_len, v.etag, now_ms);
        return;
    case ORDER_EVENTS_WAIT:
        return;
    case ORDER_EVENTS_ABSENT:
        order_req_error_free(&r->h, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    case ORDER_EVENTS_BUSY:
        sk_http_add_header(r->h.req, "Retry-After", "1");
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE,
                             "too many lookups of events not in memory", 0);
        return;
    case ORDER_EVENTS_LOAD:
        r->job.kind = ORDER_PG_GET_EVENT;
        r->job.id = g->event_id;
        if (order_req_submit_pg(&r->h, &r->job, after_pg_event, NULL) != 0) {
            event_wake(order_events_failed(app->events, g->event_id));
            order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        }
        return;
    case ORDER_EVENTS_REFRESH: {
        /* stock_left: the gate's live figure (PostgreSQL's lags behind the consumer),
         * the sum of the segments' (one GET each: they are in K slots). */
        unsigned k = order_segs_get(app->segs, g->event_id);
        g->stock_sum = 0;
        g->stock_bad = 0;
        g->stock_wait = (int)k;
        for (unsigned seg = 0; seg < k; seg++) {
            char key[ORDER_KEY_MAX];
            const char *argv[2] = {"GET", key};
            size_t lens[2] = {3,
                              order_key_seg(g->event_id, seg, ORDER_KEY_STOCK, key, sizeof(key))};
            if (order_redis_command(r->h.w->redis, 2, argv, lens, on_event_stock, g) != 0)
                on_event_stock(NULL, g);
        }
        return;
    }
    }
}

void order_event_get_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                            int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, NULL, &claims) != 0)
        return;
    /* The fast path: a fresh entry is answered without a request object. */
    int64_t now_ms = order_time_now_ms();
    order_event_view v;
    if (order_events_peek(w->app->events, rt->arg, now_ms, &v) == ORDER_EVENTS_FRESH) {
        page_send(w, req, rt->id, start_us, NULL, v.body, v.body_len, v.etag, now_ms);
        return;
    }
    event_get_req *g = order_req_alloc(sizeof(*g), w, req, rt->id, start_us);
    if (!g)
        return;
    g->e.step = event_get_step;
    g->event_id = rt->arg;
    event_get_step(&g->e);
}

/* ---- the list -------------------------------------------------------------------- */

static void event_list_step(evread_req *r);

/* A refresh landed (r: the request that ran it, or a bare one when it ran behind an
 * answered request). */
static void after_pg_list(order_task *t)
{
    evread_req *r = EVREAD_OF_TASK(t);
    order_app *app = r->h.w->app;
    int64_t now_ms = order_time_now_ms();
    order_events_waiter *back;
    if (r->job.status == ORDER_PG_OK) {
        back = order_evlist_loaded(app->evlist, r->job.rows, r->job.nrows, now_ms);
    } else {
        sk_log(SK_LOG_WARN, "pg_failed", "op=list_events err=\"%s\"", r->job.err);
        back = order_evlist_failed(app->evlist, now_ms);
    }
    free(r->job.rows);
    r->job.rows = NULL;
    event_wake(back);
    if (!r->h.req) { /* a refresh behind the answers */
        free(r);
        return;
    }
    if (r->job.status != ORDER_PG_OK) {
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    event_list_step(r);
}

static int event_list_submit(evread_req *r)
{
    r->job.kind = ORDER_PG_LIST_EVENTS;
    r->job.id = (uint64_t)r->h.w->app->cfg.events_list_max;
    return order_req_submit_pg(&r->h, &r->job, after_pg_list, NULL);
}

static void event_list_step(evread_req *r)
{
    event_list_req *l = LIST_OF(r);
    order_app *app = r->h.w->app;
    int64_t now_ms = order_time_now_ms();
    char *body = NULL, etag[24];
    size_t len = 0;
    int refresh = 0;
    order_events_status st = order_evlist_page(app->evlist, now_ms, l->offset, l->limit, &r->wait,
                                               &body, &len, etag, &refresh);
    if (refresh) {
        event_list_req *bg = calloc(1, sizeof(*bg));
        if (!bg || (bg->e.h.w = r->h.w, event_list_submit(&bg->e) != 0)) {
            free(bg);
            event_wake(order_evlist_failed(app->evlist, now_ms));
        }
    }
    switch (st) {
    case ORDER_EVENTS_FRESH:
        cached_reply(r, body, len, etag, now_ms);
        free(body);
        return;
    case ORDER_EVENTS_WAIT:
        return;
    case ORDER_EVENTS_LOAD:
        if (!app->pg || event_list_submit(r) != 0) {
            event_wake(order_evlist_failed(app->evlist, now_ms));
            order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        }
        return;
    default:
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
    }
}

/* ---- the ended events (admin) ------------------------------------------------------ */

/* GET /api/v1/events?state=ended: read from PostgreSQL per call (no snapshot: few ask, and
 * an operator expects an event ended a moment ago to be there). Its request is a bare
 * evread_req (no cache to wait on: wait and step unused). */
static void after_pg_ended(order_task *t)
{
    evread_req *r = EVREAD_OF_TASK(t);
    if (r->job.status != ORDER_PG_OK) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=list_ended err=\"%s\"", r->job.err);
        free(r->job.rows);
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    /* the live list's shape and headers: {"events":[...],"offset":O,"next_offset":N|null,
     * "now":".."}, an ETag (304 on If-None-Match) */
    size_t cap = 160, n = 0;
    char **items = calloc(r->job.nrows ? r->job.nrows : 1, sizeof(*items));
    for (size_t i = 0; items && i < r->job.nrows; i++) {
        const order_evlist_row *e = &r->job.rows[i];
        items[i] = order_reply_event(e->id, e->spec.name, e->spec.stock, e->stock_left,
                                     e->spec.starts_at_ms, e->spec.ends_at_ms, &e->spec.limits);
        if (!items[i])
            break;
        cap += strlen(items[i]) + 1;
        n++;
    }
    int whole = items && n == r->job.nrows;
    free(r->job.rows);
    char *body = whole ? malloc(cap) : NULL;
    if (body) {
        size_t len = (size_t)sprintf(body, "{\"events\":[");
        for (size_t i = 0; i < n; i++)
            len += (size_t)sprintf(body + len, "%s%s", i ? "," : "", items[i]);
        char next[24] = "null", etag[24];
        if (r->job.more)
            snprintf(next, sizeof(next), "%" PRId64, r->job.offset + (int64_t)n);
        len += (size_t)snprintf(body + len, cap - len, "],\"offset\":%" PRId64 ",\"next_offset\":%s",
                                r->job.offset, next);
        order_events_etag(body, len, etag);
        /* an admin's page: no shared cache keeps it, and the browser asks again each time */
        page_send(r->h.w, r->h.req, r->h.route, r->h.start_us, "private, no-cache", body, len, etag,
                  order_time_now_ms());
        free(r);
    } else {
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
    }
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
    free(body);
}

static void event_ended_list(order_worker *w, sk_http_req *req, const order_route *rt,
                             int64_t start_us, const sk_jwt_claims *claims)
{
    if (!claims->is_admin) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_FORBIDDEN,
                               "listing ended events needs the admin role", 0);
        return;
    }
    long long offset, limit;
    if (order_http_page(w, req, rt->id, start_us, 1000000, ORDER_EVLIST_LIMIT_MAX, &offset,
                        &limit) != 0)
        return;
    evread_req *r = order_req_alloc(sizeof(*r), w, req, rt->id, start_us);
    if (!r)
        return;
    r->job.kind = ORDER_PG_LIST_ENDED;
    r->job.offset = offset;
    r->job.limit = limit;
    if (order_req_submit_pg(&r->h, &r->job, after_pg_ended, NULL) != 0)
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is busy or absent", 0);
}

/* The list's `state`: absent (the current and upcoming events, any signed-in user) or
 * "ended" (admin). @returns 1 ended, 0 live, -1 answered 400. */
static int list_state(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us)
{
    size_t qlen, vlen;
    const char *q = sk_http_query_of(sk_http_uri(req), &qlen), *v;
    sk_http_query_rc rc = sk_http_query_get(q, qlen, "state", &v, &vlen);
    if (rc == SK_HTTP_QUERY_ABSENT || rc == SK_HTTP_QUERY_INVALID)
        return 0; /* (a malformed query: order_http_page's 400) */
    if (rc == SK_HTTP_QUERY_FOUND && vlen == 5 && memcmp(v, "ended", 5) == 0)
        return 1;
    order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST,
                           "state is \"ended\", or absent for the current and upcoming events", 0);
    return -1;
}

void order_event_list_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                             int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, NULL, &claims) != 0)
        return;
    int ended = list_state(w, req, rt, start_us);
    if (ended != 0) {
        if (ended > 0)
            event_ended_list(w, req, rt, start_us, &claims);
        return;
    }
    long long offset, limit;
    if (order_http_page(w, req, rt->id, start_us, 1000000, ORDER_EVLIST_LIMIT_MAX, &offset, &limit) != 0)
        return;
    event_list_req *l = order_req_alloc(sizeof(*l), w, req, rt->id, start_us);
    if (!l)
        return;
    l->e.step = event_list_step;
    l->offset = (size_t)offset;
    l->limit = (size_t)limit;
    event_list_step(&l->e);
}

/* The warm-up's request: nothing to answer; freed once its refresh landed or it was
 * handed back as a waiter. */
static void warm_done(evread_req *r)
{
    free(LIST_OF(r));
}

void order_event_list_warm(order_worker *w)
{
    order_app *app = w->app;
    event_list_req *bg = calloc(1, sizeof(*bg));
    if (!bg)
        return;
    bg->e.h.w = w;
    bg->e.step = warm_done;
    int64_t now_ms = order_time_now_ms();
    char *body = NULL, etag[24];
    size_t len = 0;
    int refresh = 0;
    order_events_status st =
        order_evlist_page(app->evlist, now_ms, 0, 1, &bg->e.wait, &body, &len, etag, &refresh);
    free(body);
    if (st == ORDER_EVENTS_WAIT)
        return; /* queued behind the refresh under way: warm_done frees it */
    if (st == ORDER_EVENTS_LOAD || refresh) {
        if (app->pg && event_list_submit(&bg->e) == 0)
            return; /* after_pg_list frees a request without an answer to give */
        event_wake(order_evlist_failed(app->evlist, now_ms));
    }
    free(bg);
}
