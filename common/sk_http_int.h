/* sk_http_int: what the two halves of sk_http share (internal header). sk_http.c is
 * the connection state machine (accept, read, parse, deadlines, write, close);
 * sk_http_req.c holds the request objects (their pool, the accessors, the headers a
 * handler adds) and formats an answer's head. The calls go one way: sk_http.c calls
 * sk_http_req.c, never the reverse, and struct conn stays sk_http.c's own.
 *
 * Ownership: the server (struct sk_http) owns its free requests, its scratch and its
 * connections; a request in use is owned by its connection until it is answered, or by
 * no one once its connection went first (c == NULL, kept_in holds the input buffer its
 * strings point into): sk_http_reply frees it then. Threads: all of it runs on the
 * server's event loop. */
#ifndef SK_HTTP_INT_H
#define SK_HTTP_INT_H

#include "sk_http.h"
#include "sk_httpdate.h"

#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;
struct evconnlistener;

typedef struct conn conn; /* sk_http.c's */

struct sk_http_req {
    conn *c; /* NULL once the connection is gone */
    sk_http *s;
    sk_http_head head; /* offsets from base */
    size_t head_len;
    const char *base; /* the head's first byte, set when handed to the handler */
    const char *body;
    size_t body_len;
    char *kept_in; /* the input buffer of a connection gone before the answer */
    char *ox; /* added answer header lines */
    size_t oxlen, oxcap;
    int close;
    sk_http_req *next_free;
};

struct sk_http {
    struct event_base *base;
    sk_http_opts o;
    sk_http_handler handler;
    void *arg;
    struct evconnlistener *lev;
    struct event *sweep;
    conn *conns;
    int64_t nconns;
    sk_http_req *free_reqs;
    int nfree;
    sk_httpdate date;
    char *scratch; /* the answer head being written (sk_http_answer_head) */
    size_t scratch_cap;
};

/** @brief A request for s, from its free list or new, reset (no connection, no added
 *  header, empty body). @returns it, or NULL (OOM). */
sk_http_req *sk_http_req_get(sk_http *s);

/** @brief Gives r back: its kept input buffer is freed, r goes to its server's free
 *  list (or is freed: list full, or r->s NULL). */
void sk_http_req_put(sk_http_req *r);

/** @brief Frees every request on s's free list (sk_http_free). */
void sk_http_req_pool_free(sk_http *s);

/** @brief Makes *buf hold at least `need` bytes (contents kept): the capacity doubles
 *  from `first`. @returns 0 or -1 (OOM: *buf unchanged). */
int sk_http_grow(char **buf, size_t *cap, size_t need, size_t first);

/** @brief Writes the answer to r into r->s->scratch: status line, Date, Content-Type,
 *  Content-Length, r's added headers, Connection, the blank line, then the body when
 *  it is small (BODY_INLINE). close_after: the answer closes the connection.
 *  @returns the bytes written, or 0 (OOM); *rest, *restlen: the body still to send
 *  after them (the caller's `body`; NULL, 0 when none). r is unchanged. */
size_t sk_http_answer_head(const sk_http_req *r, int status, const char *reason,
                           const char *ctype, const void *body, size_t len, int close_after,
                           const void **rest, size_t *restlen);

#endif
