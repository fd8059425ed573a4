/* order_place_int: the placement request, shared by order_place.c (the checks before
 * Redis) and order_place_gate.c (the chain from the gate on, and the request pool);
 * internal header. order_place.c calls into order_place_gate.c, never the reverse. */
#ifndef ORDER_PLACE_INT_H
#define ORDER_PLACE_INT_H

#include "order_gate.h"
#include "order_http_int.h"
#include "order_window.h"

/* One order being placed. Its head's task carries the delivery report back to the
 * request's worker. */
typedef struct order_place_req {
    order_req_head h;
    uint64_t user, event_id, order_id;
    int64_t now_ms;   /* the rate buckets' time, then the pending entry's (the message's) */
    int64_t stage_us; /* when the current stage started (metrics) */
    rd_kafka_resp_err_t dr_err;
    rd_kafka_msg_status_t dr_status;
    order_gate_item gi; /* in the gate: reserve, then confirm or cancel (the home segment) */
    /* Segmented stock (issue 19): the unit borrowed from another segment when the home
     * one was empty (borrow, then confirm or cancel there); lender is its segment or -1.
     * gate_wait: confirms or cancels still unanswered (the request waits for all). */
    order_gate_item lend;
    int lender, gate_wait, unclaim, retried;
    order_event_limits lim;       /* the event's rate overrides (order_window.h), 0s: defaults */
    uint32_t quantity;            /* the order's units (issue 31), 1 .. SK_ORDER_MSG_MAX_QUANTITY */
    struct order_place_req *next; /* on the chain's produce queue, or its spare list */
} order_place_req;

/** @brief A placement request for route rt (event rt->arg) of `user`, from the worker's
 *  spare list when on its thread, else calloc'd. @returns NULL when memory is short
 *  (nothing answered). */
order_place_req *order_place_req_new(order_worker *w, sk_http_req *req, const order_route *rt,
                                     int64_t start_us, uint64_t user);

/** @brief Frees r: kept for reuse when on its worker's thread and the chain has room. */
void order_place_req_free(order_place_req *r);

/** @brief Answers error e and frees r. */
void order_place_error(order_place_req *r, order_err e, const char *msg, uint64_t order_id);

/** @brief Past every check: an order id (libidgen), then reserve.lua at the user's home
 *  segment, and on through Kafka to the answer. r is the chain's from here. */
void order_place_reserve(order_place_req *r);

#endif
