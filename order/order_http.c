/* order_http: the HTTP API's handlers, run on a worker's loop (see order_app.h), and the
 * order chain behind POST /api/v1/events/{id}/orders.
 *
 * Placing an order is a chain of continuations on one worker:
 *   token -> sold-out flag -> rate limit -> order id (libidgen) -> the gate (order_gate.h:
 *      reserve.lua, one call per event for the orders of one loop turn)
 *   -> produce to Kafka (the turn's messages together) ... delivery report (served on
 *      worker 0; other workers' handed back through their inbox)
 *   -> acknowledged: index entry (order_index.h) queued for the end of the turn,
 *      confirm.lua gathered across turns (order_gate.h), 202 (not waiting for either)
 *   -> NOT_PERSISTED: cancel.lua (batched like reserve) -> 503
 *   -> POSSIBLY_PERSISTED: the reservation stays pending -> 503 with the order id.
 * The Redis arguments of the gate's scripts and the index writes live in their modules;
 * this file routes, authenticates, and answers. No 202 is sent before Kafka
 * acknowledged the order. Every answer goes through reply_send(), which counts it in
 * the metrics; request_done() ends its in-flight time. */
#include "order_http.h"
#include "order_body.h"
#include "order_console.h"
#include "order_gate.h"
#include "order_index.h"
#include "order_msg.h"
#include "order_pay_http.h"
#include "order_pauser.h"
#include "order_reply.h"
#include "sk_http.h"
#include "order_route.h"
#include "order_time.h"
#include "sk_jwt.h"
#include "sk_log.h"

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/* One request that waits on something (Redis, Kafka, PostgreSQL). */
typedef struct order_req {
    order_task task; /* continuation posted back to the worker */
    order_worker *w;
    sk_http_req *req;
    order_route_id route;
    int64_t start_us;
    uint64_t user;
    int is_admin;
    uint64_t event_id, order_id;
    int64_t now_ms;
    rd_kafka_resp_err_t dr_err;
    rd_kafka_msg_status_t dr_status;
    int load_rc; /* order_loader_load's result, for event creation */
    int64_t stage_us; /* when the current accept-path stage started (metrics) */
    order_gate_item gi; /* in the gate: reserve, then confirm or cancel (the home segment) */
    /* Segmented stock (issue 19): the unit borrowed from another segment when the home
     * one was empty (borrow, then confirm or cancel there); lender is its segment or -1.
     * gate_wait: confirms or cancels still unanswered (the request waits for all). */
    order_gate_item lend;
    int lender, gate_wait, unclaim, retried;
    order_event_limits lim; /* the event's rate overrides (order_window.h), 0s: defaults */
    /* GET event of a segmented event: the sum of the segments' stock, their GETs still
     * unanswered, and whether one failed (then the last figure is kept) */
    int64_t stock_sum;
    int stock_wait, stock_bad;
    struct order_req *produce_next; /* on the chain's produce queue */
    order_events_waiter ev_wait; /* waiting on the event cache or list (order_events.h) */
    void (*ev_step)(struct order_req *r); /* where a waiter goes on once handed back */
    uint64_t queued_owner; /* GET order: the index said queued; PostgreSQL's "not found" means queued */
    order_pg_job job;
} order_req;

#define REQ_OF(t) ((order_req *)((char *)(t) - offsetof(order_req, task)))
#define REQ_OF_GATE(it) ((order_req *)((char *)(it) - offsetof(order_req, gi)))
#define REQ_OF_LEND(it) ((order_req *)((char *)(it) - offsetof(order_req, lend)))

/* The request of a confirm or cancel item: its home item (gi), or, on a segmented event,
 * the item of the lending segment, which is never the user's home. */
static order_req *req_of_item(order_gate_item *it)
{
    if (it->segs > 1 && it->seg != order_seg_home(it->user_id, it->segs))
        return REQ_OF_LEND(it);
    return REQ_OF_GATE(it);
}

/* A worker's order chain (order_app.h's w->chain). */
struct order_chain {
    order_gate *gate;
    order_index *index;
    /* Reserved orders whose message is still to be produced: handed to librdkafka
     * together at the end of the loop turn that reserved them. */
    order_req *produce_head, **produce_tail;
    struct event *produce_ev;
    order_pauser *pauser; /* worker 0 only: reads the paused events */
    /* Freed requests kept for the next ones (linked by produce_next): an order_req is
     * over glibc's small-chunk size, and each calloc of one took the large-chunk path
     * (fastbin consolidation, 1.9k instructions per placed order, issue 16). */
    order_req *spare;
    int nspare;
};

/* Requests kept per worker for reuse; more are freed. None under AddressSanitizer: a
 * request reused would hide a use after free from the sanitized test builds. */
#if defined(__SANITIZE_ADDRESS__)
#define REQ_SPARE_MAX 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REQ_SPARE_MAX 0
#endif
#endif
#ifndef REQ_SPARE_MAX
#define REQ_SPARE_MAX 256
#endif

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

/* Sends the answer and counts it; the request stays "in flight" (the gauge, and the bound
 * that SIGTERM waits on) until request_done. */
static void reply_send(order_worker *w, sk_http_req *req, order_route_id route,
                       int64_t start_us, int status, const char *ctype, const char *body,
                       size_t len)
{
    order_app *app = w->app;
    if (atomic_load_explicit(&app->draining, memory_order_relaxed))
        sk_http_close_after(req);
    /* sk_http writes Date, Content-Length and Connection, and no body for HEAD */
    sk_http_reply(req, status, reason(status), ctype, body, len);
    order_metrics_request(&app->metrics, route, status, order_time_mono_us() - start_us);
}

static void request_done(order_worker *w)
{
    atomic_fetch_sub_explicit(&w->app->metrics.requests_inflight, 1, memory_order_relaxed);
}

static void reply_raw(order_worker *w, sk_http_req *req, order_route_id route,
                      int64_t start_us, int status, const char *ctype, const char *body,
                      size_t len)
{
    reply_send(w, req, route, start_us, status, ctype, body, len);
    request_done(w);
}

static void reply_json(order_worker *w, sk_http_req *req, order_route_id route,
                       int64_t start_us, int status, const char *body, size_t len)
{
    reply_raw(w, req, route, start_us, status, "application/json", body, len);
}

static void reply_error(order_worker *w, sk_http_req *req, order_route_id route,
                        int64_t start_us, order_err e, const char *msg, uint64_t order_id)
{
    char body[640];
    size_t n = order_reply_error(body, sizeof(body), e, msg, order_id);
    if (e == ORDER_ERR_UNAUTHORIZED)
        sk_http_add_header(req, "WWW-Authenticate", "Bearer");
    reply_json(w, req, route, start_us, order_err_status(e), body, n);
}

static void set_retry_after(sk_http_req *req, long long s)
{
    char v[24];
    snprintf(v, sizeof(v), "%lld", s);
    sk_http_add_header(req, "Retry-After", v);
}

/* 429 of a limit level (order_limit.h), with Retry-After; counted by level. */
static void reply_limited(order_worker *w, sk_http_req *req, order_route_id route,
                          int64_t start_us, order_limit_level level, long long retry_after_s)
{
    char body[256];
    size_t n = order_reply_limited(body, sizeof(body), order_limit_level_name(level), retry_after_s);
    atomic_fetch_add_explicit(&w->app->metrics.limited[level], 1, memory_order_relaxed);
    set_retry_after(req, retry_after_s);
    reply_json(w, req, route, start_us, 429, body, n);
}

/* The client's IPv4 address (host order): the peer, or X-Forwarded-For's first untrusted
 * hop when the peer is a trusted proxy (order_limit.h). 0 when unknown. */
static uint32_t client_ip(order_app *app, sk_http_req *req)
{
    const struct sockaddr *sa = sk_http_peer(req);
    if (!sa || sa->sa_family != AF_INET)
        return 0;
    uint32_t peer = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
    const order_limit_proxies *p = order_limit_proxies_of(app->limits);
    if (p->n == 0 || !order_limit_proxy_trusted(p, peer))
        return peer;
    return order_limit_client_ip(p, peer,
                                 sk_http_header(req, "X-Forwarded-For"));
}

/* Frees a request: kept for reuse when on its worker's thread (req_new runs there too)
 * and the worker's chain has room, else free(). */
static void req_free(order_req *r)
{
    struct order_chain *c = r->w ? r->w->chain : NULL;
    if (c && c->nspare < REQ_SPARE_MAX && order_worker_self() == r->w) {
        r->produce_next = c->spare;
        c->spare = r;
        c->nspare++;
        return;
    }
    free(r);
}

/* Answers a waiting request and frees it. */
static void req_error(order_req *r, order_err e, const char *msg, uint64_t order_id)
{
    reply_error(r->w, r->req, r->route, r->start_us, e, msg, order_id);
    req_free(r);
}

static void req_json(order_req *r, int status, const char *body, size_t len)
{
    reply_json(r->w, r->req, r->route, r->start_us, status, body, len);
    req_free(r);
}

