/* sk_http: a small HTTP/1.1 server on one libevent loop, for the services' ports.
 *
 * Why not evhttp: on seckill-order's accept path evhttp was about half the worker's
 * instructions (a header list with a malloc per header each way, a request object and
 * two evbuffers per request, printf-built status and header lines, an ioctl(FIONREAD)
 * before every read and an enable/disable of the read event around every request), and
 * the slow-client deadline, the connection cap and JSON refusals had to be bolted on
 * from outside (sk_httpguard). Here a connection is one fd, one persistent read event
 * and one buffer: a request is parsed in place in that buffer, handed to the handler,
 * and its answer is written with one send() when the handler replies (an EV_WRITE
 * event only when the socket is full). Issue 16, order/README.md.
 *
 * What it serves:
 *  - HTTP/1.1 and 1.0, keep-alive (1.0: on "Connection: keep-alive"), pipelining:
 *    one request of a connection at a time is with the handler; the next is parsed once
 *    it is answered, so answers go out in order.
 *  - Content-Length bodies up to max_body_bytes, or the route's own bound (body_limit).
 *    Refused by the server itself, in JSON {"error","message"}, and the connection
 *    closed (RFC 9112 / 9110 codes): a request line over max_header_bytes (414), headers
 *    over it or over SK_HTTP_MAX_HEADERS (431), a Content-Length over the bound, read
 *    from the head before any of the body is buffered (413), Transfer-Encoding or an
 *    Expect other than 100-continue (400), HTTP/1.1 without Host or a Host that is no
 *    uri-host[:port] (400), a method it does not know (405 with `allow`), a malformed
 *    request line or header line (400: a first byte that cannot start a method, a TLS
 *    ClientHello's 0x16 among them, is refused at once, not at the read deadline), the
 *    HTTP/2 preface (400), an HTTP version other than 1.x (505), more than
 *    SK_HTTP_MAX_BLANK_LINES empty lines before a request (400).
 *    "Expect: 100-continue" gets its interim answer. An absolute-form target
 *    (`GET http://host/path`) is served as its path (RFC 9112 3.2.2).
 *  - Framing the handler must refuse (sk_http_parse.c's hdrcheck rule: two or a
 *    non-decimal Content-Length, two Host or two Authorization headers, whitespace in a
 *    header name, a body on a method without one): the request is handed over without
 *    its body and sk_http_framing() says why; the connection is closed after its answer.
 *  - The slow-client deadline: a request must arrive, first byte to last, within
 *    read_timeout_ms, or the connection is cut; empty lines before a request count as
 *    its first bytes (a trickle of CRLF does not hold a connection); a kept-alive
 *    connection may stay idle for idle_timeout_ms between requests; a client that does
 *    not read its answers is cut after idle_timeout_ms without progress. Checked by one
 *    timer per server.
 *  - At most max_conns connections: one over is answered 503 (JSON, Connection: close,
 *    one non-blocking send) and closed as soon as it is accepted.
 *  - A close after an answer is a lingering close: FIN first, the input drained (up
 *    to 2 s), so that unread input does not turn the close into a reset that could
 *    destroy the answer in flight.
 *
 * Threads: a server, its connections and its requests belong to the loop's thread;
 * every call runs there. */
#ifndef SK_HTTP_H
#define SK_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct sockaddr;

typedef struct sk_http sk_http;
typedef struct sk_http_req sk_http_req;

typedef enum {
    SK_HTTP_GET = 0,
    SK_HTTP_HEAD,
    SK_HTTP_POST,
    SK_HTTP_PUT,
    SK_HTTP_DELETE,
    SK_HTTP_PATCH,
    SK_HTTP_OPTIONS,
    SK_HTTP_CONNECT,
    SK_HTTP_TRACE,
} sk_http_method;

/* A route's own body bound, asked once a head is parsed and before its body is read
 * (`r`'s method, target and headers are readable; its body is not there yet): a
 * Content-Length over it is refused at once (413, closed) instead of being buffered to
 * max_body_bytes for the handler to refuse. @returns the bound in bytes, or -1 for
 * max_body_bytes alone. `arg` is sk_http_new's. */
typedef int64_t (*sk_http_body_limit_fn)(const sk_http_req *r, void *arg);

