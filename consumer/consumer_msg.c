/* consumer_msg: decoding and validation of one order message. See consumer_msg.h. */
#include "consumer_msg.h"

#include "sk_id.h"

#include <jansson.h>
#include <string.h>

static const char *const err_codes[CONSUMER_MSG__COUNT] = {
    [CONSUMER_MSG_OK] = "ok",
    [CONSUMER_MSG_EMPTY] = "empty",
    [CONSUMER_MSG_TOO_LARGE] = "too_large",
    [CONSUMER_MSG_NOT_JSON] = "not_json",
    [CONSUMER_MSG_NOT_OBJECT] = "not_object",
    [CONSUMER_MSG_BAD_VERSION] = "bad_version",
    [CONSUMER_MSG_BAD_ORDER_ID] = "bad_order_id",
    [CONSUMER_MSG_BAD_EVENT_ID] = "bad_event_id",
    [CONSUMER_MSG_BAD_USER_ID] = "bad_user_id",
    [CONSUMER_MSG_BAD_TS] = "bad_ts",
    [CONSUMER_MSG_UNKNOWN_EVENT] = "unknown_event",
};

const char *consumer_msg_strerror(consumer_msg_err err)
{
    if ((unsigned)err >= CONSUMER_MSG__COUNT)
        return "unknown";
    return err_codes[err];
}

int consumer_msg_parse_id(const char *s, size_t len, int64_t *out)
{
    uint64_t v;
    if (sk_id_parse(s, len, &v) != 0)
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int get_id(json_t *obj, const char *name, int64_t *out)
{
    json_t *v = json_object_get(obj, name);
    if (!json_is_string(v))
        return -1;
    return consumer_msg_parse_id(json_string_value(v), json_string_length(v), out);
}

consumer_msg_err consumer_msg_parse(const void *value, size_t len, consumer_order *out)
{
    if (!value || len == 0)
        return CONSUMER_MSG_EMPTY;
    if (len > CONSUMER_MSG_MAX_BYTES)
        return CONSUMER_MSG_TOO_LARGE;
    json_error_t jerr;
    /* Duplicate members are ambiguous (which order_id is meant?): reject them. */
    json_t *root = json_loadb(value, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root)
        return CONSUMER_MSG_NOT_JSON;
    consumer_msg_err rc = CONSUMER_MSG_OK;
    json_t *v, *ts;
    if (!json_is_object(root))
        rc = CONSUMER_MSG_NOT_OBJECT;
    else if (!json_is_integer(v = json_object_get(root, "v")) || json_integer_value(v) != 1)
        rc = CONSUMER_MSG_BAD_VERSION;
    else if (get_id(root, "order_id", &out->order_id) != 0)
        rc = CONSUMER_MSG_BAD_ORDER_ID;
    else if (get_id(root, "event_id", &out->event_id) != 0)
        rc = CONSUMER_MSG_BAD_EVENT_ID;
    else if (get_id(root, "user_id", &out->user_id) != 0)
        rc = CONSUMER_MSG_BAD_USER_ID;
    else if (!json_is_integer(ts = json_object_get(root, "ts_ms")) || json_integer_value(ts) < 0 ||
             json_integer_value(ts) > CONSUMER_MSG_MAX_TS_MS)
        rc = CONSUMER_MSG_BAD_TS;
    else
        out->ts_ms = (int64_t)json_integer_value(ts);
    json_decref(root);
    return rc;
}
