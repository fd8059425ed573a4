/* order_place: POST /api/v1/events/{id}/orders, the order chain's first part (the
 * checks before Redis); order_place_gate.h is the rest (the gate, Kafka, confirm or
 * cancel, and the worker's chain). Runs on the worker's loop. */
#ifndef ORDER_PLACE_H
#define ORDER_PLACE_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

/** @brief Serves ORDER_ROUTE_ORDER_CREATE (rt->arg: the event id). */
void order_place_handle(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us);

#endif
