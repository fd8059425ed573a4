/* sk_reqscan: follows the bytes of HTTP/1.1 requests on one connection, without
 * parsing them for use, to know whether a request is being read (its headers, then
 * Content-Length bytes of body) or the connection is between requests. The slow-client
 * guard (sk_httpguard.c) arms a deadline when a request starts and clears it when the
 * request's last byte has arrived. Pure: no I/O, unit-tested. evhttp still parses and
 * checks everything; this only has to find the same boundaries.
 *
 * Where it could disagree with evhttp it does not guess: a request whose framing the
 * service refuses (Transfer-Encoding, a Content-Length that is not plain digits, two
 * Content-Length headers, a Content-Length over 0 on a method other than POST, PUT or
 * PATCH, whose body evhttp does not read but parses as the next request, a header name
 * with whitespace, CONNECT or TRACE) makes the connection "refused": the scan
 * stops following boundaries, says "in a request" until the connection closes (so the
 * read deadline stays armed), and the guard closes the connection once the answer is
 * written. sk_hdrcheck is the same rule on evhttp's parsed headers: the handler
 * answers such a request 400 with Connection: close before it acts on it. */
#ifndef SK_REQSCAN_H
#define SK_REQSCAN_H

#include <stddef.h>
#include <stdint.h>

#define SK_REQSCAN_LINE 48 /* bytes of a header line kept, enough for Content-Length */

/* Why a connection was refused (sk_reqscan.refusal). */
typedef enum {
    SK_REQSCAN_OK = 0,
    SK_REQSCAN_FRAMING,       /* the handler answers it (sk_hdrcheck): 400 */
    SK_REQSCAN_HEADERS_LARGE, /* request line + headers over max_header_bytes: 413 */
    SK_REQSCAN_BODY_LARGE,    /* Content-Length over max_body_bytes: 413 */
    SK_REQSCAN_EXPECT,        /* an Expect other than 100-continue: 400 */
    SK_REQSCAN_CHUNKED,       /* Transfer-Encoding: 400 (evhttp would parse the chunks first) */
    SK_REQSCAN_METHOD,        /* a method evhttp does not know (QUERY, ...): 405 (evhttp: HTML 501) */
} sk_reqscan_refusal;

typedef struct sk_reqscan {
    int state;              /* 0 between requests, 1 headers, 2 body, 3 refused (sticky) */
    sk_reqscan_refusal refusal; /* set with state 3 */
    unsigned long requests; /* requests started on the connection */
    size_t header_bytes;    /* of the request being read, CR and LF included */
    uint64_t fed;           /* bytes of the connection scanned so far (none past a refusal) */
    uint64_t start;         /* where the last request started, in bytes of the connection */
    size_t max_header_bytes; /* 0: no bound (set by the owner after init) */
    int64_t max_body_bytes;  /* 0: no bound, -1: no body at all */
    size_t linelen;         /* bytes of the current header line (CR not counted) */
    char line[SK_REQSCAN_LINE];
    int first_line;         /* the current line is the request line */
    int body_allowed;       /* the method is POST, PUT or PATCH (evhttp reads a body) */
    int cl_seen;            /* Content-Length headers seen in this request */
    int64_t content_length; /* of the request being read (0 when none) */
    int64_t body_left;
} sk_reqscan;

/** @brief Starts between requests. */
void sk_reqscan_init(sk_reqscan *s);

/** @brief Feeds the next n bytes read from the connection.
 *  @returns 1 when a request is partly read after them (or the connection is refused),
 *  0 when the connection is between requests (every request seen so far is complete). */
int sk_reqscan_feed(sk_reqscan *s, const unsigned char *p, size_t n);

/** @brief 1 once the connection carried a request with refused framing (see above).
 *  The bounds set in max_header_bytes / max_body_bytes and an Expect other than
 *  100-continue refuse too, with their own refusal code: evhttp would answer them
 *  itself (HTML), so the guard answers them in JSON when it safely can. */
int sk_reqscan_refused(const sk_reqscan *s);

/* The same rule on parsed headers, one header at a time. */
typedef struct sk_hdrcheck {
    int content_length, host; /* how many seen */
    int64_t length;           /* the Content-Length value (0 if none) */
    const char *why;          /* static text, set at the first refusal */
} sk_hdrcheck;

void sk_hdrcheck_init(sk_hdrcheck *h);
/** @brief Checks one header (name and value as evhttp parsed them, value trimmed).
 *  @returns 0 while acceptable, -1 once refused (h->why says why; later calls keep it). */
int sk_hdrcheck_add(sk_hdrcheck *h, const char *name, const char *value);

/** @brief After the headers: `body_allowed` is 1 for POST, PUT and PATCH. A
 *  Content-Length over 0 on another method is refused. @returns 0 or -1 (h->why). */
int sk_hdrcheck_done(sk_hdrcheck *h, int body_allowed);

#endif
