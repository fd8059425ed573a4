/* order_bucket: per-user token buckets in process, in bounded memory.
 *
 * A fixed table of `capacity` buckets (rounded up to a power of two), 4-way set
 * associative by a hash of the user id. A user not in its set takes the place of the
 * set's least recently seen user, who starts over with a full bucket next time: under
 * more distinct active users than capacity the limit gets looser, never stricter, and
 * memory never grows. Thread-safe (one mutex per set; workers rarely meet on one). */
#ifndef ORDER_BUCKET_H
#define ORDER_BUCKET_H

#include <stddef.h>
#include <stdint.h>

typedef struct order_bucket_table order_bucket_table;

/** @brief `rate` tokens per second refill, at most `burst` tokens, room for `capacity`
 *  users. @returns the table (free with order_bucket_free), or NULL on bad arguments/OOM. */
order_bucket_table *order_bucket_new(size_t capacity, double rate, double burst);

/** @brief Takes one token of `user` at monotonic time now_us. @returns 1 allowed, 0 limited. */
int order_bucket_take(order_bucket_table *t, uint64_t user, int64_t now_us);

/** @brief Like order_bucket_take, with this call's `rate` (tokens per second, > 0) and
 *  `burst` (>= 1) in place of the table's: for buckets whose rate is set per key (an
 *  event's override, order_limit.h). A key must always be taken with the same rate. */
int order_bucket_take_rate(order_bucket_table *t, uint64_t key, int64_t now_us, double rate,
                           double burst);

/** @brief The table's key hash (splitmix64's finaliser), for callers that build a key
 *  from several ids. */
uint64_t order_bucket_mix(uint64_t x);

/** @brief NULL is fine. */
void order_bucket_free(order_bucket_table *t);

#endif
