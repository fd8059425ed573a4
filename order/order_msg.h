/* order_msg: the seckill.orders message (DESIGN.md, Kafka) and the Redis key names of an
 * event (DESIGN.md, Redis data). Pure functions.
 *
 * Value: {"v":1,"order_id":"<decimal>","event_id":"<decimal>","user_id":"<decimal>","ts_ms":<int>}
 * Key:   the event id in decimal, so one event's orders share a partition. */
#ifndef ORDER_MSG_H
#define ORDER_MSG_H

#include <stddef.h>
#include <stdint.h>

#define ORDER_MSG_MAX 160 /* longest value: four 20-digit numbers plus the names */

typedef struct order_msg {
    uint64_t order_id, event_id, user_id;
    int64_t ts_ms;
} order_msg;

#define ORDER_DEC_MAX 21 /* a uint64 in decimal and its NUL */

/** @brief Writes v in decimal (NUL-terminated) into out. @returns its length (1..20).
 *  The one formatter of ids on the accept path (snprintf costs several times more). */
size_t order_dec_u64(char out[ORDER_DEC_MAX], uint64_t v);

/** @brief Encodes the message value into out. @returns its length, or 0 if out is too small. */
size_t order_msg_encode(const order_msg *m, char *out, size_t outsz);

/** @brief Decodes a value (for tests and tools; strict: v must be 1, ids decimal strings).
 *  @returns 0 or -1. */
int order_msg_decode(const char *buf, size_t len, order_msg *out);

/* Redis keys of one event; all share the hash tag {e<ID>} (one Cluster slot). */
typedef enum {
    ORDER_KEY_STOCK = 0,
    ORDER_KEY_BUYERS,
    ORDER_KEY_META,
    ORDER_KEY_PENDING,
    ORDER_KEY_ACCEPTED, /* order_id -> user_id:ts_ms once Kafka acknowledged (confirm.lua) */
    ORDER_KEY_COUNT
} order_key_kind;

#define ORDER_KEY_MAX 64

/** @brief Writes "seckill:{e<ID>}:<kind>" into out (>= ORDER_KEY_MAX). @returns the length. */
size_t order_key(uint64_t event_id, order_key_kind kind, char *out, size_t outsz);

/** @brief The index bucket of an order: its id's second under libidgen's layout (bits
 *  62..32, idgen.h), so the orders of one second share one hash. Any id maps somewhere:
 *  a GET for an id never issued finds no field. */
uint64_t order_index_bucket(uint64_t order_id);

/** @brief "seckill:oidx:<bucket>": the hash whose field <order_id> holds the event an
 *  order belongs to (for GET order). */
size_t order_key_index(uint64_t order_id, char *out, size_t outsz);

/* An order's index entry (the field <order_id> of its "seckill:oidx:<bucket>" hash):
 * "<event_id>:<user_id>:a" once Kafka acknowledged the order (it will reach PostgreSQL;
 * GET answers queued until the consumer wrote it), "<event_id>:<user_id>:p" when it may or
 * may not have landed (a 503 carrying the id; GET asks the event's pending hash).
 * The consumer writes the order's outcome after its PostgreSQL commit into the field
 * "<order_id>:o" of the same hash (consumer_oidx.h): "<event_id>:<user_id>:c" created,
 * ":r" rejected, ":d" in PostgreSQL with a status this writer did not learn (a replay). */
typedef struct order_index_entry {
    uint64_t event_id, user_id;
    int acked;     /* 'a' (1) or 'p' (0), when outcome is 0 */
    char outcome;  /* 'c', 'r' or 'd' for an outcome field; 0 for the front's entry */
} order_index_entry;

#define ORDER_INDEX_OUTCOME_SUFFIX ":o"
#define ORDER_INDEX_VALUE_MAX 48

/** @returns the length written into out (>= ORDER_INDEX_VALUE_MAX), NUL-terminated. */
size_t order_index_encode(const order_index_entry *e, char *out, size_t outsz);

/** @brief Parses an entry (len bytes, strict). @returns 0 or -1. */
int order_index_decode(const char *s, size_t len, order_index_entry *e);

/** @brief "seckill:rl:{u<user_id>}": the user's bucket of ratelimit.lua. */
size_t order_key_ratelimit(uint64_t user_id, char *out, size_t outsz);

#endif
