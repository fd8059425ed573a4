/* order_reply: response encoding. See order_reply.h. */
#include "order_reply.h"
#include "order_msg.h"
#include "order_time.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    int status;
    const char *code;
    const char *message;
} errs[ORDER_ERR_COUNT] = {
    [ORDER_ERR_BAD_REQUEST] = {400, "bad_request", "the request is malformed"},
    [ORDER_ERR_UNAUTHORIZED] = {401, "unauthorized", "a valid bearer token is required"},
    [ORDER_ERR_FORBIDDEN] = {403, "forbidden", "not allowed for this token"},
    [ORDER_ERR_NOT_FOUND] = {404, "not_found", "no such resource"},
    [ORDER_ERR_METHOD] = {405, "method_not_allowed", "method not allowed on this path"},
    [ORDER_ERR_TOO_LARGE] = {413, "payload_too_large", "the body is over 4096 bytes"},
    [ORDER_ERR_SOLD_OUT] = {409, "sold_out", "the event is sold out"},
    [ORDER_ERR_DUPLICATE] = {409, "duplicate", "this user already holds an order for this event"},
    [ORDER_ERR_NOT_STARTED] = {403, "not_started", "the event has not started"},
    [ORDER_ERR_ENDED] = {403, "ended", "the event has ended"},
    [ORDER_ERR_RATE_LIMITED] = {429, "rate_limited", "too many requests, slow down"},
    [ORDER_ERR_UNAVAILABLE] = {503, "unavailable", "the service cannot take this request now"},
    [ORDER_ERR_INTERNAL] = {500, "internal", "internal error"},
    [ORDER_ERR_CLOSED] = {409, "closed", "the order is closed (cancelled, expired or rejected)"},
    [ORDER_ERR_ALREADY_PAID] = {409, "already_paid", "the order is paid"},
    [ORDER_ERR_NOT_READY] = {409, "not_ready", "the order is still queued, retry shortly"},
    [ORDER_ERR_PAUSED] = {503, "paused", "the sale of this event is paused, retry later"},
    [ORDER_ERR_IN_PROGRESS] = {409, "in_progress",
                               "the first request with this Idempotency-Key is still being decided, retry shortly"},
    [ORDER_ERR_KEY_REUSED] = {422, "key_reused",
                              "this Idempotency-Key was used for another request"},
    [ORDER_ERR_CONFLICT] = {409, "conflict", "the event's state does not allow this change"},
    [ORDER_ERR_LIMIT_REACHED] = {409, "limit_reached",
                                 "this order would pass the event's per_user_limit"},
};

int order_err_status(order_err e)
{
    return (unsigned)e < ORDER_ERR_COUNT ? errs[e].status : 500;
}

const char *order_err_code(order_err e)
{
    return (unsigned)e < ORDER_ERR_COUNT ? errs[e].code : "internal";
}

const char *order_err_message(order_err e)
{
    return (unsigned)e < ORDER_ERR_COUNT ? errs[e].message : "internal error";
}

/* JSON string escaping of our own messages (ASCII; control characters as \u00XX). */
static size_t escape(char *out, size_t outsz, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < outsz; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, outsz - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
    return n;
}

static size_t clamp(int n, size_t outsz)
{
    if (n < 0)
        return 0;
    return (size_t)n < outsz ? (size_t)n : outsz - 1;
}

size_t order_reply_error(char *out, size_t outsz, order_err e, const char *message,
                         uint64_t order_id)
{
    char msg[384];
    escape(msg, sizeof(msg), message ? message : order_err_message(e));
    int n;
    if (order_id)
        n = snprintf(out, outsz, "{\"error\":\"%s\",\"message\":\"%s\",\"order_id\":\"%" PRIu64 "\"}",
                     order_err_code(e), msg, order_id);
    else
        n = snprintf(out, outsz, "{\"error\":\"%s\",\"message\":\"%s\"}", order_err_code(e), msg);
    return clamp(n, outsz);
}

size_t order_reply_limited(char *out, size_t outsz, const char *level, long long retry_after_s)
{
    char lv[32];
    escape(lv, sizeof(lv), level);
    int n = snprintf(out, outsz,
                     "{\"error\":\"rate_limited\",\"message\":\"too many requests (%s limit), "
                     "retry after %lld s\",\"level\":\"%s\"}",
                     lv, retry_after_s, lv);
    return clamp(n, outsz);
}

size_t order_reply_paused(char *out, size_t outsz, uint64_t event_id, int paused)
{
    return clamp(snprintf(out, outsz, "{\"event_id\":\"%" PRIu64 "\",\"paused\":%s}", event_id,
                          paused ? "true" : "false"),
                 outsz);
}

size_t order_reply_order_queued(char *out, size_t outsz, uint64_t order_id)
{
    /* Every 202 says this: no snprintf on the accept path (order_msg.h, sk_id_format). */
    static const char head[] = "{\"order_id\":\"", tail[] = "\",\"status\":\"queued\"}";
    char id[SK_ID_DEC_MAX];
    size_t idlen = sk_id_format(id, order_id);
    size_t n = sizeof(head) - 1 + idlen + sizeof(tail) - 1;
    if (n >= outsz) /* too small: snprintf's truncation, as every other reply */
        return clamp(snprintf(out, outsz, "{\"order_id\":\"%" PRIu64 "\",\"status\":\"queued\"}", order_id),
                     outsz);
    memcpy(out, head, sizeof(head) - 1);
    memcpy(out + sizeof(head) - 1, id, idlen);
    memcpy(out + sizeof(head) - 1 + idlen, tail, sizeof(tail));
    return n;
}

