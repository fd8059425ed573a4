/* HTTP/1.x on seckill-order's own server (common/sk_http, issue 16): what the other
 * HTTP tests do not reach, on raw sockets, against a private seckill-order (one worker,
 * http.idle_timeout_s 2) on the shared Redis and PostgreSQL (a private database) and a
 * private dev Kafka:
 *  - "Expect: 100-continue": the interim 100 before the body, then the real answer
 *  - HTTP/1.0: closed after the answer; with "Connection: keep-alive" kept alive
 *  - a request split at each kind of boundary, the server silent until the last byte
 *  - three pipelined POSTs with bodies in one send: three answers, in order
 *  - a half-close right after a complete request: the answer, then EOF
 *  - a client that pipelines past the input buffer and pauses reading for 1 s gets
 *    every answer; one that never reads is cut after http.idle_timeout_s without progress
 *  - HTTP/2.0 -> 505, obs-fold -> 400, 65 header lines -> 431: JSON, then closed
 *  - issue 33's findings: Host, absolute form, 414, two Authorization headers, a body
 *    refused from its Content-Length, the HTTP/2 preface, a TLS ClientHello, empty lines
 *  - a 304 has no Content-Length and no body; the connection goes on */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POLLRDHUP */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include "sk_http.h"
#include "test_order_support.h"

#define IDLE_TIMEOUT_S 2

static to_order srv;
static to_kafka kafka;
static char pg_conninfo[512], pg_db[64];
static char admin[1024];

static int setup(void **state)
{
    (void)state;
    if (!to_stack_available()) {
        fprintf(stderr, "skipped: no stack (source .run/env)\n");
        return -1;
    }
    if (to_kafka_start(&kafka) != 0 ||
        to_pg_create(pg_conninfo, sizeof(pg_conninfo), pg_db, sizeof(pg_db)) != 0)
        return -1;
    static const char *env[] = {"SECKILL_WORKERS=1", "SECKILL_REDIS_TIMEOUT_MS=5000",
                                "SECKILL_HTTP_IDLE_TIMEOUT_S=2", "SECKILL_HTTP_READ_TIMEOUT_MS=10000",
                                "SECKILL_RECONCILE_INTERVAL_MS=0", NULL};
    if (to_order_start(&srv, getenv("SECKILL_REDIS_URL"), kafka.bootstrap, pg_conninfo, env) != 0)
        return -1;
    to_token(&srv, 1, 1, 3600, admin, sizeof(admin));
    return 0;
}

static void rc_close_all(void);

static int teardown(void **state)
{
    (void)state;
    int rc = 0;
    rc_close_all();
    /* A clean exit: nothing leaked or used after free under the sanitizers. */
    if (srv.proc.pid && to_stop(&srv.proc, SIGTERM, 10000) != 0)
        rc = -1;
    to_kafka_stop(&kafka);
    if (pg_db[0])
        to_pg_drop(pg_db);
    return rc;
}

/* ---- a raw HTTP/1.x client that frames answers itself ---- */

typedef struct rconn {
    int fd;
    size_t len;
    int eof; /* EOF or reset seen */
    char buf[1 << 16];
} rconn;

typedef struct answer {
    int status;
    char head[4096]; /* status line and headers, NUL-terminated */
    char body[4096];
    long long content_length; /* -1 when the answer has none */
} answer;

/* The connections open now: a failed check jumps out of its test, and the group's
 * teardown closes what it left (no leak reported for a failure). */
static rconn *open_conns[8];

static rconn *rc_open(void)
{
    rconn *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->fd = to_http_connect(srv.port);
    size_t i = 0;
    while (i < 8 && open_conns[i])
        i++;
    if (i == 8 || c->fd < 0) {
        free(c);
        fail_msg("rc_open: no slot or no connection");
    }
    open_conns[i] = c;
    return c;
}

static void rc_close(rconn *c)
{
    for (size_t i = 0; i < 8; i++)
        if (open_conns[i] == c)
            open_conns[i] = NULL;
    close(c->fd);
    free(c);
}

