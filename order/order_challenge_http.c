/* order_challenge_http: GET .../challenge and .../order-path, and the order's check. See
 * order_challenge_http.h.
 *
 * Why no seen-set of solutions ("reused"): a challenge is bound to one user and one
 * event, and the gate lets a user hold per_user_limit of the event and no more, so a
 * solution used twice can only place what the gate refuses anyway (409 duplicate). A
 * per-worker set would not see the same solution sent to another worker or front, and a
 * shared one is the store per order this check exists to avoid. What a bot pays is one
 * solve per user token per event: the knob is the difficulty (order/README.md). */
#include "order_challenge_http.h"
#include "order_challenge.h"
#include "order_http_int.h"
#include "order_msg.h"
#include "order_time.h"

#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The process's key, made on first use from the configuration (which never changes
 * while the process runs) and kept to the end; read-only, so every worker shares it. */
static _Atomic(order_challenge_key *) the_key;

static const order_challenge_key *key_of(const order_app *app)
{
    order_challenge_key *k = atomic_load_explicit(&the_key, memory_order_acquire);
    if (k)
        return k;
    k = order_challenge_key_of_config(app->cfg.challenge_key, app->cfg.challenge_key_previous,
                                      app->cfg.jwt_secret);
    order_challenge_key *none = NULL;
    if (k && !atomic_compare_exchange_strong(&the_key, &none, k)) {
        order_challenge_key_free(k); /* another worker made it first */
        k = none;
    }
    return k;
}

/* A 403 (or 400) of the challenge with its own code: {"error":code,"message":msg}. */
static void reply_refused(order_worker *w, sk_http_req *req, order_route_id route,
                          int64_t start_us, int status, const char *code, const char *msg)
{
    char body[400];
    int n = snprintf(body, sizeof(body), "{\"error\":\"%s\",\"message\":\"%s\"}", code, msg);
    order_http_reply_json(w, req, route, start_us, status, body,
                          n > 0 && (size_t)n < sizeof(body) ? (size_t)n : 0);
}

/* The path token of POST .../orders/<token> (pointer into the URI), or NULL for .../orders. */
static const char *path_token_of(sk_http_req *req, size_t *len)
{
    const char *u = sk_http_uri(req);
    size_t n = strcspn(u, "?#");
    const char *o = NULL;
    for (const char *p = u; (p = memchr(p, '/', n - (size_t)(p - u))) != NULL; p++)
        o = p; /* the last '/' */
    if (!o || (size_t)(o - u) < 7 || memcmp(o - 7, "/orders", 7) != 0)
        return NULL;
    *len = n - (size_t)(o + 1 - u);
    return o + 1;
}

/* A hidden path event's order: only through the user's own path; every other path of it,
 * and a path token on an event without one, is 404 (a guessed path learns nothing: not
 * even that the event hides its path). @returns 1 once it answered. */
static int refuse_path(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us,
                       uint64_t user, int64_t kind)
{
    size_t len = 0;
    const char *tok = path_token_of(req, &len);
    if (!tok && kind != ORDER_CHALLENGE_PATH)
        return 0; /* the plain path of an event without a hidden one */
    const order_challenge_key *k = kind == ORDER_CHALLENGE_PATH ? key_of(w->app) : NULL;
    if (tok && k && order_challenge_path_ok(k, user, rt->arg, tok, len))
        return 0;
    order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_NOT_FOUND, "no such path", 0);
    return 1;
}

int order_challenge_http_refuse(order_worker *w, sk_http_req *req, const order_route *rt,
                                int64_t start_us, uint64_t user, int64_t bits)
{
    if (bits <= 0)
        return refuse_path(w, req, rt, start_us, user, bits);
    size_t tlen;
    if (path_token_of(req, &tlen)) { /* a proof-of-work event has no hidden path */
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_NOT_FOUND, "no such path", 0);
        return 1;
    }
    const char *v = sk_http_header(req, ORDER_CHALLENGE_HEADER);
    if (!v) {
        reply_refused(w, req, rt->id, start_us, 403, "challenge_required",
                      "this event's orders carry a solved challenge in the " ORDER_CHALLENGE_HEADER
                      " header (GET /api/v1/events/{id}/challenge)");
        return 1;
    }
    const order_challenge_key *k = key_of(w->app);
    if (!k) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return 1;
    }
    int rc = order_challenge_verify(k, v, strlen(v), user, rt->arg, (unsigned)bits,
                                    order_time_now_ms());
    if (rc == ORDER_CHALLENGE_OK)
        return 0;
    if (rc == ORDER_CHALLENGE_ERR_SHAPE)
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST,
                               order_challenge_strerror(rc), 0);
    else
        reply_refused(w, req, rt->id, start_us, 403,
                      rc == ORDER_CHALLENGE_ERR_EXPIRED ? "challenge_expired" : "challenge_invalid",
                      order_challenge_strerror(rc));
    return 1;
}

/* A GET of a challenge or an order path that had to learn the event from Redis. */
typedef struct challenge_req {
    order_req_head h;
    uint64_t user, event_id;
} challenge_req;

