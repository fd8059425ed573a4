/* order_http: seckill-order's HTTP dispatch, run on a worker's loop (order_app.h): it
 * routes a request to its route's file (see order_http.c's opening comment).
 *
 * Threads: the hooks run on their worker's loop (chain_flush and chain_free after it
 * ended). */
#ifndef ORDER_HTTP_H
#define ORDER_HTTP_H

#include "order_app.h"

/* The worker hooks of seckill-order (order_app.h): set app->hooks to this. The chain
 * hooks are the order chain's (order_place.h). */
extern const order_worker_hooks order_http_hooks;

/* sk_http's request handler (arg: the worker); order_http_hooks.handle. */
void order_http_handle(sk_http_req *req, void *worker);

#endif
