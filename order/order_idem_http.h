/* order_idem_http: Idempotency-Key on the worker's loop (issue 31; order_idem.h has the
 * contract): the key's claim in Redis before a route runs, the answers of a key already
 * used, and the capture of a claimed request's answer for its key.
 *
 * Design: a keyed request is claimed with one SET NX GET (Redis >= 7.0); a request
 * without the header costs nothing here (the order path's accept row keeps its Redis
 * calls). Once claimed, the route's handler runs again from the top (`resume`), finds
 * its request claimed and goes on as without a key; its answer, whatever path gives it,
 * passes order_http_reply_send, which hands it to order_idem_answered (app->hooks.answered:
 * a hook, so the reply path does not call back into this module). The claimed
 * requests of a worker are a list of its thread's: every answer of a request is given on
 * its worker's loop (order_http_int.h), and a thread with none pays one load per answer.
 *
 * Threads: every function runs on the request's worker loop. */
#ifndef ORDER_IDEM_HTTP_H
#define ORDER_IDEM_HTTP_H

#include "order_app.h"
#include "order_route.h"

#include <stddef.h>
#include <stdint.h>

/* A route's handler, run again once its request's key is claimed. */
typedef void order_idem_resume_fn(order_worker *w, sk_http_req *req, const order_route *rt,
                                  int64_t start_us);

/** @brief The key's step of a request of `user` (authenticated; body of blen bytes).
 *  @returns 0: go on (no Idempotency-Key, or the key is this request's already); 1: the
 *  request is this module's: answered (400 for a malformed key, a replay, 409
 *  in_progress, 422 key_reused, 503) or to be resumed once claimed. */
int order_idem_check(order_worker *w, sk_http_req *req, const order_route *rt, int64_t start_us,
                     uint64_t user, const char *body, size_t blen, order_idem_resume_fn *resume);

/** @brief An answer about to be sent (order_http_reply_send): kept for the request's key
 *  when it holds one (or the key freed, for a 5xx or 429). */
void order_idem_answered(sk_http_req *req, int status, const char *body, size_t len);

#endif
