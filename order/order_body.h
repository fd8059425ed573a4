/* order_body: request bodies of the HTTP API, parsed and validated. Pure (jansson only).
 *
 * Each parser either fills its struct completely or returns -1 with a short message
 * for the client's 400 body; nothing else happens on a bad body. */
#ifndef ORDER_BODY_H
#define ORDER_BODY_H

#include "order_event_meta.h" /* order_event_spec, the create-event body's struct */

#include <stddef.h>
#include <stdint.h>

/* Bodies larger than this are refused with 413 before any parsing. */
#define ORDER_BODY_MAX 4096

#define ORDER_PAYMENT_REF_MAX 128

/** @brief Parses a create-event body. @returns 0, or -1 with a message in err. */
int order_body_parse_event(const char *body, size_t len, order_event_spec *out, char *err,
                           size_t errsz);

/* A change of a live event (PATCH /api/v1/events/{id}, issue 32): the fields the body
 * named, each flagged in `has`; the others keep their value. */
enum {
    ORDER_PATCH_NAME = 1 << 0,
    ORDER_PATCH_STARTS = 1 << 1,
    ORDER_PATCH_ENDS = 1 << 2,
    ORDER_PATCH_PER_USER = 1 << 3,
    ORDER_PATCH_IP_RATE = 1 << 4, /* limits.ip_rate: a rate, or null (0 here): the default */
    ORDER_PATCH_USER_RATE = 1 << 5,
    ORDER_PATCH_EVENT_RATE = 1 << 6,
};
typedef struct order_event_patch {
    unsigned has; /* ORDER_PATCH_* */
    char name[ORDER_EVENT_NAME_MAX + 1];
    int64_t starts_at_ms, ends_at_ms;
    int per_user_limit;
    order_event_limits limits; /* 0 for a level given as null */
} order_event_patch;

/** @brief Parses a change body: an object of at least one of name, starts_at, ends_at,
 *  per_user_limit (1 .. SK_ORDER_MSG_MAX_QUANTITY) and limits ({ip_rate|user_rate|event_rate: N or null}), nothing
 *  else (a misspelt field would otherwise change nothing silently). The values are
 *  checked alone here; against the stored event by the caller. @returns 0, or -1 with
 *  err. */
int order_body_parse_patch(const char *body, size_t len, order_event_patch *out, char *err,
                           size_t errsz);

/** @brief Parses a restock body (issue 32): exactly one of {"add": N} (N a non-zero
 *  integer, may be negative, |N| <= INT32_MAX) or {"total": N} (0 .. INT32_MAX), nothing
 *  else. *total is -1 for an add. @returns 0, or -1 with err. */
int order_body_parse_stock(const char *body, size_t len, int64_t *add, int64_t *total, char *err,
                           size_t errsz);

/** @brief Parses a pay body {"payment_ref":"<1 to ORDER_PAYMENT_REF_MAX printable ASCII
 *  bytes>"} into ref (>= ORDER_PAYMENT_REF_MAX + 1 bytes). @returns 0, or -1 with err. */
int order_body_parse_pay(const char *body, size_t len, char *ref, char *err, size_t errsz);

/** @brief Checks a cancel body: empty, or a JSON object (its fields are ignored: the
 *  order is in the path and the user in the token). @returns 0, or -1 with err. */
int order_body_check_order(const char *body, size_t len, char *err, size_t errsz);

/** @brief Parses a place-order body: empty, or a JSON object whose "quantity", when
 *  present, is an integer from 1 to SK_ORDER_MSG_MAX_QUANTITY (issue 31; 0, negative, not
 *  an integer or past the bound: -1 with err naming the field); other fields are
 *  ignored. *quantity: 1 when absent. The event's per_user_limit is the caller's check.
 *  @returns 0, or -1 with err. */
int order_body_parse_order(const char *body, size_t len, int *quantity, char *err, size_t errsz);

#endif
