/* order_recon_kafka: the reconciler's Kafka client. It reads, for every partition of the
 * orders topic, the high watermark and the committed offset of the writers' consumer group
 * (group.id, the one setting seckill-consumer joins with) and turns them into a cutoff per
 * partition through order_recon_rule; it maps an event to its partition with the
 * producer's own partitioner. It never subscribes, never joins the group, never commits.
 *
 * Everything blocks (librdkafka admin calls, KAFKA_TIMEOUT_MS each): the reconciler's
 * thread only. See order_reconcile.h for why the cutoff proves an order can no longer land. */
#ifndef ORDER_RECON_KAFKA_H
#define ORDER_RECON_KAFKA_H

#include "sk_config.h"

#include <stdint.h>

typedef struct order_recon_kafka order_recon_kafka;

/** @brief A client for `topic` reading `group`'s offsets, configured by props (kafka.*
 *  without the prefix). topic, group and props are borrowed and must outlive it. Nothing
 *  is connected yet. @returns the client, or NULL on OOM. */
order_recon_kafka *order_recon_kafka_new(const char *topic, const char *group,
                                         const sk_cfg_kv *props);

/** @brief The producer's message.timeout.ms as props give it (order_recon_msg_timeout_ms). */
int64_t order_recon_kafka_msg_timeout_ms(const sk_cfg_kv *props);

/** @brief Creates the librdkafka handle if there is none. @returns 0, or -1 (logged). */
int order_recon_kafka_connect(order_recon_kafka *k);

/** @brief Reads the partition count, then for every partition the time, the high
 *  watermark and the committed offset, in that order, and updates the cutoffs. The caller
 *  reads PostgreSQL after this. @returns 0, or -1 (logged; the cutoffs are not to be used). */
int order_recon_kafka_cutoffs(order_recon_kafka *k);

/** @brief The cutoff of event_id's partition after order_recon_kafka_cutoffs. */
int64_t order_recon_kafka_event_cutoff(const order_recon_kafka *k, uint64_t event_id);

/** @brief Frees k and its handles. NULL is fine. */
void order_recon_kafka_free(order_recon_kafka *k);

#endif
