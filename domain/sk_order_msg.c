/* sk_order_msg: the seckill.orders message. See sk_order_msg.h. */
#include "sk_order_msg.h"
#include "sk_id.h"

#include <jansson.h>
#include <string.h>

static const char *const err_codes[SK_ORDER_MSG__COUNT] = {
    [SK_ORDER_MSG_OK] = "ok",
    [SK_ORDER_MSG_EMPTY] = "empty",
    [SK_ORDER_MSG_TOO_LARGE] = "too_large",
    [SK_ORDER_MSG_NOT_JSON] = "not_json",
    [SK_ORDER_MSG_NOT_OBJECT] = "not_object",
    [SK_ORDER_MSG_BAD_VERSION] = "bad_version",
    [SK_ORDER_MSG_BAD_ORDER_ID] = "bad_order_id",
    [SK_ORDER_MSG_BAD_EVENT_ID] = "bad_event_id",
    [SK_ORDER_MSG_BAD_USER_ID] = "bad_user_id",
    [SK_ORDER_MSG_BAD_TS] = "bad_ts",
    [SK_ORDER_MSG_BAD_QUANTITY] = "bad_quantity",
};

const char *sk_order_msg_strerror(sk_order_msg_err err)
{
    if ((unsigned)err >= SK_ORDER_MSG__COUNT)
        return "unknown";
    return err_codes[err];
}

/* Appends n bytes at *at if they fit with the NUL after them; *at becomes outsz (never a
 * valid length) once something did not, and stays so. Each piece is short: this
 * replaces snprintf on the accept path (order/README.md, callgrind). */
static void put(char *out, size_t outsz, size_t *at, const char *s, size_t n)
{
    if (*at >= outsz || outsz - *at <= n) {
        *at = outsz;
        return;
    }
    memcpy(out + *at, s, n);
    *at += n;
    out[*at] = 0;
}

static void put_dec(char *out, size_t outsz, size_t *at, uint64_t v)
{
    char d[SK_ID_DEC_MAX];
    put(out, outsz, at, d, sk_id_format(d, v));
}

#define PUT_LIT(lit) put(out, outsz, &at, (lit), sizeof(lit) - 1)

size_t sk_order_msg_encode(const sk_order_msg *m, char *out, size_t outsz)
{
    size_t at = 0;
    PUT_LIT("{\"v\":1,\"order_id\":\"");
    put_dec(out, outsz, &at, m->order_id);
    PUT_LIT("\",\"event_id\":\"");
    put_dec(out, outsz, &at, m->event_id);
    PUT_LIT("\",\"user_id\":\"");
    put_dec(out, outsz, &at, m->user_id);
    PUT_LIT("\",\"ts_ms\":");
    if (m->ts_ms < 0) {
        PUT_LIT("-");
        put_dec(out, outsz, &at, (uint64_t)0 - (uint64_t)m->ts_ms);
    } else {
        put_dec(out, outsz, &at, (uint64_t)m->ts_ms);
    }
    if (m->quantity > 1) { /* one unit: the value of before */
        PUT_LIT(",\"quantity\":");
        put_dec(out, outsz, &at, m->quantity);
    }
    PUT_LIT("}");
    return at < outsz ? at : 0;
}

static int get_id(json_t *obj, const char *name, uint64_t *out)
{
    json_t *v = json_object_get(obj, name);
    if (!json_is_string(v))
        return -1;
    return sk_id_parse(json_string_value(v), json_string_length(v), out);
}

sk_order_msg_err sk_order_msg_decode(const void *value, size_t len, sk_order_msg *out)
{
    if (!value || len == 0)
        return SK_ORDER_MSG_EMPTY;
    if (len > SK_ORDER_MSG_MAX_BYTES)
        return SK_ORDER_MSG_TOO_LARGE;
    json_error_t jerr;
    /* Duplicate members are ambiguous (which order_id is meant?): refused. */
    json_t *root = json_loadb(value, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root)
        return SK_ORDER_MSG_NOT_JSON;
    sk_order_msg_err rc = SK_ORDER_MSG_OK;
    json_t *v, *ts, *q;
    if (!json_is_object(root))
        rc = SK_ORDER_MSG_NOT_OBJECT;
    else if (!json_is_integer(v = json_object_get(root, "v")) || json_integer_value(v) != 1)
        rc = SK_ORDER_MSG_BAD_VERSION;
    else if (get_id(root, "order_id", &out->order_id) != 0)
        rc = SK_ORDER_MSG_BAD_ORDER_ID;
    else if (get_id(root, "event_id", &out->event_id) != 0)
        rc = SK_ORDER_MSG_BAD_EVENT_ID;
    else if (get_id(root, "user_id", &out->user_id) != 0)
        rc = SK_ORDER_MSG_BAD_USER_ID;
    else if (!json_is_integer(ts = json_object_get(root, "ts_ms")) || json_integer_value(ts) < 0 ||
             json_integer_value(ts) > SK_ORDER_MSG_MAX_TS_MS)
        rc = SK_ORDER_MSG_BAD_TS;
    else if ((q = json_object_get(root, "quantity")) &&
             (!json_is_integer(q) || json_integer_value(q) < 1 ||
              json_integer_value(q) > SK_ORDER_MSG_MAX_QUANTITY))
        rc = SK_ORDER_MSG_BAD_QUANTITY;
    else {
        out->ts_ms = (int64_t)json_integer_value(ts);
        out->quantity = q ? (uint32_t)json_integer_value(q) : 1; /* absent: one unit */
    }
    json_decref(root);
    return rc;
}