/* GET .../order-path: the user's hidden order path once the sale started (a path given
 * before it would let a bot sit on the URL), 403 not_started before, ended after. */
static void answer_path(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                        uint64_t user, uint64_t event_id, int64_t kind, order_window_state ws)
{
    const order_challenge_key *k = key_of(w->app);
    if (kind != ORDER_CHALLENGE_PATH) {
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_NOT_FOUND,
                               "this event's orders take the plain path", 0);
    } else if (ws != ORDER_WINDOW_UNKNOWN) {
        order_http_reply_error(w, req, route, start_us,
                               ws == ORDER_WINDOW_NOT_STARTED ? ORDER_ERR_NOT_STARTED : ORDER_ERR_ENDED,
                               NULL, 0);
    } else if (!k) {
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
    } else {
        char tok[ORDER_CHALLENGE_PATH_TOKEN + 1], body[160];
        order_challenge_path_token(k, user, event_id, tok);
        int n = snprintf(body, sizeof(body), "{\"path\":\"/api/v1/events/%llu/orders/%s\"}",
                         (unsigned long long)event_id, tok);
        sk_http_add_header(req, "Cache-Control", "no-store");
        order_http_reply_json(w, req, route, start_us, 200, body, (size_t)n);
    }
}

static void answer(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                   uint64_t user, uint64_t event_id, int64_t bits)
{
    if (bits <= 0) {
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_NOT_FOUND,
                               "this event's orders need no challenge", 0);
        return;
    }
    const order_challenge_key *k = key_of(w->app);
    uint64_t nonce;
    if (!k || RAND_bytes((unsigned char *)&nonce, sizeof(nonce)) != 1) {
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_UNAVAILABLE,
                               "no challenge can be made now", 0);
        return;
    }
    int64_t exp = order_time_now_ms() + w->app->cfg.challenge_ttl_s * 1000;
    char ch[ORDER_CHALLENGE_MAX], when[40], body[400];
    order_challenge_issue(k, user, event_id, (unsigned)bits, exp, nonce, ch, sizeof(ch));
    int n = snprintf(body, sizeof(body),
                     "{\"challenge\":\"%s\",\"difficulty\":%lld,\"expires_at\":\"%s\","
                     "\"header\":\"" ORDER_CHALLENGE_HEADER "\"}",
                     ch, (long long)bits, order_time_format_rfc3339(exp, when, sizeof(when)));
    sk_http_add_header(req, "Cache-Control", "no-store"); /* one user's, and short-lived */
    order_http_reply_json(w, req, route, start_us, 200, body, (size_t)n);
}

static void on_meta(redisReply *reply, void *arg)
{
    challenge_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->element[1]->type != REDIS_REPLY_STRING) { /* no meta: no such event (loaded) */
        order_req_error_free(&r->h, ORDER_ERR_NOT_FOUND, "no such event", 0);
        return;
    }
    int64_t bits = reply->element[0]->type == REDIS_REPLY_STRING
                       ? strtoll(reply->element[0]->str, NULL, 10)
                       : 0;
    if (r->h.route == ORDER_ROUTE_EVENT_ORDER_PATH) {
        int64_t now = order_time_now_ms(), a = strtoll(reply->element[1]->str, NULL, 10);
        int64_t b = reply->element[2]->type == REDIS_REPLY_STRING
                        ? strtoll(reply->element[2]->str, NULL, 10)
                        : INT64_MAX;
        answer_path(r->h.w, r->h.req, r->h.route, r->h.start_us, r->user, r->event_id, bits,
                    now < a ? ORDER_WINDOW_NOT_STARTED : now >= b ? ORDER_WINDOW_ENDED : ORDER_WINDOW_UNKNOWN);
    } else {
        answer(r->h.w, r->h.req, r->h.route, r->h.start_us, r->user, r->event_id, bits);
    }
    free(r);
}

void order_challenge_get_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                                int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, NULL, &claims) != 0)
        return;
    order_event_limits lim;
    if (order_window_limits(w->app->window, rt->arg, &lim)) {
        if (rt->id == ORDER_ROUTE_EVENT_ORDER_PATH)
            answer_path(w, req, rt->id, start_us, claims.sub, rt->arg, lim.challenge_bits,
                        order_window_get(w->app->window, rt->arg, order_time_now_ms()));
        else
            answer(w, req, rt->id, start_us, claims.sub, rt->arg, lim.challenge_bits);
        return;
    }
    /* An event this front has not seen yet: its difficulty from segment 0's meta. */
    if (!order_http_redis_ready(w, req, rt->id, start_us))
        return;
    challenge_req *r = order_req_alloc(sizeof(*r), w, req, rt->id, start_us);
    if (!r)
        return;
    r->user = claims.sub;
    r->event_id = rt->arg;
    char key[ORDER_KEY_MAX];
    const char *argv[5] = {"HMGET", key, "challenge_bits", "starts_at_ms", "ends_at_ms"};
    size_t lens[5] = {5, order_key_seg(rt->arg, 0, ORDER_KEY_META, key, sizeof(key)), 14, 12, 10};
    if (order_redis_command(w->redis, 5, argv, lens, on_meta, r) != 0)
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}
