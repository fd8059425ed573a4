/* order_pay_http: pay and cancel over HTTP. See order_pay_http.h. */
#include "order_pay_http.h"
#include "order_idem_http.h"
#include "order_body.h"
#include "order_http_int.h"
#include "order_iwrite.h"
#include "order_msg.h"
#include "order_pay.h"
#include "order_reply.h"
#include "order_time.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One pay or cancel, from the token check to the answer (and, for a release, past it
 * until released_at is recorded). */
typedef struct pay_req {
    order_req_head h; /* h.req: NULL once answered */
    order_pg_job job;
} pay_req;

#define PAY_REQ_OF(t) ORDER_CONTAINER_OF(t, pay_req, h.task)

static int submit(pay_req *p, void (*next)(order_task *))
{
    return order_req_submit_pg(&p->h, &p->job, next, NULL);
}

/* The status a transition made, into the order index's "<id>:s" field (read by every
 * front's GET) and this instance's outcome cache. Fire and forget like the front's
 * index writes: a lost write leaves the index saying created, and GET asks PostgreSQL
 * once the index entry expired. */
static void index_status(pay_req *p)
{
    order_app *app = p->h.w->app;
    order_index_entry e = {p->job.event_id, p->job.user_id, 0,
                           order_index_status_letter(p->job.order_status), p->job.pay_by_ms};
    order_iwrite *w = order_iwrite_new(1);
    if (w) {
        const char **argv;
        const size_t *lens;
        order_iwrite_begin(w, p->job.id, app->cfg.index_ttl_s);
        order_iwrite_add(w, p->job.id, ORDER_INDEX_STATUS_SUFFIX, &e);
        int argc = order_iwrite_hset(w, &argv, &lens);
        order_redis_command(p->h.w->redis, argc, argv, lens, NULL, NULL); /* copies argv */
        argc = order_iwrite_expire(w, &argv, &lens);
        order_redis_command(p->h.w->redis, argc, argv, lens, NULL, NULL);
        order_iwrite_free(w);
    }
    if (app->ocache)
        order_ocache_put(app->ocache, p->job.id, e.event_id, e.user_id, e.outcome, e.pay_by_ms,
                         order_time_now_ms());
}

/* The answer of a pay or cancel that PostgreSQL decided. */
static void answer(pay_req *p)
{
    order_pg_job *j = &p->job;
    char msg[96];
    switch ((order_pay_answer)j->pay_answer) {
    case ORDER_PAY_OK: {
        char body[320];
        size_t n = order_reply_order_pay_by(body, sizeof(body), j->id, j->event_id, j->user_id,
                                            j->order_status, j->pay_by_ms);
        order_req_reply_json(&p->h, 200, body, n);
        break;
    }
    case ORDER_PAY_FORBIDDEN:
        order_req_reply_error(&p->h, ORDER_ERR_FORBIDDEN,
                              "only the buyer or an admin may pay or cancel this order", 0);
        break;
    case ORDER_PAY_CLOSED:
        /* The winner's status, so a late payer knows why (and the payment side refunds). */
        snprintf(msg, sizeof(msg), "the order is %s", j->order_status);
        order_req_reply_error(&p->h, ORDER_ERR_CLOSED, msg, 0);
        break;
    case ORDER_PAY_ALREADY_PAID:
        order_req_reply_error(&p->h, ORDER_ERR_ALREADY_PAID,
                              p->h.route == ORDER_ROUTE_ORDER_PAY
                                  ? "the order is paid with another payment_ref"
                                  : "the order is paid: it cannot be cancelled",
                              0);
        break;
    }
}

static void after_mark(order_task *t)
{
    pay_req *p = PAY_REQ_OF(t);
    if (p->job.status != ORDER_PG_OK) /* the release sweep retries it */
        sk_log(SK_LOG_WARN, "pg_failed", "op=mark_released order_id=%" PRIu64 " err=\"%s\"",
               p->job.id, p->job.err);
    p->job.status = ORDER_PG_OK;
    answer(p);
    free(p);
}

/* release.lua answered: 1 given back now, 0 given back before: settled, record
 * released_at, then answer (the request stays in flight until then, so SIGTERM waits for
 * it). -1, the event's keys are not loaded, or no answer: leave it to the release sweep
 * (released_at stays NULL). A reload may have read stock_left before this close committed,
 * so a "not loaded" unit is not surely counted; the sweep knows whether the sale is still
 * on and retries after the reload (consumer_expiry.c). The answer comes after the unit is
 * back: a buyer told "cancelled" sees the unit on sale at once. */
static void on_release(redisReply *reply, void *arg)
{
    pay_req *p = arg;
    int settled = reply && reply->type == REDIS_REPLY_INTEGER && reply->integer >= 0;
    if (settled && reply->integer == 1)
        order_soldout_clear(p->h.w->app->soldout, p->job.event_id);
    sk_log(settled ? SK_LOG_INFO : SK_LOG_WARN, "order_released",
           "order_id=%" PRIu64 " event_id=%" PRIu64 " status=%s redis=%lld", p->job.id,
           p->job.event_id, p->job.order_status,
           reply && reply->type == REDIS_REPLY_INTEGER ? (long long)reply->integer : -2LL);
    order_pg_job saved = p->job;
    if (settled) {
        p->job.kind = ORDER_PG_MARK_RELEASED;
        if (submit(p, after_mark) == 0)
            return;
    }
    p->job = saved;
    answer(p);
    free(p);
}

