/* order_reqscan: follows the bytes of HTTP/1.1 requests on one connection, without
 * parsing them for use, to know whether a request is being read (its headers, then
 * Content-Length bytes of body) or the connection is between requests. The slow-client
 * guard (order_guard.c) arms a deadline when a request starts and clears it when the
 * request's last byte has arrived. Pure: no I/O, unit-tested. evhttp still parses and
 * checks everything; this only has to find the same boundaries. */
#ifndef ORDER_REQSCAN_H
#define ORDER_REQSCAN_H

#include <stddef.h>
#include <stdint.h>

#define ORDER_REQSCAN_LINE 48 /* bytes of a header line kept, enough for Content-Length */

typedef struct order_reqscan {
    int state;              /* 0 between requests, 1 headers, 2 body */
    size_t linelen;         /* bytes of the current header line (CR not counted) */
    char line[ORDER_REQSCAN_LINE];
    int64_t content_length; /* of the request being read (0 when none) */
    int64_t body_left;
} order_reqscan;

/** @brief Starts between requests. */
void order_reqscan_init(order_reqscan *s);

/** @brief Feeds the next n bytes read from the connection.
 *  @returns 1 when a request is partly read after them, 0 when the connection is
 *  between requests (every request seen so far is complete). */
int order_reqscan_feed(order_reqscan *s, const unsigned char *p, size_t n);

#endif