static order_req *req_new(order_worker *w, sk_http_req *req, order_route_id route,
                          int64_t start_us, const sk_jwt_claims *claims)
{
    struct order_chain *c = w->chain;
    order_req *r;
    if (c && c->spare && order_worker_self() == w) {
        r = c->spare;
        c->spare = r->produce_next;
        c->nspare--;
        memset(r, 0, sizeof(*r));
    } else if (!(r = calloc(1, sizeof(*r)))) {
        return NULL;
    }
    r->w = w;
    r->req = req;
    r->route = route;
    r->start_us = start_us;
    r->user = claims->sub;
    r->is_admin = claims->is_admin;
    return r;
}

/* A request of event rt->arg that goes on to Redis: answered 503 here (and NULL) when
 * Redis is not connected or memory is short. */
static order_req *req_for_redis(order_worker *w, sk_http_req *req, const order_route *rt,
                                int64_t start_us, const sk_jwt_claims *claims)
{
    if (!order_redis_connected(w->redis)) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return NULL;
    }
    order_req *r = req_new(w, req, rt->id, start_us, claims);
    if (!r) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return NULL;
    }
    r->event_id = rt->arg;
    return r;
}

static int authenticate(order_worker *w, sk_http_req *req, sk_jwt_claims *claims)
{
    const char *h = sk_http_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return -1;
    const char *tok = h + 7;
    while (*tok == ' ')
        tok++;
    int rc = sk_jwt_key_verify(w->jwt, tok, strlen(tok), (int64_t)time(NULL), claims);
    return rc == SK_JWT_OK ? 0 : -1;
}

/* ---- placing an order ---------------------------------------------------------- */

/* cancel.lua answered (or failed): the order surely is not in Kafka, so 503 either way. */
static void done_cancel(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_req *r = req_of_item(it);
    if (code == ORDER_GATE_FAILED)
        sk_log(SK_LOG_WARN, "cancel_failed",
               "order_id=%" PRIu64 " event_id=%" PRIu64 " segment=%u note=\"left pending for the reconciler\"",
               r->order_id, r->event_id, it->seg);
    if (--r->gate_wait > 0)
        return;
    if (r->unclaim) { /* no segment had a unit: the claim is given back, sold out */
        order_soldout_set(r->w->app->soldout, r->event_id, order_time_now_ms());
        req_error(r, ORDER_ERR_SOLD_OUT, NULL, 0);
        return;
    }
    req_error(r, ORDER_ERR_UNAVAILABLE, "the order could not be queued; nothing was taken", 0);
}

/* The order surely is not in Kafka: give the stock back (with this turn's other
 * cancels of its event; a borrowed unit to its lending segment, and the claim at home),
 * then 503. */
static void cancel_then_503(order_req *r)
{
    r->gate_wait = r->lender >= 0 ? 2 : 1;
    order_gate_submit(r->w->chain->gate, ORDER_GATE_CANCEL, &r->gi);
    if (r->lender >= 0)
        order_gate_submit(r->w->chain->gate, ORDER_GATE_CANCEL, &r->lend);
}

/* One order's confirm.lua answered (ok) or failed, after the 202 went out: only
 * book-keeping is left. */
static void done_confirm(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_req *r = req_of_item(it);
    if (code == ORDER_GATE_FAILED)
        /* Kafka has the order: it will reach PostgreSQL. Only the pending entry stays
         * behind, which the reconciler finds already written. */
        sk_log(SK_LOG_WARN, "confirm_failed", "order_id=%" PRIu64 " event_id=%" PRIu64 " segment=%u",
               r->order_id, r->event_id, it->seg);
    if (--r->gate_wait > 0)
        return;
    order_metrics_stage(&r->w->app->metrics, ORDER_STAGE_CONFIRM, order_time_mono_us() - r->stage_us);
    request_done(r->w);
    req_free(r);
}

/* Kafka acknowledged the order. The 202 rests on that acknowledgement alone, so it goes
 * out right after its index entry and confirm.lua are queued, without waiting for their
 * answer: under appendfsync always that answer costs one more fsync of latency. The
 * index entry is sent later in this same loop turn (the index's end-of-turn event), so
 * it is on the Redis connection before the loop reads anything the client can send
 * after the 202; confirm.lua is gathered across turns (up to ORDER_GATE_CONFIRM_WAIT_MS),
 * and a confirm that is late or never lands only leaves a pending entry for the
 * reconciler, which looks at entries 15 s old and must check Kafka and PostgreSQL
 * before it gives stock back anyway.
 * The request counts as in flight until confirm.lua answers, so SIGTERM waits for it. */
static void accept_order(order_req *r)
{
    order_worker *w = r->w;
    order_index_add(w->chain->index, r->order_id, r->event_id, r->user, 1);
    r->gate_wait = r->lender >= 0 ? 2 : 1;
    order_gate_submit(w->chain->gate, ORDER_GATE_CONFIRM, &r->gi);
    if (r->lender >= 0)
        order_gate_submit(w->chain->gate, ORDER_GATE_CONFIRM, &r->lend);
    char body[128];
    size_t n = order_reply_order_queued(body, sizeof(body), r->order_id);
    reply_send(w, r->req, r->route, r->start_us, 202, "application/json", body, n);
    r->req = NULL; /* sk_http frees it once answered */
}

static void after_delivery(order_task *t)
{
    order_req *r = REQ_OF(t);
    order_app *app = r->w->app;
    int64_t now_us = order_time_mono_us();
    order_metrics_stage(&app->metrics, ORDER_STAGE_KAFKA, now_us - r->stage_us);
    r->stage_us = now_us;
    if (r->dr_err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        accept_order(r);
        return;
    }
    atomic_fetch_add_explicit(&app->metrics.kafka_delivery_failures, 1, memory_order_relaxed);
    if (r->dr_status == RD_KAFKA_MSG_STATUS_NOT_PERSISTED) {
        sk_log(SK_LOG_WARN, "delivery_failed",
               "order_id=%" PRIu64 " event_id=%" PRIu64 " err=\"%s\" persisted=no action=cancel",
               r->order_id, r->event_id, rd_kafka_err2str(r->dr_err));
        cancel_then_503(r);
        return;
    }
    /* It may still land (a timed-out in-flight message can be written): keep the stock
     * taken, leave the reservation pending for the reconciler, and let the client poll. */
    sk_log(SK_LOG_WARN, "delivery_failed",
           "order_id=%" PRIu64 " event_id=%" PRIu64 " err=\"%s\" persisted=maybe action=pending",
           r->order_id, r->event_id, rd_kafka_err2str(r->dr_err));
    /* GET then finds it and asks the pending hash (order_msg.h, the index entry). */
    order_index_add(r->w->chain->index, r->order_id, r->event_id, r->user, 0);
    req_error(r, ORDER_ERR_UNAVAILABLE,
              "the order may or may not have been queued: poll GET /api/v1/orders/{order_id}",
              r->order_id);
}

void order_http_on_delivery(void *opaque, rd_kafka_resp_err_t err, rd_kafka_msg_status_t status,
                            int32_t partition, int64_t offset)
{
    order_req *r = opaque;
    r->dr_err = err;
    r->dr_status = status;
    atomic_fetch_sub_explicit(&r->w->app->metrics.kafka_inflight, 1, memory_order_relaxed);
    r->task.fn = after_delivery;
    /* On the request's own worker (worker 0 serves the reports) it goes on at once;
     * otherwise one hop through the owner's inbox. */
    if (order_worker_self() == r->w)
        after_delivery(&r->task);
    else
        order_worker_post(r->w, &r->task);
}

static void produce_now(order_req *r)
{
    order_app *app = r->w->app;
    sk_order_msg m = {r->order_id, r->event_id, r->user, r->now_ms};
    char value[SK_ORDER_MSG_MAX], key[24];
    size_t vlen = sk_order_msg_encode(&m, value, sizeof(value));
    size_t klen = sk_id_format(key, r->event_id);
    atomic_fetch_add_explicit(&app->metrics.kafka_inflight, 1, memory_order_relaxed);
    r->stage_us = order_time_mono_us();
    /* No producer: the loop outlived it at shutdown (the queue is flushed once more
     * after the loop ended, when the producer is gone): give the stock back, 503. */
    int err = app->kafka ? order_kafka_produce(app->kafka, key, klen, value, vlen, r)
                         : RD_KAFKA_RESP_ERR__DESTROY;
    if (err != 0) {
        atomic_fetch_sub_explicit(&app->metrics.kafka_inflight, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&app->metrics.kafka_produce_failures, 1, memory_order_relaxed);
        sk_log(SK_LOG_WARN, "produce_failed", "order_id=%" PRIu64 " err=\"%s\"", r->order_id,
               rd_kafka_err2str((rd_kafka_resp_err_t)err));
        cancel_then_503(r);
    }
}

/* Queues r's message for the end of this loop turn. The replies of one Redis read come
 * back to back; producing each at once woke librdkafka's broker thread on the first and
 * it sent a request with the few queued by then (about 6 orders per ProduceRequest, at
 * about 11 syscalls each). Handed over together, one turn's orders go in one request. */
