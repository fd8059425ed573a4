/* order_ops: GET /healthz, /readyz, /metrics and the console's files. Run on the
 * worker's loop. */
#ifndef ORDER_OPS_H
#define ORDER_OPS_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

/** @brief Serves ORDER_ROUTE_HEALTHZ, _READYZ, _METRICS or _CONSOLE (any other route is
 *  taken for the console, which answers 404 for a path it does not hold). */
void order_ops_handle(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us);

#endif