size_t order_reply_order(char *out, size_t outsz, uint64_t order_id, uint64_t event_id,
                         uint64_t user_id, const char *status)
{
    return clamp(snprintf(out, outsz,
                          "{\"order_id\":\"%" PRIu64 "\",\"event_id\":\"%" PRIu64
                          "\",\"user_id\":\"%" PRIu64 "\",\"status\":\"%s\"}",
                          order_id, event_id, user_id, status),
                 outsz);
}

size_t order_reply_order_pay_by(char *out, size_t outsz, uint64_t order_id, uint64_t event_id,
                                uint64_t user_id, const char *status, int64_t pay_by_ms)
{
    size_t n = order_reply_order(out, outsz, order_id, event_id, user_id, status);
    if (pay_by_ms <= 0 || (strcmp(status, "created") != 0 && strcmp(status, "paid") != 0) ||
        n < 1 || n + 48 >= outsz)
        return n;
    char t[32];
    /* n - 1: over the closing brace of the object just written. */
    return n - 1 + clamp(snprintf(out + n - 1, outsz - (n - 1), ",\"pay_by\":\"%s\"}",
                                  order_time_format_rfc3339(pay_by_ms, t, sizeof(t))),
                         outsz - (n - 1));
}

size_t order_reply_duplicate(char *out, size_t outsz, uint64_t order_id, uint64_t event_id,
                             uint64_t user_id, const char *status, int64_t pay_by_ms)
{
    char order[320];
    size_t n = order_reply_order_pay_by(order, sizeof(order), order_id, event_id, user_id, status,
                                        pay_by_ms);
    if (n < 2)
        return order_reply_error(out, outsz, ORDER_ERR_DUPLICATE, NULL, order_id);
    /* the order's object with the error's two members in front */
    return clamp(snprintf(out, outsz, "{\"error\":\"duplicate\",\"message\":\"%s\",%s",
                          order_err_message(ORDER_ERR_DUPLICATE), order + 1),
                 outsz);
}

size_t order_reply_units(char *out, size_t outsz, order_err e, long long n, uint64_t order_id)
{
    int len;
    if (e == ORDER_ERR_LIMIT_REACHED && order_id)
        len = snprintf(out, outsz,
                       "{\"error\":\"limit_reached\",\"message\":\"%s\",\"held\":%lld,"
                       "\"order_id\":\"%" PRIu64 "\"}",
                       order_err_message(e), n, order_id);
    else if (e == ORDER_ERR_LIMIT_REACHED)
        len = snprintf(out, outsz, "{\"error\":\"limit_reached\",\"message\":\"%s\",\"held\":%lld}",
                       order_err_message(e), n);
    else
        len = snprintf(out, outsz,
                       "{\"error\":\"sold_out\",\"message\":\"fewer units are left than the "
                       "order's quantity\",\"left\":%lld}",
                       n);
    return clamp(len, outsz);
}

size_t order_reply_event_created(char *out, size_t outsz, uint64_t event_id)
{
    return clamp(snprintf(out, outsz, "{\"event_id\":\"%" PRIu64 "\"}", event_id), outsz);
}

char *order_reply_event(uint64_t event_id, const char *name, int64_t stock_total,
                        int64_t stock_left, int64_t starts_at_ms, int64_t ends_at_ms,
                        const order_event_limits *lim)
{
    char id[24], s[32], e[32];
    snprintf(id, sizeof(id), "%" PRIu64, event_id);
    /* The name is the client's text: jansson escapes it (and refuses invalid UTF-8). */
    json_t *o = json_pack("{s:s, s:s?, s:I, s:I, s:s, s:s}", "event_id", id, "name", name,
                          "stock_total", (json_int_t)stock_total, "stock_left",
                          (json_int_t)stock_left, "starts_at",
                          order_time_format_rfc3339(starts_at_ms, s, sizeof(s)), "ends_at",
                          order_time_format_rfc3339(ends_at_ms, e, sizeof(e)));
    if (!o)
        return NULL;
    if (lim && order_event_limits_any(lim)) {
        json_t *l = json_object();
        if (lim->ip_rate > 0)
            json_object_set_new(l, "ip_rate", json_integer((json_int_t)lim->ip_rate));
        if (lim->user_rate > 0)
            json_object_set_new(l, "user_rate", json_integer((json_int_t)lim->user_rate));
        if (lim->event_rate > 0)
            json_object_set_new(l, "event_rate", json_integer((json_int_t)lim->event_rate));
        json_object_set_new(o, "limits", l);
    }
    if (lim && lim->challenge_bits > 0) /* what the console needs to know it must solve */
        json_object_set_new(o, "challenge", json_pack("{s:s, s:I}", "kind", "pow", "difficulty",
                                                      (json_int_t)lim->challenge_bits));
    else if (lim && lim->challenge_bits < 0) /* a hidden order path (order_challenge.h) */
        json_object_set_new(o, "challenge", json_pack("{s:s}", "kind", "path"));
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

int order_err_from_reserve(long long code)
{
    switch (code) {
    case 1: return ORDER_ERR_SOLD_OUT;
    case 2: return ORDER_ERR_DUPLICATE;
    case 3: return ORDER_ERR_NOT_STARTED;
    case 4: return ORDER_ERR_ENDED;
    case 5: return ORDER_ERR_NOT_FOUND;
    case 0: return -1;
    default: return ORDER_ERR_INTERNAL;
    }
}
