/* order_reply: response bodies of the HTTP API (errors and successes), pure functions.
 *
 * Every error body is {"error":"<code>","message":"..."} (plus "order_id" when the
 * client may poll an order whose fate is unknown). Messages are fixed texts or our
 * own validation messages, JSON-escaped here all the same. */
#ifndef ORDER_REPLY_H
#define ORDER_REPLY_H

#include "order_body.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ORDER_ERR_BAD_REQUEST = 0, /* 400 bad_request */
    ORDER_ERR_UNAUTHORIZED,    /* 401 unauthorized */
    ORDER_ERR_FORBIDDEN,       /* 403 forbidden (not admin, not the owner) */
    ORDER_ERR_NOT_FOUND,       /* 404 not_found */
    ORDER_ERR_METHOD,          /* 405 method_not_allowed */
    ORDER_ERR_TOO_LARGE,       /* 413 payload_too_large */
    ORDER_ERR_SOLD_OUT,        /* 409 sold_out */
    ORDER_ERR_DUPLICATE,       /* 409 duplicate */
    ORDER_ERR_NOT_STARTED,     /* 403 not_started */
    ORDER_ERR_ENDED,           /* 403 ended */
    ORDER_ERR_RATE_LIMITED,    /* 429 rate_limited */
    ORDER_ERR_UNAVAILABLE,     /* 503 unavailable */
    ORDER_ERR_INTERNAL,        /* 500 internal */
    ORDER_ERR_CLOSED,          /* 409 closed: the order is cancelled, expired or rejected */
    ORDER_ERR_ALREADY_PAID,    /* 409 already_paid: paid (with another payment_ref) */
    ORDER_ERR_NOT_READY,       /* 409 not_ready: still queued, not in PostgreSQL yet */
    ORDER_ERR_PAUSED,          /* 503 paused (an admin paused the event's sale) */
    ORDER_ERR_IN_PROGRESS,     /* 409 in_progress: its Idempotency-Key's first request is
                                  still being decided (order_idem.h) */
    ORDER_ERR_KEY_REUSED,      /* 422 key_reused: the Idempotency-Key was used for another request */
    ORDER_ERR_CONFLICT,        /* 409 conflict: an admin change the event's state refuses */
    ORDER_ERR_LIMIT_REACHED,   /* 409 limit_reached: the user's units would pass the event's
                                  per_user_limit (issue 31, a limit above 1) */
    ORDER_ERR_COUNT
} order_err;

/** @brief The HTTP status of an error. */
int order_err_status(order_err e);
/** @brief The "error" code string ("sold_out", ...). */
const char *order_err_code(order_err e);
/** @brief The default human message of an error. */
const char *order_err_message(order_err e);

/** @brief Writes an error body. `message` NULL: the default one; `order_id` 0: none.
 *  @returns the length written (truncated bodies are still valid JSON only if outsz >= 512). */
size_t order_reply_error(char *out, size_t outsz, order_err e, const char *message,
                         uint64_t order_id);

/** @brief A 429 body naming the limit's level ("ip", "user"):
 *  {"error":"rate_limited","message":"...","level":"<level>"} @returns the length. */
size_t order_reply_limited(char *out, size_t outsz, const char *level, long long retry_after_s);

/** @brief {"event_id":"<id>","paused":true|false} @returns the length. */
size_t order_reply_paused(char *out, size_t outsz, uint64_t event_id, int paused);

/** @brief {"order_id":"<id>","status":"queued"} @returns the length. */
size_t order_reply_order_queued(char *out, size_t outsz, uint64_t order_id);

/** @brief {"order_id","event_id","user_id","status"} @returns the length. */
size_t order_reply_order(char *out, size_t outsz, uint64_t order_id, uint64_t event_id,
                         uint64_t user_id, const char *status);

/** @brief {"order_id","event_id","user_id","status"[,"pay_by"]}: pay_by (RFC 3339) only
 *  when pay_by_ms > 0 and the order is created or paid. @returns the length. */
size_t order_reply_order_pay_by(char *out, size_t outsz, uint64_t order_id, uint64_t event_id,
                                uint64_t user_id, const char *status, int64_t pay_by_ms);

/** @brief A 409 duplicate naming the order the user holds (issue 31):
 *  {"error":"duplicate","message":"...","order_id","event_id","user_id","status"[,"pay_by"]},
 *  the rest as order_reply_order_pay_by. @returns the length. */
size_t order_reply_duplicate(char *out, size_t outsz, uint64_t order_id, uint64_t event_id,
                             uint64_t user_id, const char *status, int64_t pay_by_ms);

/** @brief An order of several units refused (issue 31): for ORDER_ERR_SOLD_OUT
 *  {"error":"sold_out","message":"...","left":n} (fewer units left than asked: n of
 *  them); for ORDER_ERR_LIMIT_REACHED {"error":"limit_reached","message":"...",
 *  "held":n[,"order_id":"<id>"]} (the units the user holds over their live orders, and
 *  their latest order; order_id 0: not known). @returns the length. */
size_t order_reply_units(char *out, size_t outsz, order_err e, long long n, uint64_t order_id);

/** @brief {"event_id":"<id>"} @returns the length. */
size_t order_reply_event_created(char *out, size_t outsz, uint64_t event_id);

/** @brief GET event body; with "limits":{...} holding the overridden levels of `lim`
 *  when there is any (NULL: none). @returns a malloc'd NUL-terminated string the caller
 *  frees, or NULL. */
char *order_reply_event(uint64_t event_id, const char *name, int64_t stock_total,
                        int64_t stock_left, int64_t starts_at_ms, int64_t ends_at_ms,
                        const order_event_limits *lim);

/** @brief Reserve result code (reserve.lua) -> error; 0 (ok) is not an error: returns -1. */
int order_err_from_reserve(long long code);

#endif