static void produce(order_req *r)
{
    struct order_chain *c = r->w->chain;
    if (!c->produce_head)
        event_active(c->produce_ev, EV_TIMEOUT, 0); /* this thread's loop: no wake-up */
    r->produce_next = NULL;
    *c->produce_tail = r;
    c->produce_tail = &r->produce_next;
}

static void produce_flush(evutil_socket_t fd, short what, void *worker)
{
    (void)fd;
    (void)what;
    struct order_chain *c = ((order_worker *)worker)->chain;
    order_req *r = c->produce_head;
    c->produce_head = NULL;
    c->produce_tail = &c->produce_head;
    while (r) {
        order_req *next = r->produce_next;
        produce_now(r);
        r = next;
    }
}

static void on_pg_done(order_pg_job *job);
static int submit_pg(order_req *r, void (*next)(order_task *), void (*done)(order_pg_job *));

/* reserve.lua said "not loaded": an unknown event (404), or one whose Redis keys were
 * lost (it is in PostgreSQL): 503 while the reconciler reloads it, once the consumer
 * has drained what was sold before. */
static void after_pg_not_loaded(order_task *t)
{
    order_req *r = REQ_OF(t);
    if (r->job.status == ORDER_PG_NOT_FOUND) {
        req_error(r, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    }
    if (r->job.status != ORDER_PG_OK)
        sk_log(SK_LOG_WARN, "pg_failed", "op=get_event err=\"%s\"", r->job.err);
    else
        sk_log(SK_LOG_WARN, "event_not_loaded", "event_id=%" PRIu64, r->event_id);
    req_error(r, ORDER_ERR_UNAVAILABLE,
              r->job.status == ORDER_PG_OK ? "the event is being reloaded, retry shortly"
                                           : "the database is unavailable",
              0);
}

/* reserve.lua at the user's home segment under the K this front knows (1, the event's
 * own keys, for an event it does not know: reserve.lua corrects it). */
static void gate_reserve(order_req *r)
{
    unsigned k = order_segs_get(r->w->app->segs, r->event_id);
    r->gi.segs = k;
    r->gi.seg = order_seg_home(r->user, k);
    order_gate_submit(r->w->chain->gate, ORDER_GATE_RESERVE, &r->gi);
}

/* The next segment after r->lend.seg, round from the home one, not flagged empty here
 * (order_soldout.h), is asked for a unit; once every other segment was asked or is
 * flagged, the claim is given back and the answer is 409. The flags spare an order the
 * calls to segments another order found empty within soldout.ttl_ms. */
static void borrow_next(order_req *r)
{
    order_soldout *so = r->w->app->soldout;
    int64_t now_ms = order_time_now_ms();
    unsigned next = (r->lend.seg + 1) % r->gi.segs;
    while (next != r->gi.seg && order_soldout_seg_get(so, r->event_id, next, now_ms))
        next = (next + 1) % r->gi.segs;
    if (next == r->gi.seg) {
        r->unclaim = 1;
        r->gate_wait = 1;
        order_gate_submit(r->w->chain->gate, ORDER_GATE_CANCEL, &r->gi);
        return;
    }
    r->lend.seg = next;
    order_gate_submit(r->w->chain->gate, ORDER_GATE_BORROW, &r->lend);
}

/* borrow.lua's code for this order at segment it->seg. No answer: the claim stays with
 * its pending entry (and a unit, if the call ran) for the reconciler; 503. */
static void done_borrow(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_req *r = REQ_OF_LEND(it);
    if (code == ORDER_GATE_FAILED) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (code == 0) {
        r->lender = (int)it->seg;
        produce(r);
        return;
    }
    if (code == 1)
        order_soldout_seg_set(r->w->app->soldout, r->event_id, it->seg, it->segs,
                              order_time_now_ms());
    borrow_next(r); /* 1 empty, 5 not loaded there: the next one */
}

/* reserve.lua's code for this order (its call carried the event's other orders of the
 * same loop turn), or ORDER_GATE_FAILED. */
static void done_reserve(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_req *r = REQ_OF_GATE(it);
    order_app *app = r->w->app;
    int64_t now_us = order_time_mono_us();
    order_metrics_stage(&app->metrics, ORDER_STAGE_RESERVE, now_us - r->stage_us);
    order_admit_record(app->admit, now_us, now_us - r->stage_us);
    if (code != 1) /* not sold out: an expired flag's probe holds the others no longer */
        order_soldout_probe_done(app->soldout, r->event_id);
    if (code == ORDER_GATE_FAILED) {
        /* No answer: reserve.lua may or may not have run. If it did, the pending entry
         * is the reconciler's to give back; the client is told to retry. */
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    order_metrics_reserve(&app->metrics, code);
    if (code == 0) {
        r->now_ms = it->now_ms; /* the pending entry's time, carried by the message */
        produce(r);
        return;
    }
    if (code > 100 && code <= 100 + ORDER_SEGMENTS_MAX && !r->retried) {
        /* this front's K was not the event's: nothing was touched; once more, at the
         * user's home segment under the event's K */
        order_segs_set(app->segs, r->event_id, (unsigned)(code - 100));
        r->retried = 1;
        gate_reserve(r);
        return;
    }
    if (code == 6) { /* the home segment is empty and holds the claim: borrow */
        order_soldout_seg_set(app->soldout, r->event_id, it->seg, it->segs, order_time_now_ms());
        r->now_ms = it->now_ms;
        r->lend = r->gi;
        borrow_next(r);
        return;
    }
    if (code == 1)
        order_soldout_set(app->soldout, r->event_id, order_time_now_ms());
    if (code == 5 && app->pg) {
        r->job.kind = ORDER_PG_GET_EVENT;
        r->job.id = r->event_id;
        if (submit_pg(r, after_pg_not_loaded, on_pg_done) != 0)
            req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    int e = order_err_from_reserve(code);
    req_error(r, e < 0 ? ORDER_ERR_INTERNAL : (order_err)e, NULL, 0);
}

static void reserve(order_req *r)
{
    order_app *app = r->w->app;
    int rc = idgen_next(app->ids_order, &r->order_id);
    if (rc != IDGEN_OK) {
        sk_log(SK_LOG_WARN, "idgen_failed", "err=\"%s\"", idgen_strerror(rc));
        req_error(r, ORDER_ERR_UNAVAILABLE, "no order id available", 0);
        return;
    }
    r->gi.event_id = r->event_id;
    r->gi.user_id = r->user;
    r->gi.order_id = r->order_id;
    r->lender = -1;
    r->stage_us = order_time_mono_us();
    gate_reserve(r);
}

/* The rate of the user and event levels for one event: its own override when it was
 * created with one (a bucket of one second's worth), else the configured level. */
static int64_t user_rate_of(const order_app *app, const order_event_limits *lim)
{
    return lim->user_rate > 0 ? lim->user_rate : app->cfg.ratelimit_rate;
}

static int64_t event_rate_of(const order_app *app, const order_event_limits *lim)
{
    return lim->event_rate > 0 ? lim->event_rate : app->cfg.event_rate;
}

static void on_ratelimit(redisReply *reply, void *arg)
{
    order_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->integer != 1) {
        atomic_fetch_add_explicit(&r->w->app->metrics.rate_limited, 1, memory_order_relaxed);
        reply_limited(r->w, r->req, r->route, r->start_us, ORDER_LIMIT_USER,
                      order_limit_retry_after_s((double)user_rate_of(r->w->app, &r->lim)));
        req_free(r);
        return;
    }
    reserve(r);
}

static void after_event_level(order_req *r);
static void take_event_tokens(order_req *r);

/* One ratelimit.lua call on bucket `key` for `want` tokens. @returns order_redis_script's. */
static int bucket_call(order_req *r, const char *key, size_t klen, long long rate, long long burst,
                       long long want, order_redis_cb *cb)
{
    char rs[24], bs[24], now[24], ws[24];
    const char *args[5] = {key, rs, bs, now, ws};
    size_t lens[5] = {klen, (size_t)snprintf(rs, sizeof(rs), "%lld", rate),
                      (size_t)snprintf(bs, sizeof(bs), "%lld", burst),
                      (size_t)snprintf(now, sizeof(now), "%" PRId64, r->now_ms),
                      (size_t)snprintf(ws, sizeof(ws), "%lld", want)};
    return order_redis_script(r->w->redis, ORDER_SCRIPT_RATELIMIT, 1, 5, args, lens, cb, r);
}

/* The refusals decided in this process, cheapest first, before any Redis call: the
 * sold-out flag, a paused event, the user's local bucket, a known sale window, the
 * Kafka backlog, the gate's p99. @returns 1 when one answered the request. */
static int refuse_locally(order_worker *w, sk_http_req *req, const order_route *rt,
                          int64_t start_us, const sk_jwt_claims *claims, int64_t now_ms,
                          const order_event_limits *lim)
{
    order_app *app = w->app;
    long long retry_s;
    /* The sold-out path never touches Redis: the flag comes before the rate limit. */
    if (order_soldout_get(app->soldout, rt->arg, now_ms)) {
        atomic_fetch_add_explicit(&app->metrics.soldout_flag_hits, 1, memory_order_relaxed);
        reply_error(w, req, rt->id, start_us, ORDER_ERR_SOLD_OUT, NULL, 0);
        return 1;
    }
    if (order_pause_has(app->paused, rt->arg)) {
        set_retry_after(req, 1);
        reply_error(w, req, rt->id, start_us, ORDER_ERR_PAUSED, NULL, 0);
        return 1;
    }
    /* The event's own per-user rate, if it has one, in place of the configured bucket
     * (in process, unless ratelimit.mode = redis: then after_event_level's). */
    if (lim->user_rate > 0 && app->cfg.rl_mode != ORDER_RL_REDIS) {
        if (!order_limit_override_take(app->limits, ORDER_LIMIT_USER, claims->sub, rt->arg,
                                       lim->user_rate, order_time_mono_us(), &retry_s)) {
            atomic_fetch_add_explicit(&app->metrics.rate_limited, 1, memory_order_relaxed);
            reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_USER, retry_s);
            return 1;
        }
    } else if (lim->user_rate == 0 && app->cfg.rl_mode == ORDER_RL_LOCAL &&
               !order_bucket_take(app->buckets, claims->sub, order_time_mono_us())) {
        atomic_fetch_add_explicit(&app->metrics.rate_limited, 1, memory_order_relaxed);
        reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_USER,
                      order_limit_retry_after_s((double)app->cfg.ratelimit_rate));
        return 1;
    }
    /* Before the start (or after the end) of a window known here: Redis would say the same.
     * After the user's bucket, as the gate's answer was: a buyer hammering before the start
     * is limited all the same. */
    order_window_state ws = order_window_get(app->window, rt->arg, now_ms);
    if (ws != ORDER_WINDOW_UNKNOWN) {
        atomic_fetch_add_explicit(&app->metrics.window_hits, 1, memory_order_relaxed);
        reply_error(w, req, rt->id, start_us,
                    ws == ORDER_WINDOW_NOT_STARTED ? ORDER_ERR_NOT_STARTED : ORDER_ERR_ENDED, NULL, 0);
        return 1;
    }
    if (atomic_load_explicit(&app->metrics.kafka_inflight, memory_order_relaxed) >=
        app->cfg.max_kafka_inflight) {
        atomic_fetch_add_explicit(&app->metrics.overload_rejections, 1, memory_order_relaxed);
        set_retry_after(req, 1);
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "too many orders waiting for Kafka", 0);
        return 1;
    }
    if (!order_admit_check(app->admit, start_us, &retry_s)) {
        atomic_fetch_add_explicit(&app->metrics.shed_gate_p99, 1, memory_order_relaxed);
        set_retry_after(req, retry_s);
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE,
                    "the gate is slow (its p99 is past limits.gate_p99_ms): retry later", 0);
        return 1;
    }
    return 0;
}

