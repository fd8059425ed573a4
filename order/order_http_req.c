/* order_http_req: the plumbing every handler of seckill-order's HTTP API stands on:
 * answers (counted in the metrics, the draining close), the in-flight count, the token
 * check, the client's address, and PostgreSQL jobs handed back to their worker. It
 * calls no handler: the route files call down into it, and order_http.c's dispatch
 * calls the route files. See order_http_int.h. */
#include "order_http_int.h"
#include "order_body.h"
#include "order_time.h"
#include "sk_http_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/* clang-format off */
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
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}
/* clang-format on */

void order_http_reply_send(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us, int status, const char *ctype, const char *body,
                           size_t len)
{
    order_app *app = w->app;
    if (atomic_load_explicit(&app->draining, memory_order_relaxed))
        sk_http_close_after(req);
    if (app->hooks.answered) /* kept for its Idempotency-Key, if any */
        app->hooks.answered(req, status, body, len);
    /* sk_http writes Date, Content-Length and Connection, and no body for HEAD */
    sk_http_reply(req, status, reason(status), ctype, body, len);
    order_metrics_request(&app->metrics, route, status, order_time_mono_us() - start_us);
}

void order_http_request_done(order_worker *w)
{
    atomic_fetch_sub_explicit(&w->app->metrics.requests_inflight, 1, memory_order_relaxed);
}

void order_http_reply_raw(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                          int status, const char *ctype, const char *body, size_t len)
{
    order_http_reply_send(w, req, route, start_us, status, ctype, body, len);
    order_http_request_done(w);
}

void order_http_reply_json(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us, int status, const char *body, size_t len)
{
    order_http_reply_raw(w, req, route, start_us, status, "application/json", body, len);
}

void order_http_reply_error(order_worker *w, sk_http_req *req, order_route_id route,
                            int64_t start_us, order_err e, const char *msg, uint64_t order_id)
{
    char body[640];
    size_t n = order_reply_error(body, sizeof(body), e, msg, order_id);
    if (e == ORDER_ERR_UNAUTHORIZED)
        sk_http_add_header(req, "WWW-Authenticate", "Bearer");
    order_http_reply_json(w, req, route, start_us, order_err_status(e), body, n);
}

void order_http_set_retry_after(sk_http_req *req, long long s)
{
    char v[24];
    snprintf(v, sizeof(v), "%lld", s);
    sk_http_add_header(req, "Retry-After", v);
}

void order_http_reply_limited(order_worker *w, sk_http_req *req, order_route_id route,
                              int64_t start_us, order_limit_level level, long long retry_after_s)
{
    char body[256];
    size_t n =
        order_reply_limited(body, sizeof(body), order_limit_level_name(level), retry_after_s);
    atomic_fetch_add_explicit(&w->app->metrics.limited[level], 1, memory_order_relaxed);
    order_http_set_retry_after(req, retry_after_s);
    order_http_reply_json(w, req, route, start_us, 429, body, n);
}

int order_http_authenticate(order_worker *w, sk_http_req *req, sk_jwt_claims *claims)
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

int order_http_authorize(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                         const char *admin_for, sk_jwt_claims *claims)
{
    if (order_http_authenticate(w, req, claims) != 0) {
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_UNAUTHORIZED, NULL, 0);
        return -1;
    }
    if (admin_for && !claims->is_admin) {
        char msg[96];
        snprintf(msg, sizeof(msg), "%s needs the admin role", admin_for);
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_FORBIDDEN, msg, 0);
        return -1;
    }
    return 0;
}

int order_http_body(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                    const char **body, size_t *len)
{
    *body = sk_http_body(req, len);
    if (*len <= ORDER_BODY_MAX)
        return 0;
    order_http_reply_error(w, req, route, start_us, ORDER_ERR_TOO_LARGE, NULL, 0);
    return -1;
}

uint32_t order_http_client_ip(order_app *app, sk_http_req *req)
{
    const struct sockaddr *sa = sk_http_peer(req);
    if (!sa || sa->sa_family != AF_INET)
        return 0;
    uint32_t peer = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
    const order_limit_proxies *p = order_limit_proxies_of(app->limits);
    if (p->n == 0 || !order_limit_proxy_trusted(p, peer))
        return peer;
    return order_limit_client_ip(p, peer, sk_http_header(req, "X-Forwarded-For"));
}

int order_http_page(order_worker *w, sk_http_req *req, order_route_id route, int64_t start_us,
                    long long offset_max, long long limit_max, long long *offset,
                    long long *limit)
{
    size_t qlen;
    const char *q = sk_http_query_of(sk_http_uri(req), &qlen);
    if (sk_http_query_int(q, qlen, "offset", 0, offset_max, 0, offset) >= 0 &&
        sk_http_query_int(q, qlen, "limit", 1, limit_max, 20, limit) >= 0)
        return 0; /* found or absent (the default) */
    char why[96];
    snprintf(why, sizeof(why), "offset is 0 to %lld and limit 1 to %lld", offset_max, limit_max);
    order_http_reply_error(w, req, route, start_us, ORDER_ERR_BAD_REQUEST, why, 0);
    return -1;
}

int order_http_redis_ready(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us)
{
    if (order_redis_connected(w->redis))
        return 1;
    order_http_reply_error(w, req, route, start_us, ORDER_ERR_UNAVAILABLE, "redis is unavailable",
                           0);
    return 0;
}

void *order_req_alloc(size_t size, order_worker *w, sk_http_req *req, order_route_id route,
                      int64_t start_us)
{
    order_req_head *h = calloc(1, size);
    if (!h) {
        order_http_reply_error(w, req, route, start_us, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return NULL;
    }
    *h = (order_req_head){.w = w, .req = req, .route = route, .start_us = start_us};
    return h;
}

void order_req_reply_error(order_req_head *h, order_err e, const char *msg, uint64_t order_id)
{
    order_http_reply_error(h->w, h->req, h->route, h->start_us, e, msg, order_id);
    h->req = NULL;
}

void order_req_reply_json(order_req_head *h, int status, const char *body, size_t len)
{
    order_http_reply_json(h->w, h->req, h->route, h->start_us, status, body, len);
    h->req = NULL;
}

void order_req_error_free(order_req_head *h, order_err e, const char *msg, uint64_t order_id)
{
    order_req_reply_error(h, e, msg, order_id);
    free(h);
}

void order_req_json_free(order_req_head *h, int status, const char *body, size_t len)
{
    order_req_reply_json(h, status, body, len);
    free(h);
}

void order_req_pg_done(order_pg_job *job)
{
    order_req_head *h = job->arg;
    order_worker_post(h->w, &h->task);
}

int order_req_submit_pg(order_req_head *h, order_pg_job *job, void (*next)(order_task *),
                        void (*done)(order_pg_job *))
{
    order_app *app = h->w->app;
    if (!app->pg)
        return -1;
    h->task.fn = next;
    job->done = done ? done : order_req_pg_done;
    job->arg = h;
    return order_pg_submit(app->pg, job, 4096);
}