/* The order's units back to the buyer's home segment (order_release_keys_of), the HDEL
 * there when the event lets the buyer buy again. */
static void release(pay_req *p)
{
    order_release_keys k;
    char oid[24], uid[24], q[12];
    order_release_keys_of(p->job.event_id, p->job.user_id, p->job.segments, &k);
    const char *args[8] = {k.key[0], k.key[1], k.key[2], k.key[3],
                           oid,      uid,      p->job.rebuy ? "1" : "0", q};
    size_t lens[8] = {k.len[0],
                      k.len[1],
                      k.len[2],
                      k.len[3],
                      sk_id_format(oid, p->job.id),
                      sk_id_format(uid, p->job.user_id),
                      1,
                      (size_t)snprintf(q, sizeof(q), "%" PRIu32,
                                       p->job.quantity ? p->job.quantity : 1)};
    if (order_redis_script(p->h.w->redis, ORDER_SCRIPT_RELEASE, 4, 8, args, lens, on_release, p) !=
        0)
        on_release(NULL, p);
}

/* The index's entry of an order PostgreSQL does not hold: queued (409 not_ready) or
 * unknown (404). An id younger than ORDER_INDEX_ENTRY_GRACE_S without an entry may be an
 * order another worker has just accepted, its entry not in Redis yet: not ready too
 * (nothing about the order is told, whoever asks: the same answer for every young id). */
static void on_index(redisReply *reply, void *arg)
{
    pay_req *p = arg;
    order_index_entry e;
    if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL)) {
        order_req_error_free(&p->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    int nil = reply->type == REDIS_REPLY_NIL;
    int64_t age_s = order_id_age_s(p->job.id, (int64_t)time(NULL));
    if (nil ? age_s < -ORDER_ID_SKEW_S || age_s > ORDER_INDEX_ENTRY_GRACE_S
            : order_index_decode(reply->str, reply->len, &e) != 0 || e.outcome) {
        order_req_error_free(&p->h, ORDER_ERR_NOT_FOUND, "no such order", 0);
        return;
    }
    if (!nil && e.user_id != p->job.actor && !p->job.actor_admin) {
        order_req_error_free(&p->h, ORDER_ERR_FORBIDDEN,
                             "only the buyer or an admin may pay or cancel this order", 0);
        return;
    }
    sk_http_add_header(p->h.req, "Retry-After", "1");
    order_req_error_free(&p->h, ORDER_ERR_NOT_READY, NULL, 0);
}

static void after_pg(order_task *t)
{
    pay_req *p = PAY_REQ_OF(t);
    order_pg_job *j = &p->job;
    if (j->status == ORDER_PG_ERROR) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=%s order_id=%" PRIu64 " err=\"%s\"",
               order_route_name(p->h.route), j->id, j->err);
        order_req_error_free(&p->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    if (j->status == ORDER_PG_NOT_FOUND) {
        char key[ORDER_KEY_MAX], oid[24];
        const char *argv[3] = {"HGET", key, oid};
        size_t lens[3] = {4, order_key_index(j->id, key, sizeof(key)), sk_id_format(oid, j->id)};
        if (order_redis_command(p->h.w->redis, 3, argv, lens, on_index, p) != 0)
            order_req_error_free(&p->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (j->changed) {
        sk_log(SK_LOG_INFO, "order_status", "order_id=%" PRIu64 " event_id=%" PRIu64 " status=%s",
               j->id, j->event_id, j->order_status);
        index_status(p);
        if (order_pay_releases(j->order_status)) {
            release(p);
            return;
        }
    }
    answer(p);
    free(p);
}

void order_pay_http_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                           int64_t start_us)
{
    sk_jwt_claims claims;
    const char *body;
    size_t blen;
    if (order_http_authorize(w, req, rt->id, start_us, NULL, &claims) != 0 ||
        order_http_body(w, req, rt->id, start_us, &body, &blen) != 0)
        return;
    /* Idempotency-Key (issue 31): claimed first, then this handler again from the top */
    if (order_idem_check(w, req, rt, start_us, claims.sub, body, blen, order_pay_http_handle))
        return;
    pay_req *p = order_req_alloc(sizeof(*p), w, req, rt->id, start_us);
    if (!p)
        return;
    char msg[160];
    int bad = rt->id == ORDER_ROUTE_ORDER_PAY
                  ? order_body_parse_pay(body, blen, p->job.payment_ref, msg, sizeof(msg))
                  : order_body_check_order(body, blen, msg, sizeof(msg));
    if (bad) {
        order_req_error_free(&p->h, ORDER_ERR_BAD_REQUEST, msg, 0);
        return;
    }
    if (!w->app->pg) {
        order_req_error_free(&p->h, ORDER_ERR_UNAVAILABLE, "no database configured", 0);
        return;
    }
    p->job.kind = rt->id == ORDER_ROUTE_ORDER_PAY ? ORDER_PG_PAY_ORDER : ORDER_PG_CANCEL_ORDER;
    p->job.id = rt->arg;
    p->job.actor = claims.sub;
    p->job.actor_admin = claims.is_admin;
    if (submit(p, after_pg) != 0)
        order_req_error_free(&p->h, ORDER_ERR_UNAVAILABLE, "the database is busy", 0);
}
