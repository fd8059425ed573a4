/* sk_order_msg: the seckill.orders message (DESIGN.md, Kafka), encoded and decoded in
 * this one place: seckill-order encodes it, seckill-consumer decodes it, the tests and
 * tools do both. Pure, thread-safe.
 *
 * Value: {"v":1,"order_id":"<id>","event_id":"<id>","user_id":"<id>","ts_ms":<int>
 *         [,"quantity":<int>]}
 * "quantity" (issue 31: the units of the order) is written only when above 1, so a
 * one-unit order's value is the bytes of before and a message of before decodes as one
 * unit.
 * Ids are decimal strings (64-bit ints do not survive every JSON reader) under the one
 * id rule (sk_id.h: [1, INT64_MAX], no leading zero). Unknown extra members are
 * tolerated (a newer producer may add some within version 1); a wrong "v" is not.
 * Key: the event id in decimal, so one event's orders share a partition. */
#ifndef SK_ORDER_MSG_H
#define SK_ORDER_MSG_H

#include <stddef.h>
#include <stdint.h>

#define SK_ORDER_MSG_MAX 192 /* longest value the encoder writes: four 20-digit numbers and the quantity */

/* The most units one order may carry (the event's per_user_limit is bounded below it). */
#define SK_ORDER_MSG_MAX_QUANTITY 100

/* Values larger than this are refused without being parsed: an order is ~110 bytes. */
#define SK_ORDER_MSG_MAX_BYTES 1024

/* The latest ts_ms accepted (9999-12-31T23:59:59.999Z): a later one would make the
 * timestamptz conversion fail the whole batch in PostgreSQL, again and again. */
#define SK_ORDER_MSG_MAX_TS_MS 253402300799999LL

typedef struct sk_order_msg {
    uint64_t order_id, event_id, user_id; /* decoded: in [1, INT64_MAX] */
    int64_t ts_ms;                        /* decoded: in [0, SK_ORDER_MSG_MAX_TS_MS] */
    uint32_t quantity; /* units, in [1, SK_ORDER_MSG_MAX_QUANTITY]; 0 encodes as 1 */
} sk_order_msg;

/* Why a value is refused, in the order the decoder checks (the first that applies). */
typedef enum {
    SK_ORDER_MSG_OK = 0,
    SK_ORDER_MSG_EMPTY,        /* no value (tombstone) or zero bytes */
    SK_ORDER_MSG_TOO_LARGE,    /* value over SK_ORDER_MSG_MAX_BYTES */
    SK_ORDER_MSG_NOT_JSON,     /* not parseable JSON (duplicate members included) */
    SK_ORDER_MSG_NOT_OBJECT,   /* JSON, but not an object */
    SK_ORDER_MSG_BAD_VERSION,  /* "v" missing, not an integer, or not 1 */
    SK_ORDER_MSG_BAD_ORDER_ID, /* "order_id" missing, not a string, or breaking sk_id.h */
    SK_ORDER_MSG_BAD_EVENT_ID, /* same rules for "event_id" */
    SK_ORDER_MSG_BAD_USER_ID,  /* same rules for "user_id" */
    SK_ORDER_MSG_BAD_TS,       /* "ts_ms" missing, not an integer, negative, or past MAX_TS */
    SK_ORDER_MSG_BAD_QUANTITY, /* "quantity" present but not an integer in [1, MAX_QUANTITY] */
    SK_ORDER_MSG__COUNT
} sk_order_msg_err;

/** @brief Encodes m's value into out. @returns its length (out NUL-terminated), or 0 if
 *  out is too small (nothing half-written counts). */
size_t sk_order_msg_encode(const sk_order_msg *m, char *out, size_t outsz);

/** @brief Decodes len bytes of value (may be NULL when len is 0) into *out.
 *  @returns SK_ORDER_MSG_OK, or the first reason it is refused (*out then undefined). */
sk_order_msg_err sk_order_msg_decode(const void *value, size_t len, sk_order_msg *out);

/** @brief A short stable code ("not_json", "bad_order_id", ...; DLQ headers, metric
 *  labels). "unknown" for a value outside the enum. Never NULL. */
const char *sk_order_msg_strerror(sk_order_msg_err err);

#endif
