/* order_route: the HTTP API's routing table and id parsing, pure functions.
 *
 * Maps (method, path) to one route of docs/design.md's API and pulls the decimal id out of
 * the path. Knows nothing of evhttp, so it is unit-tested without a network. The
 * order of checks is fixed: unknown path 404, then wrong method 405, then a bad id 400. */
#ifndef ORDER_ROUTE_H
#define ORDER_ROUTE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ORDER_ROUTE_NONE = 0,       /* no such path */
    ORDER_ROUTE_EVENT_CREATE,   /* POST /api/v1/events */
    ORDER_ROUTE_EVENT_GET,      /* GET  /api/v1/events/{id} */
    ORDER_ROUTE_ORDER_CREATE,   /* POST /api/v1/events/{id}/orders, and .../orders/<path token>
                                   (an event's hidden order path: order_challenge_http.h) */
    ORDER_ROUTE_ORDER_GET,      /* GET  /api/v1/orders/{id} */
    ORDER_ROUTE_HEALTHZ,        /* GET  /healthz */
    ORDER_ROUTE_READYZ,         /* GET  /readyz */
    ORDER_ROUTE_METRICS,        /* GET  /metrics */
    ORDER_ROUTE_EVENT_LIST,     /* GET  /api/v1/events (current and upcoming, paginated; ?state=ended admin) */
    ORDER_ROUTE_CONSOLE,        /* GET  /console and /console/<file> (order_console) */
    ORDER_ROUTE_ORDER_PAY,      /* POST /api/v1/orders/{id}/pay (issue 22) */
    ORDER_ROUTE_ORDER_CANCEL,   /* POST /api/v1/orders/{id}/cancel (issue 22) */
    ORDER_ROUTE_EVENT_PAUSE,    /* POST /api/v1/events/{id}/pause (admin) */
    ORDER_ROUTE_EVENT_RESUME,   /* POST /api/v1/events/{id}/resume (admin) */
    ORDER_ROUTE_ORDER_LIST,     /* GET  /api/v1/orders (the token's orders, issue 31) */
    ORDER_ROUTE_EVENT_CHALLENGE, /* GET /api/v1/events/{id}/challenge (issue 31) */
    ORDER_ROUTE_EVENT_ORDER_PATH, /* GET /api/v1/events/{id}/order-path (issue 31) */
    ORDER_ROUTE_EVENT_CHANGE,   /* PATCH /api/v1/events/{id} (admin, issue 32) */
    ORDER_ROUTE_EVENT_END,      /* POST /api/v1/events/{id}/end (admin, issue 32) */
    ORDER_ROUTE_EVENT_STOCK,    /* POST /api/v1/events/{id}/stock (admin, issue 32) */
    ORDER_ROUTE_EVENT_AUDIT,    /* GET  /api/v1/events/{id}/audit (admin, issue 32) */
    ORDER_ROUTE_EVENT_DELETE,   /* DELETE /api/v1/events/{id} (admin, issue 32) */
    ORDER_ROUTE_COUNT
} order_route_id;

typedef enum {
    ORDER_METHOD_GET = 1,
    ORDER_METHOD_POST = 2,
    ORDER_METHOD_HEAD = 3,
    ORDER_METHOD_OTHER = 4, /* PUT, DELETE, ...: never allowed */
    ORDER_METHOD_PATCH = 5, /* PATCH /api/v1/events/{id} only */
    ORDER_METHOD_DELETE = 6, /* DELETE /api/v1/events/{id} only */
} order_method;

typedef struct order_route {
    order_route_id id;  /* ORDER_ROUTE_NONE when status is 404 */
    uint64_t arg;       /* the {id} of the path, when the route has one */
    int status;         /* 0 matched, or 404 / 405 / 400 */
    const char *allow;  /* for 405: the Allow header value */
} order_route;

/** @brief Matches `path` (no query string; len bytes) for `method` into *out.
 *  @returns out->status: 0 when the request may go on. */
int order_route_match(order_method method, const char *path, size_t len, order_route *out);

/** @brief Parses a decimal id by common/sk_id's rule: 1 to 19 digits, no sign, no
 *  spaces, no leading zero, value in [1, INT64_MAX] (ids are PostgreSQL bigints).
 *  @returns 0, or -1 if not decimal, zero, zero-padded or over 63 bits. */
int order_parse_id(const char *s, size_t len, uint64_t *out);

/** @brief A stable short name for metrics labels ("order_create", ...). */
const char *order_route_name(order_route_id id);

#endif