static void order_create(order_worker *w, sk_http_req *req, const order_route *rt,
                         int64_t start_us, int learned);

/* The event's meta (segment 0's: its window, its K, its rate overrides), read once per
 * event per front for an order of an event not in this front's table, then the order is
 * decided again from the top with what was learnt. */
static void on_event_meta(redisReply *reply, void *arg)
{
    order_req *r = arg;
    order_app *app = r->w->app;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 6) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    redisReply **f = reply->element;
    if (f[0]->type == REDIS_REPLY_STRING && f[1]->type == REDIS_REPLY_STRING) {
        int64_t v[4] = {0, 0, 0, 1};
        for (int i = 0; i < 4; i++)
            if (f[2 + i]->type == REDIS_REPLY_STRING)
                v[i] = strtoll(f[2 + i]->str, NULL, 10);
        order_event_limits lim = {v[0] > 0 ? v[0] : 0, v[1] > 0 ? v[1] : 0, v[2] > 0 ? v[2] : 0};
        if (v[3] >= 1 && v[3] <= ORDER_SEGMENTS_MAX)
            order_segs_set(app->segs, r->event_id, (unsigned)v[3]);
        order_window_set(app->window, r->event_id, strtoll(f[0]->str, NULL, 10),
                         strtoll(f[1]->str, NULL, 10), &lim);
    }
    /* No meta: an unknown event, or one whose keys were lost; the gate answers for it,
     * under the configured levels. */
    order_route rt = {r->route, r->event_id, 0, NULL};
    order_worker *w = r->w;
    sk_http_req *req = r->req;
    int64_t start_us = r->start_us;
    req_free(r);
    order_create(w, req, &rt, start_us, 1);
}

static void learn_event(order_worker *w, sk_http_req *req, const order_route *rt,
                        int64_t start_us, const sk_jwt_claims *claims)
{
    order_req *r = req_for_redis(w, req, rt, start_us, claims);
    if (!r)
        return;
    char key[ORDER_KEY_MAX];
    const char *argv[8] = {"HMGET", key, "starts_at_ms", "ends_at_ms", "ip_rate", "user_rate",
                           "event_rate", "segments"};
    size_t lens[8] = {5, order_key_seg(r->event_id, 0, ORDER_KEY_META, key, sizeof(key))};
    for (int i = 2; i < 8; i++)
        lens[i] = strlen(argv[i]);
    if (order_redis_command(w->redis, 8, argv, lens, on_event_meta, r) != 0)
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

static void handle_order_create(order_worker *w, sk_http_req *req,
                                const order_route *rt, int64_t start_us)
{
    order_create(w, req, rt, start_us, 0);
}

/* An order, from its address level to the gate. `learned`: the second pass, once the
 * event's meta was read (learn_event); its first pass took the configured address level
 * already, so only an override of it is applied now. */
static void order_create(order_worker *w, sk_http_req *req, const order_route *rt,
                         int64_t start_us, int learned)
{
    order_app *app = w->app;
    long long retry_s;
    order_event_limits lim;
    int known = order_window_limits(app->window, rt->arg, &lim);
    /* The address level first: it is the cheapest, and spares the token check's HMAC. */
    if (lim.ip_rate > 0) {
        if (!order_limit_override_take(app->limits, ORDER_LIMIT_IP, client_ip(app, req), rt->arg,
                                       lim.ip_rate, start_us, &retry_s)) {
            reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_IP, retry_s);
            return;
        }
    } else if (!learned && order_limit_ip_on(app->limits) &&
               !order_limit_ip_take(app->limits, client_ip(app, req), start_us, &retry_s)) {
        reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_IP, retry_s);
        return;
    }
    sk_jwt_claims claims;
    if (authenticate(w, req, &claims) != 0) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED, NULL, 0);
        return;
    }
    size_t blen;
    const char *body = sk_http_body(req, &blen);
    char msg[160];
    if (blen > ORDER_BODY_MAX) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_TOO_LARGE, NULL, 0);
        return;
    }
    if (order_body_check_order(body, blen, msg, sizeof(msg)) != 0) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST, msg, 0);
        return;
    }
    if (!known && !learned) { /* an authenticated order of an event new here */
        learn_event(w, req, rt, start_us, &claims);
        return;
    }
    int64_t now_ms = order_time_now_ms();
    if (refuse_locally(w, req, rt, start_us, &claims, now_ms, &lim))
        return;
    order_req *r = req_for_redis(w, req, rt, start_us, &claims);
    if (!r)
        return;
    r->now_ms = now_ms;
    r->lim = lim;
    /* The event's rate: a local token if this front holds one, else a batch from Redis. */
    int64_t erate = event_rate_of(app, &lim);
    int et = erate > 0 ? order_evrate_take(app->evrate, r->event_id, now_ms) : 1;
    if (et < 0) {
        reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_EVENT,
                      order_limit_retry_after_s((double)erate));
        req_free(r);
        return;
    }
    if (et == 0) {
        take_event_tokens(r);
        return;
    }
    after_event_level(r);
}

/* The per-user bucket in Redis mode (one ratelimit.lua call), then the gate. */
static void after_event_level(order_req *r)
{
    order_app *app = r->w->app;
    if (app->cfg.rl_mode == ORDER_RL_REDIS) {
        char key[ORDER_KEY_MAX + 32];
        size_t klen = order_key_ratelimit(r->user, key, sizeof(key));
        long long rate = user_rate_of(app, &r->lim), burst = app->cfg.ratelimit_burst;
        if (r->lim.user_rate > 0) { /* the event's own rate: the user's bucket for this event */
            int n = snprintf(key + klen, sizeof(key) - klen, ":e%" PRIu64, r->event_id);
            klen += n > 0 ? (size_t)n : 0;
            burst = r->lim.user_rate;
        }
        if (bucket_call(r, key, klen, rate, burst, 1, on_ratelimit) != 0)
            req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    reserve(r);
}

static void on_event_tokens(redisReply *reply, void *arg)
{
    order_req *r = arg;
    order_app *app = r->w->app;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->integer < 1) {
        order_evrate_dry(app->evrate, r->event_id, order_time_now_ms());
        reply_limited(r->w, r->req, r->route, r->start_us, ORDER_LIMIT_EVENT,
                      order_limit_retry_after_s((double)event_rate_of(app, &r->lim)));
        req_free(r);
        return;
    }
    if (reply->integer > 1) /* one is this order's; the rest for the next ones here */
        order_evrate_add(app->evrate, r->event_id, reply->integer - 1, order_time_now_ms());
    after_event_level(r);
}

