/* Slow and greedy clients (issue 7, hardening), against a private seckill-order on the
 * shared Redis and dev Kafka (one worker, http.read_timeout_ms 2000, 8 connections):
 *  - headers sent one byte a second: the connection is closed within the read timeout
 *    (plus a little), while other clients are served at once meanwhile
 *  - a kept-alive connection idle past the read timeout between requests is not cut
 *  - headers over http.max_header_bytes and a Content-Length over http.max_body_bytes:
 *    a 4xx and/or a closed connection, the service still serves
 *  - past limits.connections the next connection is closed at once; the ones held
 *    still work, and a slot freed is usable again
 *  - framing RFC 9112 refuses (issue 14): two or a signed Content-Length, two Host
 *    headers, "Host : x", Transfer-Encoding get a JSON 400 and a real close; CONNECT
 *    and TRACE a JSON 405 and a real close; chunks dribbled in cannot outlive the read
 *    timeout; HEAD gets Content-Length and no body; /metrics needs metrics.token */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include "test_order_support.h"

#define READ_TIMEOUT_MS 2000
#define MAX_CONNS 8

static to_order srv;

static int setup(void **state)
{
    (void)state;
    if (!to_stack_available()) {
        fprintf(stderr, "skipped: no stack (source .run/env)\n");
        return -1;
    }
    static const char *env[] = {"SECKILL_WORKERS=1", "SECKILL_HTTP_READ_TIMEOUT_MS=2000",
                                "SECKILL_LIMITS_CONNECTIONS=8", "SECKILL_HTTP_MAX_HEADER_BYTES=4096",
                                "SECKILL_HTTP_MAX_BODY_BYTES=8192",
                                "SECKILL_METRICS_TOKEN=metrics-secret-for-the-slow-test", NULL};
    return to_order_start(&srv, getenv("SECKILL_REDIS_URL"), getenv("SECKILL_KAFKA_BROKERS"), NULL, env);
}

static int teardown(void **state)
{
    (void)state;
    /* A clean exit: nothing leaked or used after free under the sanitizers. */
    if (srv.proc.pid && to_stop(&srv.proc, SIGTERM, 10000) != 0)
        return -1;
    return 0;
}

/* 1 when the server closed fd (EOF or reset) within timeout_ms, 0 when still open and
 * silent, 2 when it sent bytes (copied into out). */
static int closed_within(int fd, int timeout_ms, char *out, size_t outsz)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, timeout_ms);
    if (n == 0)
        return 0;
    ssize_t r = recv(fd, out, outsz - 1, 0);
    if (r <= 0)
        return 1;
    out[r] = 0;
    return 2;
}

static int healthz_fast(void)
{
    char resp[256];
    int64_t t0 = sk_test_now_ms();
    int st = to_http1(srv.port, "GET", "/healthz", NULL, NULL, resp, sizeof(resp));
    return st == 200 && sk_test_now_ms() - t0 < 1000;
}

static void test_slow_headers_cut(void **state)
{
    (void)state;
    int fd = to_http_connect(srv.port);
    assert_true(fd >= 0);
    const char *req = "GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Pad: aaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    int64_t first = sk_test_now_ms();
    int cut = 0;
    char buf[512];
    for (size_t i = 0; req[i] && !cut; i++) {
        if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1) {
            cut = 1;
            break;
        }
        /* One byte a second; meanwhile another client is served at once. */
        assert_true(healthz_fast());
        int c = closed_within(fd, 1000, buf, sizeof(buf));
        if (c == 2)
            fail_msg("answered a request that never ended its headers: %s", buf);
        cut = c == 1;
    }
    int64_t took = sk_test_now_ms() - first;
    close(fd);
    if (!cut)
        fail_msg("a client sending a byte a second was never cut");
    fprintf(stderr, "slow client cut after %lld ms (read timeout %d)\n", (long long)took, READ_TIMEOUT_MS);
    assert_true(took >= READ_TIMEOUT_MS - 100);
    assert_true(took <= READ_TIMEOUT_MS + 1500);
    assert_true(healthz_fast());
}

static void test_idle_keepalive_not_cut(void **state)
{
    (void)state;
    int fd = to_http_connect(srv.port);
    char resp[256];
    assert_int_equal(to_http(fd, "GET", "/healthz", NULL, NULL, NULL, 0, resp, sizeof(resp)), 200);
    /* Idle between requests for longer than the read timeout: that is not a slow request. */
    assert_int_equal(closed_within(fd, READ_TIMEOUT_MS + 700, resp, sizeof(resp)), 0);
    assert_int_equal(to_http(fd, "GET", "/healthz", NULL, NULL, NULL, 0, resp, sizeof(resp)), 200);
    close(fd);
}

