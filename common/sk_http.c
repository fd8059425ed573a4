/* sk_http: a small HTTP/1.1 server on one libevent loop. See sk_http.h. This file is
 * its connection state machine: accept, read, parse, hand over, write, the deadlines
 * and the close; sk_http_req.c holds the request objects and formats the answers
 * (sk_http_int.h: what they share, and who owns what).
 *
 * A connection's input buffer holds the bytes read and not yet consumed, from in_off to
 * in_len. A position kept across a read is an offset, never a pointer: the buffer is
 * compacted (memmove) and grown (realloc) under a head that waits for its body
 * (`partial`) and under one still coming (head_seen: how far the search for its end
 * got), and the parser hands back offsets (sk_http_head). Pointers into it exist only
 * while a request is with the handler (r->base, r->body): the buffer does not move then
 * (a full one pauses reading), and a connection that goes first leaves it to the
 * request. The other buffers (output, a request's added headers, the scratch) are only
 * reached through their owner's pointer plus an offset. */
#include "sk_http_int.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define IN_INIT 4096      /* a connection's first input buffer */
#define LINGER_MS 2000    /* how long a lingering close drains input */
#define SWEEP_MS 100      /* the deadline check's period */

/* A client connection: sk_http.c's alone (sk_http_int.h only names it). */
struct conn {
    sk_http *s;
    int fd;
    struct event *rev, *wev;
    char *in;
    size_t in_off, in_len, in_cap;
    size_t head_seen; /* bytes from in_off the parser saw without the head's end */
    char *out;
    size_t out_off, out_len, out_cap;
    sk_http_req *req;     /* with the handler */
    sk_http_req *partial; /* head parsed, body still coming */
    int64_t req_start_ms; /* a request's first byte came, an empty line before it
                           * included (0: between requests) */
    int blank_lines;      /* empty lines skipped before the request to come */
    int64_t last_ms;      /* the last read or write progress */
    int64_t linger_ms;
    unsigned reading : 1, writing : 1, closing : 1, lingering : 1, in_process : 1, dead : 1,
        cont_sent : 1, peer_eof : 1;
    struct sockaddr_storage peer;
    conn *prev, *next;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- connections ---- */

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void process(conn *c);

static void conn_free(conn *c)
{
    sk_http *s = c->s;
    if (c->rev)
        event_free(c->rev);
    if (c->wev)
        event_free(c->wev);
    close(c->fd);
    if (c->req) { /* its handler answers it later: then it is just freed */
        c->req->c = NULL;
        c->req->kept_in = c->in; /* its strings and body point into it */
        c->in = NULL;
    }
    if (c->partial)
        sk_http_req_put(c->partial);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    free(c->in);
    free(c->out);
    free(c);
}

/* Closes now, or once process() (up the stack) is done with c. */
static void conn_abort(conn *c)
{
    if (c->in_process) {
        c->dead = 1;
        if (c->reading)
            event_del(c->rev);
        if (c->writing)
            event_del(c->wev);
        c->reading = c->writing = 0;
        return;
    }
    conn_free(c);
}

static void set_reading(conn *c, int on)
{
    if (on && c->peer_eof)
        return; /* nothing more will come */
    if (on && !c->reading && event_add(c->rev, NULL) == 0)
        c->reading = 1;
    else if (!on && c->reading) {
        event_del(c->rev);
        c->reading = 0;
    }
}

/* Every answer is out: the FIN goes, and the input is drained until the peer closes
 * or LINGER_MS passed (sweep). */
static void start_linger(conn *c)
{
    if (c->peer_eof) { /* the peer sent its FIN: nothing to drain */
        conn_abort(c);
        return;
    }
    shutdown(c->fd, SHUT_WR);
    c->lingering = 1;
    c->linger_ms = now_ms();
    c->in_off = c->in_len = c->head_seen = 0;
    if (c->partial) {
        sk_http_req_put(c->partial);
        c->partial = NULL;
    }
    set_reading(c, 1);
}

/* Keeps out[0..n) to be written when the socket takes it. @returns 0 or -1 (OOM). */
static int out_keep(conn *c, const char *p, size_t n)
{
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (sk_http_grow(&c->out, &c->out_cap, c->out_len + n, 4096) != 0)
        return -1;
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    return 0;
}

/* Writes a then b (either may be empty) now as far as the socket takes them, keeping
 * the rest. @returns 0, or -1 when the connection failed (the caller aborts it). */
static int conn_send(conn *c, const char *a, size_t alen, const char *b, size_t blen)
{
    size_t done = 0;
    if (c->out_off == c->out_len) { /* nothing queued before: straight to the socket */
        /* MSG_NOSIGNAL: a peer gone is an error here, not a SIGPIPE for the process */
        struct iovec v[2] = {{(void *)a, alen}, {(void *)b, blen}};
        struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
        ssize_t n;
        do
            n = blen ? sendmsg(c->fd, &m, MSG_NOSIGNAL) : send(c->fd, a, alen, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        done = n > 0 ? (size_t)n : 0;
        if (done == alen + blen) {
            c->last_ms = now_ms();
            return 0;
        }
    }
    if (done < alen && out_keep(c, a + done, alen - done) != 0)
        return -1;
    size_t bdone = done > alen ? done - alen : 0;
    if (bdone < blen && out_keep(c, b + bdone, blen - bdone) != 0)
        return -1;
    if (!c->writing && event_add(c->wev, NULL) == 0)
        c->writing = 1;
    return 0;
}

/* After an answer is out: close (lingering) if asked, else go on with the input: at
 * once from an I/O callback, or (deferred) from the loop when the answer came from
 * elsewhere (a Redis or Kafka callback), so that the handler never runs inside
 * another module's callback. */
static void after_answer(conn *c, int deferred)
{
    if (c->out_off != c->out_len)
        return; /* on_write comes back here */
    if (c->closing) {
        if (!c->lingering)
            start_linger(c);
        return;
    }
    set_reading(c, 1);
    if (c->peer_eof && c->in_off == c->in_len) {
        start_linger(c); /* every request the peer sent is answered */
        return;
    }
    if (c->in_off < c->in_len) {
        if (deferred)
            event_active(c->rev, EV_READ, 1);
        else
            process(c);
    }
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    conn *c = arg;
    ssize_t n;
    do
        n = send(fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        conn_free(c);
        return;
    }
    if (n > 0) {
        c->out_off += (size_t)n;
        c->last_ms = now_ms();
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
        event_del(c->wev);
        c->writing = 0;
        after_answer(c, 0);
    }
}

/* A JSON refusal of the server's own, written by sk_http_reply through a request
 * object (r: the one the refused head was parsed into), then the close. */
static void refuse(conn *c, sk_http_req *r, sk_http_parse_rc rc)
{
    int status;
    const char *reason, *code, *message;
    sk_http_refusal(rc, &status, &reason, &code, &message);
    char body[256];
    size_t blen = (size_t)snprintf(body, sizeof(body), "{\"error\":\"%s\",\"message\":\"%s\"}",
                                   code, message);
    c->in_off = c->in_len = c->head_seen = 0;
    r->c = c;
    r->head.method = SK_HTTP_GET; /* the head may be half parsed: the answer has a body */
    r->close = 1;
    c->req = r;
    if (status == 405 && c->s->o.allow)
        sk_http_add_header(r, "Allow", c->s->o.allow);
    sk_http_reply(r, status, reason, "application/json", body, blen);
}

/* Hands requests to the handler while the connection has one complete and nothing
 * else is under way (one request with the handler at a time; its answer written
 * before the next is read: answers go out in order, and a client that pipelines
 * without reading cannot make the server buffer answers). */
static void process(conn *c)
{
    sk_http *s = c->s;
    if (c->in_process)
        return;
    c->in_process = 1;
    while (!c->dead && !c->req && !c->closing && c->out_off == c->out_len) {
        sk_http_req *r = c->partial;
        if (r) {
            if (c->in_len - c->in_off < r->head_len + (size_t)r->head.content_length) {
                if (c->peer_eof)
                    c->closing = 1; /* a body the peer will never finish */
                break;
            }
            c->partial = NULL;
        } else {
            /* Empty lines between requests (head_seen stays: a head it counts for was
             * parsed from a first byte that is not one). They are the request's first
             * bytes for the read deadline, and only a few are taken: a trickle of CRLF
             * held a connection for as long as it went on, and a stream of them burned
             * a core (issue 33). */
            if (c->in_off < c->in_len && !c->req_start_ms)
                c->req_start_ms = now_ms();
            while (c->in_off < c->in_len && (c->in[c->in_off] == '\r' || c->in[c->in_off] == '\n'))
                c->blank_lines += c->in[c->in_off++] == '\n';
            if (c->blank_lines > SK_HTTP_MAX_BLANK_LINES) {
                if (!(r = sk_http_req_get(s))) {
                    conn_abort(c);
                    break;
                }
                refuse(c, r, SK_HTTP_BLANK_LINES);
                break;
            }
            if (c->in_off == c->in_len) {
                c->in_off = c->in_len = 0;
                if (c->peer_eof)
                    c->closing = 1; /* every request the peer sent is answered */
                break;
            }
            if (!(r = sk_http_req_get(s))) {
                conn_abort(c);
                break;
            }
            sk_http_parse_rc rc = sk_http_parse_head(c->in + c->in_off, c->in_len - c->in_off,
                                                     c->head_seen, s->o.max_header_bytes,
                                                     s->o.max_body_bytes, &r->head, &r->head_len);
            if (rc != SK_HTTP_OK) {
                if (rc != SK_HTTP_INCOMPLETE) {
                    refuse(c, r, rc);
                    break;
                }
                c->head_seen = c->in_len - c->in_off; /* the next parse goes on from here */
                sk_http_req_put(r);
                if (c->peer_eof)
                    c->closing = 1; /* a request the peer will never finish */
                break;
            }
            r->c = c;
            c->head_seen = 0;
            if (r->head.host_bad && !r->head.framing) {
                refuse(c, r, SK_HTTP_HOST);
                break;
            }
            if (s->o.body_limit && r->head.content_length > 0) {
                /* the route's own bound, from the head alone: nothing of an oversized
                 * body is buffered (issue 33: 64 KiB per stalled connection before) */
                r->base = c->in + c->in_off; /* the hook reads the head; nothing moves */
                int64_t lim = s->o.body_limit(r, s->arg);
                if (lim >= 0 && r->head.content_length > lim) {
                    refuse(c, r, SK_HTTP_BODY_LARGE);
                    break;
                }
            }
            if (r->head.framing) {
                /* Nothing after this head can be trusted to be a request. */
                r->close = 1;
                c->in_len = c->in_off + r->head_len;
            } else if (c->in_len - c->in_off < r->head_len + (size_t)r->head.content_length) {
                c->partial = r;
                if (r->head.expect_continue && !c->cont_sent) {
                    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                    c->cont_sent = 1;
                    if (conn_send(c, cont, sizeof(cont) - 1, NULL, 0) != 0)
                        conn_abort(c);
                }
                break;
            }
        }
        /* From here to its answer the buffer does not move: pointers are safe. */
        r->base = c->in + c->in_off;
        r->body = r->base + r->head_len;
        r->body_len = (size_t)r->head.content_length;
        c->in_off += r->head_len + r->body_len;
        c->req_start_ms = 0;
        c->blank_lines = 0;
        c->cont_sent = 0;
        if (!r->head.keep_alive || (c->peer_eof && c->in_off == c->in_len))
            r->close = 1;
        c->req = r;
        s->handler(r, s->arg); /* may answer at once: c->req is NULL again then */
    }
    c->in_process = 0;
    if (c->dead)
        conn_free(c);
    else if (c->closing && !c->req && c->out_off == c->out_len && !c->lingering)
        start_linger(c);
    else if (!c->req && !c->closing)
        set_reading(c, 1); /* paused while a request held the full buffer */
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    conn *c = arg;
    sk_http *s = c->s;
    if (c->peer_eof) { /* after_answer's deferred turn: the buffered requests */
        process(c);
        return;
    }
    if (c->lingering) {
        char sink[4096];
        ssize_t n = read(fd, sink, sizeof(sink));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            conn_free(c);
        return;
    }
    if (c->in_len == c->in_cap) {
        if (c->req || c->out_off != c->out_len) {
            /* the handler's request points into the buffer, or an answer is waiting for
             * the client to read: wait (after_answer reads on), so that a client that
             * pipelines faster than it reads is slowed down, not cut */
            set_reading(c, 0);
            return;
        }
        if (c->in_off > 0) { /* partial and head_seen count from in_off: they hold */
            memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
            c->in_len -= c->in_off;
            c->in_off = 0;
        }
        if (c->in_len == c->in_cap) {
            size_t limit = s->o.max_header_bytes + (size_t)(s->o.max_body_bytes > 0 ? s->o.max_body_bytes : 0) + IN_INIT;
            size_t cap = c->in_cap * 2 < limit ? c->in_cap * 2 : limit;
            char *in = cap > c->in_cap ? realloc(c->in, cap) : NULL;
            if (!in) { /* past every bound the parser allows (cannot happen), or OOM */
                conn_free(c);
                return;
            }
            c->in = in; /* the old pointer is dead: nothing is computed from it */
            c->in_cap = cap;
        }
    }
    ssize_t n = read(fd, c->in + c->in_len, c->in_cap - c->in_len);
    if (n > 0) {
        c->in_len += (size_t)n;
        c->last_ms = now_ms();
    } else if (n == 0) {
        /* The peer closed its side: every request in hand is answered, then the close.
         * With none at the handler, requests may still be buffered (this read can be
         * after_answer's deferred turn merged with the FIN's): process() takes them. */
        c->peer_eof = 1;
        set_reading(c, 0);
        if (!c->req && c->out_off == c->out_len)
            process(c);
        return;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        conn_abort(c);
        return;
    }
    process(c);
}

/* A new connection on fd (connected, non-blocking), owned from now on: closed on
 * failure. @returns 0 or -1. */
/* A connection over the cap gets a 503 rather than a bare reset (issue 33): one
 * non-blocking send of a fixed answer, the FIN, then the close. What the client sent
 * already is read first (one read), since a close with unread input is a reset that
 * can destroy the answer in flight. Best effort: a full socket just gets the close. */
static void refuse_over_cap(int fd)
{
    static const char ans[] = "HTTP/1.1 503 Service Unavailable\r\n"
                              "Content-Type: application/json\r\n"
                              "Content-Length: 56\r\n"
                              "Connection: close\r\n\r\n"
                              "{\"error\":\"unavailable\",\"message\":\"too many connections\"}";
    char sink[4096];
    ssize_t n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
    (void)n;
    n = send(fd, ans, sizeof(ans) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
    shutdown(fd, SHUT_WR);
    close(fd);
}

static int conn_new(sk_http *s, int fd, const struct sockaddr *sa, size_t salen)
{
    if (s->o.max_conns > 0 && s->nconns >= s->o.max_conns) {
        refuse_over_cap(fd); /* over the cap: answered and closed as soon as accepted */
        return -1;
    }
    conn *c = calloc(1, sizeof(*c));
    char *in = malloc(IN_INIT);
    if (!c || !in) {
        free(c);
        free(in);
        close(fd);
        return -1;
    }
    c->s = s;
    c->fd = fd;
    c->in = in;
    c->in_cap = IN_INIT;
    if (sa && salen > 0 && salen <= sizeof(c->peer))
        memcpy(&c->peer, sa, salen);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(s->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    c->last_ms = now_ms();
    if (!c->rev || !c->wev) {
        conn_free(c);
        return -1;
    }
    set_reading(c, 1);
    return 0;
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    (void)lev;
    conn_new(arg, fd, sa, salen > 0 ? (size_t)salen : 0);
}

int sk_http_adopt(sk_http *s, int fd)
{
    struct sockaddr_storage peer;
    socklen_t plen = sizeof(peer);
    if (evutil_make_socket_nonblocking(fd) != 0) {
        close(fd);
        return -1;
    }
    if (getpeername(fd, (struct sockaddr *)&peer, &plen) != 0)
        plen = 0;
    return conn_new(s, fd, (struct sockaddr *)&peer, plen);
}

/* The deadlines: a request read too slowly, an idle kept-alive connection, an answer
 * the client does not read, a lingering close that lingers too long. */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    sk_http *s = arg;
    int64_t now = now_ms();
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->lingering) {
            if (now - c->linger_ms > LINGER_MS)
                conn_free(c);
        } else if (c->req) {
            continue; /* the handler's: no deadline of ours */
        } else if (s->o.read_timeout_ms > 0 && c->req_start_ms &&
                   now - c->req_start_ms > s->o.read_timeout_ms) {
            conn_free(c);
        } else if (s->o.idle_timeout_ms > 0 && now - c->last_ms > s->o.idle_timeout_ms) {
            conn_free(c);
        }
    }
}

/* ---- the server ---- */

sk_http *sk_http_new(struct event_base *base, const sk_http_opts *opts, sk_http_handler h,
                     void *arg)
{
    sk_http *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->base = base;
    s->o = *opts;
    s->handler = h;
    s->arg = arg;
    sk_httpdate_init(&s->date);
    s->sweep = event_new(base, -1, EV_PERSIST, on_sweep, s);
    struct timeval tv = {0, SWEEP_MS * 1000};
    if (!s->sweep || event_add(s->sweep, &tv) != 0) {
        sk_http_free(s);
        return NULL;
    }
    return s;
}

int sk_http_listen(sk_http *s, int fd)
{
    if (s->lev) {
        close(fd);
        return -1;
    }
    s->lev = evconnlistener_new(s->base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                -1, fd);
    if (!s->lev) {
        close(fd);
        return -1;
    }
    return 0;
}

void sk_http_stop_listening(sk_http *s)
{
    if (s && s->lev) {
        evconnlistener_free(s->lev);
        s->lev = NULL;
    }
}

struct evconnlistener *sk_http_listener(sk_http *s)
{
    return s->lev;
}

void sk_http_free(sk_http *s)
{
    if (!s)
        return;
    sk_http_stop_listening(s);
    while (s->conns) {
        conn *c = s->conns;
        sk_http_req *r = c->req;
        conn_free(c);
        if (r) { /* unanswered: freed here, as evhttp_free does */
            r->s = NULL;
            sk_http_req_put(r);
        }
    }
    sk_http_req_pool_free(s);
    if (s->sweep)
        event_free(s->sweep);
    free(s->scratch);
    free(s);
}

/* ---- a request's connection, and its answer ---- */

const struct sockaddr *sk_http_peer(const sk_http_req *r)
{
    return r->c && r->c->peer.ss_family ? (const struct sockaddr *)&r->c->peer : NULL;
}

void sk_http_reply(sk_http_req *r, int status, const char *reason, const char *ctype,
                   const void *body, size_t len)
{
    conn *c = r->c;
    sk_http *s = r->s;
    if (!c) {
        sk_http_req_put(r);
        return;
    }
    int close_after = r->close || c->closing;
    const void *rest;
    size_t restlen;
    size_t hlen = sk_http_answer_head(r, status, reason, ctype, body, len, close_after, &rest,
                                      &restlen);
    c->req = NULL;
    sk_http_req_put(r);
    if (!hlen) { /* OOM */
        conn_abort(c);
        return;
    }
    if (close_after)
        c->closing = 1;
    if (conn_send(c, s->scratch, hlen, rest, restlen) != 0) {
        conn_abort(c);
        return;
    }
    if (!c->in_process)
        after_answer(c, 1);
    else if (c->closing && c->out_off == c->out_len && !c->lingering)
        start_linger(c);
}
