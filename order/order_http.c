/* order_http: seckill-order's HTTP dispatch, sk_http's request handler on each worker's
 * loop (order_app.h): the request is counted in flight, CONNECT and TRACE are refused,
 * the path is routed (order_route.h) and what the route or the framing refuses is
 * answered here; the operator's routes go on at once, the others only under
 * max_inflight; then each route's own file serves it:
 *   order_place.c, order_place_gate.c   POST /api/v1/events/{id}/orders (the order chain)
 *   order_read.c                        GET /api/v1/orders/{id}
 *   order_pay_http.c                    POST /api/v1/orders/{id}/pay and /cancel
 *   order_event_admin.c                 POST /api/v1/events, /events/{id}/pause, /resume
 *   order_event_change.c                PATCH and DELETE /api/v1/events/{id}, POST .../end, /stock
 *   order_event_audit.c                 GET /api/v1/events/{id}/audit
 *   order_event_read.c                  GET /api/v1/events/{id}, GET /api/v1/events
 *   order_ops.c                         /healthz, /readyz, /metrics, /console/
 *   order_challenge_http.c              GET /api/v1/events/{id}/challenge, /order-path
 * They stand on order_http_req.c (answers, the token check; order_http_int.h), which
 * calls none of them. */
#include "order_http.h"
#include "order_challenge_http.h"
#include "order_event_admin.h"
#include "order_event_audit.h"
#include "order_event_change.h"
#include "order_event_read.h"
#include "order_http_int.h"
#include "order_idem_http.h"
#include "order_ops.h"
#include "order_pay_http.h"
#include "order_place.h"
#include "order_place_gate.h"
#include "order_read.h"
#include "order_time.h"

#include <string.h>

/* clang-format off */
static order_method method_of(sk_http_req *req)
{
    switch (sk_http_method_of(req)) {
    case SK_HTTP_GET: return ORDER_METHOD_GET;
    case SK_HTTP_POST: return ORDER_METHOD_POST;
    case SK_HTTP_HEAD: return ORDER_METHOD_HEAD;
    case SK_HTTP_PATCH: return ORDER_METHOD_PATCH;
    case SK_HTTP_DELETE: return ORDER_METHOD_DELETE;
    default: return ORDER_METHOD_OTHER;
    }
}
/* clang-format on */

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
    order_http_reply_error(w, req, rt.status == 405 ? rt.id : ORDER_ROUTE_NONE, start_us,
                           ORDER_ERR_METHOD, NULL, 0);
}

/* Answers what the route or the framing refuses: refused framing (sk_http.h) first,
 * with the connection closed, since what follows on it cannot be trusted to be a
 * request, yet a method the path does not take is still said as such (405, closed
 * too); then 404, 405 and 400 of the route. @returns 1 when answered. */
static int reply_refused(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us)
{
    const char *framing = sk_http_framing(req);
    if (framing) {
        sk_http_add_header(req, "Connection", "close");
        if (rt->status != 405) {
            order_http_reply_error(w, req, ORDER_ROUTE_NONE, start_us, ORDER_ERR_BAD_REQUEST,
                                   framing, 0);
            return 1;
        }
    }
    if (rt->status == 404) {
        order_http_reply_error(w, req, ORDER_ROUTE_NONE, start_us, ORDER_ERR_NOT_FOUND,
                               "no such path", 0);
        return 1;
    }
    if (rt->status == 405) {
        sk_http_add_header(req, "Allow", rt->allow);
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_METHOD, NULL, 0);
        return 1;
    }
    if (rt->status == 400) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_BAD_REQUEST,
                               "ids are decimal numbers from 1 to 9223372036854775807", 0);
        return 1;
    }
    return 0;
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
    order_route rt;
    order_route_match(method_of(req), uri, strcspn(uri, "?#"), &rt);
    if (reply_refused(w, req, &rt, start_us))
        return;
    switch (rt.id) {
    case ORDER_ROUTE_HEALTHZ:
    case ORDER_ROUTE_READYZ:
    case ORDER_ROUTE_METRICS:
    case ORDER_ROUTE_CONSOLE:
        order_ops_handle(w, req, &rt, start_us);
        return;
    default:
        break;
    }
    /* Past the bound, answer at once rather than queue without limit. */
    if (inflight > app->cfg.max_inflight) {
        atomic_fetch_add_explicit(&app->metrics.overload_rejections, 1, memory_order_relaxed);
        order_http_reply_error(w, req, rt.id, start_us, ORDER_ERR_UNAVAILABLE,
                               "too many requests in flight", 0);
        return;
    }
    switch (rt.id) {
    case ORDER_ROUTE_ORDER_CREATE:
        order_place_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_ORDER_GET:
        order_read_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_ORDER_LIST:
        order_read_list_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_CREATE:
        order_event_create_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_GET:
        order_event_get_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_LIST:
        order_event_list_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_ORDER_PAY:
    case ORDER_ROUTE_ORDER_CANCEL:
        order_pay_http_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_PAUSE:
    case ORDER_ROUTE_EVENT_RESUME:
        order_event_pause_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_CHALLENGE:
    case ORDER_ROUTE_EVENT_ORDER_PATH:
        order_challenge_get_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_CHANGE:
    case ORDER_ROUTE_EVENT_END:
        order_event_change_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_STOCK:
        order_event_stock_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_AUDIT:
        order_event_audit_handle(w, req, &rt, start_us);
        break;
    case ORDER_ROUTE_EVENT_DELETE:
        order_event_remove_handle(w, req, &rt, start_us);
        break;
    default:
        order_http_reply_error(w, req, ORDER_ROUTE_NONE, start_us, ORDER_ERR_NOT_FOUND,
                               "no such path", 0);
    }
}

const order_worker_hooks order_http_hooks = {order_http_handle, order_place_chain_new,
                                             order_place_chain_flush, order_place_chain_free,
                                             order_idem_answered};
