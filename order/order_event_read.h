/* order_event_read: GET /api/v1/events/{id} and GET /api/v1/events (the list), from
 * this instance's caches (order_events.h, order_evlist.h). Run on the worker's loop. */
#ifndef ORDER_EVENT_READ_H
#define ORDER_EVENT_READ_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

/** @brief Serves ORDER_ROUTE_EVENT_GET (rt->arg: the event id). */
void order_event_get_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                            int64_t start_us);

/** @brief Serves ORDER_ROUTE_EVENT_LIST (offset and limit from the query). */
void order_event_list_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                             int64_t start_us);

/** @brief Starts the event list's refresh when one is due, as GET /api/v1/events would,
 *  with no answer waiting on it (a buyer's order list needs the events, issue 31). */
void order_event_list_warm(order_worker *w);

#endif
