/* order_event_admin: the admin's event routes, on the worker's loop:
 *  - POST /api/v1/events: the body checked, an event id (libidgen), the INSERT and the
 *    gate's load (order_loader.h) on a PostgreSQL pool thread, then this instance's
 *    segment count and sale window, 201.
 *  - POST /api/v1/events/{id}/pause and /resume: the paused set in Redis (the other
 *    fronts read it within events.pause_refresh_ms, order_pauser.h), this instance's
 *    copy at once.
 * Both need a token with the admin role, and leave a row in seckill_admin_audit (issue 32:
 * the create in its INSERT's statement, a pause or resume right after the act). */
#include "order_event_admin.h"
#include "order_body.h"
#include "order_http_int.h"
#include "order_msg.h"
#include "order_time.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pausing an event's sale ----------------------------------------------------- */

/* One pause or resume (h.route says which). */
typedef struct pause_req {
    order_req_head h;
    uint64_t event_id;
    order_pg_job job; /* the audit row (issue 32) */
} pause_req;

static void pause_reply(pause_req *r)
{
    char body[96];
    order_req_json_free(&r->h, 200, body,
                        order_reply_paused(body, sizeof(body), r->event_id,
                                           r->h.route == ORDER_ROUTE_EVENT_PAUSE));
}

/* The act is done (Redis holds it): a record that could not be written is logged (the
 * log line carries the actor), and the answer is the act's. */
static void after_pause_audit(order_task *t)
{
    pause_req *r = ORDER_CONTAINER_OF(t, pause_req, h.task);
    if (r->job.status != ORDER_PG_OK)
        sk_log(SK_LOG_WARN, "audit_failed", "event_id=%" PRIu64 " actor=%" PRIu64 " act=%s err=\"%s\"",
               r->event_id, r->job.actor, r->job.act, r->job.err);
    pause_reply(r);
}

static void on_pause_set(redisReply *reply, void *arg)
{
    pause_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    /* Here at once; the other fronts within events.pause_refresh_ms (order_pauser.h). */
    int paused = r->h.route == ORDER_ROUTE_EVENT_PAUSE;
    order_pause_set(r->h.w->app->paused, r->event_id, paused);
    sk_log(SK_LOG_INFO, paused ? "event_paused" : "event_resumed",
           "event_id=%" PRIu64 " actor=%" PRIu64, r->event_id, r->job.actor);
    r->job.kind = ORDER_PG_AUDIT_EVENT;
    r->job.id = r->event_id;
    snprintf(r->job.act, sizeof(r->job.act), "%s", paused ? "pause" : "resume");
    r->job.audit_after = paused ? "{\"paused\": true}" : "{\"paused\": false}";
    if (order_req_submit_pg(&r->h, &r->job, after_pause_audit, NULL) != 0) {
        snprintf(r->job.err, sizeof(r->job.err), "no database, or its queue is full");
        r->job.status = ORDER_PG_ERROR;
        after_pause_audit(&r->h.task);
    }
}

static int pause_send(pause_req *r)
{
    char id[24];
    const char *argv[3] = {r->h.route == ORDER_ROUTE_EVENT_PAUSE ? "SADD" : "SREM", ORDER_PAUSE_KEY,
                           id};
    size_t lens[3] = {4, strlen(ORDER_PAUSE_KEY),
                      (size_t)snprintf(id, sizeof(id), "%" PRIu64, r->event_id)};
    return order_redis_command(r->h.w->redis, 3, argv, lens, on_pause_set, r);
}

/* Only an event whose gate is loaded is paused: an unknown id is 404, and leaves nothing
 * behind in the set (resume takes any id, to clear what is there). */
