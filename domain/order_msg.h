/* order_msg: the Redis key names of an event (docs/design.md, Redis data) and the order index
 * entries. Pure functions. The seckill.orders message itself is sk_order_msg.h, the
 * statuses behind the index's letters order_status.h; decimal ids are written with
 * sk_id_format (sk_id.h). */
#ifndef ORDER_MSG_H
#define ORDER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "sk_id.h"
#include "sk_order_msg.h"

/* Redis keys of one event; all share the hash tag {e<ID>} (one Cluster slot). */
typedef enum {
    ORDER_KEY_STOCK = 0,
    ORDER_KEY_BUYERS,
    ORDER_KEY_META,
    ORDER_KEY_PENDING,
    ORDER_KEY_RELEASED, /* set of order ids whose unit release.lua gave back (issue 22) */
    ORDER_KEY_UNITS,    /* user -> units held, for a per_user_limit above 1 (issue 31) */
    ORDER_KEY_COUNT
} order_key_kind;

#define ORDER_KEY_MAX 64

/** @brief Writes "seckill:{e<ID>}:<kind>" into out (>= ORDER_KEY_MAX). @returns the length. */
size_t order_key(uint64_t event_id, order_key_kind kind, char *out, size_t outsz);

/* Segmented stock (issue 19): an event created with `segments` = K > 1 splits its stock
 * over K segments, each with its own hash tag so that a Redis Cluster spreads them over
 * its masters. Segment 0 keeps the event's own tag, so K = 1 is exactly the keys of
 * before; segment k >= 1 is "seckill:{e<ID>.<k>}:<kind>". */
#define ORDER_SEGMENTS_MAX 64

/** @brief The key of `kind` of segment `seg` of the event (seg 0: order_key's). */
size_t order_key_seg(uint64_t event_id, unsigned seg, order_key_kind kind, char *out, size_t outsz);

/** @brief A user's home segment among k (0 when k <= 1): a 64-bit mix of the id, mod k,
 *  so that ids sharing low bits (a sequence, a node) still spread. Every front and the
 *  reconciler compute the same. */
unsigned order_seg_home(uint64_t user_id, unsigned k);

/* release.lua's KEYS for a closed order (issue 22): stock, buyers and released of the
 * buyer's home segment (order_seg_home: the segment whose buyers set holds the user, and
 * whose released set the reconciler's reload fills with the orders homed there). For
 * k <= 1 the event's own keys. One rule for the front's pay/cancel and the consumer's
 * release sweep. */
typedef struct order_release_keys {
    char key[4][ORDER_KEY_MAX]; /* stock, buyers, released, units (issue 31) */
    size_t len[4];
} order_release_keys;

/** @brief Fills out with release.lua's four keys for an order of user_id in event_id
 *  (k segments). @returns the home segment. */
unsigned order_release_keys_of(uint64_t event_id, uint64_t user_id, unsigned k,
                               order_release_keys *out);

/** @brief The index bucket of an order: its id's second under libidgen's layout (bits
 *  62..32, idgen.h), so the orders of one second share one hash. Any id maps somewhere:
 *  a GET for an id never issued finds no field. */
uint64_t order_index_bucket(uint64_t order_id);

/** @brief Seconds from order_id's issue (its libidgen second since 2024-01-01 UTC) to
 *  now_s (Unix seconds); negative for an id from the future. */
int64_t order_id_age_s(uint64_t order_id, int64_t now_s);

/* An id whose second is more than this ahead of the clock was never issued, whatever the
 * clock skew between the gate's Redis and a front (GET and pay/cancel answer it 404). */
#define ORDER_ID_SKEW_S 60

/* How long after its issue an order id may still be missing from the index although a
 * front answered 202 for it: the accepting worker sends the entry at the end of its loop
 * turn, on its own Redis connection, and a request the buyer sends next may reach another
 * worker, whose Redis connection can be quicker when the machine is busy (CI 2026-11-27:
 * a pay a few ms after its 202 found neither the row nor the entry and was told 404).
 * Pay and cancel answer such a young unknown id "not ready" (retry), not 404. */
#define ORDER_INDEX_ENTRY_GRACE_S 2

/** @brief "seckill:oidx:<bucket>": the hash whose field <order_id> holds the event an
 *  order belongs to (for GET order). */
size_t order_key_index(uint64_t order_id, char *out, size_t outsz);

/* An order's index entry (the field <order_id> of its "seckill:oidx:<bucket>" hash):
 * "<event_id>:<user_id>:a" once Kafka acknowledged the order (it will reach PostgreSQL;
 * GET answers queued until the consumer wrote it), "<event_id>:<user_id>:p" when it may or
 * may not have landed (a 503 carrying the id; GET asks the event's pending hash).
 * The consumer writes the order's outcome after its PostgreSQL commit into the field
 * "<order_id>:o" of the same hash (consumer_oidx.h): "<event_id>:<user_id>:c" created,
 * ":r" rejected, ":d" in PostgreSQL with a status this writer did not learn (a replay).
 * What happens after created (issue 22: a pay, cancel or expiry, written by whoever made
 * the transition, after its PostgreSQL commit) goes into the field "<order_id>:s":
 * ":P" paid, ":X" cancelled, ":E" expired. A field of its own, so the consumer's ":o"
 * write, which may land just after a quick payment, never hides the later status. */
typedef struct order_index_entry {
    uint64_t event_id, user_id;
    int acked;     /* 'a' (1) or 'p' (0), when outcome is 0 */
    char outcome;  /* 'c', 'r' or 'd' for an outcome field, 'P', 'X' or 'E' for a status
                      field; 0 for the front's entry */
    int64_t pay_by_ms; /* 'c' and 'P' only, 0 when not known: the order's pay_by as
                          PostgreSQL stores it, so that GET answers it from the index */
} order_index_entry;

/* The consumer's outcome for an order already in PostgreSQL, its status not learnt (a
 * replay); the other letters are the statuses' (order_status.h). */
#define ORDER_INDEX_OUTCOME_REPLAY 'd'

#define ORDER_INDEX_OUTCOME_SUFFIX ":o"
#define ORDER_INDEX_STATUS_SUFFIX ":s"

/** @brief The API status of an outcome letter ("created", "rejected", "paid",
 *  "cancelled", "expired"; order_status_name), or NULL for 'd', 0 or anything else. */
const char *order_index_status_name(char outcome);

/** @brief The outcome letter of an API status ('c', 'r', 'P', 'X', 'E'), or 0. */
char order_index_status_letter(const char *status);
/* "<event>:<user>:<letter>", and ":<pay_by_ms>" after 'c' (the consumer knows it from
 * its insert) or 'P' (the front's pay): 20 + 1 + 20 + 2 + 1 + 19 + NUL. */
#define ORDER_INDEX_VALUE_MAX 64

/** @returns the length written into out (>= ORDER_INDEX_VALUE_MAX), NUL-terminated. */
size_t order_index_encode(const order_index_entry *e, char *out, size_t outsz);

/** @brief Parses an entry (len bytes, strict: the pay_by part only after 'c' or 'P', a
 *  positive decimal). pay_by_ms is 0 when the entry has none (written before it was
 *  recorded). @returns 0 or -1. */
int order_index_decode(const char *s, size_t len, order_index_entry *e);

/** @brief "seckill:rl:{u<user_id>}": the user's bucket of ratelimit.lua. */
size_t order_key_ratelimit(uint64_t user_id, char *out, size_t outsz);

#endif
