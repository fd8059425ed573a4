/* consumer_events: publishes order transitions to seckill.order-events (issue 22).
 *
 * Every transition lands in seckill_order_outbox in the transaction that made it (a
 * trigger of deploy/sql/002). A thread of seckill-consumer takes up to events.batch rows
 * in id order, FOR UPDATE SKIP LOCKED (several consumers share the work, none publishes
 * a row another holds), produces each (key = order id, value = JSON as the order
 * message plus "status" and "at_ms"), waits for Kafka's acknowledgements, then deletes
 * the rows and commits. A crash after the produce and before the commit publishes the
 * rows again: at least once; a reader dedupes by (order_id, status). Two consumers may
 * publish one order's rows in two batches, so a reader orders by at_ms, not arrival.
 * Threads: start and free from the main thread. */
#ifndef CONSUMER_EVENTS_H
#define CONSUMER_EVENTS_H

#include <stddef.h>

#include "sk_config.h"

struct consumer_cfg;
typedef struct consumer_events consumer_events;

/** @brief Starts the publisher for cfg (pg, events.*) with the kafka.* settings.
 *  @returns it, or NULL with err. */
consumer_events *consumer_events_start(const struct consumer_cfg *cfg, const sk_cfg_kv *kafka,
                                       char *err, size_t errsz);

/** @brief Stops the thread (the batch under way finishes) and frees. NULL is fine. */
void consumer_events_free(consumer_events *e);

#endif