static void on_pause_exists(redisReply *reply, void *arg)
{
    pause_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->integer != 1) {
        order_req_error_free(&r->h, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    }
    if (pause_send(r) != 0)
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

void order_event_pause_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, "pausing a sale", &claims) != 0 ||
        !order_http_redis_ready(w, req, rt->id, start_us))
        return;
    pause_req *r = order_req_alloc(sizeof(*r), w, req, rt->id, start_us);
    if (!r)
        return;
    r->event_id = rt->arg;
    r->job.actor = claims.sub;
    int rc;
    if (rt->id == ORDER_ROUTE_EVENT_PAUSE) {
        char key[ORDER_KEY_MAX];
        const char *argv[2] = {"EXISTS", key};
        size_t lens[2] = {6, order_key(rt->arg, ORDER_KEY_META, key, sizeof(key))};
        rc = order_redis_command(w->redis, 2, argv, lens, on_pause_exists, r);
    } else {
        rc = pause_send(r);
    }
    if (rc != 0)
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

/* ---- creating an event ----------------------------------------------------------- */

/* One event creation. */
typedef struct create_req {
    order_req_head h;
    uint64_t event_id;
    int load_rc;      /* order_loader_load's result, on the pool thread */
    order_pg_job job; /* in: the spec parsed from the body */
} create_req;

static void after_pg_create(order_task *t)
{
    create_req *r = ORDER_CONTAINER_OF(t, create_req, h.task);
    if (r->job.status != ORDER_PG_OK) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=create_event err=\"%s\"", r->job.err);
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    if (r->load_rc < 0) {
        sk_log(SK_LOG_WARN, "event_load_failed", "event_id=%" PRIu64 " err=\"%s\"", r->event_id,
               r->job.err);
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE,
                             "the event was saved but its stock is not loaded", 0);
        return;
    }
    order_segs_set(r->h.w->app->segs, r->event_id,
                   r->job.spec.segments > 1 ? (unsigned)r->job.spec.segments : 1);
    sk_log(SK_LOG_INFO, "event_created",
           "event_id=%" PRIu64 " actor=%" PRIu64 " stock=%" PRId64 " segments=%d", r->event_id,
           r->job.actor, r->job.spec.stock, r->job.spec.segments);
    order_window_set(r->h.w->app->window, r->event_id, r->job.spec.starts_at_ms,
                     r->job.spec.ends_at_ms, &r->job.spec.limits);
    char body[64];
    size_t n = order_reply_event_created(body, sizeof(body), r->event_id);
    order_req_json_free(&r->h, 201, body, n);
}

/* On the pool thread, right after the INSERT: load the gate under the event's lock
 * (blocking is fine here, never on a worker), then hand the request back. */
static void on_pg_create_done(order_pg_job *job)
{
    create_req *r = job->arg;
    if (job->status == ORDER_PG_OK)
        r->load_rc = order_loader_load(r->h.w->app->loader, r->event_id, &job->spec, job->err,
                                       sizeof(job->err));
    order_worker_post(r->h.w, &r->h.task);
}

void order_event_create_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                               int64_t start_us)
{
    order_app *app = w->app;
    sk_jwt_claims claims;
    const char *body;
    size_t blen;
    if (order_http_authorize(w, req, rt->id, start_us, "creating events", &claims) != 0 ||
        order_http_body(w, req, rt->id, start_us, &body, &blen) != 0)
        return;
    create_req *r = order_req_alloc(sizeof(*r), w, req, rt->id, start_us);
    if (!r)
        return;
    char msg[160];
    if (order_body_parse_event(body, blen, &r->job.spec, msg, sizeof(msg)) != 0) {
        order_req_error_free(&r->h, ORDER_ERR_BAD_REQUEST, msg, 0);
        return;
    }
    if (!app->pg) {
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "no database configured", 0);
        return;
    }
    int rc = idgen_next(app->ids_event, &r->event_id);
    if (rc != IDGEN_OK) {
        sk_log(SK_LOG_WARN, "idgen_failed", "err=\"%s\"", idgen_strerror(rc));
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "no event id available", 0);
        return;
    }
    r->job.kind = ORDER_PG_CREATE_EVENT;
    r->job.id = r->event_id;
    r->job.actor = claims.sub;
    if (order_req_submit_pg(&r->h, &r->job, after_pg_create, on_pg_create_done) != 0)
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is busy", 0);
}
