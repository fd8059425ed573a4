/* order_route: path matching for the HTTP API. See order_route.h. */
#include "order_route.h"

#include "sk_id.h"

#include <string.h>

int order_parse_id(const char *s, size_t len, uint64_t *out)
{
    return sk_id_parse(s, len, out); /* the consumer's rule too: no leading zero */
}

static int prefix(const char *path, size_t len, const char *p, size_t *rest)
{
    size_t n = strlen(p);
    if (len < n || memcmp(path, p, n) != 0)
        return 0;
    *rest = n;
    return 1;
}

static int is(const char *path, size_t len, const char *p)
{
    return strlen(p) == len && memcmp(path, p, len) == 0;
}

/* A path segment must not be empty and must not hold '/'; its digits are checked later
 * (a non-decimal id is a 400, not a 404: the path has the right shape). */
static int set_route(order_route *out, order_route_id id, order_method method,
                     order_method want, const char *allow)
{
    out->id = id;
    out->allow = allow;
    if (method != want && !(want == ORDER_METHOD_GET && method == ORDER_METHOD_HEAD)) {
        out->status = 405;
        return 405;
    }
    out->status = 0;
    return 0;
}

int order_route_match(order_method method, const char *path, size_t len, order_route *out)
{
    memset(out, 0, sizeof(*out));
    size_t off;
    int rc;
    if (is(path, len, "/healthz"))
        return set_route(out, ORDER_ROUTE_HEALTHZ, method, ORDER_METHOD_GET, "GET, HEAD");
    if (is(path, len, "/readyz"))
        return set_route(out, ORDER_ROUTE_READYZ, method, ORDER_METHOD_GET, "GET, HEAD");
    if (is(path, len, "/console") || prefix(path, len, "/console/", &off))
        return set_route(out, ORDER_ROUTE_CONSOLE, method, ORDER_METHOD_GET, "GET, HEAD");
    if (is(path, len, "/metrics"))
        return set_route(out, ORDER_ROUTE_METRICS, method, ORDER_METHOD_GET, "GET, HEAD");
    if (is(path, len, "/api/v1/events")) {
        if (method == ORDER_METHOD_POST)
            return set_route(out, ORDER_ROUTE_EVENT_CREATE, method, ORDER_METHOD_POST, "GET, HEAD, POST");
        if (method == ORDER_METHOD_GET || method == ORDER_METHOD_HEAD)
            return set_route(out, ORDER_ROUTE_EVENT_LIST, method, ORDER_METHOD_GET, "GET, HEAD, POST");
        return set_route(out, ORDER_ROUTE_EVENT_CREATE, method, ORDER_METHOD_POST, "GET, HEAD, POST");
    }
    if (prefix(path, len, "/api/v1/events/", &off)) {
        const char *seg = path + off;
        size_t seglen = len - off;
        const char *slash = memchr(seg, '/', seglen);
        if (!slash) {
            if (seglen == 0)
                goto none;
            if (method == ORDER_METHOD_PATCH)
                rc = set_route(out, ORDER_ROUTE_EVENT_CHANGE, method, ORDER_METHOD_PATCH,
                               "GET, HEAD, PATCH, DELETE");
            else if (method == ORDER_METHOD_DELETE)
                rc = set_route(out, ORDER_ROUTE_EVENT_DELETE, method, ORDER_METHOD_DELETE,
                               "GET, HEAD, PATCH, DELETE");
            else
                rc = set_route(out, ORDER_ROUTE_EVENT_GET, method, ORDER_METHOD_GET,
                               "GET, HEAD, PATCH, DELETE");
        } else {
            size_t idlen = (size_t)(slash - seg);
            order_route_id sub;
            order_method want = ORDER_METHOD_POST;
            const char *allow = "POST";
            if (idlen == 0)
                goto none;
            if (is(slash, seglen - idlen, "/orders"))
                sub = ORDER_ROUTE_ORDER_CREATE;
            else if (seglen - idlen > 8 && memcmp(slash, "/orders/", 8) == 0 &&
                     !memchr(slash + 8, '/', seglen - idlen - 8))
                sub = ORDER_ROUTE_ORDER_CREATE; /* a hidden path's token: checked by the order */
            else if (is(slash, seglen - idlen, "/pause"))
                sub = ORDER_ROUTE_EVENT_PAUSE;
            else if (is(slash, seglen - idlen, "/resume"))
                sub = ORDER_ROUTE_EVENT_RESUME;
            else if (is(slash, seglen - idlen, "/end"))
                sub = ORDER_ROUTE_EVENT_END;
            else if (is(slash, seglen - idlen, "/stock"))
                sub = ORDER_ROUTE_EVENT_STOCK;
            else if (is(slash, seglen - idlen, "/audit") ||
                     is(slash, seglen - idlen, "/challenge") ||
                     is(slash, seglen - idlen, "/order-path")) {
                sub = slash[1] == 'a'   ? ORDER_ROUTE_EVENT_AUDIT
                      : slash[1] == 'c' ? ORDER_ROUTE_EVENT_CHALLENGE
                                        : ORDER_ROUTE_EVENT_ORDER_PATH;
                want = ORDER_METHOD_GET;
                allow = "GET, HEAD";
            } else
                goto none;
            seglen = idlen;
            rc = set_route(out, sub, method, want, allow);
        }
        if (rc != 0)
            return rc;
        if (order_parse_id(seg, seglen, &out->arg) != 0)
            return out->status = 400;
        return 0;
    }
    if (is(path, len, "/api/v1/orders"))
        return set_route(out, ORDER_ROUTE_ORDER_LIST, method, ORDER_METHOD_GET, "GET, HEAD");
    if (prefix(path, len, "/api/v1/orders/", &off)) {
        const char *seg = path + off;
        size_t seglen = len - off;
        const char *slash = memchr(seg, '/', seglen);
        if (seglen == 0 || slash == seg)
            goto none;
        if (!slash) {
            rc = set_route(out, ORDER_ROUTE_ORDER_GET, method, ORDER_METHOD_GET, "GET, HEAD");
        } else {
            size_t idlen = (size_t)(slash - seg);
            if (is(slash, seglen - idlen, "/pay"))
                rc = set_route(out, ORDER_ROUTE_ORDER_PAY, method, ORDER_METHOD_POST, "POST");
            else if (is(slash, seglen - idlen, "/cancel"))
                rc = set_route(out, ORDER_ROUTE_ORDER_CANCEL, method, ORDER_METHOD_POST, "POST");
            else
                goto none;
            seglen = idlen;
        }
        if (rc != 0)
            return rc;
        if (order_parse_id(seg, seglen, &out->arg) != 0)
            return out->status = 400;
        return 0;
    }
none:
    memset(out, 0, sizeof(*out));
    return out->status = 404;
}

