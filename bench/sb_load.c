/* sb_load: keep-alive HTTP load over libevent. See sb_load.h for the design. */
#include "sb_load.h"
#include "order_msg.h"
#include "sk_id.h"

#include <errno.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sb_http.h"

#define SB_MAX_PIPELINE 64
#define SB_RBUF 16384
#define SB_REQ_MAX 1536    /* one request: head + token (+ its challenge's solution) */
#define SB_HEAD_MAX (SB_REQ_MAX - 600) /* what is left is the token's */
#define SB_GRACE_NS 10000000000ull /* after a stop, wait this long for in-flight answers */

enum conn_state { CONN_DEAD = 0, CONN_CONNECTING, CONN_READY };

typedef struct worker worker;

typedef struct conn {
    worker *w;
    int fd;
    int url;
    enum conn_state state;
    struct event *rev, *wev;
    char *wbuf; /* pipeline * SB_REQ_MAX bytes */
    size_t wlen, woff;
    char rbuf[SB_RBUF];
    size_t rlen;
    uint64_t ring[SB_MAX_PIPELINE]; /* send times of the requests in flight, oldest first */
    uint64_t ring_user[SB_MAX_PIPELINE]; /* their users; 0 for a poll */
    int rhead, inflight;
    uint64_t poll_oid, poll_user; /* the order to poll after a 202 (cfg.polls) */
    int poll_left;
    uint64_t retry_at_ns;
    int fails; /* consecutive failures: the backoff */
} conn;

struct worker {
    sb_load *l;
    int id;
    pthread_t thread;
    int started;
    struct event_base *base;
    struct event *tick;
    conn *conns;
    int nconns;
    sb_stats st;
    double rate, tokens; /* this worker's share of the target rate, and its bucket */
    uint64_t last_tick_ns, last_answer_ns;
    int exhausted; /* no request numbers left */
    int stopping;  /* no more sends: duration over, stop asked or stalled */
    uint64_t stop_at_ns;
    int inflight;
    int failed; /* out of memory or stalled */
    char err[160];
    atomic_ullong p_sent, p_answered, p_accepted, p_errors, p_connect_errors;
    atomic_int finished;
};