typedef struct sk_http_opts {
    size_t max_header_bytes;  /* request line and headers, line ends included (> 0) */
    int64_t max_body_bytes;   /* Content-Length bound; -1: no body on any method (413) */
    int64_t read_timeout_ms;  /* one request, first byte to last; 0: no deadline */
    int64_t idle_timeout_ms;  /* between requests, and a stalled answer; 0: none */
    int64_t max_conns;        /* 0: no cap */
    const char *allow;        /* the Allow header of a 405 for an unknown method */
    sk_http_body_limit_fn body_limit; /* NULL: max_body_bytes for every route */
} sk_http_opts;

/* The handler owns `req` until it answers it (sk_http_reply), at once or later from
 * the same loop. `arg` is sk_http_new's. */
typedef void (*sk_http_handler)(sk_http_req *req, void *arg);

/** @brief A server on `base` (nothing accepted yet). opts is copied (allow is kept
 *  as a pointer: a static string). @returns NULL on OOM. */
sk_http *sk_http_new(struct event_base *base, const sk_http_opts *opts, sk_http_handler h,
                     void *arg);

/** @brief Accepts on `fd`, a listening socket (non-blocking), which the server owns
 *  from now on, including on failure. One at a time. @returns 0 or -1. */
int sk_http_listen(sk_http *s, int fd);

/** @brief Serves `fd`, a stream socket already connected (a socketpair's end, in the
 *  tests), as a connection the listener had accepted: the same cap, deadlines and
 *  framing. The server owns fd from now on, including on failure (closed then); it is
 *  made non-blocking. @returns 0, or -1 (over max_conns, or OOM). */
int sk_http_adopt(sk_http *s, int fd);

/** @brief Closes the listening socket; connections stay. */
void sk_http_stop_listening(sk_http *s);

/** @brief The listener, for sk_listen_backoff_install (NULL when not listening). */
struct evconnlistener *sk_http_listener(sk_http *s);

/** @brief Closes every connection and frees the server, and with it every request
 *  still unanswered (as evhttp_free does): nothing may answer them afterwards. NULL is
 *  fine. */
void sk_http_free(sk_http *s);

/* ---- a request (valid until answered) ---- */

sk_http_method sk_http_method_of(const sk_http_req *r);
/** @brief The request target as sent (not decoded), NUL-terminated. */
const char *sk_http_uri(const sk_http_req *r);
/** @brief The first header `name` (case-insensitive), its value trimmed; NULL if none. */
const char *sk_http_header(const sk_http_req *r, const char *name);
/** @brief How many header lines the request carries (at most SK_HTTP_MAX_HEADERS). */
int sk_http_header_count(const sk_http_req *r);
/** @brief The i-th header line (0 <= i < sk_http_header_count), in the order sent: its
 *  name as sent and its value trimmed, NUL-terminated, owned by the request (valid until
 *  it is answered). @returns 0, or -1 when i is out of range (*name, *value untouched). */
int sk_http_header_at(const sk_http_req *r, int i, const char **name, const char **value);
/** @brief The body (len 0 and "" when none); not NUL-terminated. */
const char *sk_http_body(const sk_http_req *r, size_t *len);
/** @brief The peer's address (NULL when unknown). */
const struct sockaddr *sk_http_peer(const sk_http_req *r);
/** @brief NULL, or why the framing is refused (static text, see above). */
const char *sk_http_framing(const sk_http_req *r);

/** @brief Whether r may read an operator's route such as /metrics (issue 33: open by
 *  default before): with `token` non-empty, only with "Authorization: Bearer <token>"
 *  (compared in constant time); without a token, anyone when `open`, else only a peer
 *  on this host (127.0.0.0/8, ::1, a Unix socket). @returns 1 or 0. */
int sk_http_guard_ok(const sk_http_req *r, const char *token, int open);

/* ---- the answer ---- */

/** @brief Adds a header line to the answer (before sk_http_reply). A "Connection:
 *  close" makes the server close the connection after the answer. @returns 0 or -1
 *  (OOM, or a name or value with a line break). */
int sk_http_add_header(sk_http_req *r, const char *name, const char *value);

/** @brief Sends the answer and frees the request: the status line, Date,
 *  Content-Type (when ctype is not NULL), Content-Length, the added headers,
 *  Connection: close when the connection closes after it (asked for by the client, by
 *  a header above, by sk_http_close or the framing), then the body (none for HEAD,
 *  whose Content-Length is still len). A request whose connection is already gone is
 *  just freed. */
void sk_http_reply(sk_http_req *r, int status, const char *reason, const char *ctype,
                   const void *body, size_t len);

/** @brief The connection closes after this request's answer. */
void sk_http_close_after(sk_http_req *r);

