/* sc_dlq: counts the dead letters of one event in the dead-letter topic.
 *
 * A plain assign()ed consumer (no subscription, no group join, no commits) reads every
 * partition from its low watermark to the high watermark read at start, so the scan
 * ends by itself and leaves no trace in the cluster. */
#ifndef SC_DLQ_H
#define SC_DLQ_H

#include <stddef.h>

#include "sk_config.h"

/** @brief Reads `topic` from the beginning with librdkafka settings `kafka` (bootstrap.servers
 *  at least) and counts messages naming `event_id` (sc_dlq_matches). A topic that does
 *  not exist counts 0. Gives up after timeout_ms.
 *  @returns 0 with *count set, or -1 with a message in errstr. */
int sc_dlq_count(const sk_cfg_kv *kafka, const char *topic, const char *event_id, int timeout_ms,
                 long long *count, char *errstr, size_t errstr_size);

#endif