static void take_event_tokens(order_req *r)
{
    order_app *app = r->w->app;
    char key[ORDER_KEY_MAX];
    size_t klen = order_evrate_key(r->event_id, key, sizeof(key));
    /* the event's own rate, if it has one: a bucket of one second's worth */
    long long rate = event_rate_of(app, &r->lim);
    long long burst = r->lim.event_rate > 0 ? r->lim.event_rate : app->cfg.event_burst;
    if (bucket_call(r, key, klen, rate, burst, app->cfg.event_batch, on_event_tokens) != 0)
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

/* ---- pausing an event's sale (admin) ------------------------------------------- */

static void on_pause_set(redisReply *reply, void *arg)
{
    order_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    /* Here at once; the other fronts within events.pause_refresh_ms (order_pauser.h). */
    int paused = r->route == ORDER_ROUTE_EVENT_PAUSE;
    order_pause_set(r->w->app->paused, r->event_id, paused);
    sk_log(SK_LOG_INFO, paused ? "event_paused" : "event_resumed", "event_id=%" PRIu64, r->event_id);
    char body[96];
    req_json(r, 200, body, order_reply_paused(body, sizeof(body), r->event_id, paused));
}

static int pause_send(order_req *r)
{
    char id[24];
    const char *argv[3] = {r->route == ORDER_ROUTE_EVENT_PAUSE ? "SADD" : "SREM", ORDER_PAUSE_KEY, id};
    size_t lens[3] = {4, strlen(ORDER_PAUSE_KEY), (size_t)snprintf(id, sizeof(id), "%" PRIu64, r->event_id)};
    return order_redis_command(r->w->redis, 3, argv, lens, on_pause_set, r);
}

/* Only an event whose gate is loaded is paused: an unknown id is 404, and leaves nothing
 * behind in the set (resume takes any id, to clear what is there). */
static void on_pause_exists(redisReply *reply, void *arg)
{
    order_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->integer != 1) {
        req_error(r, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    }
    if (pause_send(r) != 0)
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

static void handle_event_pause(order_worker *w, sk_http_req *req, const order_route *rt,
                               int64_t start_us)
{
    sk_jwt_claims claims;
    if (authenticate(w, req, &claims) != 0) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED, NULL, 0);
        return;
    }
    if (!claims.is_admin) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_FORBIDDEN, "pausing a sale needs the admin role", 0);
        return;
    }
    order_req *r = req_for_redis(w, req, rt, start_us, &claims);
    if (!r)
        return;
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
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

/* ---- reading an order ---------------------------------------------------------- */

/* Reading an order: its index first (issue 17). While the order is younger than
 * order.index_ttl_s, its index hash holds the front's entry ("<id>": acknowledged, or
 * may have landed) and, once the consumer committed it, the consumer's outcome
 * ("<id>:o": created, rejected; consumer_oidx.h), so a buyer polling a young order
 * costs one HMGET and no PostgreSQL query. PostgreSQL is asked only for what the index
 * cannot tell: an order older than the index, an outcome the consumer did not learn (a
 * replay), and a "may have landed" entry no longer pending. */
static void order_lookup_pg(order_req *r);

static int order_owner_ok(order_req *r, uint64_t owner)
{
    if (owner == r->user || r->is_admin)
        return 1;
    req_error(r, ORDER_ERR_FORBIDDEN, "only the buyer or an admin may read this order", 0);
    return 0;
}

/* pay_by_ms: 0 when unknown or not shown (queued); order_reply_order_pay_by shows it for
 * created and paid orders only, the same answer as PostgreSQL's path gives. */
static void order_answer(order_req *r, uint64_t owner, const char *status, int64_t pay_by_ms)
{
    char body[320];
    size_t n = order_reply_order_pay_by(body, sizeof(body), r->order_id, r->event_id, owner,
                                        status, pay_by_ms);
    req_json(r, 200, body, n);
}

/* HGET of the event's pending hash: "user_id:ts_ms" while the reservation waits for
 * Kafka's answer or the reconciler, nil once settled. */
static void on_order_status(redisReply *reply, void *arg)
{
    order_req *r = arg;
    if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL)) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->type == REDIS_REPLY_NIL) {
        /* Settled: given back (404), or it landed and was confirmed, in which case the
         * consumer has it or will (PostgreSQL says which). */
        order_lookup_pg(r);
        return;
    }
    uint64_t owner = strtoull(reply->str, NULL, 10); /* "user_id:ts_ms" */
    if (order_owner_ok(r, owner))
        order_answer(r, owner, "queued", 0);
}

static int index_field(const redisReply *f, order_index_entry *e)
{
    return f->type == REDIS_REPLY_STRING && order_index_decode(f->str, f->len, e) == 0;
}

/* Whether a PostgreSQL lookup of this young order may start now (order_ocache.h). */
static int young_lookup_allowed(order_req *r)
{
    return r->w->app->pg &&
           order_ocache_claim_lookup(r->w->app->ocache, r->order_id, order_time_now_ms());
}

static void on_order_index(redisReply *reply, void *arg)
{
    order_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    order_index_entry e, o;
    int has_entry = index_field(reply->element[0], &e) && !e.outcome;
    /* A pay, cancel or expiry ("<id>:s", order_msg.h) comes after the consumer's outcome. */
    int has_outcome = index_field(reply->element[2], &o) && o.outcome;
    if (!has_outcome)
        has_outcome = index_field(reply->element[1], &o) && o.outcome;
    if (has_outcome && o.outcome != 'd') { /* the consumer committed it */
        r->event_id = o.event_id;
        /* pay_by: the status entry's (a pay), else the consumer's created entry's; an
         * entry of before pay_by was recorded has none, and the answer goes without */
        order_index_entry c;
        if (!o.pay_by_ms && index_field(reply->element[1], &c) && c.outcome == 'c')
            o.pay_by_ms = c.pay_by_ms;
        order_ocache_put(r->w->app->ocache, r->order_id, o.event_id, o.user_id, o.outcome,
                         o.pay_by_ms, order_time_now_ms());
        if (order_owner_ok(r, o.user_id))
            order_answer(r, o.user_id, order_index_status_name(o.outcome), o.pay_by_ms);
        return;
    }
    int64_t age_s = time(NULL) - ((int64_t)(r->order_id >> 32) + 1704067200LL); /* libidgen */
    if (has_outcome) { /* a replay's status: PostgreSQL has the order's own */
        order_lookup_pg(r);
        return;
    }
    if (!has_entry) {
        /* Older than the index: PostgreSQL. A young id the index does not know was never
         * issued, or its entry was lost (the consumer records the outcome when it writes
         * it): looked up, but within order_ocache's bound, so made-up ids cannot put a
         * query per request on the database. */
        if (age_s < -60) { /* issued in the future (past any clock skew): never issued */
            req_error(r, ORDER_ERR_NOT_FOUND, "no such order", 0);
            return;
        }
        if (age_s >= r->w->app->cfg.index_ttl_s || young_lookup_allowed(r)) {
            order_lookup_pg(r);
            return;
        }
        /* Past the budget: 404, what the lookup would almost surely have said (an entry
         * Redis lost belongs to an order the consumer has not written yet, or it would
         * have recorded its outcome here). */
        req_error(r, ORDER_ERR_NOT_FOUND, "no such order", 0);
        return;
    }
    r->event_id = e.event_id;
    if (e.acked) { /* Kafka has it: queued until the consumer wrote it */
        if (!order_owner_ok(r, e.user_id))
            return;
        /* Still queued long after its id was issued: the consumer may have written it
         * without recording the outcome (Redis failed it), or it lags; PostgreSQL is asked,
         * never for a young one, and at most once per order.pg_lookup_every_ms for each
         * (a buyer polling a stuck order, or many, stays a bounded load). */
        if (age_s >= r->w->app->cfg.order_queued_pg_after_s && young_lookup_allowed(r)) {
            r->queued_owner = e.user_id;
            order_lookup_pg(r);
            return;
        }
        order_answer(r, e.user_id, "queued", 0);
        return;
    }
    /* It may or may not have landed: queued while its reservation is pending (the
     * reconciler settles it), PostgreSQL's answer once it is settled. On a segmented
     * event the entry (a unit or a claim) is in the user's home segment. */
    char pending[ORDER_KEY_MAX], oid[24];
    const char *argv[3] = {"HGET", pending, oid};
    unsigned home = order_seg_home(e.user_id, order_segs_get(r->w->app->segs, r->event_id));
    size_t lens[3] = {4, order_key_seg(r->event_id, home, ORDER_KEY_PENDING, pending, sizeof(pending)),
                      (size_t)snprintf(oid, sizeof(oid), "%" PRIu64, r->order_id)};
    if (order_redis_command(r->w->redis, 3, argv, lens, on_order_status, r) != 0)
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

static void order_lookup_redis(order_req *r)
{
    char key[ORDER_KEY_MAX], oid[24], oout[32], ostat[32];
    const char *argv[5] = {"HMGET", key, oid, oout, ostat};
    size_t lens[5] = {5, order_key_index(r->order_id, key, sizeof(key)),
                      (size_t)snprintf(oid, sizeof(oid), "%" PRIu64, r->order_id),
                      (size_t)snprintf(oout, sizeof(oout), "%" PRIu64 "%s", r->order_id,
                                       ORDER_INDEX_OUTCOME_SUFFIX),
                      (size_t)snprintf(ostat, sizeof(ostat), "%" PRIu64 "%s", r->order_id,
                                       ORDER_INDEX_STATUS_SUFFIX)};
    if (order_redis_command(r->w->redis, 5, argv, lens, on_order_index, r) != 0)
        req_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

static void after_pg_order(order_task *t)
{
    order_req *r = REQ_OF(t);
    order_pg_job *j = &r->job;
    if (j->status == ORDER_PG_ERROR) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=get_order err=\"%s\"", j->err);
        req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    if (j->status == ORDER_PG_NOT_FOUND) {
        if (r->queued_owner) /* acknowledged by Kafka, not written yet */
            order_answer(r, r->queued_owner, "queued", 0);
        else
            req_error(r, ORDER_ERR_NOT_FOUND, "no such order", 0);
        return;
    }
    r->event_id = j->event_id;
    /* kept like an index outcome (a lookup's finding answers until the next lookup) */
    order_ocache_put(r->w->app->ocache, r->order_id, j->event_id, j->user_id,
                     order_index_status_letter(j->order_status), j->pay_by_ms,
                     order_time_now_ms());
    if (order_owner_ok(r, j->user_id)) {
        char body[320]; /* PostgreSQL knows pay_by: the answer carries it */
        size_t n = order_reply_order_pay_by(body, sizeof(body), r->order_id, r->event_id,
                                            j->user_id, j->order_status, j->pay_by_ms);
        req_json(r, 200, body, n);
    }
}

static void on_pg_done(order_pg_job *job)
{
    order_req *r = job->arg;
    order_worker_post(r->w, &r->task);
}

static int submit_pg(order_req *r, void (*next)(order_task *), void (*done)(order_pg_job *))
{
    order_app *app = r->w->app;
    if (!app->pg)
        return -1;
    r->task.fn = next;
    r->job.done = done;
    r->job.arg = r;
    return order_pg_submit(app->pg, &r->job, 4096);
}

static void handle_order_get(order_worker *w, sk_http_req *req, const order_route *rt,
                             int64_t start_us)
{
    sk_jwt_claims claims;
    if (authenticate(w, req, &claims) != 0) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED, NULL, 0);
        return;
    }
    order_req *r = req_new(w, req, rt->id, start_us, &claims);
    if (!r) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    r->order_id = rt->arg;
    uint64_t ev, owner;
    char outcome;
    int64_t pay_by_ms = 0;
    if (order_ocache_get(w->app->ocache, r->order_id, order_time_now_ms(), &ev, &owner,
                         &outcome, &pay_by_ms)) {
        r->event_id = ev; /* a final outcome seen lately: no Redis round trip */
        if (order_owner_ok(r, owner))
            order_answer(r, owner, order_index_status_name(outcome), pay_by_ms);
        return;
    }
    order_lookup_redis(r);
}

