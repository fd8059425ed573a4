/* order_place_gate: the order chain from the gate on, for one order past every check of
 * order_place.c, on its worker's loop:
 *   order id (libidgen) -> the gate (order_gate.h: reserve.lua, one call per event for
 *      the orders of one loop turn; borrow.lua from another segment when the home one
 *      is empty)
 *   -> produce to Kafka (the turn's messages together) ... delivery report (served on
 *      worker 0; other workers' handed back through their inbox)
 *   -> acknowledged: index entry (order_index.h) queued for the end of the turn,
 *      confirm.lua gathered across turns (order_gate.h), 202 (not waiting for either)
 *   -> NOT_PERSISTED: cancel.lua (batched like reserve) -> 503
 *   -> POSSIBLY_PERSISTED: the reservation stays pending -> 503 with the order id.
 * With redis.wait_replicas, a WAIT stands between the reservation and the produce
 * (order_place_wait.h; fewer replicas: cancel.lua -> 503).
 * No 202 is sent before Kafka acknowledged the order. The Redis arguments of the gate's
 * scripts and the index writes live in their modules. Also here: the worker's chain
 * (order_place.h's hooks) and its pool of placement requests. */
#include "order_place_gate.h"
#include "order_place_int.h"
#include "order_place_wait.h"
#include "order_read.h"
#include "order_index.h"
#include "order_pauser.h"
#include "order_msg.h"
#include "order_time.h"
#include "sk_id.h"
#include "sk_log.h"
#include "sk_order_msg.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The request of a confirm or cancel item: its home item (gi), or, on a segmented event,
 * the item of the lending segment, which is never the user's home. */
static order_place_req *req_of_item(order_gate_item *it)
{
    if (it->segs > 1 && it->seg != order_seg_home(it->user_id, it->segs))
        return ORDER_CONTAINER_OF(it, order_place_req, lend);
    return ORDER_CONTAINER_OF(it, order_place_req, gi);
}

