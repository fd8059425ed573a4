/* order_http: the HTTP API's handlers and the order chain behind POST
 * /api/v1/events/{id}/orders, run on a worker's loop (order_app.h).
 *
 * Threads: the hooks run on their worker's loop (chain_flush and chain_free after it
 * ended); order_http_on_delivery runs on whichever thread serves Kafka's reports. */
#ifndef ORDER_HTTP_H
#define ORDER_HTTP_H

#include "order_app.h"

/* The worker hooks of seckill-order (order_app.h): set app->hooks to this. */
extern const order_worker_hooks order_http_hooks;

/* evhttp's request callback (arg: the worker); order_http_hooks.handle. */
void order_http_handle(struct evhttp_request *req, void *worker);

/* The producer's delivery callback (order_kafka_new's dr): opaque is the request. */
void order_http_on_delivery(void *opaque, rd_kafka_resp_err_t err, rd_kafka_msg_status_t status,
                            int32_t partition, int64_t offset);

#endif
