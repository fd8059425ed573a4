/* order_pay_http: POST /api/v1/orders/{id}/pay and /cancel (issue 22), on a worker's loop.
 *
 *   token -> body -> the transaction on a PostgreSQL pool thread (order_pay_pg.h)
 *   -> back on the worker: a transition this call made is written to the order index's
 *      status field (order_msg.h, "<id>:s") and this instance's outcome cache, so polls
 *      see it; a cancel or expiry gives the unit back to the gate (release.lua, once
 *      per order id) and clears this instance's sold-out flag (the others' expire within
 *      soldout.ttl_ms <= 1 s), then records released_at; then the answer.
 *   -> an order PostgreSQL does not hold yet: 409 not_ready (Retry-After) if the index
 *      knows it (queued), else 404.
 * Threads: every call runs on its worker's loop. */
#ifndef ORDER_PAY_HTTP_H
#define ORDER_PAY_HTTP_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>


/** @brief Serves ORDER_ROUTE_ORDER_PAY or ORDER_ROUTE_ORDER_CANCEL (rt->arg: the order id). */
void order_pay_http_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                           int64_t start_us);

#endif
