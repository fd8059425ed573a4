/* order_kafka: the producer of accepted orders (one per process, shared by the workers).
 *
 * enable.idempotence=true and acks=all are set before the configured kafka.* properties
 * (which may override anything else, e.g. message.timeout.ms or linger.ms). A poll
 * thread serves delivery reports; a health thread asks the cluster for the topic's
 * metadata once a second, for /readyz.
 *
 * Threads: order_kafka_produce is thread-safe. The delivery callback runs on the poll
 * thread: it must only hand the result over to the thread that owns the request. */
#ifndef ORDER_KAFKA_H
#define ORDER_KAFKA_H

#include "sk_config.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>

typedef struct order_kafka order_kafka;

/* Called once per produced message on the poll thread with its opaque, the error
 * (RD_KAFKA_RESP_ERR_NO_ERROR: acknowledged by the cluster), the persistence status
 * librdkafka knows, and the partition/offset when acknowledged. */
typedef void order_kafka_dr_fn(void *opaque, rd_kafka_resp_err_t err,
                               rd_kafka_msg_status_t status, int32_t partition, int64_t offset);

/** @brief Creates the producer for `topic` with `props` (kafka.* keys without the prefix).
 *  @returns the handle (free with order_kafka_free) or NULL with a message in err. */
order_kafka *order_kafka_new(const sk_cfg_kv *props, const char *topic, order_kafka_dr_fn *dr,
                             char *err, size_t errsz);

/** @brief Queues one message (key and value are copied). @returns 0, or a librdkafka error
 *  code (queue full, unknown topic, ...), in which case no delivery report will come. */
int order_kafka_produce(order_kafka *k, const char *key, size_t keylen, const char *value,
                        size_t vallen, void *opaque);

/** @brief 1 if the last metadata request (at most a second or two ago) succeeded. */
int order_kafka_ready(const order_kafka *k);

/** @brief Waits up to timeout_ms for queued messages to be delivered (their reports run
 *  on the poll thread meanwhile). @returns the number of messages still queued. */
int order_kafka_flush(order_kafka *k, int timeout_ms);

/** @brief Stops the threads and destroys the producer (messages still queued are
 *  reported as failed first). NULL is fine. */
void order_kafka_free(order_kafka *k);

#endif
