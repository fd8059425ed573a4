/* order_body: request body parsing. See order_body.h. */
#include "order_body.h"
#include "sk_order_msg.h"
#include "order_challenge.h"
#include "order_msg.h"
#include "order_time.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int parse_time(json_t *root, const char *key, int64_t *ms, char *err, size_t errsz)
{
    json_t *v = json_object_get(root, key);
    if (!json_is_string(v)) {
        snprintf(err, errsz, "%s: required, an RFC 3339 time", key);
        return -1;
    }
    if (order_time_parse_rfc3339(json_string_value(v), json_string_length(v), ms) != 0) {
        snprintf(err, errsz, "%s: not an RFC 3339 time", key);
        return -1;
    }
    return 0;
}

/* A body within ORDER_BODY_MAX parsed as JSON, or NULL with err. REJECT_DUPLICATES:
 * {"stock":1,"stock":1000} is ambiguous, refuse it. The caller decrefs. */
static json_t *load_body(const char *body, size_t len, char *err, size_t errsz)
{
    if (len > ORDER_BODY_MAX) {
        snprintf(err, errsz, "body over %d bytes", ORDER_BODY_MAX);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        snprintf(err, errsz, "invalid JSON");
    return root;
}

/* An event's name: 1 to ORDER_EVENT_NAME_MAX bytes, no NUL inside, into out. @returns 0,
 * or -1 with err (`what` opens the message: "name: required, a" or "name: a"). */
static int parse_name(json_t *v, char *out, const char *what, char *err, size_t errsz)
{
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        json_string_length(v) > ORDER_EVENT_NAME_MAX ||
        strlen(json_string_value(v)) != json_string_length(v)) {
        snprintf(err, errsz, "%s string of 1 to %d bytes", what, ORDER_EVENT_NAME_MAX);
        return -1;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

/* "limits": an object of optional positive integers, no other key (a misspelt level would
 * otherwise be silently the default). @returns 0, or -1 with err. */
static int parse_limits(json_t *v, order_event_limits *out, char *err, size_t errsz)
{
    static const struct {
        const char *key;
        size_t off;
        int64_t max;
    } levels[] = {
        {"ip_rate", offsetof(order_event_limits, ip_rate), ORDER_LIMIT_RATE_MAX},
        {"user_rate", offsetof(order_event_limits, user_rate), ORDER_LIMIT_RATE_MAX},
        {"event_rate", offsetof(order_event_limits, event_rate), ORDER_LIMIT_EVENT_RATE_MAX},
    };
    if (!json_is_object(v)) {
        snprintf(err, errsz, "limits: an object of ip_rate, user_rate, event_rate");
        return -1;
    }
    size_t found = 0;
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        json_t *x = json_object_get(v, levels[i].key);
        if (!x)
            continue;
        found++;
        if (!json_is_integer(x) || json_integer_value(x) < 1 ||
            json_integer_value(x) > levels[i].max) {
            snprintf(err, errsz, "limits.%s: an integer from 1 to %lld (requests per second)",
                     levels[i].key, (long long)levels[i].max);
            return -1;
        }
        *(int64_t *)((char *)out + levels[i].off) = json_integer_value(x);
    }
    if (found != json_object_size(v)) {
        snprintf(err, errsz, "limits: only ip_rate, user_rate and event_rate");
        return -1;
    }
    return 0;
}

/* "challenge": {"kind":"pow","difficulty":N} or {"kind":"path"} (issue 31), no other key.
 * @returns 0, or -1 with err. */
static int parse_challenge(json_t *v, order_event_limits *out, char *err, size_t errsz)
{
    json_t *kind = json_is_object(v) ? json_object_get(v, "kind") : NULL;
    json_t *d = json_is_object(v) ? json_object_get(v, "difficulty") : NULL;
    if (json_is_string(kind) && strcmp(json_string_value(kind), "path") == 0) {
        if (json_object_size(v) != 1) {
            snprintf(err, errsz, "challenge: only kind for a hidden path");
            return -1;
        }
        out->challenge_bits = ORDER_CHALLENGE_PATH;
        return 0;
    }
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "pow") != 0) {
        snprintf(err, errsz, "challenge.kind: \"pow\" (a proof-of-work challenge) or \"path\" "
                             "(a hidden order path per user)");
        return -1;
    }
    if (!json_is_integer(d) || json_integer_value(d) < ORDER_CHALLENGE_BITS_MIN ||
        json_integer_value(d) > ORDER_CHALLENGE_BITS_MAX) {
        snprintf(err, errsz, "challenge.difficulty: an integer from %d to %d (leading zero bits)",
                 ORDER_CHALLENGE_BITS_MIN, ORDER_CHALLENGE_BITS_MAX);
        return -1;
    }
    if (json_object_size(v) != 2) {
        snprintf(err, errsz, "challenge: only kind and difficulty");
        return -1;
    }
    out->challenge_bits = json_integer_value(d);
    return 0;
}

