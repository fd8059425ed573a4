/* order_iwrite: one write into the order index (order_msg.h): HSET of one or more fields
 * of an index hash ("<order_id>" the front's entry, "<order_id>:o" the consumer's outcome,
 * "<order_id>:s" a status after created), then EXPIRE of the hash to the index's ttl,
 * LT: never later than it already expires (the hash goes ttl after its first write).
 * One builder for the four writers (order_index.c, order_pay_http.c, consumer_oidx.c,
 * consumer_expiry.c), so the key, the field names, the entry encoding and the expiry are
 * written one way. Pure: it builds argv arrays, the caller sends them (hiredis, rcluster
 * or order_redis) in that order.
 *
 * Not thread-safe: one builder per thread (or per request). */
#ifndef ORDER_IWRITE_H
#define ORDER_IWRITE_H

#include "order_msg.h"

#include <stddef.h>
#include <stdint.h>

typedef struct order_iwrite order_iwrite;

/** @brief A builder for up to cap fields per write. @returns it (free with
 *  order_iwrite_free), or NULL on OOM. */
order_iwrite *order_iwrite_new(size_t cap);

/** @brief Frees w. NULL is fine. */
void order_iwrite_free(order_iwrite *w);

/** @brief Starts a write into the hash of order_id's bucket (order_index_bucket), expiring
 *  ttl_s after it; the fields of the previous write are dropped. */
void order_iwrite_begin(order_iwrite *w, uint64_t order_id, long long ttl_s);

/** @brief Adds the field "<order_id><suffix>" (suffix "", ORDER_INDEX_OUTCOME_SUFFIX or
 *  ORDER_INDEX_STATUS_SUFFIX) valued with e's encoding. @returns 0, or -1 when the
 *  builder is full or order_id is of another bucket than the write's (nothing added). */
int order_iwrite_add(order_iwrite *w, uint64_t order_id, const char *suffix,
                     const order_index_entry *e);

/** @brief The fields added since begin. */
size_t order_iwrite_count(const order_iwrite *w);

/** @brief The HSET command: *argv and *lens point into w (valid until the next begin or
 *  add). @returns its argc (2 + 2 * fields). */
int order_iwrite_hset(order_iwrite *w, const char ***argv, const size_t **lens);

/** @brief The EXPIRE ... LT command, the same way. @returns 4. */
int order_iwrite_expire(order_iwrite *w, const char ***argv, const size_t **lens);

#endif
