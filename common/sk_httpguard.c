/* sk_httpguard: per-request read deadline and a connection cap. See sk_httpguard.h.
 *
 * Each connection gets a conn_guard: made with its bufferevent (evhttp_set_bevcb), tied
 * to evhttp's connection right after evhttp has set it up (an event made active from
 * the accept callback, so it runs before any I/O on the new connection), and freed by
 * the connection's close callback, which evhttp calls once whichever way the connection
 * ends. The bytes read are seen through a callback on the input buffer. */
#include "sk_httpguard.h"
#include "sk_log.h"
#include "sk_reqscan.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sk_httpguard {
    struct event_base *base;
    struct timeval read_timeout;
    int has_deadline;
    int64_t max_conns, conns;
    size_t max_header_bytes;
    int64_t max_body_bytes;
    char allow[64]; /* the Allow header of a 405 */
    struct conn_guard **byfd; /* the guarded connections by descriptor (sk_httpguard_track) */
    size_t nfds;
};

typedef struct conn_guard {
    sk_httpguard *g;
    struct bufferevent *bev;
    struct evbuffer_cb_entry *watch; /* on the input buffer */
    struct event *timer;             /* the read deadline */
    struct event *setup;             /* ties this guard to evhttp's connection */
    struct evbuffer_cb_entry *out_watch; /* on the output buffer, once refused */
    struct event *closer;            /* closes a refused connection after its answer */
    struct event *later;             /* answers a held request once the earlier ones are */
    sk_reqscan scan;
    uint64_t in_total;       /* bytes of the connection added to its input buffer */
    unsigned long completed; /* requests evhttp has answered (sk_httpguard_track) */
    int counted;
    int answered; /* the guard answered itself: the rest of the input is ignored */
    int held;     /* a refused request N > 1 was taken out of the input: answered later */
    int busy;     /* the guard itself is adding to the input buffer */
    int tracked;  /* the service calls sk_httpguard_track: `completed` counts */
    evutil_socket_t fd; /* its slot in byfd, -1 if none */
} conn_guard;

static void conn_free(conn_guard *c)
{
    if (c->counted)
        c->g->conns--;
    if (c->fd >= 0 && (size_t)c->fd < c->g->nfds && c->g->byfd[c->fd] == c)
        c->g->byfd[c->fd] = NULL;
    if (c->watch)
        evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->watch);
    if (c->out_watch)
        evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_watch);
    if (c->closer)
        event_free(c->closer);
    if (c->later)
        event_free(c->later);
    event_free(c->timer);
    event_free(c->setup);
    free(c);
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    conn_free(arg);
}

/* Cuts the connection the way a libevent read timeout does: through evhttp's own event
 * callback, which frees the connection (and, through on_close, c: nothing may touch c
 * after the call). */
static void cut(conn_guard *c, const char *why)
{
    bufferevent_event_cb ecb = NULL;
    void *cbarg = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &ecb, &cbarg);
    sk_log(SK_LOG_INFO, "connection_cut", "why=%s", why);
    if (ecb)
        ecb(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, cbarg);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cut(arg, "read_timeout");
}

static void on_closer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cut(arg, "refused_framing");
}

/* Output of a refused connection: once an answer has been written out whole, close
 * (evhttp itself keeps a CONNECT connection open after a Connection: close answer).
 * From the loop, not from inside the buffer's callback. */
static void on_output(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    conn_guard *c = arg;
    /* A tracked connection refused for its framing closes once the refused request
     * was answered (on_complete), not after an earlier request's answer. */
    if (c->tracked && !c->answered)
        return;
    if (info->n_deleted && evbuffer_get_length(buf) == 0)
        event_active(c->closer, EV_TIMEOUT, 0);
}

/* The scan refused the connection's framing: close it after the answer. */
static void refuse(conn_guard *c)
{
    c->closer = event_new(c->g->base, -1, 0, on_closer, c);
    if (c->closer)
        c->out_watch = evbuffer_add_cb(bufferevent_get_output(c->bev), on_output, c);
    sk_log(SK_LOG_INFO, "request_refused", "why=framing");
}

/* Answers a refused request in JSON, as evhttp would have in HTML, and closes. Only
 * once every earlier request of the connection was answered and written out, and
 * this one is incomplete: evhttp has nothing of it to answer, so nothing else can be
 * written to the connection. The input is drained so that evhttp never parses what is
 * left of the request. The bodies are fixed text (the services' {"error","message"}
 * shape, nothing to escape). */