/* A worker's order chain (order_app.h's w->chain). */
struct order_chain {
    order_gate *gate;
    order_index *index;
    /* Reserved orders whose message is still to be produced: handed to librdkafka
     * together at the end of the loop turn that reserved them. */
    order_place_req *produce_head, **produce_tail;
    struct event *produce_ev;
    order_pauser *pauser; /* worker 0 only: reads the paused events */
    order_place_wait *wait; /* redis.wait_replicas: WAIT before the produce, else NULL */
    /* Freed requests kept for the next ones (linked by next): a list pop instead of
     * malloc's work. When the request still carried a PostgreSQL job (over 1 KB), each
     * calloc of one took glibc's large-chunk path (fastbin consolidation, 1.9k
     * instructions per placed order, issue 16); at about 240 bytes now, it is still
     * over the fastbin sizes. */
    order_place_req *spare;
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

order_place_req *order_place_req_new(order_worker *w, sk_http_req *req, const order_route *rt,
                                     int64_t start_us, uint64_t user)
{
    struct order_chain *c = w->chain;
    order_place_req *r;
    if (c && c->spare && order_worker_self() == w) {
        r = c->spare;
        c->spare = r->next;
        c->nspare--;
        memset(r, 0, sizeof(*r));
    } else if (!(r = calloc(1, sizeof(*r)))) {
        return NULL;
    }
    r->h.w = w;
    r->h.req = req;
    r->h.route = rt->id;
    r->h.start_us = start_us;
    r->user = user;
    r->event_id = rt->arg;
    return r;
}

/* Kept for reuse when on its worker's thread (order_place_req_new runs there too) and
 * the worker's chain has room, else free(). */
void order_place_req_free(order_place_req *r)
{
    struct order_chain *c = r->h.w ? r->h.w->chain : NULL;
    if (c && c->nspare < REQ_SPARE_MAX && order_worker_self() == r->h.w) {
        r->next = c->spare;
        c->spare = r;
        c->nspare++;
        return;
    }
    free(r);
}

void order_place_error(order_place_req *r, order_err e, const char *msg, uint64_t order_id)
{
    order_req_reply_error(&r->h, e, msg, order_id);
    order_place_req_free(r);
}

/* cancel.lua answered (or failed): the order surely is not in Kafka, so 503 either way. */
static void done_cancel(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_place_req *r = req_of_item(it);
    if (code == ORDER_GATE_FAILED)
        sk_log(SK_LOG_WARN, "cancel_failed",
               "order_id=%" PRIu64 " event_id=%" PRIu64
               " segment=%u note=\"left pending for the reconciler\"",
               r->order_id, r->event_id, it->seg);
    if (--r->gate_wait > 0)
        return;
    if (r->unclaim) { /* no segment had a unit: the claim is given back, sold out */
        order_soldout_set(r->h.w->app->soldout, r->event_id, order_time_now_ms());
        order_place_error(r, ORDER_ERR_SOLD_OUT, NULL, 0);
        return;
    }
    order_place_error(r, ORDER_ERR_UNAVAILABLE, "the order could not be queued; nothing was taken",
                      0);
}

/* The order surely is not in Kafka: give the stock back (with this turn's other
 * cancels of its event; a borrowed unit to its lending segment, and the claim at home),
 * then 503. */
static void cancel_then_503(order_place_req *r)
{
    r->gate_wait = r->lender >= 0 ? 2 : 1;
    order_gate_submit(r->h.w->chain->gate, ORDER_GATE_CANCEL, &r->gi);
    if (r->lender >= 0)
        order_gate_submit(r->h.w->chain->gate, ORDER_GATE_CANCEL, &r->lend);
}

/* One order's confirm.lua answered (ok) or failed, after the 202 went out: only
 * book-keeping is left. */
static void done_confirm(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_place_req *r = req_of_item(it);
    if (code == ORDER_GATE_FAILED)
        /* Kafka has the order: it will reach PostgreSQL. Only the pending entry stays
         * behind, which the reconciler finds already written. */
        sk_log(SK_LOG_WARN, "confirm_failed",
               "order_id=%" PRIu64 " event_id=%" PRIu64 " segment=%u", r->order_id, r->event_id,
               it->seg);
    if (--r->gate_wait > 0)
        return;
    order_metrics_stage(&r->h.w->app->metrics, ORDER_STAGE_CONFIRM,
                        order_time_mono_us() - r->stage_us);
    order_http_request_done(r->h.w);
    order_place_req_free(r);
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
static void accept_order(order_place_req *r)
{
    order_worker *w = r->h.w;
    order_index_add(w->chain->index, r->order_id, r->event_id, r->user, 1);
    r->gate_wait = r->lender >= 0 ? 2 : 1;
    order_gate_submit(w->chain->gate, ORDER_GATE_CONFIRM, &r->gi);
    if (r->lender >= 0)
        order_gate_submit(w->chain->gate, ORDER_GATE_CONFIRM, &r->lend);
    char body[128];
    size_t n = order_reply_order_queued(body, sizeof(body), r->order_id);
    order_http_reply_send(w, r->h.req, r->h.route, r->h.start_us, 202, "application/json", body, n);
    r->h.req = NULL; /* sk_http frees it once answered */
}

static void after_delivery(order_task *t)
{
    order_place_req *r = ORDER_CONTAINER_OF(t, order_place_req, h.task);
    order_app *app = r->h.w->app;
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
    order_index_add(r->h.w->chain->index, r->order_id, r->event_id, r->user, 0);
    order_place_error(
        r, ORDER_ERR_UNAVAILABLE,
        "the order may or may not have been queued: poll GET /api/v1/orders/{order_id}",
        r->order_id);
}

void order_place_on_delivery(void *opaque, rd_kafka_resp_err_t err, rd_kafka_msg_status_t status,
                             int32_t partition, int64_t offset)
{
    order_place_req *r = opaque;
    r->dr_err = err;
    r->dr_status = status;
    atomic_fetch_sub_explicit(&r->h.w->app->metrics.kafka_inflight, 1, memory_order_relaxed);
    r->h.task.fn = after_delivery;
    /* On the request's own worker (worker 0 serves the reports) it goes on at once;
     * otherwise one hop through the owner's inbox. */
    if (order_worker_self() == r->h.w)
        after_delivery(&r->h.task);
    else
        order_worker_post(r->h.w, &r->h.task);
}

static void produce_now(order_place_req *r)
{
    order_app *app = r->h.w->app;
    sk_order_msg m = {.order_id = r->order_id, .event_id = r->event_id, .user_id = r->user,
                      .ts_ms = r->now_ms, .quantity = r->quantity};
    if (app->msg_keys && sk_order_msg_sign(app->msg_keys, &m) != 0) {
        cancel_then_503(r); /* only the gate signs (issue 33); unsigned it would be lost */
        return;
    }
    char value[SK_ORDER_MSG_MAX_SIGNED], key[24];
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
static void produce(order_place_req *r)
{
    struct order_chain *c = r->h.w->chain;
    if (!c->produce_head)
        event_active(c->produce_ev, EV_TIMEOUT, 0); /* this thread's loop: no wake-up */
    r->next = NULL;
    *c->produce_tail = r;
    c->produce_tail = &r->next;
}

static void produce_flush(evutil_socket_t fd, short what, void *worker)
{
    (void)fd;
    (void)what;
    struct order_chain *c = ((order_worker *)worker)->chain;
    order_place_req *r = c->produce_head;
    c->produce_head = NULL;
    c->produce_tail = &c->produce_head;
    while (r) {
        order_place_req *next = r->next;
        produce_now(r);
        r = next;
    }
}

/* reserve.lua said "not loaded": PostgreSQL is asked whether the event exists. A rare
 * path, so its request is a separate one (the PostgreSQL job is larger than the rest of
 * an order), which takes the answer over from the order's. */
typedef struct not_loaded_req {
    order_req_head h;
    uint64_t event_id;
    order_pg_job job;
} not_loaded_req;

/* An unknown event (404), or one whose Redis keys were lost (it is in PostgreSQL): 503
 * while the reconciler reloads it, once the consumer has drained what was sold before. */
static void after_pg_not_loaded(order_task *t)
{
    not_loaded_req *q = ORDER_CONTAINER_OF(t, not_loaded_req, h.task);
    if (q->job.status == ORDER_PG_NOT_FOUND) {
        order_req_reply_error(&q->h, ORDER_ERR_NOT_FOUND, "no such event", 0);
        free(q);
        return;
    }
    if (q->job.status != ORDER_PG_OK)
        sk_log(SK_LOG_WARN, "pg_failed", "op=get_event err=\"%s\"", q->job.err);
    else
        sk_log(SK_LOG_WARN, "event_not_loaded", "event_id=%" PRIu64, q->event_id);
    order_req_reply_error(&q->h, ORDER_ERR_UNAVAILABLE,
                          q->job.status == ORDER_PG_OK
                              ? "the event is being reloaded, retry shortly"
                              : "the database is unavailable",
                          0);
    free(q);
}

static void lookup_not_loaded(order_place_req *r)
{
    not_loaded_req *q = calloc(1, sizeof(*q));
    if (!q) {
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    q->h = r->h;
    q->event_id = r->event_id;
    q->job.kind = ORDER_PG_GET_EVENT;
    q->job.id = r->event_id;
    if (order_req_submit_pg(&q->h, &q->job, after_pg_not_loaded, NULL) != 0) {
        free(q);
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    order_place_req_free(r);
}

/* reserve.lua at the user's home segment under the K this front knows (1, the event's
 * own keys, for an event it does not know: reserve.lua corrects it). */
static void gate_reserve(order_place_req *r)
{
    unsigned k = order_segs_get(r->h.w->app->segs, r->event_id);
    r->gi.segs = k;
    r->gi.seg = order_seg_home(r->user, k);
    order_gate_submit(r->h.w->chain->gate, ORDER_GATE_RESERVE, &r->gi);
}

/* The next segment after r->lend.seg, round from the home one, not flagged empty here
 * (order_soldout.h), is asked for a unit; once every other segment was asked or is
 * flagged, the claim is given back and the answer is 409. The flags spare an order the
 * calls to segments another order found empty within soldout.ttl_ms. */
static void borrow_next(order_place_req *r)
{
    order_soldout *so = r->h.w->app->soldout;
    int64_t now_ms = order_time_now_ms();
    unsigned next = (r->lend.seg + 1) % r->gi.segs;
    while (next != r->gi.seg && order_soldout_seg_get(so, r->event_id, next, now_ms))
        next = (next + 1) % r->gi.segs;
    if (next == r->gi.seg) {
        r->unclaim = 1;
        r->gate_wait = 1;
        order_gate_submit(r->h.w->chain->gate, ORDER_GATE_CANCEL, &r->gi);
        return;
    }
    r->lend.seg = next;
    order_gate_submit(r->h.w->chain->gate, ORDER_GATE_BORROW, &r->lend);
}

/* Reserved: to Kafka, through the WAIT when redis.wait_replicas asks for one. */
static void reserved(order_place_req *r)
{
    struct order_chain *c = r->h.w->chain;
    if (c->wait)
        order_place_wait_add(c->wait, r);
    else
        produce(r);
}

/* borrow.lua's code for this order at segment it->seg. No answer: the claim stays with
 * its pending entry (and a unit, if the call ran) for the reconciler; 503. */
static void done_borrow(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_place_req *r = ORDER_CONTAINER_OF(it, order_place_req, lend);
    if (code == ORDER_GATE_FAILED) {
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (code == 0) {
        r->lender = (int)it->seg;
        reserved(r);
        return;
    }
    if (code == 1)
        order_soldout_seg_set(r->h.w->app->soldout, r->event_id, it->seg, it->segs,
                              order_time_now_ms());
    borrow_next(r); /* 1 empty, 5 not loaded there: the next one */
}

/* An order of several units refused by reserve.lua, nothing taken (issue 31): its
 * quantity over the event's per_user_limit (400 naming the field), fewer units left
 * than it asks (409 sold_out with "left"), or the user's units would pass the limit
 * (409 limit_reached with the units held and their latest order). */
static void refuse_units(order_place_req *r, long long code, const order_gate_item *it)
{
    char body[256];
    size_t n;
    if (code == ORDER_GATE_OVER_LIMIT) {
        snprintf(body, sizeof(body), "quantity: over the event's per_user_limit of %lld",
                 (long long)it->held_n);
        order_place_error(r, ORDER_ERR_BAD_REQUEST, body, 0);
        return;
    }
    if (code == ORDER_GATE_FEWER_LEFT)
        n = order_reply_units(body, sizeof(body), ORDER_ERR_SOLD_OUT, (long long)it->held_n, 0);
    else
        n = order_reply_units(body, sizeof(body), ORDER_ERR_LIMIT_REACHED, (long long)it->held_n,
                              it->held_id);
    order_req_reply_json(&r->h, 409, body, n);
    order_place_req_free(r);
}

/* reserve.lua's code for this order (its call carried the event's other orders of the
 * same loop turn), or ORDER_GATE_FAILED. */
static void done_reserve(order_gate_item *it, long long code, void *arg)
{
    (void)arg;
    order_place_req *r = ORDER_CONTAINER_OF(it, order_place_req, gi);
    order_app *app = r->h.w->app;
    int64_t now_us = order_time_mono_us();
    order_metrics_stage(&app->metrics, ORDER_STAGE_RESERVE, now_us - r->stage_us);
    order_admit_record(app->admit, now_us, now_us - r->stage_us);
    if (code != 1) /* not sold out: an expired flag's probe holds the others no longer */
        order_soldout_probe_done(app->soldout, r->event_id);
    if (code == ORDER_GATE_FAILED) {
        /* No answer: reserve.lua may or may not have run. If it did, the pending entry
         * is the reconciler's to give back; the client is told to retry. */
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    order_metrics_reserve(&app->metrics, code);
    if (code == 0) {
        r->now_ms = it->now_ms; /* the pending entry's time, carried by the message */
        reserved(r);
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
    if (code == 2 && it->held_id) {
        /* a duplicate names the order the user holds (issue 31): read it as GET would,
         * answered as a 409 that carries its id and status */
        order_worker *w = r->h.w;
        sk_http_req *req = r->h.req;
        order_route_id route = r->h.route;
        int64_t start_us = r->h.start_us;
        uint64_t user = r->user, event_id = r->event_id, held = it->held_id;
        order_place_req_free(r);
        order_read_duplicate(w, req, route, start_us, user, event_id, held);
        return;
    }
    if (code >= ORDER_GATE_LIMIT_REACHED && code <= ORDER_GATE_OVER_LIMIT) {
        refuse_units(r, code, it);
        return;
    }
    if (code == 1)
        order_soldout_set(app->soldout, r->event_id, order_time_now_ms());
    if (code == 5 && app->pg) {
        lookup_not_loaded(r);
        return;
    }
    int e = order_err_from_reserve(code);
    order_place_error(r, e < 0 ? ORDER_ERR_INTERNAL : (order_err)e, NULL, 0);
}

void order_place_reserve(order_place_req *r)
{
    order_app *app = r->h.w->app;
    int rc = idgen_next(app->ids_order, &r->order_id);
    if (rc != IDGEN_OK) {
        sk_log(SK_LOG_WARN, "idgen_failed", "err=\"%s\"", idgen_strerror(rc));
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "no order id available", 0);
        return;
    }
    r->gi.event_id = r->event_id;
    r->gi.user_id = r->user;
    r->gi.order_id = r->order_id;
    r->gi.quantity = r->quantity;
    r->lender = -1;
    r->stage_us = order_time_mono_us();
    gate_reserve(r);
}

/* ---- the worker's order chain (order_place.h's hooks) ----------------------------- */

int order_place_chain_new(order_worker *w)
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
    int werr;
    c->wait = order_place_wait_new(w, produce, cancel_then_503, &werr);
    if (werr)
        return -1;
    order_pauser_tables pt = {w->app->paused, w->app->window, w->app->events, w->app->evlist};
    if (w->index == 0 &&
        !(c->pauser = order_pauser_new(w->base, w->redis, &pt, w->app->cfg.events_pause_refresh_ms)))
        return -1;
    return c->gate && c->index && c->produce_ev ? 0 : -1;
}

/* Messages queued in the loop's last turn go out (or fail: without a producer the stock
 * is given back), then the index entries and the gate's calls; from then on the gate
 * fails what is submitted, so the Redis connection's pending callbacks (NULL replies
 * once it is freed) still answer every request. */
void order_place_chain_flush(order_worker *w)
{
    struct order_chain *c = w->chain;
    order_place_wait_flush(c->wait);
    if (c->produce_ev)
        produce_flush(-1, 0, w);
    if (c->index)
        order_index_flush(c->index);
    order_gate_close(c->gate);
}

void order_place_chain_free(order_worker *w)
{
    struct order_chain *c = w->chain;
    order_gate_free(c->gate);
    order_index_free(c->index);
    order_pauser_free(c->pauser);
    order_place_wait_free(c->wait);
    if (c->produce_ev)
        event_free(c->produce_ev);
    while (c->spare) {
        order_place_req *r = c->spare;
        c->spare = r->next;
        free(r);
    }
    free(c);
    w->chain = NULL;
}
