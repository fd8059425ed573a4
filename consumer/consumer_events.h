/* consumer_events: publishes order transitions to seckill.order-events from the WAL
 * (issue 36; issue 22 built it on an outbox table).
 *
 * Every transition is written into the WAL in the transaction that makes it, as a
 * transactional logical decoding message (deploy/sql/006's triggers). A thread of
 * seckill-consumer reads them from a logical replication slot (events.slot) over
 * libpq's replication protocol with pgoutput (publication seckill_events, which holds no
 * table, messages on): PostgreSQL hands the messages over at each commit, in commit
 * order, and never those of a transaction that rolled back. Each line of a message is
 * produced (idempotent producer; key = order id, value = JSON as the order message plus
 * "status" and "at_ms"), and the slot is confirmed (the standby status update's flush
 * position) only up to the end of the last transaction all of whose transitions Kafka
 * acknowledged, in commit order. The slot keeps the WAL past that point.
 *
 * One reader per slot: PostgreSQL lets one connection stream a slot at a time, so with
 * several consumers one publishes and the others retry every events.interval_ms (the
 * metric seckill_consumer_events_streaming says which); when the publisher dies its
 * connection closes and another takes the slot over where it was confirmed.
 *
 * Delivery is at least once: after a crash, a failed delivery or a takeover, the
 * transactions past the confirmed point are read and produced again, so the duplicates
 * are bounded by what was produced and not yet confirmed (librdkafka's queue, at most
 * queue.buffering.max.messages, plus up to 100 ms of acknowledgements not yet reported).
 * A reader dedupes by (order_id, status). One order's transitions keep their order:
 * they are committed in that order, produced in commit order with one key (one
 * partition) by an idempotent producer, and a replay restarts from an earlier commit.
 *
 * Every second the thread reads how much WAL the slot keeps past its confirmed point
 * (seckill_consumer_events_slot_lag_bytes) and logs events_slot_lag at warn level when it
 * passes events.lag_alarm_bytes: a broker away or a publisher stuck grows it.
 * Threads: start and free from the main thread. */
#ifndef CONSUMER_EVENTS_H
#define CONSUMER_EVENTS_H

#include <stddef.h>

#include "consumer_metrics.h"

#include <libpq-fe.h>
#include "sk_config.h"

struct consumer_cfg;
typedef struct consumer_events consumer_events;

/** @brief Starts the publisher for cfg (pg, events.*) with the kafka.* settings;
 *  m (borrowed, outlives the publisher) gets its metrics. @returns it, or NULL with err. */
consumer_events *consumer_events_start(const struct consumer_cfg *cfg, const sk_cfg_kv *kafka,
                                       consumer_metrics *m, char *err, size_t errsz);

/* The publication pgoutput is given: it holds no table, so only messages are sent. */
#define CONSUMER_EVENTS_PUBLICATION "seckill_events"

/* A slot name's longest (NAMEDATALEN - 1). */
#define CONSUMER_EVENTS_SLOT_MAX 63

/** @brief Names the slot (slot_cfg, or seckill_events_<database> when NULL or "") into
 *  slot[CONSUMER_EVENTS_SLOT_MAX + 1] and creates it on c when missing (pgoutput), and
 *  the publication before it (pgoutput fails on WAL older than its publication). The
 *  slot must exist before the first transition it should carry is committed: the
 *  migrations call this before they write (consumer_db_migrate), the publisher again.
 *  Needs wal_level = logical and the REPLICATION attribute; waits for the transactions
 *  running at the call to end (the slot's consistent point).
 *  @returns 0, or -1 with err. */
int consumer_events_slot_ensure(PGconn *c, const char *slot_cfg, char *slot, char *err,
                                size_t errsz);

/** @brief Stops the thread (what was produced gets up to 5 s to be acknowledged and
 *  confirmed) and frees. NULL is fine. */
void consumer_events_free(consumer_events *e);

#endif