/* Sends raw bytes and returns the status of the answer, 0 for a connection closed
 * without one. */
/* Sends raw bytes on a fresh connection; reads until the server closes or timeout_ms.
 * @returns 1 if it closed (EOF or reset), 0 if still open; the bytes read go to out. */
static int raw_exchange(const char *req, size_t len, int timeout_ms, char *out, size_t outsz)
{
    int fd = to_http_connect(srv.port);
    assert_true(fd >= 0);
    assert_int_equal(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
    size_t got = 0;
    int closed = 0;
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    out[0] = 0;
    while (!closed && sk_test_now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - sk_test_now_ms())) <= 0)
            break;
        ssize_t r = recv(fd, out + got, outsz - 1 - got, 0);
        if (r <= 0)
            closed = 1;
        else
            got += (size_t)r;
        out[got] = 0;
    }
    close(fd);
    return closed;
}

/* Over the bounds, a connection's first request gets our JSON 431 for its headers
 * (RFC 6585; 413 until issue 33) or 413 for its body (not evhttp's HTML) and a close; an
 * Expect other than 100-continue a JSON 400. */
static void test_size_limits(void **state)
{
    (void)state;
    size_t n = 6000;
    char *big = malloc(n + 128);
    assert_non_null(big);
    int off = snprintf(big, 128, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + off, 'a', n);
    memcpy(big + off + n, "\r\n\r\n", 4);
    static char out[4096];
    int closed = raw_exchange(big, (size_t)off + n + 4, 5000, out, sizeof(out));
    free(big);
    if (!closed || strncmp(out, "HTTP/1.1 431 ", 13) != 0 || !strstr(out, "\"error\":\"headers_too_large\""))
        fail_msg("headers over the bound: %s", out);
    const char *cl = "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";
    closed = raw_exchange(cl, strlen(cl), 5000, out, sizeof(out));
    if (!closed || strncmp(out, "HTTP/1.1 413 ", 13) != 0 || !strstr(out, "\"error\":\"payload_too_large\""))
        fail_msg("body over the bound: %s", out);
    const char *ex = "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}";
    closed = raw_exchange(ex, strlen(ex), 5000, out, sizeof(out));
    if (!closed || strncmp(out, "HTTP/1.1 400 ", 13) != 0 || !strstr(out, "100-continue"))
        fail_msg("Expect: %s", out);
    assert_true(healthz_fast());
}

/* One refusal as a connection's second request, kept alive (sent after the first
 * answer) or pipelined (both at once): the first gets its 200, the second our JSON
 * answer with Connection: close (not evhttp's HTML), then the connection closes. */
static void second_refused(const char *req, const char *status, const char *code, int pipelined)
{
    static char both[16384], out[16384];
    const char *first = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    int fd = to_http_connect(srv.port);
    assert_true(fd >= 0);
    if (pipelined) {
        snprintf(both, sizeof(both), "%s%s", first, req);
        assert_int_equal(send(fd, both, strlen(both), MSG_NOSIGNAL), (ssize_t)strlen(both));
    } else {
        assert_int_equal(to_http(fd, "GET", "/healthz", NULL, NULL, NULL, 0, out, sizeof(out)), 200);
        assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    }
    size_t got = 0;
    int closed = 0;
    int64_t deadline = sk_test_now_ms() + 5000;
    out[0] = 0;
    while (!closed && sk_test_now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - sk_test_now_ms())) <= 0)
            break;
        ssize_t r = recv(fd, out + got, sizeof(out) - 1 - got, 0);
        if (r <= 0)
            closed = 1;
        else
            got += (size_t)r;
        out[got] = 0;
    }
    close(fd);
    const char *answer = out;
    if (pipelined) {
        if (strncmp(out, "HTTP/1.1 200 ", 13) != 0)
            fail_msg("pipelined, first answer: %s", out);
        answer = strstr(out + 13, "HTTP/1.1 ");
    }
    fprintf(stderr, "# %s second request: %.*s\n", pipelined ? "pipelined" : "kept-alive",
            answer ? (int)strcspn(answer, "\r") : 0, answer ? answer : "");
    if (!closed || !answer || strncmp(answer, status, strlen(status)) != 0 ||
        !strstr(answer, "Content-Type: application/json") || !strstr(answer, "Connection: close") ||
        !strstr(answer, code) || strstr(answer, "<html") || strstr(answer, "<HTML"))
        fail_msg("%s second request refused: closed=%d %s", pipelined ? "pipelined" : "kept-alive",
                 closed, out);
}