struct sb_load {
    sb_load_cfg cfg;
    struct sockaddr_storage *addr; /* one per URL */
    socklen_t *addrlen;
    char **reqhead; /* per URL: request line and headers up to "Bearer " */
    size_t *reqhead_len;
    worker *workers;
    uint64_t start_ns, end_ns; /* end_ns 0: no duration */
    atomic_ullong next_req;
    atomic_int stop;
    int started;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t since_ms(const worker *w, uint64_t t)
{
    return t > w->l->start_ns ? (t - w->l->start_ns) / 1000000ull : 0;
}

static void worker_oom(worker *w)
{
    if (!w->failed) {
        w->failed = 1;
        snprintf(w->err, sizeof(w->err), "worker %d: out of memory", w->id);
    }
    w->stopping = 1;
}

/* --- connections ------------------------------------------------------------------ */

static void conn_close(conn *c)
{
    if (c->rev)
        event_del(c->rev);
    if (c->wev)
        event_del(c->wev);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = CONN_DEAD;
    c->rlen = c->wlen = c->woff = 0;
}

/* The connection broke (or must be dropped): its in-flight requests have no answer. */
static void conn_fail(conn *c, int was_error)
{
    worker *w = c->w;
    uint64_t t = now_ns();
    for (int i = 0; i < c->inflight; i++) {
        uint64_t sent = c->ring[(c->rhead + i) % SB_MAX_PIPELINE];
        if (sb_stats_answer(&w->st, since_ms(w, t), 0, "io", (t - sent) / 1000ull) != 0)
            worker_oom(w);
    }
    w->inflight -= c->inflight;
    c->inflight = 0;
    c->rhead = 0;
    conn_close(c);
    if (was_error) {
        c->fails = c->fails < 10 ? c->fails + 1 : 10;
        uint64_t backoff = 50000000ull << (c->fails < 5 ? c->fails : 5); /* 100 ms .. 1.6 s */
        c->retry_at_ns = t + backoff;
    } else {
        c->retry_at_ns = 0; /* a clean Connection: close: reconnect at once */
    }
}

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void conn_fill(conn *c);

static void conn_connect(conn *c)
{
    worker *w = c->w;
    sb_load *l = w->l;
    int fd = socket(l->addr[c->url].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        atomic_fetch_add_explicit(&w->p_connect_errors, 1, memory_order_relaxed);
        c->retry_at_ns = now_ns() + 1000000000ull;
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    if (!c->rev) {
        c->rev = event_new(w->base, fd, EV_READ | EV_PERSIST, on_read, c);
        c->wev = event_new(w->base, fd, EV_WRITE, on_write, c);
    } else {
        event_assign(c->rev, w->base, fd, EV_READ | EV_PERSIST, on_read, c);
        event_assign(c->wev, w->base, fd, EV_WRITE, on_write, c);
    }
    if (!c->rev || !c->wev) {
        worker_oom(w);
        conn_close(c);
        return;
    }
    if (connect(fd, (struct sockaddr *)&l->addr[c->url], l->addrlen[c->url]) == 0) {
        c->state = CONN_READY;
        event_add(c->rev, NULL);
        conn_fill(c);
        return;
    }
    if (errno != EINPROGRESS) {
        atomic_fetch_add_explicit(&w->p_connect_errors, 1, memory_order_relaxed);
        conn_fail(c, 1);
        return;
    }
    c->state = CONN_CONNECTING;
    event_add(c->wev, NULL);
}

static void conn_flush(conn *c)
{
    while (c->woff < c->wlen) {
        ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        if (n > 0) {
            c->woff += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            event_add(c->wev, NULL);
            return;
        }
        if (n < 0 && errno == EINTR)
            continue;
        conn_fail(c, 1);
        return;
    }
    c->wlen = c->woff = 0;
}

/* May this worker send one more request now? Takes a rate token and a request number.
 * *late_ns: open loop, how long ago the request was due (the tokens beyond this one are
 * the requests owed, oldest first); 0 otherwise. */
static int take_request(worker *w, uint64_t *idx, uint64_t *late_ns)
{
    sb_load *l = w->l;
    if (w->stopping || w->exhausted)
        return 0;
    if (w->rate > 0 && w->tokens < 1.0)
        return 0;
    uint64_t i = atomic_fetch_add_explicit(&l->next_req, 1, memory_order_relaxed);
    if (l->cfg.requests && i >= l->cfg.requests) {
        w->exhausted = 1;
        return 0;
    }
    *late_ns = 0;
    if (w->rate > 0) {
        if (l->cfg.open_loop && w->tokens > 1.0)
            *late_ns = (uint64_t)((w->tokens - 1.0) * 1e9 / w->rate);
        w->tokens -= 1.0;
    }
    *idx = i;
    return 1;
}

/* Writes as many requests as the pipeline depth and the rate allow, in one send. */
/* The units order i asks (cfg.quantity > 1): 1 .. quantity, from a 64-bit mix of i (the
 * one that spreads users over segments, order_msg.h), so a run's requests ask the same
 * whatever the timing. */
static int order_quantity(const sb_load *l, uint64_t i)
{
    return 1 + (int)order_seg_home(i, (unsigned)l->cfg.quantity);
}

static void conn_fill(conn *c)
{
    worker *w = c->w;
    sb_load *l = w->l;
    if (c->state != CONN_READY || c->woff < c->wlen)
        return;
    c->wlen = c->woff = 0;
    uint64_t t = 0;
    uint64_t i = 0, late;
    while (c->inflight < l->cfg.pipeline) {
        const sb_tokens *tk = l->cfg.tokens;
        char *p = c->wbuf + c->wlen;
        uint64_t user, ring_user;
        size_t hl;
        late = 0;
        if (c->poll_left > 0 && !w->stopping) { /* the buyer polls its order */
            c->poll_left--;
            user = c->poll_user;
            ring_user = 0;
            const sb_url *u = &l->cfg.urls[c->url];
            hl = (size_t)snprintf(p, SB_HEAD_MAX,
                                  "GET %s/api/v1/orders/%llu HTTP/1.1\r\nHost: %s:%s\r\n"
                                  "Authorization: Bearer ",
                                  u->prefix, (unsigned long long)c->poll_oid, u->host, u->port);
        } else {
            if (!take_request(w, &i, &late))
                break;
            user = ring_user = sb_plan_user(l->cfg.plan, i);
            hl = l->reqhead_len[c->url];
            memcpy(p, l->reqhead[c->url], hl);
        }
        size_t tlen = tk->off[user] - tk->off[user - 1];
        memcpy(p + hl, tk->arena + tk->off[user - 1], tlen);
        if (ring_user && l->cfg.quantity > 1) { /* the head left Content-Length to here */
            char body[24];
            int bl = snprintf(body, sizeof(body), "{\"quantity\":%d}", order_quantity(l, i));
            tlen += (size_t)snprintf(p + hl + tlen, 64, "\r\nContent-Length: %d\r\n\r\n%s", bl,
                                     body) - 4;
        } else {
            memcpy(p + hl + tlen, "\r\n\r\n", 4);
        }
        c->wlen += hl + tlen + 4;
        if (!t)
            t = now_ns();
        c->ring_user[(c->rhead + c->inflight) % SB_MAX_PIPELINE] = ring_user;
        c->ring[(c->rhead + c->inflight) % SB_MAX_PIPELINE] = t - (late < t ? late : 0);
        c->inflight++;
        w->inflight++;
        if (sb_stats_sent(&w->st, since_ms(w, t)) != 0)
            worker_oom(w);
    }
    if (c->wlen)
        conn_flush(c);
}

static void handle_response(conn *c, const sb_http_resp *r, uint64_t t)
{
    worker *w = c->w;
    uint64_t sent = c->ring[c->rhead], user = c->ring_user[c->rhead];
    c->rhead = (c->rhead + 1) % SB_MAX_PIPELINE;
    c->inflight--;
    w->inflight--;
    if (!user) { /* a poll: counted apart, so the orders' figures stay the orders' */
        w->st.polls++;
        w->st.polls_ok += r->status == 200;
        sb_hist_record(&w->st.poll_lat, (t - sent) / 1000ull);
        w->last_answer_ns = t;
        c->fails = 0;
        return;
    }
    char code[SB_CODE_LEN] = "";
    if (r->status == 202) {
        char id[32];
        uint64_t oid;
        if (sb_json_field(r->body, r->body_len, "order_id", id, sizeof(id)) > 0 &&
            sk_id_parse(id, strlen(id), &oid) == 0) {
            if (sb_stats_accept(&w->st, oid) != 0)
                worker_oom(w);
            if (w->l->cfg.polls > 0) {
                c->poll_oid = oid;
                c->poll_user = user;
                c->poll_left = w->l->cfg.polls;
            }
        } else {
            w->st.bad_202++;
            strcpy(code, "bad_body");
        }
    } else if (sb_json_field(r->body, r->body_len, "error", code, sizeof(code)) < 0) {
        code[0] = '\0';
    }
    if (sb_stats_answer(&w->st, since_ms(w, t), r->status, code, (t - sent) / 1000ull) != 0)
        worker_oom(w);
    w->last_answer_ns = t;
    c->fails = 0;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    conn *c = arg;
    for (;;) {
        ssize_t n = recv(fd, c->rbuf + c->rlen, SB_RBUF - c->rlen, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            conn_fail(c, c->inflight > 0); /* an idle keep-alive close is no error */
            return;
        }
        c->rlen += (size_t)n;
        uint64_t t = now_ns();
        size_t off = 0;
        int must_close = 0;
        for (;;) {
            sb_http_resp r;
            long k = sb_http_parse(c->rbuf + off, c->rlen - off, &r);
            if (k == 0)
                break;
            if (k < 0 || c->inflight == 0) {
                conn_fail(c, 1); /* unframeable, or an answer nobody asked for */
                return;
            }
            handle_response(c, &r, t);
            off += (size_t)k;
            if (r.close) {
                must_close = 1;
                break;
            }
        }
        if (must_close) {
            conn_fail(c, 0);
            return;
        }
        if (off) {
            memmove(c->rbuf, c->rbuf + off, c->rlen - off);
            c->rlen -= off;
        } else if (c->rlen == SB_RBUF) {
            conn_fail(c, 1); /* a response bigger than the buffer: not one of ours */
            return;
        }
        if ((size_t)n < SB_RBUF / 2)
            break; /* the kernel had no more: skip the extra recv that would say EAGAIN */
    }
    conn_fill(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    conn *c = arg;
    if (c->state == CONN_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            atomic_fetch_add_explicit(&c->w->p_connect_errors, 1, memory_order_relaxed);
            conn_fail(c, 1);
            return;
        }
        c->state = CONN_READY;
        event_add(c->rev, NULL);
        conn_fill(c);
        return;
    }
    conn_flush(c);
    if (c->state == CONN_READY && c->woff == c->wlen)
        conn_fill(c);
}

/* --- the worker's clock ------------------------------------------------------------ */

static void publish_progress(worker *w)
{
    uint64_t errors = 0;
    for (int i = 0; i < w->st.noutcomes; i++)
        if (w->st.outcomes[i].status == 0 || w->st.outcomes[i].status >= 500)
            errors += w->st.outcomes[i].n;
    atomic_store_explicit(&w->p_sent, w->st.sent, memory_order_relaxed);
    atomic_store_explicit(&w->p_answered, w->st.answered, memory_order_relaxed);
    atomic_store_explicit(&w->p_accepted, w->st.naccepted, memory_order_relaxed);
    atomic_store_explicit(&w->p_errors, errors, memory_order_relaxed);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    worker *w = arg;
    sb_load *l = w->l;
    uint64_t t = now_ns();
    if (w->rate > 0) {
        w->tokens += w->rate * (double)(t - w->last_tick_ns) / 1e9;
        /* Closed loop, a small cap: after a stall the worker goes on at the rate instead
         * of in one burst. Open loop, the requests owed are kept (up to 10 s of them). */
        double cap = w->rate * (l->cfg.open_loop ? 10.0 : 0.02) + 1.0;
        if (w->tokens > cap)
            w->tokens = cap;
    }
    w->last_tick_ns = t;
    if (!w->stopping && (atomic_load_explicit(&l->stop, memory_order_relaxed) ||
                         (l->end_ns && t >= l->end_ns))) {
        w->stopping = 1;
    }
    if (!w->stopping && w->inflight > 0 && l->cfg.stall_s > 0 &&
        t - w->last_answer_ns > (uint64_t)(l->cfg.stall_s * 1e9)) {
        w->stopping = 1;
        w->failed = 1;
        snprintf(w->err, sizeof(w->err), "worker %d: no answer for %.0f s", w->id, l->cfg.stall_s);
    }
    if (w->stopping && !w->stop_at_ns)
        w->stop_at_ns = t;
    int sending = !(w->stopping || w->exhausted), nready = 0;
    for (int i = 0; i < w->nconns; i++) {
        conn *c = &w->conns[i];
        if (c->state == CONN_DEAD && sending && t >= c->retry_at_ns)
            conn_connect(c);
        else if (c->state == CONN_READY)
            conn_fill(c);
        nready += c->state == CONN_READY;
    }
    /* Stalled with nothing connected: nothing will ever answer. */
    if (!w->stopping && !w->exhausted && l->cfg.stall_s > 0 && nready == 0 &&
        t - w->last_answer_ns > (uint64_t)(l->cfg.stall_s * 1e9)) {
        w->stopping = 1;
        w->failed = 1;
        w->stop_at_ns = t;
        snprintf(w->err, sizeof(w->err), "worker %d: no connection answered for %.0f s", w->id,
                 l->cfg.stall_s);
    }
    publish_progress(w);
    if ((w->stopping || w->exhausted) &&
        (w->inflight == 0 || (w->stop_at_ns && t - w->stop_at_ns > SB_GRACE_NS))) {
        for (int i = 0; i < w->nconns; i++)
            if (w->conns[i].inflight)
                conn_fail(&w->conns[i], 1);
        publish_progress(w);
        event_base_loopbreak(w->base);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    w->last_tick_ns = w->last_answer_ns = now_ns();
    for (int i = 0; i < w->nconns; i++)
        conn_connect(&w->conns[i]);
    event_base_dispatch(w->base);
    for (int i = 0; i < w->nconns; i++)
        conn_close(&w->conns[i]);
    atomic_store(&w->finished, 1);
    return NULL;
}

/* --- the engine --------------------------------------------------------------------- */

sb_load *sb_load_new(const sb_load_cfg *cfg, char *err, size_t errsz)
{
    if (cfg->nurls < 1 || cfg->threads < 1 || cfg->connections < cfg->threads ||
        cfg->pipeline < 1 || cfg->pipeline > SB_MAX_PIPELINE) {
        snprintf(err, errsz, "bad load settings (urls %d, threads %d, connections %d, pipeline %d)",
                 cfg->nurls, cfg->threads, cfg->connections, cfg->pipeline);
        return NULL;
    }
    sb_load *l = calloc(1, sizeof(*l));
    if (!l)
        goto oom;
    l->cfg = *cfg;
    atomic_init(&l->next_req, 0);
    atomic_init(&l->stop, 0);
    l->addr = calloc((size_t)cfg->nurls, sizeof(*l->addr));
    l->addrlen = calloc((size_t)cfg->nurls, sizeof(*l->addrlen));
    l->reqhead = calloc((size_t)cfg->nurls, sizeof(*l->reqhead));
    l->reqhead_len = calloc((size_t)cfg->nurls, sizeof(*l->reqhead_len));
    l->workers = calloc((size_t)cfg->threads, sizeof(*l->workers));
    if (!l->addr || !l->addrlen || !l->reqhead || !l->reqhead_len || !l->workers)
        goto oom;
    for (int u = 0; u < cfg->nurls; u++) {
        const sb_url *url = &cfg->urls[u];
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
        int rc = getaddrinfo(url->host, url->port, &hints, &res);
        if (rc != 0) {
            snprintf(err, errsz, "%s:%s: %s", url->host, url->port, gai_strerror(rc));
            sb_load_free(l);
            return NULL;
        }
        memcpy(&l->addr[u], res->ai_addr, res->ai_addrlen);
        l->addrlen[u] = res->ai_addrlen;
        freeaddrinfo(res);
        char head[700];
        int n = cfg->read_page
                    ? snprintf(head, sizeof(head),
                               "GET %s/api/v1/events/%llu HTTP/1.1\r\nHost: %s:%s\r\n"
                               "Authorization: Bearer ",
                               url->prefix, (unsigned long long)cfg->event_id, url->host, url->port)
                    : snprintf(head, sizeof(head),
                               "POST %s/api/v1/events/%llu/orders HTTP/1.1\r\nHost: %s:%s\r\n"
                               "%sAuthorization: Bearer ",
                               url->prefix, (unsigned long long)cfg->event_id, url->host, url->port,
                               cfg->quantity > 1 ? "" : "Content-Length: 0\r\n");
        if (n < 0 || (size_t)n >= sizeof(head) || (size_t)n > SB_HEAD_MAX) {
            snprintf(err, errsz, "base URL too long");
            sb_load_free(l);
            return NULL;
        }
        if (!(l->reqhead[u] = strdup(head)))
            goto oom;
        l->reqhead_len[u] = (size_t)n;
    }
    for (int t = 0; t < cfg->threads; t++) {
        worker *w = &l->workers[t];
        w->l = l;
        w->id = t;
        sb_stats_init(&w->st);
        atomic_init(&w->finished, 0);
        w->rate = cfg->rate / cfg->threads;
        w->nconns = cfg->connections / cfg->threads + (t < cfg->connections % cfg->threads);
        w->base = event_base_new();
        w->conns = calloc((size_t)w->nconns, sizeof(*w->conns));
        if (!w->base || !w->conns)
            goto oom;
        w->tick = event_new(w->base, -1, EV_PERSIST, on_tick, w);
        if (!w->tick)
            goto oom;
        for (int i = 0; i < w->nconns; i++) {
            conn *c = &w->conns[i];
            c->w = w;
            c->fd = -1;
            c->url = (t + i * cfg->threads) % cfg->nurls;
            if (!(c->wbuf = malloc((size_t)cfg->pipeline * SB_REQ_MAX)))
                goto oom;
        }
    }
    return l;
oom:
    snprintf(err, errsz, "out of memory");
    sb_load_free(l);
    return NULL;
}

int sb_load_start(sb_load *l, uint64_t start_ns, char *err, size_t errsz)
{
    l->start_ns = start_ns;
    l->end_ns = l->cfg.duration_s > 0 ? start_ns + (uint64_t)(l->cfg.duration_s * 1e9) : 0;
    for (int t = 0; t < l->cfg.threads; t++) {
        worker *w = &l->workers[t];
        /* 2 ms: the rate limiter's granularity; flat out only needs reconnects and the stop check. */
        struct timeval tv = {0, l->cfg.rate > 0 ? 2000 : 10000};
        event_add(w->tick, &tv);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            snprintf(err, errsz, "cannot start worker thread %d", t);
            sb_load_request_stop(l);
            return -1;
        }
        w->started = 1;
    }
    l->started = 1;
    return 0;
}

void sb_load_progress(const sb_load *l, sb_load_progress_t *p)
{
    memset(p, 0, sizeof(*p));
    for (int t = 0; t < l->cfg.threads; t++) {
        worker *w = &l->workers[t];
        p->sent += atomic_load_explicit(&w->p_sent, memory_order_relaxed);
        p->answered += atomic_load_explicit(&w->p_answered, memory_order_relaxed);
        p->accepted += atomic_load_explicit(&w->p_accepted, memory_order_relaxed);
        p->errors += atomic_load_explicit(&w->p_errors, memory_order_relaxed);
        p->connect_errors += atomic_load_explicit(&w->p_connect_errors, memory_order_relaxed);
    }
}

int sb_load_finished(const sb_load *l)
{
    for (int t = 0; t < l->cfg.threads; t++)
        if (l->workers[t].started && !atomic_load(&l->workers[t].finished))
            return 0;
    return 1;
}

void sb_load_request_stop(sb_load *l)
{
    atomic_store(&l->stop, 1);
}

int sb_load_join(sb_load *l, sb_stats *out, char *err, size_t errsz)
{
    int rc = 0;
    for (int t = 0; t < l->cfg.threads; t++) {
        worker *w = &l->workers[t];
        if (w->started) {
            pthread_join(w->thread, NULL);
            w->started = 0;
        }
        if (sb_stats_merge(out, &w->st) != 0) {
            snprintf(err, errsz, "out of memory");
            rc = -1;
        }
        if (w->failed) {
            snprintf(err, errsz, "%s", w->err);
            rc = -1;
        }
    }
    return rc;
}

void sb_load_free(sb_load *l)
{
    if (!l)
        return;
    if (l->workers) {
        sb_load_request_stop(l);
        for (int t = 0; t < l->cfg.threads; t++) {
            worker *w = &l->workers[t];
            if (w->started)
                pthread_join(w->thread, NULL);
            for (int i = 0; w->conns && i < w->nconns; i++) {
                conn_close(&w->conns[i]);
                if (w->conns[i].rev)
                    event_free(w->conns[i].rev);
                if (w->conns[i].wev)
                    event_free(w->conns[i].wev);
                free(w->conns[i].wbuf);
            }
            free(w->conns);
            if (w->tick)
                event_free(w->tick);
            if (w->base)
                event_base_free(w->base);
            sb_stats_free(&w->st);
        }
        free(l->workers);
    }
    for (int u = 0; l->reqhead && u < l->cfg.nurls; u++)
        free(l->reqhead[u]);
    free(l->reqhead);
    free(l->reqhead_len);
    free(l->addr);
    free(l->addrlen);
    free(l);
}
