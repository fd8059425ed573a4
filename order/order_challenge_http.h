/* order_challenge_http: the proof-of-work challenge on the HTTP API (issue 31 item 3).
 *   GET /api/v1/events/{id}/challenge   a challenge for the token's user and the event
 *   GET /api/v1/events/{id}/order-path  the user's hidden order path, once the sale started
 *   the order's check                   its Seckill-Challenge header or its hidden path,
 *                                       before the limits and the gate
 * The challenge itself is order_challenge.h's; the key is made once from
 * challenge.key (or jwt.secret) and challenge.key_previous, and is read-only after.
 * Threads: every function runs on the request's worker loop. */
#ifndef ORDER_CHALLENGE_HTTP_H
#define ORDER_CHALLENGE_HTTP_H

#include "order_app.h"
#include "order_route.h"

#include <stdint.h>

/** @brief GET /api/v1/events/{id}/challenge and GET /api/v1/events/{id}/order-path. */
void order_challenge_get_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                                int64_t start_us);

/** @brief The order's check, for every order of a known event (`bits`: its challenge_bits).
 *  bits > 0: the Seckill-Challenge header must hold a solution for `user` and rt->arg,
 *  unexpired (400 for a header of the wrong shape, 403 challenge_required,
 *  challenge_invalid or challenge_expired). ORDER_CHALLENGE_PATH: the order must come by
 *  the user's hidden path, .../orders/<token> (404 otherwise). 0: the plain path only
 *  (a path token: 404). Touches no store. @returns 1 once it answered, 0 when the order
 *  goes on. */
int order_challenge_http_refuse(order_worker *w, sk_http_req *req, const order_route *rt,
                                int64_t start_us, uint64_t user, int64_t bits);

#endif
