/* order_event_audit: GET /api/v1/events/{id}/audit?offset=O&limit=L (admin, issue 32):
 * the record of the admin acts on an event (seckill_admin_audit, written by the acts'
 * own transactions: order_event_admin.c, order_event_change.c), oldest first, a page
 * at a time, from PostgreSQL on a pool thread. An id nobody acted on has an empty
 * record (200), since a record outlives its event. */
#ifndef ORDER_EVENT_AUDIT_H
#define ORDER_EVENT_AUDIT_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

#define ORDER_AUDIT_LIMIT_MAX 100

/** @brief Serves ORDER_ROUTE_EVENT_AUDIT (rt->arg: the event id). */
void order_event_audit_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us);

#endif