int order_body_parse_event(const char *body, size_t len, order_event_spec *out, char *err,
                           size_t errsz)
{
    memset(out, 0, sizeof(*out));
    json_t *root = load_body(body, len, err, errsz);
    if (!root)
        return -1;
    int rc = -1;
    if (!json_is_object(root)) {
        snprintf(err, errsz, "body must be a JSON object");
        goto out;
    }
    if (parse_name(json_object_get(root, "name"), out->name, "name: required, a", err, errsz) != 0)
        goto out;
    json_t *stock = json_object_get(root, "stock");
    if (!json_is_integer(stock) || json_integer_value(stock) < 0 ||
        json_integer_value(stock) > INT32_MAX) {
        snprintf(err, errsz, "stock: required, an integer from 0 to %d", INT32_MAX);
        goto out;
    }
    out->stock = json_integer_value(stock);
    if (parse_time(root, "starts_at", &out->starts_at_ms, err, errsz) != 0 ||
        parse_time(root, "ends_at", &out->ends_at_ms, err, errsz) != 0)
        goto out;
    if (out->ends_at_ms <= out->starts_at_ms) {
        snprintf(err, errsz, "ends_at must be after starts_at");
        goto out;
    }
    out->per_user_limit = 1;
    json_t *lim = json_object_get(root, "per_user_limit");
    if (lim && !(json_is_integer(lim) && json_integer_value(lim) >= 1 &&
                 json_integer_value(lim) <= SK_ORDER_MSG_MAX_QUANTITY)) {
        snprintf(err, errsz, "per_user_limit: an integer from 1 to %d (units per user)",
                 SK_ORDER_MSG_MAX_QUANTITY);
        goto out;
    }
    if (lim)
        out->per_user_limit = (int)json_integer_value(lim);
    out->payment_window_s = ORDER_PAYMENT_WINDOW_DEFAULT;
    json_t *win = json_object_get(root, "payment_window_s");
    if (win) {
        if (!json_is_integer(win) || json_integer_value(win) < 1 ||
            json_integer_value(win) > ORDER_PAYMENT_WINDOW_MAX) {
            snprintf(err, errsz, "payment_window_s: an integer from 1 to %d",
                     ORDER_PAYMENT_WINDOW_MAX);
            goto out;
        }
        out->payment_window_s = (int)json_integer_value(win);
    }
    json_t *rebuy = json_object_get(root, "rebuy_after_release");
    if (rebuy && !json_is_boolean(rebuy)) {
        snprintf(err, errsz, "rebuy_after_release: true or false");
        goto out;
    }
    out->rebuy_after_release = rebuy && json_is_true(rebuy);
    out->segments = 1;
    json_t *segs = json_object_get(root, "segments");
    if (segs) {
        if (!json_is_integer(segs) || json_integer_value(segs) < 1 ||
            json_integer_value(segs) > ORDER_SEGMENTS_MAX) {
            snprintf(err, errsz, "segments: an integer from 1 to %d", ORDER_SEGMENTS_MAX);
            goto out;
        }
        out->segments = (int)json_integer_value(segs);
    }
    json_t *limits = json_object_get(root, "limits");
    if (limits && parse_limits(limits, &out->limits, err, errsz) != 0)
        goto out;
    json_t *challenge = json_object_get(root, "challenge");
    if (challenge && parse_challenge(challenge, &out->limits, err, errsz) != 0)
        goto out;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* PATCH's "limits": each level a rate in range, or null for the configured default. */
static int parse_patch_limits(json_t *v, order_event_patch *out, char *err, size_t errsz)
{
    static const struct {
        const char *key;
        unsigned flag;
        size_t off;
        int64_t max;
    } levels[] = {
        {"ip_rate", ORDER_PATCH_IP_RATE, offsetof(order_event_limits, ip_rate),
         ORDER_LIMIT_RATE_MAX},
        {"user_rate", ORDER_PATCH_USER_RATE, offsetof(order_event_limits, user_rate),
         ORDER_LIMIT_RATE_MAX},
        {"event_rate", ORDER_PATCH_EVENT_RATE, offsetof(order_event_limits, event_rate),
         ORDER_LIMIT_EVENT_RATE_MAX},
    };
    if (!json_is_object(v) || json_object_size(v) == 0) {
        snprintf(err, errsz, "limits: an object of ip_rate, user_rate, event_rate");
        return -1;
    }
    size_t found = 0;
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        json_t *x = json_object_get(v, levels[i].key);
        if (!x)
            continue;
        found++;
        int64_t n = 0;
        if (!json_is_null(x)) {
            if (!json_is_integer(x) || json_integer_value(x) < 1 ||
                json_integer_value(x) > levels[i].max) {
                snprintf(err, errsz,
                         "limits.%s: an integer from 1 to %lld, or null for the default",
                         levels[i].key, (long long)levels[i].max);
                return -1;
            }
            n = json_integer_value(x);
        }
        *(int64_t *)((char *)&out->limits + levels[i].off) = n;
        out->has |= levels[i].flag;
    }
    if (found != json_object_size(v)) {
        snprintf(err, errsz, "limits: only ip_rate, user_rate and event_rate");
        return -1;
    }
    return 0;
}

