/* order_ops: the operator's routes, answered at once on the worker's loop and never
 * refused for load: GET /healthz (the process answers), /readyz (Redis and Kafka
 * connected, not draining), /metrics (Prometheus text; metrics.token guards it when
 * set) and the sale console's files (/console/..., embedded, order_console.h). */
#include "order_ops.h"
#include "order_console.h"
#include "order_http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* /metrics: the bearer of metrics.token when set; else anyone with metrics.open, else
 * only a peer on this host (sk_http_guard_ok; issue 33: open to all before). */
static int metrics_allowed(const order_app *app, sk_http_req *req)
{
    return sk_http_guard_ok(req, app->cfg.metrics_token, (int)app->cfg.metrics_open);
}

static void handle_readyz(order_worker *w, sk_http_req *req, const order_route *rt,
                          int64_t start_us)
{
    order_app *app = w->app;
    int redis_ok = order_redis_connected(w->redis), kafka_ok = order_kafka_ready(app->kafka);
    if (redis_ok && kafka_ok && !atomic_load(&app->draining)) {
        order_http_reply_json(w, req, rt->id, start_us, 200, "{\"status\":\"ready\"}", 18);
        return;
    }
    char msg[128];
    snprintf(msg, sizeof(msg), "redis: %s, kafka: %s%s", redis_ok ? "ok" : "down",
             kafka_ok ? "ok" : "down", atomic_load(&app->draining) ? ", draining" : "");
    order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAVAILABLE, msg, 0);
}

static void handle_metrics(order_worker *w, sk_http_req *req, const order_route *rt,
                           int64_t start_us)
{
    order_app *app = w->app;
    if (!metrics_allowed(app, req)) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_UNAUTHORIZED,
                               "/metrics: send Authorization: Bearer <metrics.token>, or ask "
                               "from this host (metrics.open opens it)",
                               0);
        return;
    }
    size_t len = 0;
    char *text = order_metrics_render(&app->metrics, &len);
    if (!text) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_INTERNAL, NULL, 0);
        return;
    }
    order_http_reply_raw(w, req, rt->id, start_us, 200, "text/plain; version=0.0.4", text, len);
    free(text);
}

static void handle_console(order_worker *w, sk_http_req *req, const order_route *rt,
                           const char *uri, size_t plen, int64_t start_us)
{
    const char *ctype;
    size_t len;
    const char *file = order_console_find(uri, plen, &ctype, &len);
    if (!file) {
        order_http_reply_error(w, req, rt->id, start_us, ORDER_ERR_NOT_FOUND, "no such file", 0);
        return;
    }
    sk_http_add_header(req, "Content-Security-Policy", ORDER_CONSOLE_CSP);
    sk_http_add_header(req, "X-Content-Type-Options", "nosniff");
    sk_http_add_header(req, "Referrer-Policy", "no-referrer");
    sk_http_add_header(req, "Cache-Control", "no-cache");
    order_http_reply_raw(w, req, rt->id, start_us, 200, ctype, file, len);
}

void order_ops_handle(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us)
{
    switch (rt->id) {
    case ORDER_ROUTE_HEALTHZ:
        order_http_reply_json(w, req, rt->id, start_us, 200, "{\"status\":\"ok\"}", 15);
        return;
    case ORDER_ROUTE_READYZ:
        handle_readyz(w, req, rt, start_us);
        return;
    case ORDER_ROUTE_METRICS:
        handle_metrics(w, req, rt, start_us);
        return;
    default: {
        const char *uri = sk_http_uri(req);
        handle_console(w, req, rt, uri, strcspn(uri, "?#"), start_us);
    }
    }
}
