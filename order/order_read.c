/* order_read: GET /api/v1/orders/{id}, on the worker's loop.
 *
 * Reading an order: its index first (issue 17). While the order is younger than
 * order.index_ttl_s, its index hash holds the front's entry ("<id>": acknowledged, or
 * may have landed) and, once the consumer committed it, the consumer's outcome
 * ("<id>:o": created, rejected; consumer_oidx.h), so a buyer polling a young order
 * costs one HMGET and no PostgreSQL query. PostgreSQL is asked only for what the index
 * cannot tell: an order older than the index, an outcome the consumer did not learn (a
 * replay), and a "may have landed" entry no longer pending. A final outcome seen
 * lately is answered from this instance's cache (order_ocache.h) without Redis.
 *
 * The same lookup answers a duplicate order (issue 31, order_read_duplicate): the order
 * the buyer holds, read as a GET would read it, answered as a 409 that names it. */
#include "order_read.h"
#include "order_event_read.h"
#include "order_evlist.h"
#include "sk_http_query.h"
#include "order_http_int.h"
#include "order_index.h"
#include "order_msg.h"
#include "order_time.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* One GET of an order. */
typedef struct read_req {
    order_req_head h;
    uint64_t user; /* the token's sub */
    int is_admin;
    uint64_t order_id, event_id;
    uint64_t queued_owner; /* the index said queued: PostgreSQL's "not found" means queued */
    int dup;               /* the answer to a duplicate order: 409 naming this order */
    order_pg_job job;
} read_req;

/* An error of the lookup. A duplicate's lookup still answers the duplicate: it names
 * the order with status "unknown" (the buyer's GET of it will tell). */
static void read_fail(read_req *r, order_err e, const char *msg)
{
    if (r->dup) {
        char body[512];
        size_t n = order_reply_duplicate(body, sizeof(body), r->order_id, r->event_id, r->user,
                                         "unknown", 0);
        order_req_json_free(&r->h, 409, body, n);
        return;
    }
    order_req_error_free(&r->h, e, msg, 0);
}

static void order_lookup_pg(read_req *r);

static int order_owner_ok(read_req *r, uint64_t owner)
{
    if (owner == r->user || r->is_admin)
        return 1;
    read_fail(r, ORDER_ERR_FORBIDDEN, "only the buyer or an admin may read this order");
    return 0;
}

/* pay_by_ms: 0 when unknown or not shown (queued); order_reply_order_pay_by shows it for
 * created and paid orders only, the same answer as PostgreSQL's path gives. */
static void order_answer(read_req *r, uint64_t owner, const char *status, int64_t pay_by_ms)
{
    char body[512];
    if (r->dup) {
        size_t n = order_reply_duplicate(body, sizeof(body), r->order_id, r->event_id, owner,
                                         status, pay_by_ms);
        order_req_json_free(&r->h, 409, body, n);
        return;
    }
    size_t n = order_reply_order_pay_by(body, sizeof(body), r->order_id, r->event_id, owner, status,
                                        pay_by_ms);
    order_req_json_free(&r->h, 200, body, n);
}

/* HGET of the event's pending hash: "user_id:ts_ms" while the reservation waits for
 * Kafka's answer or the reconciler, nil once settled. */