/* Item 8 on kept-alive and pipelined connections: every refusal evhttp would answer in
 * HTML (headers over the bound, a bad Expect, an unknown method, Transfer-Encoding, a
 * body over the bound) is our JSON with a real close, whichever request it is. */
static void test_second_request_refused(void **state)
{
    (void)state;
    size_t n = 6000;
    static char big[8192];
    int off = snprintf(big, 128, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + off, 'a', n);
    memcpy(big + off + n, "\r\n\r\n", 5);
    const char *req[] = {
        big,
        "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}",
        "QUERY /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
        /* framing the handler refuses: it answers, then the guard closes */
        "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
    };
    const char *status[] = {"HTTP/1.1 431 ", "HTTP/1.1 400 ", "HTTP/1.1 405 ", "HTTP/1.1 400 ",
                            "HTTP/1.1 413 ", "HTTP/1.1 400 "};
    const char *code[] = {"\"error\":\"headers_too_large\"", "\"error\":\"bad_request\"",
                          "\"error\":\"method_not_allowed\"", "\"error\":\"bad_request\"",
                          "\"error\":\"payload_too_large\"", "\"error\":\"bad_request\""};
    for (int pipelined = 0; pipelined < 2; pipelined++)
        for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++)
            second_refused(req[i], status[i], code[i], pipelined);
    assert_true(healthz_fast());
}

static int fresh_connection_served(void *arg)
{
    (void)arg;
    return healthz_fast();
}

static void test_connection_cap(void **state)
{
    (void)state;
    int fds[MAX_CONNS];
    char resp[256];
    for (int i = 0; i < MAX_CONNS; i++) {
        fds[i] = to_http_connect(srv.port);
        assert_true(fds[i] >= 0);
        assert_int_equal(to_http(fds[i], "GET", "/healthz", NULL, NULL, NULL, 0, resp, sizeof(resp)), 200);
    }
    /* One more: a 503 at once (issue 33: answered before the close, not reset), whatever
     * it sends. */
    int extra = to_http_connect(srv.port);
    assert_true(extra >= 0);
    int st = to_http(extra, "GET", "/healthz", NULL, NULL, NULL, 0, resp, sizeof(resp));
    assert_int_equal(st, 503);
    close(extra);
    for (int i = 0; i < MAX_CONNS; i++)
        assert_int_equal(to_http(fds[i], "GET", "/healthz", NULL, NULL, NULL, 0, resp, sizeof(resp)), 200);
    /* A slot given back serves again. */
    close(fds[0]);
    assert_int_equal(to_wait(fresh_connection_served, NULL, 3000), 1);
    for (int i = 1; i < MAX_CONNS; i++)
        close(fds[i]);
}

