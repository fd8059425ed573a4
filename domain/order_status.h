/* order_status: an order's statuses and the transitions allowed between them, the one
 * home of both (issue 30). Pure, thread-safe, no allocation.
 *
 * The life of an order:
 *
 *   queued --(consumer's batch)--> created --(pay)-------> paid       final
 *      \                             |  \----(cancel)----> cancelled  closed, unit released
 *       \                            |   \---(pay_by)----> expired    closed, unit released
 *        \--(beyond the stock)-----> rejected                         closed
 *
 * queued is the API's name for an order the front accepted (202) that PostgreSQL does
 * not hold yet; it is never stored. The other five are seckill_order.status, whose CHECK
 * constraint (deploy/sql/002_order_lifecycle.sql) is the database's copy of this list.
 * A reader of the API sees queued -> rejected; the database sees created -> rejected:
 * the consumer inserts a surplus order as created and flips it in the same transaction
 * (seckill.order-events carries both rows), so both arrows are allowed.
 * Each status has a one-letter code in the order index (order_msg.h). */
#ifndef ORDER_STATUS_H
#define ORDER_STATUS_H

typedef enum order_status {
    ORDER_STATUS_UNKNOWN = 0, /* not a status of ours: what a parse of anything else gives */
    ORDER_STATUS_QUEUED,      /* accepted by the front, not yet in PostgreSQL (API only) */
    ORDER_STATUS_CREATED,     /* in PostgreSQL, awaiting payment until pay_by */
    ORDER_STATUS_REJECTED,    /* refused by the consumer (beyond the stock): closed */
    ORDER_STATUS_PAID,        /* final */
    ORDER_STATUS_CANCELLED,   /* closed by its buyer or an admin: the unit goes back */
    ORDER_STATUS_EXPIRED,     /* closed at pay_by: the unit goes back */
    ORDER_STATUS__COUNT
} order_status;

/* The order index's letters (order_msg.h: "<event>:<user>:<letter>"). */
#define ORDER_STATUS_LETTER_CREATED 'c'
#define ORDER_STATUS_LETTER_REJECTED 'r'
#define ORDER_STATUS_LETTER_PAID 'P'
#define ORDER_STATUS_LETTER_CANCELLED 'X'
#define ORDER_STATUS_LETTER_EXPIRED 'E'

/** @brief The status's name as the API and seckill_order.status spell it ("created",
 *  ...). @returns static text, or NULL for ORDER_STATUS_UNKNOWN and values past the enum. */
const char *order_status_name(order_status s);

/** @brief The status named s (exact, lowercase). @returns ORDER_STATUS_UNKNOWN for NULL
 *  or any other text. */
order_status order_status_parse(const char *s);

/** @brief The status's letter in the order index. @returns 0 for queued (the front's own
 *  entry says 'a' or 'p' instead) and unknown. */
char order_status_letter(order_status s);

/** @brief The status of an order index letter. @returns ORDER_STATUS_UNKNOWN for any
 *  other byte ('a', 'p', 'd', 0 included). */
order_status order_status_of_letter(char letter);

/** @brief 1 if an order in `from` may move to `to` (the diagram above), else 0. A status
 *  never "moves" to itself: a repeated call is the caller's business (order_pay.h). */
int order_status_transition_allowed(order_status from, order_status to);

/** @brief 1 if nothing may follow s (rejected, cancelled, expired: closed; paid: final). */
int order_status_is_final(order_status s);

/** @brief 1 if an order in s gives its unit back on sale (cancelled, expired). */
int order_status_releases(order_status s);

#endif
