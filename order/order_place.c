/* order_place: POST /api/v1/events/{id}/orders up to the gate, on the worker's loop:
 *   the address level -> token -> body -> (an event new here: its meta read once from
 *   Redis, then again from the top) -> the refusals decided in process (sold-out flag,
 *   paused, the user's bucket, the sale window, the Kafka backlog, the gate's p99) ->
 *   the event's rate (a local token, else a batch from Redis) -> the user's bucket in
 *   Redis mode -> order_place_gate.c (order_place_reserve).
 * Most refusals here are answered without a request object or a Redis call. */
#include "order_place.h"
#include "order_place_int.h"
#include "order_body.h"
#include "order_idem_http.h"
#include "order_challenge_http.h"
#include "order_msg.h"
#include "order_time.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request of this route that goes on to Redis: answered 503 here (and NULL) when
 * Redis is not connected or memory is short. */
static order_place_req *place_new(order_worker *w, sk_http_req *req, const order_route *rt,
                                  int64_t start_us, const sk_jwt_claims *claims)
{
    if (!order_http_redis_ready(w, req, rt->id, start_us))
        return NULL;
    order_place_req *r = order_place_req_new(w, req, rt, start_us, claims->sub);
    if (!r)
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
    return r;
}

/* 429 of a limit level for a request under way, which is freed. */
static void place_limited(order_place_req *r, order_limit_level level, long long retry_after_s)
{
    order_http_reply_limited(r->h.w, r->h.req, r->h.route, r->h.start_us, level, retry_after_s);
    order_place_req_free(r);
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
    order_place_req *r = arg;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->integer != 1) {
        atomic_fetch_add_explicit(&r->h.w->app->metrics.rate_limited, 1, memory_order_relaxed);
        place_limited(r, ORDER_LIMIT_USER,
                      order_limit_retry_after_s((double)user_rate_of(r->h.w->app, &r->lim)));
        return;
    }
    order_place_reserve(r);
}

static void after_event_level(order_place_req *r);
static void take_event_tokens(order_place_req *r);

/* One ratelimit.lua call on bucket `key` for `want` tokens. @returns order_redis_script's. */
static int bucket_call(order_place_req *r, const char *key, size_t klen, long long rate,
                       long long burst, long long want, order_redis_cb *cb)
{
    char rs[24], bs[24], now[24], ws[24];
    const char *args[5] = {key, rs, bs, now, ws};
    size_t lens[5] = {klen, (size_t)snprintf(rs, sizeof(rs), "%lld", rate),
                      (size_t)snprintf(bs, sizeof(bs), "%lld", burst),
                      (size_t)snprintf(now, sizeof(now), "%" PRId64, r->now_ms),
                      (size_t)snprintf(ws, sizeof(ws), "%lld", want)};
    return order_redis_script(r->h.w->redis, ORDER_SCRIPT_RATELIMIT, 1, 5, args, lens, cb, r);
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
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_SOLD_OUT, NULL, 0);
        return 1;
    }
    if (order_pause_has(app->paused, rt->arg)) {
        order_http_set_retry_after(req, 1);
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_PAUSED, NULL, 0);
        return 1;
    }
    /* The event's own per-user rate, if it has one, in place of the configured bucket
     * (in process, unless ratelimit.mode = redis: then after_event_level's). */
    if (lim->user_rate > 0 && app->cfg.rl_mode != ORDER_RL_REDIS) {
        if (!order_limit_override_take(app->limits, ORDER_LIMIT_USER, claims->sub, rt->arg,
                                       lim->user_rate, order_time_mono_us(), &retry_s)) {
            atomic_fetch_add_explicit(&app->metrics.rate_limited, 1, memory_order_relaxed);
            order_http_reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_USER, retry_s);
            return 1;
        }
    } else if (lim->user_rate == 0 && app->cfg.rl_mode == ORDER_RL_LOCAL &&
               !order_bucket_take(app->buckets, claims->sub, order_time_mono_us())) {
        atomic_fetch_add_explicit(&app->metrics.rate_limited, 1, memory_order_relaxed);
        order_http_reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_USER,
                                 order_limit_retry_after_s((double)app->cfg.ratelimit_rate));
        return 1;
    }
    /* Before the start (or after the end) of a window known here: Redis would say the same.
     * After the user's bucket, as the gate's answer was: a buyer hammering before the start
     * is limited all the same. */
    order_window_state ws = order_window_get(app->window, rt->arg, now_ms);
    if (ws != ORDER_WINDOW_UNKNOWN) {
        atomic_fetch_add_explicit(&app->metrics.window_hits, 1, memory_order_relaxed);
        order_http_reply_error(
            w, req, rt->id, start_us,
            ws == ORDER_WINDOW_NOT_STARTED ? ORDER_ERR_NOT_STARTED : ORDER_ERR_ENDED, NULL, 0);
        return 1;
    }
    if (atomic_load_explicit(&app->metrics.kafka_inflight, memory_order_relaxed) >=
        app->cfg.max_kafka_inflight) {
        atomic_fetch_add_explicit(&app->metrics.overload_rejections, 1, memory_order_relaxed);
        order_http_set_retry_after(req, 1);
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE,
                               "too many orders waiting for Kafka", 0);
        return 1;
    }
    if (!order_admit_check(app->admit, start_us, &retry_s)) {
        atomic_fetch_add_explicit(&app->metrics.shed_gate_p99, 1, memory_order_relaxed);
        order_http_set_retry_after(req, retry_s);
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE,
                               "the gate is slow (its p99 is past limits.gate_p99_ms): retry later",
                               0);
        return 1;
    }
    return 0;
}

