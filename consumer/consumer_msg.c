/* consumer_msg: the consumer's view of an order message. See consumer_msg.h. */
#include "consumer_msg.h"

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
    /* The message carries a quantity (issue 31) before PostgreSQL counts units: an
     * order of several units is dead-lettered rather than stored as one. seckill-order
     * sends one unit per order until the gate counts units. */
    if (m.quantity != 1)
        return CONSUMER_MSG_BAD_QUANTITY;
    /* sk_id.h bounds every id to INT64_MAX: the casts are exact. */
    *out = (consumer_order){(int64_t)m.order_id, (int64_t)m.event_id, (int64_t)m.user_id, m.ts_ms,
                            1};
    return CONSUMER_MSG_OK;
}
