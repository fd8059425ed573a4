/* order_event_meta: what an event is to both services (issue 30): its name, stock,
 * sale window, per-user limit, payment window, rebuy rule, stock segments and per-event
 * rate overrides. Plain data and its bounds, no I/O.
 *
 * The front fills one from a create-event body (order_body_parse_event) or a
 * seckill_event row (order_pg.c), and loads it into Redis (event_load.lua's meta hash,
 * order_loader.c). The consumer reads the few columns it needs in its own queries
 * (seckill_event.segments through order_recon_segments_k, rebuy_after_release for
 * release.lua); the bounds here are the ones the schema's checks hold. */
#ifndef ORDER_EVENT_META_H
#define ORDER_EVENT_META_H

#include <stdint.h>

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
    /* Not a rate, but read where they are, on every order: the leading zero bits of the
     * proof-of-work challenge the event's orders carry (issue 31; "challenge" at
     * creation, order/order_challenge.h), -1: a hidden order path per user instead
     * (ORDER_CHALLENGE_PATH), 0: neither. Not counted by _any. */
    int64_t challenge_bits;
} order_event_limits;

/** @brief 1 if any level of `l` is overridden. */
int order_event_limits_any(const order_event_limits *l);

/* An event: POST /api/v1/events {"name","stock","starts_at","ends_at"[,"per_user_limit":N]
 * ...} or a seckill_event row. */
typedef struct order_event_spec {
    char name[ORDER_EVENT_NAME_MAX + 1]; /* UTF-8 as received, NUL-terminated */
    int64_t stock;                       /* 0 .. INT32_MAX (a PostgreSQL int) */
    int64_t starts_at_ms, ends_at_ms;    /* ends_at_ms > starts_at_ms */
    int per_user_limit;                  /* the most units one user holds over their live
                                            orders, 1 .. SK_ORDER_MSG_MAX_QUANTITY (issue
                                            31); 1: one order per user */
    int payment_window_s;                /* seconds to pay after the order is written,
                                            1 .. ORDER_PAYMENT_WINDOW_MAX, default 900 */
    int rebuy_after_release;             /* 1: a buyer whose order was cancelled or
                                            expired may buy again (default 0) */
    int segments;                        /* stock segments K, 1 .. ORDER_SEGMENTS_MAX
                                            (order_msg.h; issue 19) */
    order_event_limits limits;           /* per-event rate overrides, 0s: none */
} order_event_spec;

#define ORDER_PAYMENT_WINDOW_DEFAULT 900
#define ORDER_PAYMENT_WINDOW_MAX 604800 /* a week */

#endif
