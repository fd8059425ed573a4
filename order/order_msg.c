/* order_msg: message encoding and key names. See order_msg.h. */
#include "order_msg.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t order_msg_encode(const order_msg *m, char *out, size_t outsz)
{
    int n = snprintf(out, outsz,
                     "{\"v\":1,\"order_id\":\"%" PRIu64 "\",\"event_id\":\"%" PRIu64
                     "\",\"user_id\":\"%" PRIu64 "\",\"ts_ms\":%" PRId64 "}",
                     m->order_id, m->event_id, m->user_id, m->ts_ms);
    return (n > 0 && (size_t)n < outsz) ? (size_t)n : 0;
}

/* A decimal uint64: 1 to 20 digits, no sign; -1 if not decimal or over 64 bits. */
static int dec_u64(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}

static int get_id(json_t *root, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(root, key);
    if (!json_is_string(v))
        return -1;
    return dec_u64(json_string_value(v), json_string_length(v), out);
}

int order_msg_decode(const char *buf, size_t len, order_msg *out)
{
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return -1;
    int rc = -1;
    json_t *v = json_object_get(root, "v"), *ts = json_object_get(root, "ts_ms");
    if (json_is_object(root) && json_is_integer(v) && json_integer_value(v) == 1 &&
        json_is_integer(ts) && get_id(root, "order_id", &out->order_id) == 0 &&
        get_id(root, "event_id", &out->event_id) == 0 &&
        get_id(root, "user_id", &out->user_id) == 0) {
        out->ts_ms = json_integer_value(ts);
        rc = 0;
    }
    json_decref(root);
    return rc;
}

size_t order_key(uint64_t event_id, order_key_kind kind, char *out, size_t outsz)
{
    static const char *names[ORDER_KEY_COUNT] = {"stock", "buyers", "meta", "pending", "accepted"};
    int n = snprintf(out, outsz, "seckill:{e%" PRIu64 "}:%s", event_id,
                     (unsigned)kind < ORDER_KEY_COUNT ? names[kind] : "?");
    return n > 0 ? (size_t)n : 0;
}

uint64_t order_index_bucket(uint64_t order_id)
{
    return order_id >> 32;
}

size_t order_key_index(uint64_t order_id, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "seckill:oidx:%" PRIu64, order_index_bucket(order_id));
    return n > 0 ? (size_t)n : 0;
}

size_t order_index_encode(const order_index_entry *e, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "%" PRIu64 ":%" PRIu64 ":%c", e->event_id, e->user_id,
                     e->outcome ? e->outcome : e->acked ? 'a' : 'p');
    return n > 0 && (size_t)n < outsz ? (size_t)n : 0;
}

int order_index_decode(const char *s, size_t len, order_index_entry *e)
{
    const char *c1 = memchr(s, ':', len);
    const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - s)) : NULL;
    if (!c2 || s + len - c2 != 2 || !strchr("apcrd", c2[1]) || c2[1] == '\0' ||
        dec_u64(s, (size_t)(c1 - s), &e->event_id) != 0 ||
        dec_u64(c1 + 1, (size_t)(c2 - c1 - 1), &e->user_id) != 0)
        return -1;
    e->acked = c2[1] == 'a';
    e->outcome = c2[1] == 'c' || c2[1] == 'r' || c2[1] == 'd' ? c2[1] : 0;
    return 0;
}

size_t order_key_ratelimit(uint64_t user_id, char *out, size_t outsz)
{
    int n = snprintf(out, outsz, "seckill:rl:{u%" PRIu64 "}", user_id);
    return n > 0 ? (size_t)n : 0;
}
