/* order_event_admin: POST /api/v1/events (create) and /api/v1/events/{id}/pause and
 * /resume, the admin's event routes. Run on the worker's loop. */
#ifndef ORDER_EVENT_ADMIN_H
#define ORDER_EVENT_ADMIN_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

/** @brief Serves ORDER_ROUTE_EVENT_CREATE. */
void order_event_create_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                               int64_t start_us);

/** @brief Serves ORDER_ROUTE_EVENT_PAUSE or ORDER_ROUTE_EVENT_RESUME (rt->arg: the
 *  event id). */
void order_event_pause_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us);

#endif
