/* order_http: the HTTP API's handlers and the order chain behind POST
 * /api/v1/events/{id}/orders, run on a worker's loop (order_app.h).
 *
 * Threads: the hooks run on their worker's loop (chain_flush and chain_free after it
 * ended); order_http_on_delivery runs on whichever thread serves Kafka's reports. */
#ifndef ORDER_HTTP_H
#define ORDER_HTTP_H

#include "order_app.h"
#include "order_reply.h"
#include "order_route.h"

/* The worker hooks of seckill-order (order_app.h): set app->hooks to this. */
extern const order_worker_hooks order_http_hooks;

/* sk_http's request handler (arg: the worker); order_http_hooks.handle. */
void order_http_handle(sk_http_req *req, void *worker);

/* The producer's delivery callback (order_kafka_new's dr): opaque is the request. */
void order_http_on_delivery(void *opaque, rd_kafka_resp_err_t err, rd_kafka_msg_status_t status,
                            int32_t partition, int64_t offset);

/* Shared with the other handler files of the front (order_pay_http.c). */
/** @brief Verifies the bearer token. @returns 0 and the claims, or -1. */
int order_http_authenticate(order_worker *w, sk_http_req *req, sk_jwt_claims *claims);
/** @brief Answers an error (JSON body, counted in the metrics, request done). */
void order_http_reply_error(order_worker *w, sk_http_req *req, order_route_id route,
                            int64_t start_us, order_err e, const char *msg, uint64_t order_id);
/** @brief Answers `status` with a JSON body (counted in the metrics, request done). */
void order_http_reply_json(order_worker *w, sk_http_req *req, order_route_id route,
                           int64_t start_us, int status, const char *body, size_t len);

#endif