const char *order_route_name(order_route_id id)
{
    static const char *names[ORDER_ROUTE_COUNT] = {
        [ORDER_ROUTE_NONE] = "unknown",          [ORDER_ROUTE_EVENT_CREATE] = "event_create",
        [ORDER_ROUTE_EVENT_GET] = "event_get",   [ORDER_ROUTE_ORDER_CREATE] = "order_create",
        [ORDER_ROUTE_ORDER_GET] = "order_get",   [ORDER_ROUTE_HEALTHZ] = "healthz",
        [ORDER_ROUTE_READYZ] = "readyz",         [ORDER_ROUTE_METRICS] = "metrics",
        [ORDER_ROUTE_CONSOLE] = "console",
        [ORDER_ROUTE_EVENT_LIST] = "event_list", [ORDER_ROUTE_ORDER_PAY] = "order_pay",
        [ORDER_ROUTE_ORDER_CANCEL] = "order_cancel",
        [ORDER_ROUTE_EVENT_PAUSE] = "event_pause", [ORDER_ROUTE_EVENT_RESUME] = "event_resume",
        [ORDER_ROUTE_ORDER_LIST] = "order_list",
        [ORDER_ROUTE_EVENT_CHALLENGE] = "event_challenge",
        [ORDER_ROUTE_EVENT_ORDER_PATH] = "event_order_path",
        [ORDER_ROUTE_EVENT_CHANGE] = "event_change", [ORDER_ROUTE_EVENT_END] = "event_end",
        [ORDER_ROUTE_EVENT_STOCK] = "event_stock", [ORDER_ROUTE_EVENT_AUDIT] = "event_audit",
        [ORDER_ROUTE_EVENT_DELETE] = "event_delete",
    };
    return (unsigned)id < ORDER_ROUTE_COUNT ? names[id] : "unknown";
}
