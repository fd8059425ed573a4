/* sc_dlq_match: does a dead letter belong to an event? Pure, for seckill-check's scan of
 * seckill.orders.dlq (the original message bytes, keyed by event id). */
#ifndef SC_DLQ_MATCH_H
#define SC_DLQ_MATCH_H

#include <stddef.h>

/** @brief 1 if the key is exactly event_id (decimal text), or the payload has a field
 *  "event_id" whose value (string or number) is event_id; else 0. */
int sc_dlq_matches(const void *key, size_t key_len, const void *payload, size_t len,
                   const char *event_id);

#endif
