/* order_idem_http: Idempotency-Key on the worker's loop. See order_idem_http.h. */
#include "order_idem_http.h"
#include "order_http_int.h"
#include "order_idem.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A keyed request: its claim under way, then (claimed) on its thread's list until its
 * answer. */
typedef struct idem_req {
    struct idem_req *next;
    order_worker *w;
    sk_http_req *req;
    order_route rt;
    int64_t start_us;
    uint64_t fp;
    order_idem_resume_fn *resume;
    size_t rklen;
    char rkey[ORDER_IDEM_RKEY_MAX];
} idem_req;

/* This worker thread's claimed requests (a handful at a time: the keyed ones in flight). */
static _Thread_local idem_req *claimed;

static idem_req *claimed_find(const sk_http_req *req, idem_req ***link)
{
    for (idem_req **p = &claimed; *p; p = &(*p)->next)
        if ((*p)->req == req) {
            if (link)
                *link = p;
            return *p;
        }
    return NULL;
}

static void answer_error(idem_req *q, order_err e, const char *msg)
{
    order_http_reply_error(q->w, q->req, q->rt.id, q->start_us, e, msg, 0);
    free(q);
}

static void on_claim(redisReply *reply, void *arg)
{
    idem_req *q = arg;
    if (!reply || (reply->type != REDIS_REPLY_NIL && reply->type != REDIS_REPLY_STRING)) {
        answer_error(q, ORDER_ERR_UNAVAILABLE, "redis is unavailable");
        return;
    }
    if (reply->type == REDIS_REPLY_NIL) { /* the key is this request's: run the route */
        q->next = claimed;
        claimed = q;
        q->resume(q->w, q->req, &q->rt, q->start_us);
        return;
    }
    int status = 0;
    const char *body = NULL;
    size_t blen = 0;
    switch (order_idem_decide(reply->str, reply->len, q->fp, &status, &body, &blen)) {
    case ORDER_IDEM_REPLAY:
        sk_http_add_header(q->req, "Idempotent-Replayed", "true");
        order_http_reply_json(q->w, q->req, q->rt.id, q->start_us, status, body, blen);
        free(q);
        return;
    case ORDER_IDEM_IN_PROGRESS:
        order_http_set_retry_after(q->req, 1);
        answer_error(q, ORDER_ERR_IN_PROGRESS, NULL);
        return;
    default: /* another request's key (or not a value of ours: not this request's either) */
        answer_error(q, ORDER_ERR_KEY_REUSED, NULL);
        return;
    }
}

int order_idem_check(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us,
                     uint64_t user, const char *body, size_t blen, order_idem_resume_fn *resume)
{
    const char *key = sk_http_header(req, "Idempotency-Key");
    if (!key || (claimed && claimed_find(req, NULL)))
        return 0;
    char msg[96];
    size_t klen = strlen(key);
    if (order_idem_key_check(key, klen, msg, sizeof(msg)) != 0) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST, msg, 0);
        return 1;
    }
    if (!order_http_redis_ready(w, req, rt->id, start_us))
        return 1;
    idem_req *q = calloc(1, sizeof(*q));
    if (!q) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return 1;
    }
    *q = (idem_req){.w = w, .req = req, .rt = *rt, .start_us = start_us, .resume = resume,
                    .fp = order_idem_fingerprint((int)rt->id, rt->arg, body, blen)};
    q->rklen = order_idem_redis_key(user, key, klen, q->rkey, sizeof(q->rkey));
    char val[24], ttl[24];
    const char *argv[7] = {"SET", q->rkey, val, "NX", "GET", "EX", ttl};
    size_t lens[7] = {3, q->rklen, order_idem_encode_claim(q->fp, val, sizeof(val)), 2, 3, 2,
                      (size_t)snprintf(ttl, sizeof(ttl), "%d", ORDER_IDEM_CLAIM_TTL_S)};
    if (order_redis_command(w->redis, 7, argv, lens, on_claim, q) != 0)
        answer_error(q, ORDER_ERR_UNAVAILABLE, "redis is unavailable");
    return 1;
}

void order_idem_answered(sk_http_req *req, int status, const char *body, size_t len)
{
    idem_req **link;
    idem_req *q = claimed ? claimed_find(req, &link) : NULL;
    if (!q)
        return;
    *link = q->next;
    if (!order_idem_keeps(status)) { /* nothing decided for it: the retry runs anew */
        const char *argv[2] = {"DEL", q->rkey};
        size_t lens[2] = {3, q->rklen};
        order_redis_command(q->w->redis, 2, argv, lens, NULL, NULL);
        free(q);
        return;
    }
    size_t vlen;
    char *v = order_idem_encode_answer(q->fp, status, body, len, &vlen);
    if (!v) { /* the claim runs out (ORDER_IDEM_CLAIM_TTL_S): a retry then runs anew */
        sk_log(SK_LOG_WARN, "idem_store_failed", "err=\"out of memory\"");
        free(q);
        return;
    }
    /* XX: a claim that ran out meanwhile is not brought back by a late answer */
    char ttl[24];
    const char *argv[6] = {"SET", q->rkey, v, "XX", "EX", ttl};
    size_t lens[6] = {3, q->rklen, vlen, 2, 2,
                      (size_t)snprintf(ttl, sizeof(ttl), "%d", ORDER_IDEM_TTL_S)};
    order_redis_command(q->w->redis, 6, argv, lens, NULL, NULL);
    free(v);
    free(q);
}
