/* order_read: GET /api/v1/orders/{id} (the order index, the outcome cache, then
 * PostgreSQL for what they cannot tell). Runs on the worker's loop. */
#ifndef ORDER_READ_H
#define ORDER_READ_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

/** @brief Serves ORDER_ROUTE_ORDER_GET (rt->arg: the order id). */
void order_read_handle(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us);

#endif