static void order_lookup_pg(order_req *r)
{
    if (!r->w->app->pg) { /* no database configured: only orders in the index */
        req_error(r, ORDER_ERR_NOT_FOUND, "no such order", 0);
        return;
    }
    r->job.kind = ORDER_PG_GET_ORDER;
    r->job.id = r->order_id;
    if (submit_pg(r, after_pg_order, on_pg_done) != 0)
        req_error(r, ORDER_ERR_UNAVAILABLE, "the database is busy", 0);
}

/* ---- events ---------------------------------------------------------------------- */

static void after_pg_create(order_task *t)
{
    order_req *r = REQ_OF(t);
    if (r->job.status != ORDER_PG_OK) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=create_event err=\"%s\"", r->job.err);
        req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    if (r->load_rc < 0) {
        sk_log(SK_LOG_WARN, "event_load_failed", "event_id=%" PRIu64 " err=\"%s\"", r->event_id,
               r->job.err);
        req_error(r, ORDER_ERR_UNAVAILABLE, "the event was saved but its stock is not loaded", 0);
        return;
    }
    order_segs_set(r->w->app->segs, r->event_id,
                   r->job.spec.segments > 1 ? (unsigned)r->job.spec.segments : 1);
    sk_log(SK_LOG_INFO, "event_created", "event_id=%" PRIu64 " stock=%" PRId64 " segments=%d",
           r->event_id, r->job.spec.stock, r->job.spec.segments);
    order_window_set(r->w->app->window, r->event_id, r->job.spec.starts_at_ms,
                     r->job.spec.ends_at_ms, &r->job.spec.limits);
    char body[64];
    size_t n = order_reply_event_created(body, sizeof(body), r->event_id);
    req_json(r, 201, body, n);
}

/* On the pool thread, right after the INSERT: load the gate under the event's lock
 * (blocking is fine here, never on a worker), then hand the request back. */
static void on_pg_create_done(order_pg_job *job)
{
    order_req *r = job->arg;
    if (job->status == ORDER_PG_OK)
        r->load_rc = order_loader_load(r->w->app->loader, r->event_id, &job->spec, job->err,
                                       sizeof(job->err));
    order_worker_post(r->w, &r->task);
}

static void handle_event_create(order_worker *w, sk_http_req *req,
                                const order_route *rt, int64_t start_us)
{
    order_app *app = w->app;
    sk_jwt_claims claims;
    if (authenticate(w, req, &claims) != 0) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED, NULL, 0);
        return;
    }
    if (!claims.is_admin) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_FORBIDDEN, "creating events needs the admin role", 0);
        return;
    }
    size_t blen;
    const char *body = sk_http_body(req, &blen);
    if (blen > ORDER_BODY_MAX) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_TOO_LARGE, NULL, 0);
        return;
    }
    order_req *r = req_new(w, req, rt->id, start_us, &claims);
    if (!r) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    char msg[160];
    if (order_body_parse_event(body, blen, &r->job.spec, msg, sizeof(msg)) != 0) {
        req_error(r, ORDER_ERR_BAD_REQUEST, msg, 0);
        return;
    }
    if (!app->pg) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "no database configured", 0);
        return;
    }
    int rc = idgen_next(app->ids_event, &r->event_id);
    if (rc != IDGEN_OK) {
        sk_log(SK_LOG_WARN, "idgen_failed", "err=\"%s\"", idgen_strerror(rc));
        req_error(r, ORDER_ERR_UNAVAILABLE, "no event id available", 0);
        return;
    }
    r->job.kind = ORDER_PG_CREATE_EVENT;
    r->job.id = r->event_id;
    if (submit_pg(r, after_pg_create, on_pg_create_done) != 0)
        req_error(r, ORDER_ERR_UNAVAILABLE, "the database is busy", 0);
}

/* GET /api/v1/events/{id} from this instance's cache (order_events.h): the fixed
 * fields loaded once from PostgreSQL, stock_left read from the gate at most every
 * events.stock_refresh_ms; a request that finds a load or a read under way waits on
 * the entry and is handed back here when it lands. */
#define EV_WAITER_REQ(wt) ((order_req *)((char *)(wt) - offsetof(order_req, ev_wait)))

static void event_get_step(order_req *r);

/* A waiter handed back: 503 if the load it waited on failed, else its step again. */
static void event_waiter_resume(order_task *t)
{
    order_req *r = REQ_OF(t);
    if (r->ev_wait.failed) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    r->ev_step(r);
}

/* Hands every waiter back to its own worker (this one's included: through its inbox,
 * after the current callback), to go on in `fn`. */
static void event_wake(order_events_waiter *list)
{
    while (list) {
        order_events_waiter *next = list->next; /* the waiter may run at once elsewhere */
        order_req *q = EV_WAITER_REQ(list);
        q->task.fn = event_waiter_resume;
        order_worker_post(q->w, &q->task);
        list = next;
    }
}

/* Answers a cached page: Cache-Control, its ETag, 304 when If-None-Match matches,
 * otherwise `head` (the body without its closing brace) plus the server's time, so a
 * countdown to starts_at can correct the client's clock. */
