/* consumer_msg: the consumer's view of an order message. See consumer_msg.h. */
#include "consumer_msg.h"

#include <string.h>

const char *consumer_msg_strerror(consumer_msg_err err)
{
    if (err == CONSUMER_MSG_UNKNOWN_EVENT)
        return "unknown_event";
    return sk_order_msg_strerror((sk_order_msg_err)err); /* "unknown" past the enum */
}

consumer_msg_err consumer_msg_parse(const void *value, size_t len, consumer_order *out)
{
    sk_order_msg m;
    sk_order_msg_err rc = sk_order_msg_decode(value, len, &m);
    if (rc != SK_ORDER_MSG_OK)
        return (consumer_msg_err)rc;
    /* sk_id.h bounds every id to INT64_MAX: the casts are exact; the decoder bounds the
     * quantity to [1, SK_ORDER_MSG_MAX_QUANTITY] (issue 31: PostgreSQL counts units). */
    *out = (consumer_order){(int64_t)m.order_id, (int64_t)m.event_id, (int64_t)m.user_id, m.ts_ms,
                            (int32_t)m.quantity, ""};
    memcpy(out->mac, m.mac, sizeof(out->mac));
    return CONSUMER_MSG_OK;
}

consumer_msg_err consumer_msg_verify(const sk_order_msg_keys *keys, const consumer_order *o)
{
    if (!keys)
        return CONSUMER_MSG_OK;
    sk_order_msg m = {.order_id = (uint64_t)o->order_id,
                      .event_id = (uint64_t)o->event_id,
                      .user_id = (uint64_t)o->user_id,
                      .ts_ms = o->ts_ms,
                      .quantity = (uint32_t)o->quantity};
    memcpy(m.mac, o->mac, sizeof(m.mac));
    return (consumer_msg_err)sk_order_msg_verify(keys, &m);
}
