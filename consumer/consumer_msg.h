/* consumer_msg: decodes and validates one seckill.orders message (pure, no I/O).
 *
 * The contract (DESIGN.md, Kafka): the value is one JSON object
 *   {"v":1,"order_id":"<decimal>","event_id":"<decimal>","user_id":"<decimal>","ts_ms":<int>}
 * with ids as decimal strings (64-bit ints do not survive every JSON reader). Anything
 * else is poison: it is dead-lettered with a short error code, never retried, never
 * allowed to block its partition. Unknown extra members are tolerated (a newer
 * producer may add some within version 1); a wrong "v" is not. */
#ifndef CONSUMER_MSG_H
#define CONSUMER_MSG_H

#include <stddef.h>
#include <stdint.h>

/* Messages larger than this are poison without being parsed: an order is ~110 bytes. */
#define CONSUMER_MSG_MAX_BYTES 1024

/* The latest ts_ms accepted (9999-12-31T23:59:59.999Z): a later one would make the
 * timestamptz conversion fail the whole batch in PostgreSQL, again and again. */
#define CONSUMER_MSG_MAX_TS_MS 253402300799999LL

typedef enum {
    CONSUMER_MSG_OK = 0,
    CONSUMER_MSG_EMPTY,         /* no value (tombstone) or zero bytes */
    CONSUMER_MSG_TOO_LARGE,     /* value over CONSUMER_MSG_MAX_BYTES */
    CONSUMER_MSG_NOT_JSON,      /* not parseable JSON (duplicate members included) */
    CONSUMER_MSG_NOT_OBJECT,    /* JSON, but not an object */
    CONSUMER_MSG_BAD_VERSION,   /* "v" missing, not an integer, or not 1 */
    CONSUMER_MSG_BAD_ORDER_ID,  /* "order_id" missing, not a decimal string, 0, or > INT64_MAX */
    CONSUMER_MSG_BAD_EVENT_ID,  /* same rules for "event_id" */
    CONSUMER_MSG_BAD_USER_ID,   /* same rules for "user_id" */
    CONSUMER_MSG_BAD_TS,        /* "ts_ms" missing, not an integer, negative, or past MAX_TS */
    CONSUMER_MSG_UNKNOWN_EVENT, /* valid, but its event is not in seckill_event (set by the DB step) */
    CONSUMER_MSG__COUNT
} consumer_msg_err;

typedef struct consumer_order {
    int64_t order_id; /* > 0 */
    int64_t event_id; /* > 0 */
    int64_t user_id;  /* > 0 */
    int64_t ts_ms;    /* >= 0, producer's clock */
} consumer_order;

/** @brief Decodes `len` bytes of `value` (may be NULL when len is 0) into *out.
 *  @returns CONSUMER_MSG_OK, or the reason the message is poison (*out is then undefined).
 *  @remark Pure and thread-safe; allocates only transiently. */
consumer_msg_err consumer_msg_parse(const void *value, size_t len, consumer_order *out);

/** @brief A short stable code for the DLQ "error" header and metric labels
 *  ("not_json", "bad_order_id", ...). Never NULL. */
const char *consumer_msg_strerror(consumer_msg_err err);

/** @brief Parses a positive decimal id ("1".."9223372036854775807": digits only, no sign,
 *  no leading zero, no spaces). @returns 0 and *out, or -1. */
int consumer_msg_parse_id(const char *s, size_t len, int64_t *out);

#endif
