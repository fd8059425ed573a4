/* order_pay: what a pay or a cancel does to an order (issue 22), pure functions.
 *
 * The state machine after the 202: created -> paid | cancelled | expired; rejected,
 * cancelled and expired are closed, paid is final (order_status.h holds that rule; this
 * file applies it to one request). Given the order as PostgreSQL holds it
 * (read FOR UPDATE, order/order_pay_pg.h), the caller and the request, order_pay_decide says
 * which transition to make, if any, and how to answer. A created order whose pay_by has
 * passed is expired on the spot by whoever touches it first (a late payment is refused
 * with 409 closed: the unit may already be sold again; the payment side refunds). */
#ifndef ORDER_PAY_H
#define ORDER_PAY_H

#include <stdint.h>

typedef enum {
    ORDER_PAY_OP_PAY = 1,
    ORDER_PAY_OP_CANCEL = 2,
} order_pay_op;

typedef enum {
    ORDER_PAY_OK = 0,        /* 200 with the order's status (a transition or a repeat) */
    ORDER_PAY_FORBIDDEN,     /* 403: neither the buyer nor an admin */
    ORDER_PAY_CLOSED,        /* 409 closed: cancelled, expired or rejected */
    ORDER_PAY_ALREADY_PAID,  /* 409 already_paid: another payment_ref, or a cancel */
} order_pay_answer;

/* The row as read under FOR UPDATE, and the request. */
typedef struct order_pay_in {
    order_pay_op op;
    const char *status;      /* seckill_order.status */
    const char *payment_ref; /* seckill_order.payment_ref (NULL when none) */
    int overdue;             /* pay_by <= now() */
    uint64_t owner;          /* seckill_order.user_id */
    uint64_t actor;          /* the token's sub */
    int actor_admin;
    const char *ref;         /* the request's payment_ref (pay only) */
} order_pay_in;

typedef struct order_pay_out {
    order_pay_answer answer;
    const char *new_status;  /* the transition to make ("paid", "cancelled", "expired"),
                                NULL for none; static text */
    const char *status;      /* the order's status once done (for the answer); static */
} order_pay_out;

/** @brief Decides one pay or cancel. Pure. */
void order_pay_decide(const order_pay_in *in, order_pay_out *out);

/** @brief 1 if `status` is one whose unit goes back on sale (cancelled, expired). */
int order_pay_releases(const char *status);

#endif
