/* order_place_gate: the order chain from the gate on (order_place_gate.c), as the rest of
 * the process sees it: Kafka's delivery callback and the worker's chain hooks.
 *
 * Threads: the chain hooks run on their worker's loop (chain_flush and chain_free after
 * it ended); order_place_on_delivery runs on whichever thread serves Kafka's reports. */
#ifndef ORDER_PLACE_GATE_H
#define ORDER_PLACE_GATE_H

#include "order_app.h"

/** @brief The producer's delivery callback (order_kafka_new's dr): opaque is the
 *  request. */
void order_place_on_delivery(void *opaque, rd_kafka_resp_err_t err, rd_kafka_msg_status_t status,
                             int32_t partition, int64_t offset);

/* The worker's order chain (order_app.h's hooks: w->chain): the gate, the index writer,
 * the produce queue, the paused-events reader (worker 0) and the placement requests
 * kept for reuse. */
/** @brief Makes w->chain. @returns 0 or -1 (what was made is freed by chain_free). */
int order_place_chain_new(order_worker *w);
/** @brief After the loop ended: sends (or fails) what the chain has queued, then the
 *  gate fails what is submitted. */
void order_place_chain_flush(order_worker *w);
/** @brief After the Redis connection is freed: frees w->chain. */
void order_place_chain_free(order_worker *w);

#endif