static void test_framing_refused(void **state)
{
    (void)state;
    char tok[1024], req[4096], out[4096];
    to_token(&srv, 4242, 0, 600, tok, sizeof(tok));
    /* A valid order body, so only the framing can be the reason for a 400. */
    static const struct {
        const char *headers, *body, *want;
    } cases[] = {
        {"Content-Length: 2\r\nContent-Length: 50\r\n", "{}", "more than one Content-Length"},
        {"Content-Length: 2\r\nContent-Length: 2\r\n", "{}", "more than one Content-Length"},
        {"Content-Length: +2\r\n", "{}", "not a decimal number"},
        {"Content-Length: 2\r\nHost: other\r\n", "{}", "more than one Host"},
        {"Content-Length: 2\r\nX-Pad : x\r\n", "{}", "whitespace in a header name"},
        {"Transfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n", "Transfer-Encoding"},
        /* a chunk extension: evhttp alone would answer an HTML 413 */
        {"Transfer-Encoding: chunked\r\n", "2;ext=1\r\n{}\r\n0\r\n\r\n", "Transfer-Encoding"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = snprintf(req, sizeof(req),
                         "POST /api/v1/events/1/orders HTTP/1.1\r\nHost: x\r\n"
                         "Authorization: Bearer %s\r\n%s\r\n%s",
                         tok, cases[i].headers, cases[i].body);
        int closed = raw_exchange(req, (size_t)n, 5000, out, sizeof(out));
        if (!closed || strncmp(out, "HTTP/1.1 400 ", 13) != 0 || !strstr(out, "\"error\":\"bad_request\"") ||
            !strstr(out, cases[i].want) || !strstr(out, "Connection: close"))
            fail_msg("case %zu (closed %d): %s", i, closed, out);
    }
    /* A body on GET: evhttp would read it as the next request. */
    const char *get_body = "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nGET /";
    assert_int_equal(raw_exchange(get_body, strlen(get_body), 5000, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "a body on a method without one"));
    /* "Host : x" alone (the only Host is misspelt). */
    const char *host_sp = "GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n";
    assert_int_equal(raw_exchange(host_sp, strlen(host_sp), 5000, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "whitespace in a header name"));
    /* CONNECT and TRACE: JSON 405 with Allow, and a close that is a close (not 60 s
     * later); a TRACE with a body is still a 405, not a framing 400. */
    const char *methods[] = {"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n",
                             "TRACE / HTTP/1.1\r\nHost: x\r\n\r\n",
                             "TRACE /api/v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"};
    for (int i = 0; i < 3; i++) {
        int64_t t0 = sk_test_now_ms();
        assert_int_equal(raw_exchange(methods[i], strlen(methods[i]), 5000, out, sizeof(out)), 1);
        assert_true(sk_test_now_ms() - t0 < 3000);
        assert_true(strncmp(out, "HTTP/1.1 405 ", 13) == 0);
        assert_non_null(strstr(out, "\"error\":\"method_not_allowed\""));
        assert_non_null(strstr(out, i == 2 ? "Allow: GET, HEAD, POST\r\n" : "Allow: "));
    }
    /* A method evhttp does not know: JSON 405 from the guard (not evhttp's HTML 501). */
    const char *query = "QUERY /api/v1/events HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(raw_exchange(query, strlen(query), 5000, out, sizeof(out)), 1);
    assert_true(strncmp(out, "HTTP/1.1 405 ", 13) == 0);
    assert_non_null(strstr(out, "\"error\":\"method_not_allowed\""));
    assert_non_null(strstr(out, "Allow: GET, HEAD, POST\r\n"));
    /* Chunks dribbled in (the data of one is a line feed): cut within the read timeout. */
    int fd = to_http_connect(srv.port);
    const char *head = "POST /api/v1/events/1/orders HTTP/1.1\r\nHost: x\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n1\r\n\n\r\n";
    assert_int_equal(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
    int64_t t0 = sk_test_now_ms(), cut_at = -1;
    while (sk_test_now_ms() - t0 < READ_TIMEOUT_MS * 3 && cut_at < 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 500) > 0 && recv(fd, out, sizeof(out), 0) <= 0)
            cut_at = sk_test_now_ms();
        else if (send(fd, "1\r\n\n\r\n", 6, MSG_NOSIGNAL) < 0)
            cut_at = sk_test_now_ms();
    }
    close(fd);
    assert_true(cut_at > 0 && cut_at - t0 < READ_TIMEOUT_MS + 1500);
    assert_true(healthz_fast());
}

/* HEAD: the GET answer's Content-Length and no body; the connection stays usable. */
static void test_head(void **state)
{
    (void)state;
    char out[2048];
    const char *two = "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_exchange(two, strlen(two), 1500, out, sizeof(out));
    char *first_body = strstr(out, "\r\n\r\n");
    assert_non_null(first_body);
    assert_non_null(strstr(out, "Content-Length: 15"));
    /* Right after the HEAD answer's blank line comes the GET answer, not a body. */
    assert_true(strncmp(first_body + 4, "HTTP/1.1 200 ", 13) == 0);
    assert_non_null(strstr(first_body + 4, "{\"status\":\"ok\"}"));
}

/* metrics.token: /metrics needs the bearer; the rest of the API is unaffected. */
static void test_metrics_token(void **state)
{
    (void)state;
    char resp[65536];
    assert_int_equal(to_http1(srv.port, "GET", "/metrics", NULL, NULL, resp, sizeof(resp)), 401);
    assert_null(strstr(resp, "seckill_order_requests_total"));
    int fd = to_http_connect(srv.port);
    assert_int_equal(to_http(fd, "GET", "/metrics", NULL, "Bearer metrics-secret-for-the-slow-tesT",
                             NULL, 0, resp, sizeof(resp)), 401);
    assert_int_equal(to_http(fd, "GET", "/metrics", NULL, "Bearer metrics-secret-for-the-slow-test",
                             NULL, 0, resp, sizeof(resp)), 200);
    assert_non_null(strstr(resp, "seckill_order_requests_total"));
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_headers_cut),
        cmocka_unit_test(test_idle_keepalive_not_cut),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_second_request_refused),
        cmocka_unit_test(test_connection_cap),
        cmocka_unit_test(test_framing_refused),
        cmocka_unit_test(test_head),
        cmocka_unit_test(test_metrics_token),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