static void cached_send(order_worker *w, sk_http_req *req, order_route_id route,
                        int64_t start_us, const char *head, size_t hlen, const char *etag,
                        int64_t now_ms)
{
    order_app *app = w->app;
    char cc[48];
    snprintf(cc, sizeof(cc), "public, max-age=%lld", app->cfg.events_max_age_s);
    sk_http_add_header(req, "Cache-Control", cc);
    sk_http_add_header(req, "ETag", etag);
    const char *inm = sk_http_header(req, "If-None-Match");
    if (inm && order_events_etag_match(inm, etag)) {
        reply_json(w, req, route, start_us, 304, "", 0);
        return;
    }
    char now[32], tail[48];
    order_time_format_rfc3339(now_ms, now, sizeof(now));
    int tlen = snprintf(tail, sizeof(tail), ",\"now\":\"%s\"}", now);
    char stackbuf[4096];
    char *body = hlen + (size_t)tlen <= sizeof(stackbuf) ? stackbuf : malloc(hlen + (size_t)tlen);
    if (!body) {
        reply_error(w, req, route, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    memcpy(body, head, hlen);
    memcpy(body + hlen, tail, (size_t)tlen);
    reply_json(w, req, route, start_us, 200, body, hlen + (size_t)tlen);
    if (body != stackbuf)
        free(body);
}

static void cached_reply(order_req *r, const char *head, size_t hlen, const char *etag, int64_t now_ms)
{
    cached_send(r->w, r->req, r->route, r->start_us, head, hlen, etag, now_ms);
    req_free(r);
}

static void event_reply(order_req *r, const order_event_view *v, int64_t now_ms)
{
    cached_reply(r, v->body, v->body_len, v->etag, now_ms);
}

/* One segment's stock (all of it when K = 1); the figure is the sum once every
 * segment answered, kept from before if one did not. */
static void on_event_stock(redisReply *reply, void *arg)
{
    order_req *r = arg;
    order_app *app = r->w->app;
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        sk_log(SK_LOG_WARN, "event_stock_failed", "event_id=%" PRIu64 " note=\"last figure kept\"",
               r->event_id);
    if (reply && reply->type == REDIS_REPLY_STRING)
        r->stock_sum += strtoll(reply->str, NULL, 10);
    else
        r->stock_bad = 1;
    if (--r->stock_wait > 0)
        return;
    event_wake(order_events_stock(app->events, r->event_id, !r->stock_bad, r->stock_sum,
                                  order_time_now_ms()));
    event_get_step(r);
}

static void after_pg_event(order_task *t)
{
    order_req *r = REQ_OF(t);
    order_app *app = r->w->app;
    if (r->job.status == ORDER_PG_NOT_FOUND) {
        event_wake(order_events_absent(app->events, r->event_id, order_time_now_ms()));
        req_error(r, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    }
    if (r->job.status != ORDER_PG_OK) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=get_event err=\"%s\"", r->job.err);
        event_wake(order_events_failed(app->events, r->event_id));
        req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    order_segs_set(app->segs, r->event_id,
                   r->job.spec.segments > 1 ? (unsigned)r->job.spec.segments : 1);
    order_window_set(app->window, r->event_id, r->job.spec.starts_at_ms, r->job.spec.ends_at_ms,
                     &r->job.spec.limits);
    event_wake(order_events_loaded(app->events, r->event_id, &r->job.spec, r->job.stock_left,
                                   order_time_now_ms()));
    event_get_step(r);
}

static void event_get_step(order_req *r)
{
    order_app *app = r->w->app;
    int64_t now_ms = order_time_now_ms();
    order_event_view v;
    switch (order_events_lookup(app->events, r->event_id, now_ms, &r->ev_wait, &v)) {
    case ORDER_EVENTS_FRESH:
        event_reply(r, &v, now_ms);
        return;
    case ORDER_EVENTS_WAIT:
        return;
    case ORDER_EVENTS_ABSENT:
        req_error(r, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    case ORDER_EVENTS_BUSY:
        sk_http_add_header(r->req, "Retry-After", "1");
        req_error(r, ORDER_ERR_UNAVAILABLE, "too many lookups of events not in memory", 0);
        return;
    case ORDER_EVENTS_LOAD:
        r->job.kind = ORDER_PG_GET_EVENT;
        r->job.id = r->event_id;
        if (submit_pg(r, after_pg_event, on_pg_done) != 0) {
            event_wake(order_events_failed(app->events, r->event_id));
            req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        }
        return;
    case ORDER_EVENTS_REFRESH: {
        /* stock_left: the gate's live figure (PostgreSQL's lags behind the consumer),
         * the sum of the segments' (one GET each: they are in K slots). */
        unsigned k = order_segs_get(app->segs, r->event_id);
        r->stock_sum = 0;
        r->stock_bad = 0;
        r->stock_wait = (int)k;
        for (unsigned seg = 0; seg < k; seg++) {
            char key[ORDER_KEY_MAX];
            const char *argv[2] = {"GET", key};
            size_t lens[2] = {3, order_key_seg(r->event_id, seg, ORDER_KEY_STOCK, key, sizeof(key))};
            if (order_redis_command(r->w->redis, 2, argv, lens, on_event_stock, r) != 0)
                on_event_stock(NULL, r);
        }
        return;
    }
    }
}

/* GET /api/v1/events?offset=O&limit=L: the current and upcoming events from this
 * instance's snapshot (order_evlist.h), refreshed from PostgreSQL at most every
 * events.list_refresh_ms; a stale snapshot is answered while its refresh runs. */
static void event_list_step(order_req *r);

/* A refresh landed (r: the request that ran it, or a bare order_req when it ran behind
 * an answered request). */
static void after_pg_list(order_task *t)
{
    order_req *r = REQ_OF(t);
    order_app *app = r->w->app;
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
    if (!r->req) { /* a refresh behind the answers */
        free(r);
        return;
    }
    if (r->job.status != ORDER_PG_OK) {
        req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    event_list_step(r);
}

static int event_list_submit(order_req *r)
{
    r->job.kind = ORDER_PG_LIST_EVENTS;
    r->job.id = (uint64_t)r->w->app->cfg.events_list_max;
    return submit_pg(r, after_pg_list, on_pg_done);
}

static void event_list_step(order_req *r)
{
    order_app *app = r->w->app;
    int64_t now_ms = order_time_now_ms();
    char *body = NULL, etag[24];
    size_t len = 0;
    int refresh = 0;
    /* offset and limit ride in order_id and user (unused by this route). */
    order_events_status st = order_evlist_page(app->evlist, now_ms, (size_t)r->order_id,
                                               (size_t)r->event_id, &r->ev_wait, &body, &len,
                                               etag, &refresh);
    if (refresh) {
        order_req *bg = calloc(1, sizeof(*bg));
        if (!bg || (bg->w = r->w, event_list_submit(bg) != 0)) {
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
            req_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        }
        return;
    default:
        req_error(r, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
    }
}

/* A query parameter as a decimal in [lo, hi]; `def` when absent. @returns 0 or -1. */
static int query_num(const struct evkeyvalq *q, const char *name, long long lo, long long hi,
                     long long def, long long *out)
{
    const char *v = evhttp_find_header(q, name);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

static void handle_event_list(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us)
{
    sk_jwt_claims claims;
    if (authenticate(w, req, &claims) != 0) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED, NULL, 0);
        return;
    }
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    const char *uri = sk_http_uri(req), *qs = strchr(uri, '?');
    long long offset, limit;
    int bad = qs && evhttp_parse_query_str(qs + 1, &q) != 0;
    bad = bad || query_num(&q, "offset", 0, 1000000, 0, &offset) != 0 ||
          query_num(&q, "limit", 1, ORDER_EVLIST_LIMIT_MAX, 20, &limit) != 0;
    evhttp_clear_headers(&q);
    if (bad) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST,
                    "offset is 0 to 1000000 and limit 1 to 100", 0);
        return;
    }
    order_req *r = req_new(w, req, rt->id, start_us, &claims);
    if (!r) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    r->order_id = (uint64_t)offset;
    r->event_id = (uint64_t)limit;
    r->ev_step = event_list_step;
    event_list_step(r);
}

static void handle_event_get(order_worker *w, sk_http_req *req, const order_route *rt,
                             int64_t start_us)
{
    sk_jwt_claims claims;
    if (authenticate(w, req, &claims) != 0) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED, NULL, 0);
        return;
    }
    /* The fast path: a fresh entry is answered without a request object. */
    int64_t now_ms = order_time_now_ms();
    order_event_view v;
    if (order_events_peek(w->app->events, rt->arg, now_ms, &v) == ORDER_EVENTS_FRESH) {
        cached_send(w, req, rt->id, start_us, v.body, v.body_len, v.etag, now_ms);
        return;
    }
    order_req *r = req_new(w, req, rt->id, start_us, &claims);
    if (!r) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    r->event_id = rt->arg;
    r->ev_step = event_get_step;
    event_get_step(r);
}

/* ---- the entry point ------------------------------------------------------------- */

/* /metrics when metrics.token is set: the exact bearer, compared in constant time. */
static int metrics_allowed(const order_app *app, sk_http_req *req)
{
    const char *want = app->cfg.metrics_token;
    if (!*want)
        return 1;
    const char *h = sk_http_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return 0;
    h += 7;
    size_t n = strlen(want);
    if (strlen(h) != n)
        return 0;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(h[i] ^ want[i]);
    return diff == 0;
}

static order_method method_of(sk_http_req *req)
{
    switch (sk_http_method_of(req)) {
    case SK_HTTP_GET: return ORDER_METHOD_GET;
    case SK_HTTP_POST: return ORDER_METHOD_POST;
    case SK_HTTP_HEAD: return ORDER_METHOD_HEAD;
    default: return ORDER_METHOD_OTHER;
    }
}