int order_body_parse_patch(const char *body, size_t len, order_event_patch *out, char *err,
                           size_t errsz)
{
    static const char *const known[] = {"name", "starts_at", "ends_at", "per_user_limit",
                                        "limits"};
    memset(out, 0, sizeof(*out));
    json_t *root = load_body(body, len, err, errsz);
    if (!root)
        return -1;
    int rc = -1;
    if (!json_is_object(root) || json_object_size(root) == 0) {
        snprintf(err, errsz, "body must be a JSON object naming what changes");
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        size_t i = 0;
        while (i < sizeof(known) / sizeof(known[0]) && strcmp(key, known[i]) != 0)
            i++;
        if (i == sizeof(known) / sizeof(known[0])) {
            snprintf(err, errsz, "%.64s: unknown field (name, starts_at, ends_at, "
                                 "per_user_limit, limits)", key);
            goto out;
        }
    }
    if ((v = json_object_get(root, "name")) != NULL) {
        if (parse_name(v, out->name, "name: a", err, errsz) != 0)
            goto out;
        out->has |= ORDER_PATCH_NAME;
    }
    if (json_object_get(root, "starts_at")) {
        if (parse_time(root, "starts_at", &out->starts_at_ms, err, errsz) != 0)
            goto out;
        out->has |= ORDER_PATCH_STARTS;
    }
    if (json_object_get(root, "ends_at")) {
        if (parse_time(root, "ends_at", &out->ends_at_ms, err, errsz) != 0)
            goto out;
        out->has |= ORDER_PATCH_ENDS;
    }
    if ((out->has & ORDER_PATCH_STARTS) && (out->has & ORDER_PATCH_ENDS) &&
        out->ends_at_ms <= out->starts_at_ms) {
        snprintf(err, errsz, "ends_at must be after starts_at");
        goto out;
    }
    if ((v = json_object_get(root, "per_user_limit")) != NULL) {
        if (!(json_is_integer(v) && json_integer_value(v) >= 1 &&
              json_integer_value(v) <= SK_ORDER_MSG_MAX_QUANTITY)) {
            snprintf(err, errsz, "per_user_limit: an integer from 1 to %d (units per user)",
                     SK_ORDER_MSG_MAX_QUANTITY);
            goto out;
        }
        out->per_user_limit = (int)json_integer_value(v);
        out->has |= ORDER_PATCH_PER_USER;
    }
    if ((v = json_object_get(root, "limits")) != NULL &&
        parse_patch_limits(v, out, err, errsz) != 0)
        goto out;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int order_body_parse_stock(const char *body, size_t len, int64_t *add, int64_t *total, char *err,
                           size_t errsz)
{
    *add = 0;
    *total = -1;
    json_t *root = load_body(body, len, err, errsz);
    if (!root)
        return -1;
    int rc = -1;
    json_t *a = json_is_object(root) ? json_object_get(root, "add") : NULL;
    json_t *t = json_is_object(root) ? json_object_get(root, "total") : NULL;
    if (!json_is_object(root) || json_object_size(root) != 1 || (!a && !t)) {
        snprintf(err, errsz, "body must be {\"add\": N} or {\"total\": N}, one of them only");
        goto out;
    }
    if (a) {
        if (!json_is_integer(a) || json_integer_value(a) == 0 ||
            json_integer_value(a) > INT32_MAX || json_integer_value(a) < -INT32_MAX) {
            snprintf(err, errsz, "add: a non-zero integer from %d to %d", -INT32_MAX, INT32_MAX);
            goto out;
        }
        *add = json_integer_value(a);
    } else {
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX) {
            snprintf(err, errsz, "total: an integer from 0 to %d", INT32_MAX);
            goto out;
        }
        *total = json_integer_value(t);
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* An empty body (NULL into *root) or a JSON object (*root, the caller's to free).
 * @returns 0, or -1 with err. */
static int load_object(const char *body, size_t len, json_t **root, char *err, size_t errsz)
{
    *root = NULL;
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
        i++;
    if (i == len)
        return 0;
    if (len > ORDER_BODY_MAX) {
        snprintf(err, errsz, "body over %d bytes", ORDER_BODY_MAX);
        return -1;
    }
    json_error_t jerr;
    json_t *o = json_loadb(body, len, 0, &jerr);
    if (!o) {
        snprintf(err, errsz, "invalid JSON");
        return -1;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        snprintf(err, errsz, "body must be a JSON object");
        return -1;
    }
    *root = o;
    return 0;
}

int order_body_check_order(const char *body, size_t len, char *err, size_t errsz)
{
    json_t *root;
    if (load_object(body, len, &root, err, errsz) != 0)
        return -1;
    json_decref(root); /* NULL is fine */
    return 0;
}

int order_body_parse_order(const char *body, size_t len, int *quantity, char *err, size_t errsz)
{
    *quantity = 1;
    json_t *root;
    if (load_object(body, len, &root, err, errsz) != 0)
        return -1;
    if (!root) /* the empty body of before: one unit, no parse */
        return 0;
    json_t *q = json_object_get(root, "quantity");
    int bad = q && (!json_is_integer(q) || json_integer_value(q) < 1 ||
                    json_integer_value(q) > SK_ORDER_MSG_MAX_QUANTITY);
    if (q && !bad)
        *quantity = (int)json_integer_value(q);
    json_decref(root);
    if (bad) {
        snprintf(err, errsz, "quantity: an integer from 1 to %d", SK_ORDER_MSG_MAX_QUANTITY);
        return -1;
    }
    return 0;
}

int order_body_parse_pay(const char *body, size_t len, char *ref, char *err, size_t errsz)
{
    ref[0] = '\0';
    json_t *root = load_body(body, len, err, errsz);
    if (!root)
        return -1;
    json_t *v = json_is_object(root) ? json_object_get(root, "payment_ref") : NULL;
    size_t n = json_is_string(v) ? json_string_length(v) : 0;
    const char *s = n ? json_string_value(v) : "";
    int ok = n >= 1 && n <= ORDER_PAYMENT_REF_MAX;
    /* Printable ASCII only: the reference goes into logs, events and the database as is. */
    for (size_t i = 0; ok && i < n; i++)
        ok = s[i] >= 0x20 && s[i] < 0x7f;
    if (ok)
        memcpy(ref, s, n + 1);
    json_decref(root);
    if (!ok) {
        snprintf(err, errsz, "payment_ref: required, 1 to %d printable ASCII bytes",
                 ORDER_PAYMENT_REF_MAX);
        return -1;
    }
    return 0;
}