static void order_create(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us,
                         int learned);

/* The event's meta (segment 0's: its window, its K, its rate overrides), read once per
 * event per front for an order of an event not in this front's table, then the order is
 * decided again from the top with what was learnt. */
static void on_event_meta(redisReply *reply, void *arg)
{
    order_place_req *r = arg;
    order_app *app = r->h.w->app;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 7) {
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    redisReply **f = reply->element;
    if (f[0]->type == REDIS_REPLY_STRING && f[1]->type == REDIS_REPLY_STRING) {
        int64_t v[5] = {0, 0, 0, 1, 0};
        for (int i = 0; i < 5; i++)
            if (f[2 + i]->type == REDIS_REPLY_STRING)
                v[i] = strtoll(f[2 + i]->str, NULL, 10);
        order_event_limits lim = {v[0] > 0 ? v[0] : 0, v[1] > 0 ? v[1] : 0, v[2] > 0 ? v[2] : 0,
                                  v[4]};
        if (v[3] >= 1 && v[3] <= ORDER_SEGMENTS_MAX)
            order_segs_set(app->segs, r->event_id, (unsigned)v[3]);
        order_window_set(app->window, r->event_id, strtoll(f[0]->str, NULL, 10),
                         strtoll(f[1]->str, NULL, 10), &lim);
        /* Checked here as well: the second pass may find the slot taken by another event
         * (then it goes on without the event's settings, and must not skip this). */
        order_route rt = {r->h.route, r->event_id, 0, NULL};
        if (lim.challenge_bits != 0 && order_challenge_http_refuse(r->h.w, r->h.req, &rt, r->h.start_us,
                                                                   r->user, lim.challenge_bits)) {
            order_place_req_free(r);
            return;
        }
    }
    /* No meta: an unknown event, or one whose keys were lost; the gate answers for it,
     * under the configured levels. */
    order_route rt = {r->h.route, r->event_id, 0, NULL};
    order_worker *w = r->h.w;
    sk_http_req *req = r->h.req;
    int64_t start_us = r->h.start_us;
    order_place_req_free(r);
    order_create(w, req, &rt, start_us, 1);
}

static void learn_event(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us,
                        const sk_jwt_claims *claims)
{
    order_place_req *r = place_new(w, req, rt, start_us, claims);
    if (!r)
        return;
    char key[ORDER_KEY_MAX];
    const char *argv[9] = {"HMGET",   key,         "starts_at_ms", "ends_at_ms",
                           "ip_rate", "user_rate", "event_rate",   "segments", "challenge_bits"};
    size_t lens[9] = {5, order_key_seg(r->event_id, 0, ORDER_KEY_META, key, sizeof(key))};
    for (int i = 2; i < 9; i++)
        lens[i] = strlen(argv[i]);
    if (order_redis_command(w->redis, 9, argv, lens, on_event_meta, r) != 0)
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}

void order_place_handle(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us)
{
    order_create(w, req, rt, start_us, 0);
}

/* A keyed order once its key is claimed: from the top, its address level taken already
 * (as after learn_event; an event new here is then decided by the gate). */
static void place_keyed(order_worker *w, sk_http_req *req, const order_route *rt,
                        int64_t start_us)
{
    order_create(w, req, rt, start_us, 1);
}