static void rc_send(rconn *c, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            fail_msg("send: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

static void rc_sends(rconn *c, const char *s)
{
    rc_send(c, s, strlen(s));
}

static void rc_close_all(void)
{
    for (size_t i = 0; i < 8; i++)
        if (open_conns[i])
            rc_close(open_conns[i]);
}

/* Reads what is there within timeout_ms (one recv). @returns bytes read, 0 on EOF or
 * reset (c->eof), -1 when nothing came in time. */
static ssize_t rc_fill(rconn *c, int timeout_ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) <= 0)
        return -1;
    if (c->len == sizeof(c->buf) - 1)
        fail_msg("answer buffer full");
    ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
    if (r <= 0) {
        c->eof = 1;
        return 0;
    }
    c->len += (size_t)r;
    c->buf[c->len] = '\0';
    return r;
}

/* The next whole answer (head, and a body of its Content-Length) within timeout_ms,
 * taken off the buffer. @returns its status, or -1 (EOF, reset or timeout first). */
static int rc_answer(rconn *c, answer *a, int timeout_ms)
{
    memset(a, 0, sizeof(*a));
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    for (;;) {
        char *end = c->len ? strstr(c->buf, "\r\n\r\n") : NULL;
        if (end) {
            size_t hl = (size_t)(end - c->buf) + 4;
            snprintf(a->head, sizeof(a->head), "%.*s", (int)(hl - 2), c->buf);
            char v[32];
            a->content_length = to_header_value(a->head, "Content-Length", v, sizeof(v)) ? atoll(v) : -1;
            size_t bl = a->content_length > 0 ? (size_t)a->content_length : 0;
            if (c->len >= hl + bl) {
                if (sscanf(c->buf, "HTTP/1.1 %d ", &a->status) != 1)
                    fail_msg("not an answer: %s", c->buf);
                snprintf(a->body, sizeof(a->body), "%.*s", (int)bl, c->buf + hl);
                memmove(c->buf, c->buf + hl + bl, c->len - hl - bl);
                c->len -= hl + bl;
                c->buf[c->len] = '\0';
                return a->status;
            }
        }
        int64_t left = deadline - sk_test_now_ms();
        if (c->eof || left <= 0 || rc_fill(c, (int)left) <= 0)
            return -1;
    }
}

/* 1 when the server closes (EOF or reset) within timeout_ms with no byte before, 0
 * when it stays open and silent, 2 when bytes came. */
static int rc_closed_within(rconn *c, int timeout_ms)
{
    if (c->len)
        return 2;
    ssize_t r = rc_fill(c, timeout_ms);
    return r == 0 ? 1 : r < 0 ? 0 : 2;
}

