/* order_kafka: the producer of accepted orders (one per process, shared by the workers).
 *
 * enable.idempotence=true and acks=all are set before the configured kafka.* properties
 * (which may override anything else, e.g. message.timeout.ms or linger.ms). Delivery
 * reports are served by an event loop of the owner's (order_kafka_report_fd and
 * order_kafka_serve), with no thread of their own; a health thread asks the cluster for
 * the topic's metadata once a second, for /readyz.
 *
 * Threads: order_kafka_produce is thread-safe. The delivery callback runs on whichever
 * thread serves reports (order_kafka_serve, or order_kafka_flush/free at shutdown): it
 * must hand a result over to the thread that owns its request unless that is this one. */
#ifndef ORDER_KAFKA_H
#define ORDER_KAFKA_H

#include "sk_config.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>

typedef struct order_kafka order_kafka;

/* Called once per produced message, on the thread serving reports, with its opaque, the error
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

/** @brief A non-blocking fd that becomes readable when delivery reports wait. Watch it
 *  on one event loop and call order_kafka_serve there; stop watching before
 *  order_kafka_free. The fd stays owned by the handle. */
int order_kafka_report_fd(const order_kafka *k);

/** @brief Runs the delivery callback of every report waiting, on the calling thread
 *  (call it when the report fd is readable). */
void order_kafka_serve(order_kafka *k);

/** @brief 1 if the last metadata request (at most a second or two ago) succeeded. */
int order_kafka_ready(const order_kafka *k);

/** @brief Waits up to timeout_ms for queued messages to be delivered (their reports
 *  run on the calling thread, or on the loop serving the fd, meanwhile). @returns the number of messages still queued. */
int order_kafka_flush(order_kafka *k, int timeout_ms);

/** @brief Stops the health thread and destroys the producer (messages still queued are
 *  reported as failed first, on the calling thread). No loop may serve the report fd
 *  any more. NULL is fine. */
void order_kafka_free(order_kafka *k);

#endif