/* An order, from its address level to the gate. `learned`: the second pass, once the
 * event's meta was read (learn_event); its first pass took the configured address level
 * already, so only an override of it is applied now. */
static void order_create(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us,
                         int learned)
{
    order_app *app = w->app;
    long long retry_s;
    order_event_limits lim;
    int known = order_window_limits(app->window, rt->arg, &lim);
    /* The address level first: it is the cheapest, and spares the token check's HMAC. */
    if (lim.ip_rate > 0) {
        if (!order_limit_override_take(app->limits, ORDER_LIMIT_IP, order_http_client_ip(app, req),
                                       rt->arg, lim.ip_rate, start_us, &retry_s)) {
            order_http_reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_IP, retry_s);
            return;
        }
    } else if (!learned && order_limit_ip_on(app->limits) &&
               !order_limit_ip_take(app->limits, order_http_client_ip(app, req), start_us,
                                    &retry_s)) {
        order_http_reply_limited(w, req, rt->id, start_us, ORDER_LIMIT_IP, retry_s);
        return;
    }
    sk_jwt_claims claims;
    const char *body;
    size_t blen;
    if (order_http_authorize(w, req, rt->id, start_us, NULL, &claims) != 0 ||
        order_http_body(w, req, rt->id, start_us, &body, &blen) != 0)
        return;
    char msg[160];
    int quantity;
    if (order_body_parse_order(body, blen, &quantity, msg, sizeof(msg)) != 0) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST, msg, 0);
        return;
    }
    /* Idempotency-Key (issue 31): one Redis call for a keyed order, none without */
    if (order_idem_check(w, req, rt, start_us, claims.sub, body, blen, place_keyed))
        return;
    if (!known && !learned) { /* an authenticated order of an event new here */
        learn_event(w, req, rt, start_us, &claims);
        return;
    }
    /* The event's challenge or hidden path (issue 31): in process, before anything is
     * touched. */
    if (order_challenge_http_refuse(w, req, rt, start_us, claims.sub, lim.challenge_bits))
        return;
    int64_t now_ms = order_time_now_ms();
    if (refuse_locally(w, req, rt, start_us, &claims, now_ms, &lim))
        return;
    order_place_req *r = place_new(w, req, rt, start_us, &claims);
    if (!r)
        return;
    r->now_ms = now_ms;
    r->lim = lim;
    /* The event's per_user_limit is the gate's check (reserve.lua answers Q<limit> for a
     * quantity over it, nothing touched): this front does not keep it. */
    r->quantity = (uint32_t)quantity;
    /* The event's rate: a local token if this front holds one, else a batch from Redis. */
    int64_t erate = event_rate_of(app, &lim);
    int et = erate > 0 ? order_evrate_take(app->evrate, r->event_id, now_ms) : 1;
    if (et < 0) {
        place_limited(r, ORDER_LIMIT_EVENT, order_limit_retry_after_s((double)erate));
        return;
    }
    if (et == 0) {
        take_event_tokens(r);
        return;
    }
    after_event_level(r);
}

/* The per-user bucket in Redis mode (one ratelimit.lua call), then the gate. */
static void after_event_level(order_place_req *r)
{
    order_app *app = r->h.w->app;
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
            order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    order_place_reserve(r);
}

static void on_event_tokens(redisReply *reply, void *arg)
{
    order_place_req *r = arg;
    order_app *app = r->h.w->app;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
        return;
    }
    if (reply->integer < 1) {
        order_evrate_dry(app->evrate, r->event_id, order_time_now_ms());
        place_limited(r, ORDER_LIMIT_EVENT,
                      order_limit_retry_after_s((double)event_rate_of(app, &r->lim)));
        return;
    }
    if (reply->integer > 1) /* one is this order's; the rest for the next ones here */
        order_evrate_add(app->evrate, r->event_id, reply->integer - 1, order_time_now_ms());
    after_event_level(r);
}

static void take_event_tokens(order_place_req *r)
{
    order_app *app = r->h.w->app;
    char key[ORDER_KEY_MAX];
    size_t klen = order_evrate_key(r->event_id, key, sizeof(key));
    /* the event's own rate, if it has one: a bucket of one second's worth */
    long long rate = event_rate_of(app, &r->lim);
    long long burst = r->lim.event_rate > 0 ? r->lim.event_rate : app->cfg.event_burst;
    if (bucket_call(r, key, klen, rate, burst, app->cfg.event_batch, on_event_tokens) != 0)
        order_place_error(r, ORDER_ERR_UNAVAILABLE, "redis is unavailable", 0);
}
