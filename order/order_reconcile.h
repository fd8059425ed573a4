/* order_reconcile: the reconciler, which gives back the stock of reservations whose
 * order will never reach Kafka (docs/design.md guarantee 4, a crash of the front).
 *
 * Design: one thread per seckill-order process; only the instance that holds the librlock
 * watchdog lock reconcile.lock (default `seckill:reconciler`: key
 * rlock:{seckill:reconciler}, a slot of its own)
 * works, the others try to take it at every scan, so when the holder dies another takes
 * over within one watchdog timeout plus one scan interval. Every scan interval the holder
 * reads each recent event's `pending` hash (events from PostgreSQL whose sale ended less
 * than reconcile.horizon_s ago) and for each entry:
 *   - the order is in PostgreSQL (created or rejected): confirm.lua (it is durable);
 *   - it is not, and it is certain it never will be: cancel.lua (stock and buyer back).
 * "Certain" means: the entry is older than the producer's message.timeout.ms plus
 * reconcile.margin_ms at a moment T, so its message was in Kafka before T or never will
 * be; the high watermark H of the event's partition was read after T; and the consumer
 * group's (group.id, the consumer's own setting: sk_group.h) committed offset on that
 * partition has reached H, so every message written
 * before T is in PostgreSQL (the consumer commits only after its PostgreSQL commit) --
 * and PostgreSQL is read after the committed offset. Hence an order that may still land
 * is never cancelled. The partition is computed with librdkafka's own partitioner
 * function named by kafka.partitioner (default consistent_random); with a partitioner
 * it cannot reproduce, every partition must have passed its mark.
 *
 * Files: this one holds the thread, the lock and Redis; order_recon_pg the SQL,
 * order_recon_kafka the offsets and watermarks, order_recon_rule every decision (pure).
 *
 * Everything here blocks (hiredis sync, libpq, librdkafka admin calls): it runs on its
 * own thread, never on an event loop. */
#ifndef ORDER_RECONCILE_H
#define ORDER_RECONCILE_H

#include "order_config.h"
#include "order_metrics.h"
#include "order_redis.h"

#include <stdint.h>

typedef struct order_reconciler order_reconciler;

/** @brief Starts the reconciler thread. cfg (its redis_url: one Redis or a cluster, through
 *  rcluster), props (kafka.* without the prefix), scripts and metrics (its reconcile_* fields are updated) are borrowed and must outlive
 *  the reconciler. Connections open lazily (a
 *  server that is down is retried at the next scan).
 *  @returns the reconciler, or NULL with a message in err (bad partitioner setting, OOM). */
order_reconciler *order_reconciler_start(const order_config *cfg, const sk_cfg_kv *props,
                                         const order_scripts *scripts, order_metrics *metrics,
                                         char *err, size_t errsz);

/** @brief Stops the thread (waits for a scan in progress), releases the lock so that
 *  another instance takes over at its next scan, frees. NULL is fine. */
void order_reconciler_stop(order_reconciler *r);

#endif
