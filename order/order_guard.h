/* order_guard: slow clients cannot hold the service. Each request gets
 * http.read_timeout_ms from its first byte to its last (order_reqscan follows the
 * boundaries through a callback on the connection's input buffer); past it the
 * connection is cut the way a libevent read timeout cuts it (evhttp closes it). evhttp's
 * own timeout (http.idle_timeout_s) cannot do this: every byte restarts it. It also caps
 * the connections a worker holds (limits.connections / workers): one over the cap is
 * closed as soon as it is accepted. Runs on the worker's loop only. */
#ifndef ORDER_GUARD_H
#define ORDER_GUARD_H

#include <stddef.h>
#include <stdint.h>

struct evhttp;
struct event_base;

typedef struct order_guard order_guard;

/** @brief Installs the guard on `http` (before it accepts): each request must be read
 *  within read_timeout_ms (0: no deadline), and at most max_conns connections at once.
 *  A connection's first request over max_header_bytes (line ends included) or with a
 *  Content-Length over max_body_bytes (0: no bound), or with an Expect other than
 *  100-continue, is answered by the guard in JSON (413, 413, 400) and the connection
 *  closed, before evhttp answers it in HTML; later requests of a connection fall back
 *  to evhttp's answer (an earlier answer may still be pending there).
 *  @returns the guard (free with order_guard_free after evhttp_free) or NULL on OOM. */
order_guard *order_guard_install(struct evhttp *http, struct event_base *base,
                                 int64_t read_timeout_ms, int64_t max_conns,
                                 size_t max_header_bytes, int64_t max_body_bytes);

/** @brief Connections open now (for tests and metrics). */
int64_t order_guard_connections(const order_guard *g);

/** @brief After evhttp_free (which closes every connection). NULL is fine. */
void order_guard_free(order_guard *g);

#endif
