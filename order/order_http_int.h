/* order_http_int: what every handler file of seckill-order's HTTP API shares (internal
 * header; order_http_req.c holds it).
 *
 * A route that waits on something (Redis, Kafka, PostgreSQL) keeps its own request
 * struct, which begins with an order_req_head: the continuation, the worker, the
 * sk_http request and the route and start time its answer is counted under. A route
 * allocates its struct with order_req_alloc (the placement request has its own pool,
 * order_place_int.h); order_req_reply_* answer and leave the struct to its route,
 * order_req_*_free answer and free it.
 *
 * Every answer goes through order_http_reply_send, which counts it in the metrics; the
 * request stays "in flight" (the gauge, and the bound SIGTERM waits on) until
 * order_http_request_done. The reply_* functions other than reply_send do both.
 * Threads: every function runs on the request's worker loop. */
#ifndef ORDER_HTTP_INT_H
#define ORDER_HTTP_INT_H

#include "order_app.h"
#include "order_limit.h"
#include "order_reply.h"
#include "order_route.h"

#include <stddef.h>
#include <stdint.h>

/* The head of a route's request struct (its first member). */
typedef struct order_req_head {
    order_task task; /* the continuation posted back to the worker */
    order_worker *w;
    sk_http_req *req; /* sk_http's; NULL once answered (sk_http frees it then) */
    order_route_id route;
    int64_t start_us; /* when the request arrived (order_time_mono_us) */
} order_req_head;

/* The struct of type `type` whose member `member` is at `p`. */
#define ORDER_CONTAINER_OF(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

/** @brief Sends an answer and counts it (route, status, time since start_us); the
 *  request stays in flight. */
void order_http_reply_send(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us, int status, const char *ctype, const char *body,
                           size_t len);

/** @brief Ends a request's in-flight time (once per request, after its answer). */
void order_http_request_done(order_worker *w);

/** @brief Answers (reply_send) and ends the request (request_done). */
void order_http_reply_raw(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                          int status, const char *ctype, const char *body, size_t len);

/** @brief Answers `status` with a JSON body, and ends the request. */
void order_http_reply_json(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us, int status, const char *body, size_t len);

/** @brief Answers error `e` (order_reply.h's body; msg and order_id may be NULL and 0),
 *  with WWW-Authenticate on a 401, and ends the request. */
void order_http_reply_error(order_worker *w, sk_http_req *req, order_route_id route,
                            int64_t start_us, order_err e, const char *msg, uint64_t order_id);

/** @brief Answers 429 for limit `level` with Retry-After, counted by level; ends it. */
void order_http_reply_limited(order_worker *w, sk_http_req *req, order_route_id route,
                              int64_t start_us, order_limit_level level, long long retry_after_s);

/** @brief Adds Retry-After: s to the answer to come. */
void order_http_set_retry_after(sk_http_req *req, long long s);

/** @brief Verifies the bearer token. @returns 0 and the claims, or -1. */
int order_http_authenticate(order_worker *w, sk_http_req *req, sk_jwt_claims *claims);

/** @brief Verifies the bearer token, and the admin role when admin_for is not NULL
 *  (it names the act: "<admin_for> needs the admin role").
 *  @returns 0 with the claims, or -1 once it answered 401 or 403. */
int order_http_authorize(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                         const char *admin_for, sk_jwt_claims *claims);

/** @brief The request's body, at most ORDER_BODY_MAX bytes.
 *  @returns 0 with *body and *len, or -1 once it answered 413. */
int order_http_body(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                    const char **body, size_t *len);

/** @brief The client's IPv4 address (host order): the peer, or X-Forwarded-For's first
 *  untrusted hop when the peer is a trusted proxy (order_limit.h). 0 when unknown. */
uint32_t order_http_client_ip(order_app *app, sk_http_req *req);

/** @brief Whether the worker's Redis is connected; if not, answers 503 and returns 0. */
int order_http_redis_ready(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us);

/** @brief The page of a list route from its query: `offset` 0..offset_max (default 0)
 *  and `limit` 1..limit_max (default 20). A wrong one answers 400 naming both ranges.
 *  @returns 0, or -1 once it answered. */
int order_http_page(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                    long long offset_max, long long limit_max, long long *offset,
                    long long *limit);

/** @brief A zeroed request struct of `size` bytes whose first member is an
 *  order_req_head, the head filled from the arguments.
 *  @returns it (the caller's: free() or an order_req_*_free below), or NULL once it
 *  answered 503 (memory is short). */
void *order_req_alloc(size_t size, order_worker *w, sk_http_req *req, order_route_id route,
                      int64_t start_us);

/** @brief Answers error `e` for the request h heads; h stays the caller's. */
void order_req_reply_error(order_req_head *h, order_err e, const char *msg, uint64_t order_id);

/** @brief Answers `status` with a JSON body for the request h heads; h stays the caller's. */
void order_req_reply_json(order_req_head *h, int status, const char *body, size_t len);

/** @brief order_req_reply_error, then free(h): for a request from order_req_alloc. */
void order_req_error_free(order_req_head *h, order_err e, const char *msg, uint64_t order_id);

/** @brief order_req_reply_json, then free(h): for a request from order_req_alloc. */
void order_req_json_free(order_req_head *h, int status, const char *body, size_t len);

/** @brief Hands `job` to the PostgreSQL pool: on a pool thread `done` runs (NULL:
 *  order_req_pg_done, which posts h back), then `next` runs on h's worker. The job's
 *  arg is h. @returns 0, or -1 when no database is configured or its queue is full
 *  (nothing will run). */
int order_req_submit_pg(order_req_head *h, order_pg_job *job, void (*next)(order_task *),
                        void (*done)(order_pg_job *));

/** @brief The pool-thread callback that posts the job's request (arg: an order_req_head)
 *  back to its worker, where its task runs. */
void order_req_pg_done(order_pg_job *job);

#endif
