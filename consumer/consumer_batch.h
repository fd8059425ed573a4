/* consumer_batch: the messages of one PostgreSQL transaction (pure, no I/O).
 *
 * A batch owns copies of what it needs from each Kafka message (partition, offset,
 * the decoded order or the poison reason, and the original key/value bytes, kept for
 * the dead-letter topic) in one growing arena, so adding a message is a copy, not a
 * malloc. It also tracks, per partition, the highest offset it holds: the offsets to
 * commit once the batch is durable. Not thread-safe: one owner. */
#ifndef CONSUMER_BATCH_H
#define CONSUMER_BATCH_H

#include "consumer_msg.h"

#include <stddef.h>
#include <stdint.h>

#define CONSUMER_BATCH_NO_KEY SIZE_MAX /* key_len of a message without a key */

typedef struct consumer_batch_msg {
    int32_t partition;
    int64_t offset;
    consumer_msg_err err; /* OK, a parse error, or UNKNOWN_EVENT once the DB step ran */
    int dup;              /* 1: same order_id as an earlier message of the batch; 2: same
                             (event, user) only (a second order of the user, which an
                             event whose per_user_limit is above 1 keeps: consumer_db) */
    char outcome;         /* after consumer_db_write, an order index letter (order_msg.h):
                           * 'c' created, 'r' rejected, 'd' already in PostgreSQL (a
                           * replay: status unknown here), 0 not written */
    int64_t pay_by_ms;    /* 'c': the row's pay_by (epoch ms), for the order index */
    consumer_order order; /* valid when err == CONSUMER_MSG_OK */
    /* Dead-letter progress (consumer_dlq.c): 0 to send, 1 acknowledged, 2 given up.
     * dlq_small: the DLQ refused a copy for good (size, format): send a short one. */
    unsigned char dlq_state, dlq_small;
    int dlq_why; /* rd_kafka_resp_err_t of that refusal, 0 if none */
    size_t key_off, key_len, val_off, val_len; /* into the arena */
} consumer_batch_msg;

typedef struct consumer_batch_pos {
    int32_t partition;
    int64_t next_offset; /* highest offset held + 1: what a commit stores */
} consumer_batch_pos;

typedef struct consumer_batch consumer_batch;

/** @brief A new empty batch (free with consumer_batch_free). @returns NULL on OOM. */
consumer_batch *consumer_batch_new(void);
/** @brief Frees the batch. NULL is fine. */
void consumer_batch_free(consumer_batch *b);
/** @brief Empties the batch, keeping its memory for the next one. */
void consumer_batch_clear(consumer_batch *b);

/** @brief Copies one Kafka message in and decodes it. `key` may be NULL (no key).
 *  @returns 0, or -1 on OOM (the batch is unchanged). */
int consumer_batch_add(consumer_batch *b, int32_t partition, int64_t offset, const void *key,
                       size_t key_len, const void *value, size_t value_len);

size_t consumer_batch_count(const consumer_batch *b);
consumer_batch_msg *consumer_batch_msg_at(consumer_batch *b, size_t i);
/** @brief The bytes of a message's key (NULL if none) and value, valid until clear/free. */
const void *consumer_batch_key(const consumer_batch *b, const consumer_batch_msg *m);
const void *consumer_batch_value(const consumer_batch *b, const consumer_batch_msg *m);

/** @brief Marks, among valid messages, every one whose order_id (dup = 1: a replay) or
 *  else (event_id, user_id) (dup = 2: a second order of the user) already appeared
 *  earlier in the batch. Only the first is written, but for an event whose
 *  per_user_limit is above 1, where a user's second order is one (issue 31).
 *  @returns the number marked, or -1 on OOM. */
long consumer_batch_dedup(consumer_batch *b);

/** @brief The partitions held and, for each, the offset to commit.
 *  @returns the count; *out points into the batch (valid until clear/free). */
size_t consumer_batch_positions(const consumer_batch *b, const consumer_batch_pos **out);

#endif