/* A POST /api/v1/events request (admin) with the event `name`; the body is valid. */
static size_t event_request(char *out, size_t outsz, const char *name, const char *extra_headers,
                            char *body, size_t bodysz)
{
    char a[32], b[32];
    time_t t = time(NULL) - 60;
    strftime(a, sizeof(a), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    t += 7200;
    strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    int bl = snprintf(body, bodysz, "{\"name\":\"%s\",\"stock\":3,\"starts_at\":\"%s\",\"ends_at\":\"%s\"}",
                      name, a, b);
    int n = snprintf(out, outsz,
                     "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\n%sContent-Length: %d\r\n\r\n",
                     admin, extra_headers, bl);
    assert_true(n > 0 && (size_t)n < outsz);
    return (size_t)n;
}

/* The name of event `id` as GET /api/v1/events/{id} tells it. */
static void event_name(uint64_t id, char *name, size_t namesz)
{
    char path[96], resp[4096], tok[1024];
    to_token(&srv, 7, 0, 600, tok, sizeof(tok));
    snprintf(path, sizeof(path), "/api/v1/events/%" PRIu64, id);
    assert_int_equal(to_http1(srv.port, "GET", path, tok, NULL, resp, sizeof(resp)), 200);
    const char *p = strstr(resp, "\"name\":\"");
    assert_non_null(p);
    p += 8;
    snprintf(name, namesz, "%.*s", (int)strcspn(p, "\""), p);
}

/* ---- the tests ---- */

/* The body goes only after the interim 100 arrived; then the real answer. */
static void test_expect_continue(void **state)
{
    (void)state;
    char head[2048], body[256];
    event_request(head, sizeof(head), "continue", "Expect: 100-continue\r\n", body, sizeof(body));
    rconn *c = rc_open();
    rc_sends(c, head);
    answer a;
    assert_int_equal(rc_answer(c, &a, 5000), 100);
    assert_true(strncmp(a.head, "HTTP/1.1 100 Continue\r\n", 23) == 0);
    assert_int_equal(a.content_length, -1);
    assert_int_equal(c->len, 0); /* nothing but the interim answer yet */
    rc_sends(c, body);
    assert_int_equal(rc_answer(c, &a, 10000), 201);
    uint64_t id = to_json_id(a.body, "event_id");
    assert_true(id > 0);
    /* No second 100 for a request without Expect on the same connection. */
    char req2[2048], body2[256];
    event_request(req2, sizeof(req2), "continue-2", "", body2, sizeof(body2));
    rc_sends(c, req2);
    rc_sends(c, body2);
    assert_int_equal(rc_answer(c, &a, 10000), 201);
    rc_close(c);
    char name[64];
    event_name(id, name, sizeof(name));
    assert_string_equal(name, "continue");
}

static void test_http10(void **state)
{
    (void)state;
    answer a;
    char v[64];
    /* Without keep-alive: the answer, then the close. */
    rconn *c = rc_open();
    rc_sends(c, "GET /healthz HTTP/1.0\r\n\r\n");
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    assert_non_null(strstr(a.body, "\"ok\""));
    assert_int_equal(rc_closed_within(c, 3000), 1);
    rc_close(c);
    /* With "Connection: keep-alive": said back, and a second request served. */
    c = rc_open();
    rc_sends(c, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    assert_non_null(to_header_value(a.head, "Connection", v, sizeof(v)));
    assert_string_equal(v, "keep-alive");
    rc_sends(c, "GET /healthz HTTP/1.0\r\nConnection: Keep-Alive, Upgrade\r\n\r\n");
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    assert_non_null(to_header_value(a.head, "Connection", v, sizeof(v)));
    assert_string_equal(v, "keep-alive");
    /* The last one without it: answered with Connection: close, then closed. */
    rc_sends(c, "GET /healthz HTTP/1.0\r\n\r\n");
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    assert_non_null(to_header_value(a.head, "Connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    assert_int_equal(rc_closed_within(c, 3000), 1);
    rc_close(c);
}

/* A request in pieces: the head in 3 sends, the body in 2; after each piece the server
 * must stay silent (it waits for the rest), and the last piece gets the answer. Each
 * variant cuts at another kind of place: inside the request line, a header name or
 * value, between a CR and its LF, inside the blank line, the body's halves. */
static void test_split_request(void **state)
{
    (void)state;
    char head[2048], body[256];
    size_t hl = event_request(head, sizeof(head), "split", "X-Pad: abc\r\n", body, sizeof(body));
    size_t bl = strlen(body);
    const char *xpad = strstr(head, "X-Pad: abc");
    const char *clen = strstr(head, "Content-Length: ");
    size_t cuts[][2] = {
        {4, (size_t)(xpad - head) + 3},                    /* "POST" | ... "X-P" | ... */
        {(size_t)(xpad - head) + 8, hl - 1},               /* ... "X-Pad: a" | ... "\r\n\r" | "\n" */
        {(size_t)(clen - head) + 14, hl - 2},              /* in "Content-Length" | CR LF CR | LF */
        {(size_t)(strstr(head, "\r\n") - head) + 1, hl - 3}, /* between the first CR and LF | */
    };
    for (size_t v = 0; v < sizeof(cuts) / sizeof(cuts[0]); v++) {
        rconn *c = rc_open();
        size_t at[4] = {0, cuts[v][0], cuts[v][1], hl};
        for (int k = 0; k < 3; k++) {
            rc_send(c, head + at[k], at[k + 1] - at[k]);
            if (rc_closed_within(c, 150) != 0)
                fail_msg("variant %zu: the server spoke or closed after head piece %d: %s", v, k, c->buf);
        }
        rc_send(c, body, bl / 2);
        if (rc_closed_within(c, 150) != 0)
            fail_msg("variant %zu: the server spoke or closed after half the body: %s", v, c->buf);
        rc_send(c, body + bl / 2, bl - bl / 2);
        answer a;
        if (rc_answer(c, &a, 10000) != 201)
            fail_msg("variant %zu: %d %s %s", v, a.status, a.head, a.body);
        /* and the connection goes on */
        rc_sends(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_int_equal(rc_answer(c, &a, 5000), 200);
        rc_close(c);
    }
}

/* Three POSTs with bodies in one send: three answers in request order, the middle one
 * refused at once by the handler (bad body) while the others wait for PostgreSQL. */
static void test_pipelined_posts(void **state)
{
    (void)state;
    static char all[8192];
    char head[2048], body[256];
    size_t n = 0;
    event_request(head, sizeof(head), "pipe-1", "", body, sizeof(body));
    n += (size_t)snprintf(all + n, sizeof(all) - n, "%s%s", head, body);
    const char *bad = "{\"name\":\"pipe-2\",\"stock\":-5}";
    n += (size_t)snprintf(all + n, sizeof(all) - n,
                          "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                          "Content-Length: %zu\r\n\r\n%s",
                          admin, strlen(bad), bad);
    event_request(head, sizeof(head), "pipe-3", "", body, sizeof(body));
    n += (size_t)snprintf(all + n, sizeof(all) - n, "%s%s", head, body);
    rconn *c = rc_open();
    rc_send(c, all, n);
    answer a1, a2, a3;
    assert_int_equal(rc_answer(c, &a1, 10000), 201);
    assert_int_equal(rc_answer(c, &a2, 10000), 400);
    assert_non_null(strstr(a2.body, "\"error\":"));
    assert_int_equal(rc_answer(c, &a3, 10000), 201);
    rc_close(c);
    uint64_t id1 = to_json_id(a1.body, "event_id"), id3 = to_json_id(a3.body, "event_id");
    assert_true(id1 > 0 && id3 > 0 && id1 != id3);
    char name[64];
    event_name(id1, name, sizeof(name));
    assert_string_equal(name, "pipe-1");
    event_name(id3, name, sizeof(name));
    assert_string_equal(name, "pipe-3");
}

/* shutdown(SHUT_WR) right after a complete request: its answer comes, then EOF. Once
 * with an answer given at once (/healthz), once with one that waits for PostgreSQL. */
static void test_half_close(void **state)
{
    (void)state;
    answer a;
    rconn *c = rc_open();
    rc_sends(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    assert_int_equal(rc_closed_within(c, 3000), 1);
    rc_close(c);

    char head[2048], body[256];
    event_request(head, sizeof(head), "half-close", "", body, sizeof(body));
    c = rc_open();
    rc_sends(c, head);
    rc_sends(c, body);
    assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
    assert_int_equal(rc_answer(c, &a, 10000), 201);
    assert_true(to_json_id(a.body, "event_id") > 0);
    assert_int_equal(rc_closed_within(c, 3000), 1);
    rc_close(c);
}

/* The same with two more requests pipelined behind one that waits for PostgreSQL: the
 * requests arrived whole before the FIN, so each gets its answer, in order, then EOF
 * (as when the first is answered at once). */
static void test_half_close_pipelined(void **state)
{
    (void)state;
    static char all[8192];
    char head[2048], body[256];
    answer a;
    for (int slow = 0; slow < 2; slow++) {
        size_t n = 0;
        if (slow) {
            event_request(head, sizeof(head), "half-close-pipelined", "", body, sizeof(body));
            n += (size_t)snprintf(all + n, sizeof(all) - n, "%s%s", head, body);
        } else {
            n += (size_t)snprintf(all + n, sizeof(all) - n, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        }
        n += (size_t)snprintf(all + n, sizeof(all) - n,
                              "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        rconn *c = rc_open();
        rc_send(c, all, n);
        assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
        int st[3];
        for (int i = 0; i < 3; i++)
            st[i] = rc_answer(c, &a, 10000);
        fprintf(stderr, "# half-close behind %s: %d %d %d\n", slow ? "a POST" : "a GET", st[0], st[1], st[2]);
        if (st[0] != (slow ? 201 : 200) || st[1] != 200 || st[2] != 200)
            fail_msg("three pipelined requests then SHUT_WR (first %s): answers %d %d %d",
                     slow ? "waits for PostgreSQL" : "answered at once", st[0], st[1], st[2]);
        assert_int_equal(rc_closed_within(c, 3000), 1);
        rc_close(c);
    }
}

/* A client that pipelines request after request and never reads: once its answers fill
 * the socket buffers the server makes no progress, and cuts it within
 * http.idle_timeout_s (plus the sweep period and some slack); others are served. */
static void test_greedy_client_cut(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)); /* before connect: the window */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    /* Send until the server stops taking requests (its reads wait on its writes). */
    size_t sent = 0, off = 0;
    int64_t last_progress = sk_test_now_ms(), cut_at = -1;
    while (sk_test_now_ms() - last_progress < 500 && sent < (64u << 20)) {
        ssize_t w = send(fd, req + off, sizeof(req) - 1 - off, MSG_NOSIGNAL);
        if (w > 0) {
            sent += (size_t)w;
            off = (off + (size_t)w) % (sizeof(req) - 1);
            last_progress = sk_test_now_ms();
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT | POLLRDHUP};
            poll(&p, 1, 50);
            if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                cut_at = sk_test_now_ms();
                break;
            }
        } else {
            cut_at = sk_test_now_ms(); /* reset: already cut */
            break;
        }
    }
    assert_true(sent < (64u << 20)); /* the server did stop taking requests */
    /* Now wait for the cut without reading a byte. */
    while (cut_at < 0 && sk_test_now_ms() - last_progress < (IDLE_TIMEOUT_S + 5) * 1000) {
        struct pollfd p = {.fd = fd, .events = POLLRDHUP};
        if (poll(&p, 1, 100) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            cut_at = sk_test_now_ms();
    }
    close(fd);
    if (cut_at < 0)
        fail_msg("a client that never reads was not cut within %d s of its last send", IDLE_TIMEOUT_S + 5);
    fprintf(stderr, "# greedy client: %zu bytes of requests sent, cut %lld ms after the last one"
                    " (idle timeout %d s)\n",
            sent, (long long)(cut_at - last_progress), IDLE_TIMEOUT_S);
    /* Not before the idle timeout: the server made progress (read our requests) until
     * shortly before our last send (the socket buffers took the rest; 92 ms seen),
     * so a cut much earlier than that is not the idle deadline. */
    assert_true(cut_at - last_progress >= IDLE_TIMEOUT_S * 1000 - 500);
    assert_true(cut_at - last_progress <= IDLE_TIMEOUT_S * 1000 + 2000);
    char resp[256];
    assert_int_equal(to_http1(srv.port, "GET", "/healthz", NULL, NULL, resp, sizeof(resp)), 200);
}

/* A client that pipelines far more than the server's input buffer holds and does not
 * read for 1 s (half the idle timeout), then reads everything: the server must wait for
 * it (stop reading while its answers cannot be written), not cut it, and every answer
 * arrives. 60,000 requests: 2 MB of requests, 7 MB of answers, more than the socket
 * buffers hold (tcp_wmem's 4 MB at most), so the server's writes do stall. */
static void test_pipelined_paused_reader(void **state)
{
    (void)state;
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    const size_t reqlen = sizeof(req) - 1, nreq = 60000;
    static char chunk[64 * 1024];
    for (size_t i = 0; i + reqlen <= sizeof(chunk); i += reqlen)
        memcpy(chunk + i, req, reqlen);
    const size_t chunk_len = sizeof(chunk) / reqlen * reqlen;
    int fd = to_http_connect(srv.port);
    assert_true(fd >= 0);
    /* One answer first: every /healthz answer has the same length (Date is fixed width). */
    assert_int_equal(send(fd, req, reqlen, MSG_NOSIGNAL), (ssize_t)reqlen);
    static char one[1024];
    size_t onelen = 0;
    while (!strstr(one, "{\"status\":\"ok\"}")) {
        ssize_t r = recv(fd, one + onelen, sizeof(one) - 1 - onelen, 0);
        assert_true(r > 0);
        onelen += (size_t)r;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    size_t sent = 0, got = 0, total = nreq * reqlen, want = nreq * onelen;
    int eof = 0;
    int64_t t0 = sk_test_now_ms(), first_read = -1;
    while (got < want && !eof && sk_test_now_ms() - t0 < 60000) {
        int reading = sk_test_now_ms() - t0 >= 1000;
        struct pollfd p = {.fd = fd, .events = POLLRDHUP};
        if (sent < total)
            p.events |= POLLOUT;
        if (reading)
            p.events |= POLLIN;
        if (poll(&p, 1, 50) <= 0)
            continue;
        if (p.revents & POLLOUT) {
            size_t off = sent % chunk_len, n = total - sent < chunk_len - off ? total - sent : chunk_len - off;
            ssize_t w = send(fd, chunk + off, n, MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                eof = 1;
        }
        if (reading && (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) {
            static char buf[256 * 1024];
            ssize_t r = recv(fd, buf, sizeof(buf), 0);
            if (r > 0) {
                got += (size_t)r;
                if (first_read < 0)
                    first_read = sk_test_now_ms();
            } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                eof = 1;
            }
        } else if (!reading && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            eof = 1; /* cut while we were not reading */
        }
    }
    close(fd);
    fprintf(stderr, "# paused reader: %zu of %zu request bytes sent, %zu of %zu answer bytes read%s (%lld ms)\n",
            sent, total, got, want, eof ? ", then the server closed" : "",
            (long long)(sk_test_now_ms() - t0));
    if (eof || got != want)
        fail_msg("a pipelining client that paused reading for 1 s got %zu of %zu answers%s", got / onelen,
                 nreq, eof ? " and was cut" : "");
}

/* The server's own refusals on a fresh connection: status, JSON, Connection: close,
 * then the close. */
static void refused(const char *req, size_t len, int status, const char *code)
{
    rconn *c = rc_open();
    rc_send(c, req, len);
    answer a;
    if (rc_answer(c, &a, 5000) != status)
        fail_msg("want %d: %d %s", status, a.status, a.head);
    char v[64];
    assert_non_null(to_header_value(a.head, "Content-Type", v, sizeof(v)));
    assert_string_equal(v, "application/json");
    assert_non_null(to_header_value(a.head, "Connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    assert_non_null(strstr(a.body, code));
    assert_non_null(strstr(a.body, "\"message\":\""));
    assert_int_equal(rc_closed_within(c, 3000), 1);
    rc_close(c);
}

static void test_refusals(void **state)
{
    (void)state;
    const char *h2 = "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n";
    refused(h2, strlen(h2), 505, "\"error\":\"bad_request\"");
    const char *fold = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n";
    refused(fold, strlen(fold), 400, "\"error\":\"bad_request\"");
    static char many[8192];
    size_t n = (size_t)snprintf(many, sizeof(many), "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < SK_HTTP_MAX_HEADERS; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "X-H%d: %d\r\n", i, i);
    n += (size_t)snprintf(many + n, sizeof(many) - n, "\r\n");
    refused(many, n, 431, "\"error\":\"headers_too_large\"");
    /* 64 header lines are served. */
    n = (size_t)snprintf(many, sizeof(many), "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < SK_HTTP_MAX_HEADERS - 1; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "X-H%d: %d\r\n", i, i);
    n += (size_t)snprintf(many + n, sizeof(many) - n, "\r\n");
    rconn *c = rc_open();
    rc_send(c, many, n);
    answer a;
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    rc_close(c);
}

/* What the attack on the HTTP layer found (issue 33), on the real service: RFC 9112's
 * codes, two Authorization headers, a body over the route's bound refused from its
 * Content-Length with none of it sent, the HTTP/2 preface and a TLS ClientHello answered
 * and closed at once, and a bound on empty lines before a request. */
static void test_attack_findings(void **state)
{
    (void)state;
    static const struct {
        const char *req;
        int status;
        const char *code;
    } cases[] = {
        {"GET /healthz HTTP/1.1\r\n\r\n", 400, "\"error\":\"bad_request\""},
        {"GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "\"error\":\"bad_request\""},
        {"GET /healthz HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, "\"error\":\"bad_request\""},
        {"GET /healthz HTTP/1.1\r\nHost:\r\n\r\n", 400, "\"error\":\"bad_request\""},
        {"GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\n"
         "Authorization: Bearer b\r\n\r\n", 400, "more than one Authorization"},
        {"POST /api/v1/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413,
         "\"error\":\"payload_too_large\""},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "HTTP/2 is not served"},
        {"\r\n\n\r\n\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "empty lines"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        refused(cases[i].req, strlen(cases[i].req), cases[i].status, cases[i].code);
    static char line[16384];
    size_t n = (size_t)snprintf(line, sizeof(line), "GET /healthz?a=");
    memset(line + n, 'a', 9000);
    n += 9000;
    n += (size_t)snprintf(line + n, sizeof(line) - n, " HTTP/1.1\r\nHost: x\r\n\r\n");
    refused(line, n, 414, "\"error\":\"uri_too_long\"");
    /* a TLS ClientHello's first bytes: 400 and the close, not the 10 s read deadline */
    static const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    int64_t t0 = sk_test_now_ms();
    refused(hello, sizeof(hello) - 1, 400, "\"error\":\"bad_request\"");
    assert_true(sk_test_now_ms() - t0 < 3000);
    /* the absolute form is served as its path; four empty lines are taken */
    const char *abs = "\r\n\n\r\n\nGET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    rconn *c = rc_open();
    rc_sends(c, abs);
    answer a;
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    rc_close(c);
}

/* A 304 (If-None-Match on an event page) has neither Content-Length nor a body: the
 * next answer on the connection starts right after its blank line. */
static void test_not_modified(void **state)
{
    (void)state;
    char head[2048], body[256];
    event_request(head, sizeof(head), "etag", "", body, sizeof(body));
    rconn *c = rc_open();
    rc_sends(c, head);
    rc_sends(c, body);
    answer a;
    assert_int_equal(rc_answer(c, &a, 10000), 201);
    uint64_t id = to_json_id(a.body, "event_id");
    char tok[1024], req[4096], etag[128];
    to_token(&srv, 9, 0, 600, tok, sizeof(tok));
    snprintf(req, sizeof(req), "GET /api/v1/events/%" PRIu64 " HTTP/1.1\r\nHost: x\r\n"
                               "Authorization: Bearer %s\r\n\r\n", id, tok);
    rc_sends(c, req);
    assert_int_equal(rc_answer(c, &a, 10000), 200);
    assert_non_null(to_header_value(a.head, "ETag", etag, sizeof(etag)));
    /* The 304 and a /healthz pipelined in one send. */
    snprintf(req, sizeof(req), "GET /api/v1/events/%" PRIu64 " HTTP/1.1\r\nHost: x\r\n"
                               "Authorization: Bearer %s\r\nIf-None-Match: %s\r\n\r\n"
                               "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", id, tok, etag);
    rc_sends(c, req);
    assert_int_equal(rc_answer(c, &a, 10000), 304);
    char v[64];
    assert_null(to_header_value(a.head, "Content-Length", v, sizeof(v)));
    assert_null(to_header_value(a.head, "Transfer-Encoding", v, sizeof(v)));
    /* The very next bytes are the next answer's status line. */
    int64_t t0 = sk_test_now_ms();
    while (c->len < 9 && sk_test_now_ms() - t0 < 5000 && rc_fill(c, 5000) > 0)
        ;
    if (strncmp(c->buf, "HTTP/1.1 ", 9) != 0)
        fail_msg("after the 304's head: \"%.40s\"", c->buf);
    assert_int_equal(rc_answer(c, &a, 5000), 200);
    assert_non_null(strstr(a.body, "\"ok\""));
    rc_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_http10),
        cmocka_unit_test(test_split_request),
        cmocka_unit_test(test_pipelined_posts),
        cmocka_unit_test(test_half_close),
        cmocka_unit_test(test_half_close_pipelined),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_attack_findings),
        cmocka_unit_test(test_not_modified),
        cmocka_unit_test(test_pipelined_paused_reader),
        cmocka_unit_test(test_greedy_client_cut),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
