/* order_read: GET /api/v1/orders/{id} (the order index, the outcome cache, then
 * PostgreSQL for what they cannot tell). Runs on the worker's loop. */
#ifndef ORDER_READ_H
#define ORDER_READ_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

/** @brief Serves ORDER_ROUTE_ORDER_GET (rt->arg: the order id). */
void order_read_handle(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us);

/** @brief Serves ORDER_ROUTE_ORDER_LIST: GET /api/v1/orders?event_id=&offset=&limit=,
 *  the token's orders from Redis and memory (issue 31). */
void order_read_list_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                            int64_t start_us);

/** @brief Answers a duplicate order of `user` for event_id (route, start_us: the order's)
 *  with 409 naming order_id, the order the user holds (reserve.lua), and its status as
 *  GET would read it ("unknown" when it cannot be read now). Takes the request. */
void order_read_duplicate(order_worker *w, sk_http_req *req, order_route_id route,
                          int64_t start_us, uint64_t user, uint64_t event_id, uint64_t order_id);

#endif