static void answer_self(conn_guard *c, struct evbuffer *in)
{
    static const struct {
        int status;
        const char *reason, *code, *message;
    } answers[] = {
        [SK_REQSCAN_HEADERS_LARGE] = {413, "Payload Too Large", "payload_too_large",
                                      "request line and headers too large"},
        [SK_REQSCAN_BODY_LARGE] = {413, "Payload Too Large", "payload_too_large", "body too large"},
        [SK_REQSCAN_EXPECT] = {400, "Bad Request", "bad_request", "Expect: only 100-continue"},
        [SK_REQSCAN_CHUNKED] = {400, "Bad Request", "bad_request",
                                "Transfer-Encoding is not accepted: send Content-Length"},
        [SK_REQSCAN_METHOD] = {405, "Method Not Allowed", "method_not_allowed", "unknown method"},
    };
    sk_reqscan_refusal why = c->scan.refusal;
    if ((size_t)why >= sizeof(answers) / sizeof(answers[0]) || !answers[why].status)
        why = SK_REQSCAN_CHUNKED; /* cannot happen: FRAMING is left to the handler */
    char body[256], head[320];
    int blen = snprintf(body, sizeof(body), "{\"error\":\"%s\",\"message\":\"%s\"}",
                        answers[why].code, answers[why].message);
    int status = answers[why].status;
    int hlen = snprintf(head, sizeof(head),
                        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                        "%s%s%sConnection: close\r\n\r\n",
                        status, answers[why].reason, blen, status == 405 ? "Allow: " : "",
                        status == 405 ? c->g->allow : "", status == 405 ? "\r\n" : "");
    if (blen < 0 || hlen < 0 || (size_t)blen >= sizeof(body) || (size_t)hlen >= sizeof(head))
        return; /* cannot happen: fixed text */
    c->answered = 1;
    evbuffer_drain(in, evbuffer_get_length(in));
    refuse(c);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add(out, head, (size_t)hlen);
    evbuffer_add(out, body, (size_t)blen);
    bufferevent_enable(c->bev, EV_WRITE); /* evhttp disables writing while it reads */
}

/* Keeps the first `keep` bytes of the input buffer and drops the rest (an evbuffer
 * can only be cut from the front: through a second one). @returns 0 or -1 on OOM. */
static int keep_front(conn_guard *c, struct evbuffer *in, size_t keep)
{
    struct evbuffer *tmp = evbuffer_new();
    if (!tmp)
        return -1;
    c->busy = 1; /* our own additions are not the client's bytes */
    evbuffer_remove_buffer(in, tmp, evbuffer_get_length(in));
    evbuffer_remove_buffer(tmp, in, keep);
    c->busy = 0;
    evbuffer_free(tmp);
    return 0;
}

/* Takes a refused request N > 1, and whatever follows it, out of the input buffer
 * (evhttp has not read any of it: it is still busy with an earlier request), so that
 * evhttp never answers it in HTML; on_later answers it once the earlier ones are.
 * @returns 0, or -1 if part of it was already read by evhttp (or OOM). */
static int hold(conn_guard *c, struct evbuffer *in)
{
    uint64_t first = c->in_total - evbuffer_get_length(in); /* the buffer's start */
    if (c->scan.start < first || keep_front(c, in, (size_t)(c->scan.start - first)) != 0)
        return -1;
    c->held = 1;
    return 0;
}

static void on_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_guard *c = arg;
    answer_self(c, bufferevent_get_input(c->bev));
}

/* evhttp wrote a request's answer out whole (sk_httpguard_track). Called inside
 * evhttp's send path, before it looks for the next request: a held answer is written
 * from the loop, once evhttp waits for a request that will not come. */
static void on_complete(struct evhttp_request *req, void *arg)
{
    (void)req;
    conn_guard *c = arg;
    c->completed++;
    if (c->closer && !c->answered && !c->held && c->completed >= c->scan.requests)
        event_active(c->closer, EV_TIMEOUT, 0); /* the refused request was answered */
    if (c->held && !c->answered && c->completed + 1 == c->scan.requests)
        event_active(c->later, EV_TIMEOUT, 0);
}

static void on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    conn_guard *c = arg;
    if (!info->n_added || c->busy)
        return;
    c->in_total += info->n_added;
    if (c->answered) {
        evbuffer_drain(buf, evbuffer_get_length(buf));
        return;
    }
    if (c->held) { /* what follows a held request: dropped, earlier requests' bytes kept */
        size_t len = evbuffer_get_length(buf);
        if (keep_front(c, buf, len > info->n_added ? len - info->n_added : 0) != 0)
            evbuffer_drain(buf, len);
        return;
    }
    int was = c->scan.state != 0, now = was;
    struct evbuffer_ptr pos;
    size_t len = evbuffer_get_length(buf);
    if (len < info->n_added ||
        evbuffer_ptr_set(buf, &pos, len - info->n_added, EVBUFFER_PTR_SET) != 0)
        return;
    struct evbuffer_iovec v[16];
    int nv = evbuffer_peek(buf, (ev_ssize_t)info->n_added, &pos, v, 16);
    size_t seen = 0;
    for (int i = 0; i < nv && i < 16; i++) {
        size_t n = v[i].iov_len < info->n_added - seen ? v[i].iov_len : info->n_added - seen;
        now = sk_reqscan_feed(&c->scan, v[i].iov_base, n);
        seen += n;
    }
    if (sk_reqscan_refused(&c->scan) && !c->closer && !c->held) {
        if (c->scan.refusal != SK_REQSCAN_FRAMING) {
            /* Every earlier request answered and written: evhttp reads this one (or
             * has not started), nothing else will be written. Else hold it back. */
            if (c->completed + 1 == c->scan.requests &&
                evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
                answer_self(c, buf);
                return;
            }
            if (!c->later || hold(c, buf) != 0)
                refuse(c);
        } else {
            refuse(c);
        }
    } /* a held request keeps the deadline armed: the scan says "in a request" */
    if (!c->g->has_deadline)
        return;
    if (now && !was)
        event_add(c->timer, &c->g->read_timeout);
    else if (!now && was)
        event_del(c->timer);
}