/* CONNECT and TRACE are never served, and their connection is closed: answered first,
 * whatever their framing, as 405 with an Allow header (RFC 9110 asks for one): the
 * path's methods, or the server's for a target that is no path of ours (CONNECT's
 * host:port). */
static void reply_connect_trace(order_worker *w, sk_http_req *req, int64_t start_us)
{
    const char *u = sk_http_uri(req);
    order_route rt;
    order_route_match(ORDER_METHOD_OTHER, u, strcspn(u, "?#"), &rt);
    sk_http_close_after(req);
    sk_http_add_header(req, "Allow", rt.status == 405 ? rt.allow : "GET, HEAD, POST");
    reply_error(w, req, rt.status == 405 ? rt.id : ORDER_ROUTE_NONE, start_us, ORDER_ERR_METHOD,
                NULL, 0);
}

/* Answers what the route or the framing refuses: refused framing (sk_http.h) first,
 * with the connection closed, since what follows on it cannot be trusted to be a
 * request, yet a method the path does not take is still said as such (405, closed
 * too); then 404, 405 and 400 of the route. @returns 1 when answered. */
static int reply_refused(order_worker *w, sk_http_req *req, const order_route *rt,
                         int64_t start_us)
{
    const char *framing = sk_http_framing(req);
    if (framing) {
        sk_http_add_header(req, "Connection", "close");
        if (rt->status != 405) {
            reply_error(w, req, ORDER_ROUTE_NONE, start_us, ORDER_ERR_BAD_REQUEST, framing, 0);
            return 1;
        }
    }
    if (rt->status == 404) {
        reply_error(w, req, ORDER_ROUTE_NONE, start_us, ORDER_ERR_NOT_FOUND, "no such path", 0);
        return 1;
    }
    if (rt->status == 405) {
        sk_http_add_header(req, "Allow", rt->allow);
        reply_error(w, req, rt->id, start_us, ORDER_ERR_METHOD, NULL, 0);
        return 1;
    }
    if (rt->status == 400) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST,
                    "ids are decimal numbers from 1 to 9223372036854775807", 0);
        return 1;
    }
    return 0;
}

static void handle_readyz(order_worker *w, sk_http_req *req, const order_route *rt,
                          int64_t start_us)
{
    order_app *app = w->app;
    int redis_ok = order_redis_connected(w->redis), kafka_ok = order_kafka_ready(app->kafka);
    if (redis_ok && kafka_ok && !atomic_load(&app->draining)) {
        reply_json(w, req, rt->id, start_us, 200, "{\"status\":\"ready\"}", 18);
        return;
    }
    char msg[128];
    snprintf(msg, sizeof(msg), "redis: %s, kafka: %s%s", redis_ok ? "ok" : "down",
             kafka_ok ? "ok" : "down", atomic_load(&app->draining) ? ", draining" : "");
    reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, msg, 0);
}

static void handle_metrics(order_worker *w, sk_http_req *req, const order_route *rt,
                           int64_t start_us)
{
    order_app *app = w->app;
    if (!metrics_allowed(app, req)) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED,
                    "metrics.token is set: send Authorization: Bearer <metrics.token>", 0);
        return;
    }
    size_t len = 0;
    char *text = order_metrics_render(&app->metrics, &len);
    if (!text) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_INTERNAL, NULL, 0);
        return;
    }
    reply_raw(w, req, rt->id, start_us, 200, "text/plain; version=0.0.4", text, len);
    free(text);
}

static void handle_console(order_worker *w, sk_http_req *req, const order_route *rt,
                           const char *uri, size_t plen, int64_t start_us)
{
    const char *ctype;
    size_t len;
    const char *file = order_console_find(uri, plen, &ctype, &len);
    if (!file) {
        reply_error(w, req, rt->id, start_us, ORDER_ERR_NOT_FOUND, "no such file", 0);
        return;
    }
    sk_http_add_header(req, "Content-Security-Policy", ORDER_CONSOLE_CSP);
    sk_http_add_header(req, "X-Content-Type-Options", "nosniff");
    sk_http_add_header(req, "Referrer-Policy", "no-referrer");
    sk_http_add_header(req, "Cache-Control", "no-cache");
    reply_raw(w, req, rt->id, start_us, 200, ctype, file, len);
}

void order_http_handle(sk_http_req *req, void *arg)
{
    order_worker *w = arg;
    order_app *app = w->app;
    int64_t start_us = order_time_mono_us();
    int64_t inflight =
        atomic_fetch_add_explicit(&app->metrics.requests_inflight, 1, memory_order_relaxed) + 1;
    sk_http_method cmd = sk_http_method_of(req);
    if (cmd == SK_HTTP_CONNECT || cmd == SK_HTTP_TRACE) {
        reply_connect_trace(w, req, start_us);
        return;
    }
    const char *uri = sk_http_uri(req);
    size_t plen = strcspn(uri, "?#");
    order_route rt;
    order_route_match(method_of(req), uri, plen, &rt);
    if (reply_refused(w, req, &rt, start_us))
        return;
    switch (rt.id) {
    case ORDER_ROUTE_HEALTHZ:
        reply_json(w, req, rt.id, start_us, 200, "{\"status\":\"ok\"}", 15);
        return;
    case ORDER_ROUTE_READYZ:
        handle_readyz(w, req, &rt, start_us);
        return;
    case ORDER_ROUTE_METRICS:
        handle_metrics(w, req, &rt, start_us);
        return;
    case ORDER_ROUTE_CONSOLE:
        handle_console(w, req, &rt, uri, plen, start_us);
        return;
    default:
        break;
    }
    /* Past the bound, answer at once rather than queue without limit. */
    if (inflight > app->cfg.max_inflight) {
        atomic_fetch_add_explicit(&app->metrics.overload_rejections, 1, memory_order_relaxed);
        reply_error(w, req, rt.id, start_us, ORDER_ERR_UNAVAILABLE, "too many requests in flight", 0);
        return;
    }
    switch (rt.id) {
    case ORDER_ROUTE_ORDER_CREATE:
        handle_order_create(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_ORDER_GET:
        handle_order_get(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_CREATE:
        handle_event_create(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_GET:
        handle_event_get(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_LIST:
        handle_event_list(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_ORDER_PAY:
    case ORDER_ROUTE_ORDER_CANCEL:
        order_pay_http_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_PAUSE:
    case ORDER_ROUTE_EVENT_RESUME:
        handle_event_pause(w, req, &rt, start_us);
        break;
    default:
        reply_error(w, req, ORDER_ROUTE_NONE, start_us, ORDER_ERR_NOT_FOUND, "no such path", 0);
    }
}

/* ---- for the other handler files (order_http.h) --------------------------------- */

int order_http_authenticate(order_worker *w, sk_http_req *req, sk_jwt_claims *claims)
{
    return authenticate(w, req, claims);
}

void order_http_reply_error(order_worker *w, sk_http_req *req, order_route_id route,
                            int64_t start_us, order_err e, const char *msg, uint64_t order_id)
{
    reply_error(w, req, route, start_us, e, msg, order_id);
}

void order_http_reply_json(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us, int status, const char *body, size_t len)
{
    reply_json(w, req, route, start_us, status, body, len);
}

/* ---- the worker's order chain (order_app.h's hooks) ------------------------------ */

static int chain_new(order_worker *w)
{
    struct order_chain *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    w->chain = c;
    order_gate_done_fn *const done[ORDER_GATE_OPS] = {done_reserve, done_cancel, done_confirm,
                                                      done_borrow};
    c->gate = order_gate_new(w->base, w->redis, &w->app->metrics, done, NULL);
    c->index = order_index_new(w->base, w->redis, w->app->cfg.index_ttl_s);
    c->produce_ev = event_new(w->base, -1, 0, produce_flush, w);
    c->produce_tail = &c->produce_head;
    if (w->index == 0 &&
        !(c->pauser = order_pauser_new(w->base, w->redis, w->app->paused,
                                       w->app->cfg.events_pause_refresh_ms)))
        return -1;
    return c->gate && c->index && c->produce_ev ? 0 : -1;
}

/* Messages queued in the loop's last turn go out (or fail: without a producer the stock
 * is given back), then the index entries and the gate's calls; from then on the gate
 * fails what is submitted, so the Redis connection's pending callbacks (NULL replies
 * once it is freed) still answer every request. */
static void chain_flush(order_worker *w)
{
    struct order_chain *c = w->chain;
    if (c->produce_ev)
        produce_flush(-1, 0, w);
    if (c->index)
        order_index_flush(c->index);
    order_gate_close(c->gate);
}

static void chain_free(order_worker *w)
{
    struct order_chain *c = w->chain;
    order_gate_free(c->gate);
    order_index_free(c->index);
    order_pauser_free(c->pauser);
    if (c->produce_ev)
        event_free(c->produce_ev);
    while (c->spare) {
        order_req *r = c->spare;
        c->spare = r->produce_next;
        free(r);
    }
    free(c);
    w->chain = NULL;
}

const order_worker_hooks order_http_hooks = {order_http_handle, chain_new, chain_flush, chain_free};