/* ---- the pure parser (sk_http_parse.c; unit-tested and fuzzed) ---- */

#define SK_HTTP_MAX_HEADERS 64
/* Empty lines a connection may send before a request (RFC 9112 2.2: a server SHOULD
 * ignore at least one); one more is refused. */
#define SK_HTTP_MAX_BLANK_LINES 4

/* The strings of a head are offsets into the buffer it was parsed from, not pointers:
 * the buffer may move (realloc) between the parse and the hand-over without one going
 * stale. Each is NUL-terminated there once the parse returned SK_HTTP_OK. */
typedef struct sk_http_head {
    int method;      /* sk_http_method, or -1 for a method token the server does not know */
    size_t uri;      /* the target, as sent */
    int minor;       /* HTTP/1.minor */
    int nh;
    struct {
        size_t name, value; /* the name as sent, the value trimmed */
        size_t name_len;    /* strlen of the name (sk_http_header compares it first) */
    } h[SK_HTTP_MAX_HEADERS];
    int64_t content_length; /* 0 when none, or when the framing is refused */
    int keep_alive;         /* after this request, by version and Connection */
    int expect_continue;    /* "Expect: 100-continue" */
    int host_bad;           /* HTTP/1.1 without Host, or a Host that is no host[:port]
                               (the server answers SK_HTTP_HOST) */
    const char *framing;    /* for the handler (see above), or NULL */
} sk_http_head;

/* What sk_http_parse_head refuses itself (the server answers these and closes). */
typedef enum {
    SK_HTTP_OK = 0,
    SK_HTTP_INCOMPLETE,     /* no blank line yet */
    SK_HTTP_BAD,            /* malformed request line or header line: 400 */
    SK_HTTP_HEADERS_LARGE,  /* headers over max_header_bytes or SK_HTTP_MAX_HEADERS: 431 */
    SK_HTTP_BODY_LARGE,     /* Content-Length over max_body_bytes: 413 */
    SK_HTTP_CHUNKED,        /* Transfer-Encoding: 400 */
    SK_HTTP_EXPECT,         /* an Expect other than 100-continue: 400 */
    SK_HTTP_METHOD,         /* a method token not in sk_http_method: 405 */
    SK_HTTP_VERSION,        /* HTTP/2.0 and the like: 505 */
    SK_HTTP_URI_LONG,       /* the request line alone over max_header_bytes: 414 */
    SK_HTTP_HOST,           /* HTTP/1.1 without Host, or a Host that is no host[:port]: 400 */
    SK_HTTP_H2_PREFACE,     /* "PRI * HTTP/2.0": 400 (HTTP/1.x only, no h2c) */
    SK_HTTP_BLANK_LINES,    /* over SK_HTTP_MAX_BLANK_LINES empty lines (sk_http.c): 400 */
} sk_http_parse_rc;

/** @brief Parses the request line and headers at buf[0..len) (leading empty lines are
 *  skipped; the server bounds how many). A first byte that cannot start a method, and
 *  the HTTP/2 preface, are refused as soon as they are seen, without the blank line.
 *  An absolute-form target's uri is its path ("/" when it has none). Line ends: CRLF or LF. Refused in a field value: every control but HTAB,
 *  and DEL (RFC 9110 5.5); in a name, the method and the target: anything but their
 *  tokens' characters (a control, DEL, a separator).
 *  last_len: 0, or the len of the previous call on this same head that answered
 *  SK_HTTP_INCOMPLETE (buf[0..last_len) unchanged since, wherever buf now lies): the
 *  search for the blank line goes on from there, so that a head read in many pieces
 *  costs linear work, not quadratic.
 *  @returns SK_HTTP_OK with *head_len the bytes up to and including the blank line and
 *  `h` filled (offsets into buf, whose strings the parse NUL-terminates: the only
 *  writes into buf), SK_HTTP_INCOMPLETE when the blank line is not there yet and len is
 *  within max_header_bytes, or a refusal (buf untouched by either). */
sk_http_parse_rc sk_http_parse_head(char *buf, size_t len, size_t last_len,
                                    size_t max_header_bytes, int64_t max_body_bytes,
                                    sk_http_head *h, size_t *head_len);

/** @brief The JSON refusal of rc (not OK/INCOMPLETE): status, reason, error code and
 *  message, fixed text. */
void sk_http_refusal(sk_http_parse_rc rc, int *status, const char **reason, const char **code,
                     const char **message);

#endif
