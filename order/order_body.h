/* order_body: request bodies of the HTTP API, parsed and validated. Pure (jansson only).
 *
 * Each parser either fills its struct completely or returns -1 with a short message
 * for the client's 400 body; nothing else happens on a bad body. */
#ifndef ORDER_BODY_H
#define ORDER_BODY_H

#include <stddef.h>
#include <stdint.h>

/* Bodies larger than this are refused with 413 before any parsing. */
#define ORDER_BODY_MAX 4096
#define ORDER_EVENT_NAME_MAX 200

/* Per-event overrides of the rate-limit levels (issue 19 section 2), given at creation as
 * "limits": {"ip_rate":N, "user_rate":N, "event_rate":N}, each optional; 0: the level
 * keeps its configured default. Each override is a bucket of N tokens refilled at N per
 * second (one second's worth of burst), used for this event's orders in place of the
 * configured ratelimit.ip_rate / ratelimit.rate / limits.event_rate and their bursts. */
#define ORDER_LIMIT_RATE_MAX 1000000        /* ip_rate, user_rate: as ratelimit.ip_rate */
#define ORDER_LIMIT_EVENT_RATE_MAX 10000000 /* event_rate: as limits.event_rate */
typedef struct order_event_limits {
    int64_t ip_rate;    /* per client address, 0 or 1 .. ORDER_LIMIT_RATE_MAX */
    int64_t user_rate;  /* per user, 0 or 1 .. ORDER_LIMIT_RATE_MAX */
    int64_t event_rate; /* the event's admission rate, all fronts, 0 or 1 .. ORDER_LIMIT_EVENT_RATE_MAX */
} order_event_limits;

/** @brief 1 if any level of `l` is overridden. */
int order_event_limits_any(const order_event_limits *l);

/* POST /api/v1/events {"name","stock","starts_at","ends_at"[,"per_user_limit":1]} */
typedef struct order_event_spec {
    char name[ORDER_EVENT_NAME_MAX + 1]; /* UTF-8 as received, NUL-terminated */
    int64_t stock;                       /* 0 .. INT32_MAX (a PostgreSQL int) */
    int64_t starts_at_ms, ends_at_ms;    /* ends_at_ms > starts_at_ms */
    int per_user_limit;                  /* 1: the schema allows one order per user */
    int payment_window_s;                /* seconds to pay after the order is written,
                                            1 .. ORDER_PAYMENT_WINDOW_MAX, default 900 */
    int rebuy_after_release;             /* 1: a buyer whose order was cancelled or
                                            expired may buy again (default 0) */
    int segments;                        /* stock segments K, 1 .. ORDER_SEGMENTS_MAX (issue 19) */
    order_event_limits limits;           /* per-event rate overrides, 0s: none */
} order_event_spec;

#define ORDER_PAYMENT_WINDOW_DEFAULT 900
#define ORDER_PAYMENT_WINDOW_MAX 604800 /* a week */
#define ORDER_PAYMENT_REF_MAX 128

/** @brief Parses a create-event body. @returns 0, or -1 with a message in err. */
int order_body_parse_event(const char *body, size_t len, order_event_spec *out, char *err,
                           size_t errsz);

/** @brief Parses a pay body {"payment_ref":"<1 to ORDER_PAYMENT_REF_MAX printable ASCII
 *  bytes>"} into ref (>= ORDER_PAYMENT_REF_MAX + 1 bytes). @returns 0, or -1 with err. */
int order_body_parse_pay(const char *body, size_t len, char *ref, char *err, size_t errsz);

/** @brief Checks a place-order body: empty, or a JSON object (its fields are ignored:
 *  the event is in the path and the user in the token). @returns 0, or -1 with err. */
int order_body_check_order(const char *body, size_t len, char *err, size_t errsz);

#endif