static void on_order_status(redisReply *reply, void *arg)
{
    read_req *r = arg;
    if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL)) {
        read_fail(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable");
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
static int young_lookup_allowed(read_req *r)
{
    return r->h.w->app->pg &&
           order_ocache_claim_lookup(r->h.w->app->ocache, r->order_id, order_time_now_ms());
}

static void on_order_index(redisReply *reply, void *arg)
{
    read_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        read_fail(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable");
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
        order_ocache_put(r->h.w->app->ocache, r->order_id, o.event_id, o.user_id, o.outcome,
                         o.pay_by_ms, order_time_now_ms());
        if (order_owner_ok(r, o.user_id))
            order_answer(r, o.user_id, order_index_status_name(o.outcome), o.pay_by_ms);
        return;
    }
    int64_t age_s = order_id_age_s(r->order_id, (int64_t)time(NULL));
    if (has_outcome) { /* a replay's status: PostgreSQL has the order's own */
        order_lookup_pg(r);
        return;
    }
    if (!has_entry) {
        /* Older than the index: PostgreSQL. A young id the index does not know was never
         * issued, or its entry was lost (the consumer records the outcome when it writes
         * it): looked up, but within order_ocache's bound, so made-up ids cannot put a
         * query per request on the database. */
        if (age_s < -ORDER_ID_SKEW_S) { /* issued in the future: never issued */
            read_fail(r, ORDER_ERR_NOT_FOUND, "no such order");
            return;
        }
        if (age_s >= r->h.w->app->cfg.index_ttl_s || young_lookup_allowed(r)) {
            order_lookup_pg(r);
            return;
        }
        /* Past the budget: 404, what the lookup would almost surely have said (an entry
         * Redis lost belongs to an order the consumer has not written yet, or it would
         * have recorded its outcome here). */
        read_fail(r, ORDER_ERR_NOT_FOUND, "no such order");
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
        if (age_s >= r->h.w->app->cfg.order_queued_pg_after_s && young_lookup_allowed(r)) {
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
    unsigned home = order_seg_home(e.user_id, order_segs_get(r->h.w->app->segs, r->event_id));
    size_t lens[3] = {4,
                      order_key_seg(r->event_id, home, ORDER_KEY_PENDING, pending, sizeof(pending)),
                      (size_t)snprintf(oid, sizeof(oid), "%" PRIu64, r->order_id)};
    if (order_redis_command(r->h.w->redis, 3, argv, lens, on_order_status, r) != 0)
        read_fail(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable");
}

static void order_lookup_redis(read_req *r)
{
    char key[ORDER_KEY_MAX], oid[24], oout[32], ostat[32];
    const char *argv[5] = {"HMGET", key, oid, oout, ostat};
    size_t lens[5] = {5, order_key_index(r->order_id, key, sizeof(key)),
                      (size_t)snprintf(oid, sizeof(oid), "%" PRIu64, r->order_id),
                      (size_t)snprintf(oout, sizeof(oout), "%" PRIu64 "%s", r->order_id,
                                       ORDER_INDEX_OUTCOME_SUFFIX),
                      (size_t)snprintf(ostat, sizeof(ostat), "%" PRIu64 "%s", r->order_id,
                                       ORDER_INDEX_STATUS_SUFFIX)};
    if (order_redis_command(r->h.w->redis, 5, argv, lens, on_order_index, r) != 0)
        read_fail(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable");
}

static void after_pg_order(order_task *t)
{
    read_req *r = ORDER_CONTAINER_OF(t, read_req, h.task);
    order_pg_job *j = &r->job;
    if (j->status == ORDER_PG_ERROR) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=get_order err=\"%s\"", j->err);
        read_fail(r, ORDER_ERR_UNAVAILABLE, "the database is unavailable");
        return;
    }
    if (j->status == ORDER_PG_NOT_FOUND) {
        if (r->queued_owner) /* acknowledged by Kafka, not written yet */
            order_answer(r, r->queued_owner, "queued", 0);
        else
            read_fail(r, ORDER_ERR_NOT_FOUND, "no such order");
        return;
    }
    r->event_id = j->event_id;
    /* kept like an index outcome (a lookup's finding answers until the next lookup) */
    order_ocache_put(r->h.w->app->ocache, r->order_id, j->event_id, j->user_id,
                     order_index_status_letter(j->order_status), j->pay_by_ms, order_time_now_ms());
    if (order_owner_ok(r, j->user_id)) /* PostgreSQL knows pay_by: the answer carries it */
        order_answer(r, j->user_id, j->order_status, j->pay_by_ms);
}

void order_read_handle(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, NULL, &claims) != 0)
        return;
    read_req *r = order_req_alloc(sizeof(*r), w, req, rt->id, start_us);
    if (!r)
        return;
    r->user = claims.sub;
    r->is_admin = claims.is_admin;
    r->order_id = rt->arg;
    uint64_t ev, owner;
    char outcome;
    int64_t pay_by_ms = 0;
    if (order_ocache_get(w->app->ocache, r->order_id, order_time_now_ms(), &ev, &owner, &outcome,
                         &pay_by_ms)) {
        r->event_id = ev; /* a final outcome seen lately: no Redis round trip */
        if (order_owner_ok(r, owner))
            order_answer(r, owner, order_index_status_name(outcome), pay_by_ms);
        return;
    }
    order_lookup_redis(r);
}

void order_read_duplicate(order_worker *w, sk_http_req *req, order_route_id route,
                          int64_t start_us, uint64_t user, uint64_t event_id, uint64_t order_id)
{
    read_req *r = order_req_alloc(sizeof(*r), w, req, route, start_us);
    if (!r)
        return;
    r->user = user;
    r->dup = 1;
    r->order_id = order_id;
    r->event_id = event_id;
    uint64_t ev, owner;
    char outcome;
    int64_t pay_by_ms = 0;
    if (order_ocache_get(w->app->ocache, order_id, order_time_now_ms(), &ev, &owner, &outcome,
                         &pay_by_ms)) {
        if (order_owner_ok(r, owner))
            order_answer(r, owner, order_index_status_name(outcome), pay_by_ms);
        return;
    }
    order_lookup_redis(r);
}

static void order_lookup_pg(read_req *r)
{
    if (!r->h.w->app->pg) { /* no database configured: only orders in the index */
        read_fail(r, ORDER_ERR_NOT_FOUND, "no such order");
        return;
    }
    r->job.kind = ORDER_PG_GET_ORDER;
    r->job.id = r->order_id;
    if (order_req_submit_pg(&r->h, &r->job, after_pg_order, NULL) != 0)
        read_fail(r, ORDER_ERR_UNAVAILABLE, "the database is busy");
}

/* ---- GET /api/v1/orders?event_id=&offset=&limit= (issue 31) -------------------------
 *
 * The token's orders, from Redis and memory (PostgreSQL only for one event whose keys
 * expired, below): per event, the buyers hash of the
 * user's home segment names the order the user holds (reserve.lua; one per user and
 * event), then its status comes from the outcome cache or the order index, as GET's
 * first steps read it ("unknown" past the index: GET /api/v1/orders/{id} asks
 * PostgreSQL). One event (event_id), or the current and upcoming events of the event
 * list's snapshot (order_evlist.h, refreshed from PostgreSQL at most once per
 * events.list_refresh_ms per front, never per call). An order of an ended event is found
 * with its event_id. Paginated over the orders found, in the events' order.
 * Once an event's keys expired (issue 32 item 5: the gate of the user's home segment is
 * gone too), a list of that one event asks PostgreSQL for the user's order: one indexed
 * query per list call, and only for an event whose gate is gone. */

/* The most events one list scans (the event list's page bound times ten). */
#define LIST_EVENTS_MAX (10 * ORDER_EVLIST_LIMIT_MAX)

typedef struct list_req list_req;

/* One Redis reply's place in the list. */
typedef struct list_slot {
    list_req *l;
    size_t i;
} list_slot;

struct list_req {
    order_req_head h;
    uint64_t user;
    size_t offset, limit;
    size_t nev, wait, nfound;
    int failed;
    uint64_t events[LIST_EVENTS_MAX];
    uint64_t held[LIST_EVENTS_MAX];   /* per event: the order held, 0 none */
    const char *status[LIST_EVENTS_MAX]; /* per order of the page */
    list_slot slot[LIST_EVENTS_MAX];
    int gate_gone;   /* one event: its home segment's stock key does not exist */
    order_pg_job job; /* one event whose keys expired: the user's order from PostgreSQL */
};

static void list_answer(list_req *l)
{
    if (l->failed) {
        order_req_error_free(&l->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    size_t cap = 64 + l->limit * 128, n = 0;
    char *b = malloc(cap);
    if (!b) {
        order_req_error_free(&l->h, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    n += (size_t)snprintf(b, cap, "{\"orders\":[");
    size_t shown = 0, found = 0;
    for (size_t i = 0; i < l->nev && shown < l->limit; i++) {
        if (!l->held[i] || found++ < l->offset)
            continue;
        n += (size_t)snprintf(b + n, cap - n,
                              "%s{\"order_id\":\"%" PRIu64 "\",\"event_id\":\"%" PRIu64
                              "\",\"status\":\"%s\"}",
                              shown ? "," : "", l->held[i], l->events[i], l->status[i]);
        shown++;
    }
    if (l->offset + shown < l->nfound)
        n += (size_t)snprintf(b + n, cap - n, "],\"offset\":%zu,\"next_offset\":%zu}", l->offset,
                              l->offset + shown);
    else
        n += (size_t)snprintf(b + n, cap - n, "],\"offset\":%zu,\"next_offset\":null}", l->offset);
    order_req_json_free(&l->h, 200, b, n);
    free(b);
}

/* The index's three fields of one order of the page: its status as GET's first step. */
static void on_list_index(redisReply *reply, void *arg)
{
    list_slot *s = arg;
    list_req *l = s->l;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        l->failed = 1;
    } else {
        order_index_entry e, o;
        const char *st = "unknown";
        if (index_field(reply->element[2], &o) && o.outcome && order_index_status_name(o.outcome))
            st = order_index_status_name(o.outcome);
        else if (index_field(reply->element[1], &o) && o.outcome &&
                 order_index_status_name(o.outcome))
            st = order_index_status_name(o.outcome);
        else if (index_field(reply->element[0], &e) && !e.outcome)
            st = "queued";
        l->status[s->i] = st;
    }
    if (--l->wait == 0)
        list_answer(l);
}

/* Every event's held order is known: the page's statuses (cache, else one HMGET each). */
static void list_statuses(list_req *l)
{
    order_app *app = l->h.w->app;
    for (size_t i = 0; i < l->nev; i++)
        l->nfound += l->held[i] != 0;
    l->wait = 1; /* held until every call is out */
    size_t found = 0, shown = 0;
    for (size_t i = 0; i < l->nev && shown < l->limit; i++) {
        if (!l->held[i] || found++ < l->offset)
            continue;
        shown++;
        uint64_t ev, owner;
        char outcome;
        int64_t pay_by_ms;
        l->status[i] = "unknown";
        if (order_ocache_get(app->ocache, l->held[i], order_time_now_ms(), &ev, &owner, &outcome,
                             &pay_by_ms) &&
            order_index_status_name(outcome)) {
            l->status[i] = order_index_status_name(outcome);
            continue;
        }
        char key[ORDER_KEY_MAX], oid[24], oout[32], ostat[32];
        const char *argv[5] = {"HMGET", key, oid, oout, ostat};
        size_t lens[5] = {5, order_key_index(l->held[i], key, sizeof(key)),
                          (size_t)snprintf(oid, sizeof(oid), "%" PRIu64, l->held[i]),
                          (size_t)snprintf(oout, sizeof(oout), "%" PRIu64 "%s", l->held[i],
                                           ORDER_INDEX_OUTCOME_SUFFIX),
                          (size_t)snprintf(ostat, sizeof(ostat), "%" PRIu64 "%s", l->held[i],
                                           ORDER_INDEX_STATUS_SUFFIX)};
        l->slot[i] = (list_slot){l, i};
        l->wait++;
        if (order_redis_command(l->h.w->redis, 5, argv, lens, on_list_index, &l->slot[i]) != 0) {
            l->failed = 1;
            l->wait--;
        }
    }
    if (--l->wait == 0)
        list_answer(l);
}

/* The user's order in the one event whose keys expired, from PostgreSQL. */
static void after_pg_list(order_task *t)
{
    list_req *l = ORDER_CONTAINER_OF(t, list_req, h.task);
    order_pg_job *j = &l->job;
    if (j->status == ORDER_PG_ERROR) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=list_orders err=\"%s\"", j->err);
        order_req_error_free(&l->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    if (j->status == ORDER_PG_OK) {
        l->held[0] = j->id;
        l->status[0] = j->order_status;
        l->nfound = 1;
    }
    list_answer(l);
}

/* One event's buyers hash answered (or the last call went out): on once all are in. */
static void list_buyer_done(list_req *l)
{
    if (--l->wait > 0)
        return;
    if (l->failed) {
        list_answer(l);
    } else if (l->nev == 1 && !l->held[0] && l->gate_gone && l->h.w->app->pg) {
        l->job.kind = ORDER_PG_USER_ORDER;
        l->job.event_id = l->events[0];
        l->job.user_id = l->user;
        if (order_req_submit_pg(&l->h, &l->job, after_pg_list, NULL) != 0)
            order_req_error_free(&l->h, ORDER_ERR_UNAVAILABLE, "the database is busy", 0);
    } else {
        list_statuses(l);
    }
}

/* EXISTS of the one event's home stock key: 0 once its keys expired. */
static void on_list_gate(redisReply *reply, void *arg)
{
    list_req *l = arg;
    if (!reply || reply->type != REDIS_REPLY_INTEGER)
        l->failed = 1;
    else
        l->gate_gone = reply->integer == 0;
    list_buyer_done(l);
}

/* HGET of one event's buyers hash: the order the user holds there, if any. */
static void on_list_buyer(redisReply *reply, void *arg)
{
    list_slot *s = arg;
    list_req *l = s->l;
    if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL))
        l->failed = 1;
    else if (reply->type == REDIS_REPLY_STRING &&
             order_parse_id(reply->str, reply->len, &l->held[s->i]) != 0)
        l->held[s->i] = 0; /* "" (a reload that did not know it): nothing to show */
    list_buyer_done(l);
}

void order_read_list_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                            int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, NULL, &claims) != 0)
        return;
    size_t qlen;
    const char *q = sk_http_query_of(sk_http_uri(req), &qlen);
    long long offset, limit;
    const char *ev;
    size_t evlen;
    sk_http_query_rc has_ev = sk_http_query_get(q, qlen, "event_id", &ev, &evlen);
    uint64_t event_id = 0;
    if (has_ev == SK_HTTP_QUERY_INVALID ||
        (has_ev == SK_HTTP_QUERY_FOUND && order_parse_id(ev, evlen, &event_id) != 0) ||
        sk_http_query_int(q, qlen, "offset", 0, LIST_EVENTS_MAX, 0, &offset) < 0 ||
        sk_http_query_int(q, qlen, "limit", 1, ORDER_EVLIST_LIMIT_MAX, 20, &limit) < 0) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST,
                               "event_id is an id, offset 0 to 1000 and limit 1 to 100", 0);
        return;
    }
    if (!order_http_redis_ready(w, req, rt->id, start_us))
        return;
    list_req *l = order_req_alloc(sizeof(*l), w, req, rt->id, start_us);
    if (!l)
        return;
    l->user = claims.sub;
    l->offset = (size_t)offset;
    l->limit = (size_t)limit;
    if (event_id) {
        l->events[0] = event_id;
        l->nev = 1;
    } else {
        int have = 0;
        l->nev = order_evlist_ids(w->app->evlist, order_time_now_ms(), l->events, LIST_EVENTS_MAX,
                                  &have);
        if (!have) { /* the events are not known here yet: their load starts now */
            order_event_list_warm(w);
            order_http_set_retry_after(req, 1);
            order_req_error_free(&l->h, ORDER_ERR_UNAVAILABLE,
                                 "the event list is loading, retry shortly", 0);
            return;
        }
    }
    if (l->nev == 0) {
        list_answer(l);
        return;
    }
    l->wait = 1;
    for (size_t i = 0; i < l->nev; i++) {
        char key[ORDER_KEY_MAX], u[24];
        unsigned home = order_seg_home(l->user, order_segs_get(w->app->segs, l->events[i]));
        const char *argv[3] = {"HGET", key, u};
        size_t lens[3] = {4, order_key_seg(l->events[i], home, ORDER_KEY_BUYERS, key, sizeof(key)),
                          (size_t)snprintf(u, sizeof(u), "%" PRIu64, l->user)};
        l->slot[i] = (list_slot){l, i};
        l->wait++;
        if (order_redis_command(w->redis, 3, argv, lens, on_list_buyer, &l->slot[i]) != 0) {
            l->failed = 1;
            l->wait--;
        }
        if (event_id) { /* whether the gate is there still (same slot: one more reply) */
            const char *exv[2] = {"EXISTS", key};
            size_t evl[2] = {6, order_key_seg(l->events[i], home, ORDER_KEY_STOCK, key, sizeof(key))};
            l->wait++;
            if (order_redis_command(w->redis, 2, exv, evl, on_list_gate, l) != 0) {
                l->failed = 1;
                l->wait--;
            }
        }
    }
    list_buyer_done(l);
}
