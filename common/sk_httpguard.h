/* sk_httpguard: slow clients cannot hold an HTTP port (seckill-order's workers and
 * seckill-consumer's metrics port). Each request gets http.read_timeout_ms from its
 * first byte to its last (sk_reqscan follows the boundaries through a callback on the
 * connection's input buffer); past it the connection is cut the way a libevent read
 * timeout cuts it (evhttp closes it). evhttp's own timeout (seckill-order's
 * http.idle_timeout_s) cannot do this: every byte restarts it. It also caps
 * the connections a loop holds (seckill-order: limits.connections / workers): one over
 * the cap is closed as soon as it is accepted. Runs on the evhttp's loop only.
 * The evhttp must answer every method evhttp knows (evhttp_set_allowed_methods), so
 * that a 405 is the service's JSON, not evhttp's HTML 501. */
#ifndef SK_HTTPGUARD_H
#define SK_HTTPGUARD_H

#include <stddef.h>
#include <stdint.h>

struct evhttp;
struct evhttp_request;
struct event_base;

typedef struct sk_httpguard sk_httpguard;

/** @brief Installs the guard on `http` (before it accepts): each request must be read
 *  within read_timeout_ms (0: no deadline), and at most max_conns connections at once.
 *  A connection's first request over max_header_bytes (line ends included) or with a
 *  Content-Length over max_body_bytes (0: no bound, -1: no body at all), with an Expect
 *  other than 100-continue, with Transfer-Encoding or with a method evhttp does not
 *  know is answered by the guard in JSON {"error","message"} (413, 413, 400, 400, 405
 *  with `allow` as its Allow header) and the connection closed, before evhttp answers
 *  it in HTML. A later request of a kept-alive or pipelined connection is held back
 *  from evhttp (taken out of the input) and answered so once evhttp has answered every
 *  earlier one, which the service says by calling sk_httpguard_track on each request.
 *  @returns the guard (free with sk_httpguard_free after evhttp_free) or NULL on OOM. */
sk_httpguard *sk_httpguard_install(struct evhttp *http, struct event_base *base,
                                   int64_t read_timeout_ms, int64_t max_conns,
                                   size_t max_header_bytes, int64_t max_body_bytes,
                                   const char *allow);

/** @brief From the service's request callback, first thing, for every request: the
 *  guard learns when evhttp has written its answer out (evhttp_request's on-complete
 *  callback, which the service must leave alone). A request of a connection the guard
 *  does not hold is ignored. */
void sk_httpguard_track(sk_httpguard *g, struct evhttp_request *req);

/** @brief The framing rule (sk_hdrcheck) on a request's parsed headers, for the
 *  handler: NULL, or why (static text) it must be answered 400 with Connection: close
 *  (the guard then closes the connection after the answer). */
const char *sk_httpguard_framing(struct evhttp_request *req);

/** @brief Connections open now (for tests and metrics). */
int64_t sk_httpguard_connections(const sk_httpguard *g);

/** @brief After evhttp_free (which closes every connection). NULL is fine. */
void sk_httpguard_free(sk_httpguard *g);

#endif
