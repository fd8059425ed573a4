/* consumer_msg: one seckill.orders message as the consumer takes it (pure, no I/O).
 *
 * The message, its rules and its decoder are domain/sk_order_msg.h (the one home, shared
 * with seckill-order's encoder). Here: the consumer's view, ids as the int64 PostgreSQL
 * binds, and its dead-letter codes, which are the decoder's plus the database step's
 * UNKNOWN_EVENT. Anything refused is poison: dead-lettered with its short code, never
 * retried, never allowed to block its partition. */
#ifndef CONSUMER_MSG_H
#define CONSUMER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "sk_order_msg.h"

#define CONSUMER_MSG_MAX_BYTES SK_ORDER_MSG_MAX_BYTES
#define CONSUMER_MSG_MAX_TS_MS SK_ORDER_MSG_MAX_TS_MS

/* The decoder's codes (sk_order_msg.h, same values), then the database step's. */
typedef enum {
    CONSUMER_MSG_OK = SK_ORDER_MSG_OK,
    CONSUMER_MSG_EMPTY = SK_ORDER_MSG_EMPTY,
    CONSUMER_MSG_TOO_LARGE = SK_ORDER_MSG_TOO_LARGE,
    CONSUMER_MSG_NOT_JSON = SK_ORDER_MSG_NOT_JSON,
    CONSUMER_MSG_NOT_OBJECT = SK_ORDER_MSG_NOT_OBJECT,
    CONSUMER_MSG_BAD_VERSION = SK_ORDER_MSG_BAD_VERSION,
    CONSUMER_MSG_BAD_ORDER_ID = SK_ORDER_MSG_BAD_ORDER_ID,
    CONSUMER_MSG_BAD_EVENT_ID = SK_ORDER_MSG_BAD_EVENT_ID,
    CONSUMER_MSG_BAD_USER_ID = SK_ORDER_MSG_BAD_USER_ID,
    CONSUMER_MSG_BAD_TS = SK_ORDER_MSG_BAD_TS,
    CONSUMER_MSG_BAD_QUANTITY = SK_ORDER_MSG_BAD_QUANTITY,
    CONSUMER_MSG_BAD_MAC = SK_ORDER_MSG_BAD_MAC, /* set by consumer_msg_verify too */
    CONSUMER_MSG_UNKNOWN_EVENT = SK_ORDER_MSG__COUNT, /* valid, but its event is not in
                                                        seckill_event (set by the DB step) */
    CONSUMER_MSG__COUNT
} consumer_msg_err;

typedef struct consumer_order {
    int64_t order_id; /* > 0 */
    int64_t event_id; /* > 0 */
    int64_t user_id;  /* > 0 */
    int64_t ts_ms;    /* >= 0, producer's clock */
    int32_t quantity; /* units, 1 to SK_ORDER_MSG_MAX_QUANTITY (issue 31) */
    char mac[SK_ORDER_MSG_MAC_HEX + 1]; /* as sent; "" when unsigned */
} consumer_order;

/** @brief Decodes `len` bytes of `value` (may be NULL when len is 0) into *out.
 *  @returns CONSUMER_MSG_OK, or the reason the message is poison (*out is then undefined).
 *  @remark Pure and thread-safe; allocates only transiently. */
consumer_msg_err consumer_msg_parse(const void *value, size_t len, consumer_order *out);

/** @brief With order.msg_keys set, only a message the gate signed is an order:
 *  CONSUMER_MSG_OK when o's MAC is one of `keys`' over its fields, else
 *  CONSUMER_MSG_BAD_MAC (an unsigned message too: dead-lettered as "bad_mac").
 *  keys NULL (no key configured): CONSUMER_MSG_OK, the old behaviour.
 *  @remark Pure and thread-safe. */
consumer_msg_err consumer_msg_verify(const sk_order_msg_keys *keys, const consumer_order *o);

/** @brief A short stable code for the DLQ "error" header and metric labels
 *  ("not_json", "bad_order_id", ...). Never NULL. */
const char *consumer_msg_strerror(consumer_msg_err err);

#endif