/* Runs right after the accept callback, before any I/O on the connection. */
static void on_setup(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_guard *c = arg;
    bufferevent_event_cb ecb = NULL;
    void *evcon = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &ecb, &evcon);
    if (!evcon) { /* not evhttp's (cannot happen): leave it alone */
        conn_free(c);
        return;
    }
    evhttp_connection_set_closecb(evcon, on_close, c);
    if (c->g->conns >= c->g->max_conns) {
        cut(c, "too_many_connections");
        return;
    }
    c->counted = 1;
    c->g->conns++;
    /* Found by its descriptor when the service tracks a request (no room: untracked,
     * a refused later request then waits for the read deadline). */
    evutil_socket_t sfd = bufferevent_getfd(c->bev);
    if (sfd >= 0 && (size_t)sfd >= c->g->nfds) {
        size_t n = (size_t)sfd + 64;
        conn_guard **m = realloc(c->g->byfd, n * sizeof(*m));
        if (m) {
            memset(m + c->g->nfds, 0, (n - c->g->nfds) * sizeof(*m));
            c->g->byfd = m;
            c->g->nfds = n;
        }
    }
    if (sfd >= 0 && (size_t)sfd < c->g->nfds) {
        c->g->byfd[sfd] = c;
        c->fd = sfd;
    }
    c->watch = evbuffer_add_cb(bufferevent_get_input(c->bev), on_input, c);
}

/* evhttp asks for the bufferevent of each accepted connection (its fd is set later). */
static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
    sk_httpguard *g = arg;
    conn_guard *c = calloc(1, sizeof(*c));
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!c || !bev)
        goto fail;
    c->g = g;
    c->bev = bev;
    c->fd = -1;
    sk_reqscan_init(&c->scan);
    c->scan.max_header_bytes = g->max_header_bytes;
    c->scan.max_body_bytes = g->max_body_bytes;
    c->timer = evtimer_new(base, on_deadline, c);
    c->setup = event_new(base, -1, 0, on_setup, c);
    c->later = event_new(base, -1, 0, on_later, c);
    if (!c->timer || !c->setup || !c->later)
        goto fail;
    event_active(c->setup, EV_TIMEOUT, 0);
    return bev;
fail:
    if (c && c->later)
        event_free(c->later);
    if (c && c->timer)
        event_free(c->timer);
    if (c && c->setup)
        event_free(c->setup);
    free(c);
    if (bev)
        bufferevent_free(bev);
    return NULL; /* evhttp makes a plain one: this connection goes unguarded */
}

sk_httpguard *sk_httpguard_install(struct evhttp *http, struct event_base *base,
                                   int64_t read_timeout_ms, int64_t max_conns,
                                   size_t max_header_bytes, int64_t max_body_bytes,
                                   const char *allow)
{
    sk_httpguard *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->base = base;
    g->has_deadline = read_timeout_ms > 0;
    g->read_timeout.tv_sec = (time_t)(read_timeout_ms / 1000);
    g->read_timeout.tv_usec = (suseconds_t)((read_timeout_ms % 1000) * 1000);
    g->max_conns = max_conns;
    g->max_header_bytes = max_header_bytes;
    g->max_body_bytes = max_body_bytes;
    snprintf(g->allow, sizeof(g->allow), "%s", allow);
    evhttp_set_bevcb(http, make_bev, g);
    return g;
}

void sk_httpguard_track(sk_httpguard *g, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (!g || fd < 0 || (size_t)fd >= g->nfds || !g->byfd[fd] || g->byfd[fd]->bev != bev)
        return;
    g->byfd[fd]->tracked = 1;
    evhttp_request_set_on_complete_cb(req, on_complete, g->byfd[fd]);
}

const char *sk_httpguard_framing(struct evhttp_request *req)
{
    sk_hdrcheck hc;
    sk_hdrcheck_init(&hc);
    for (struct evkeyval *kv = evhttp_request_get_input_headers(req)->tqh_first; kv;
         kv = kv->next.tqe_next)
        if (sk_hdrcheck_add(&hc, kv->key, kv->value) != 0)
            return hc.why;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (sk_hdrcheck_done(&hc, cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT ||
                                  cmd == EVHTTP_REQ_PATCH) != 0)
        return hc.why;
    return NULL;
}

int64_t sk_httpguard_connections(const sk_httpguard *g)
{
    return g->conns;
}

void sk_httpguard_free(sk_httpguard *g)
{
    if (g)
        free(g->byfd);
    free(g);
}
