/* Unit tests of what an attack on the HTTP layer found (issue 33), each failing before
 * its fix: sk_http over a socketpair (tests/support/sk_test_http.h) and the pure parser.
 *  - empty lines before a request: they start its read deadline (a CRLF trickle held a
 *    connection for as long as it went on) and only SK_HTTP_MAX_BLANK_LINES are taken
 *    (a CRLF stream burned a core);
 *  - a Content-Length over the route's own bound refused from the head, before the body;
 *  - RFC 9112 codes: Host missing or malformed 400, an absolute-form target served as its
 *    path, an over-long request line 414, too many or too long headers 431, the HTTP/2
 *    preface 400 and a TLS ClientHello 400, both closed at once;
 *  - two Authorization headers refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sk_http.h"
#include "sk_test_http.h"
#include "sk_test_proc.h"

#define TURNS 20000

static struct event_base *base;

static const sk_http_opts default_opts = {
    .max_header_bytes = 1024,
    .max_body_bytes = 65536,
    .allow = "GET, POST",
};

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    return base ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    event_base_free(base);
    return 0;
}

static void start(sk_test_http *t, const sk_http_opts *o)
{
    assert_int_equal(sk_test_http_start(t, base, o ? o : &default_opts, SK_TEST_ANSWER_NOW), 0);
}

static void send_str(sk_test_http *t, const char *s)
{
    assert_int_equal(sk_test_http_write(t, s, strlen(s)), 0);
}

/* Turns until the client saw its end close, at most ms. @returns the ms it took. */
static int64_t wait_eof(sk_test_http *t, int ms)
{
    int64_t t0 = sk_test_now_ms(), end = t0 + ms;
    while (!t->eof && sk_test_now_ms() < end)
        sk_test_http_turn(t, 20);
    assert_true(t->eof != 0);
    return sk_test_now_ms() - t0;
}

static int has(const sk_test_http *t, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= t->got.len; i++)
        if (memcmp(t->got.p + i, needle, nl) == 0)
            return 1;
    return 0;
}

/* One request on a fresh connection; the answer in t (stopped by the caller). */
static void one(sk_test_http *t, const sk_http_opts *o, const char *req)
{
    start(t, o);
    send_str(t, req);
    assert_int_equal(sk_test_http_settle(t, TURNS), 0);
}

/* A CRLF every 50 ms, before any request and after one: the read deadline (300 ms)
 * counts from the first, and the connection is cut. Before issue 33 each one restarted
 * the clocks and the connection stayed for as long as the trickle went on. */
static void test_blank_trickle_cut(void **state)
{
    (void)state;
    sk_http_opts o = default_opts;
    o.read_timeout_ms = 300;
    o.idle_timeout_ms = 60000;
    for (int after_request = 0; after_request < 2; after_request++) {
        sk_test_http t;
        start(&t, &o);
        if (after_request) {
            send_str(&t, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n");
            assert_int_equal(sk_test_http_settle(&t, TURNS), 0);
            assert_int_equal(t.nreq, 1);
        }
        int64_t t0 = sk_test_now_ms();
        /* Four empty lines (within the count bound) 120 ms apart: past the deadline */
        for (int i = 0; i < SK_HTTP_MAX_BLANK_LINES && !t.eof; i++) {
            if (sk_test_http_write(&t, i % 2 ? "\n" : "\r\n", 2 - (size_t)(i % 2)) != 0)
                break;
            int64_t until = sk_test_now_ms() + 120;
            while (!t.eof && sk_test_now_ms() < until)
                sk_test_http_turn(&t, 10);
        }
        int64_t until = t0 + 3000;
        while (!t.eof && sk_test_now_ms() < until)
            sk_test_http_turn(&t, 20);
        assert_true(t.eof != 0);
        int64_t took = sk_test_now_ms() - t0;
        assert_true(took >= 300 - 20 && took < 2500);
        assert_int_equal(t.nreq, after_request);
        sk_test_http_stop(&t);
    }
}

/* SK_HTTP_MAX_BLANK_LINES empty lines are skipped; one more is a 400 and the close,
 * whether they come one by one or in a stream. */
static void test_blank_lines_bounded(void **state)
{
    (void)state;
    char req[256] = "";
    for (int i = 0; i < SK_HTTP_MAX_BLANK_LINES; i++)
        strcat(req, i % 2 ? "\n" : "\r\n");
    strcat(req, "GET /ok HTTP/1.1\r\nHost: h\r\n\r\n");
    sk_test_http t;
    one(&t, NULL, req);
    assert_int_equal(t.nreq, 1);
    assert_true(has(&t, "HTTP/1.1 200 OK\r\n"));
    sk_test_http_stop(&t);

    char more[256] = "\r\n";
    strcat(more, req);
    one(&t, NULL, more);
    assert_int_equal(t.nreq, 0);
    assert_true(has(&t, "HTTP/1.1 400 Bad Request\r\n"));
    assert_true(has(&t, "too many empty lines"));
    wait_eof(&t, 3000);
    sk_test_http_stop(&t);

    /* a stream of CRLF: cut after the bound, not read for as long as it comes */
    static char stream[64 * 1024];
    for (size_t i = 0; i + 1 < sizeof(stream); i += 2)
        stream[i] = '\r', stream[i + 1] = '\n';
    start(&t, NULL);
    size_t sent = 0;
    while (sent < sizeof(stream) && sk_test_http_write(&t, stream + sent, 4096) == 0 && !t.eof)
        sent += 4096;
    wait_eof(&t, 3000);
    assert_int_equal(t.nreq, 0);
    assert_true(has(&t, "HTTP/1.1 400 Bad Request\r\n"));
    sk_test_http_stop(&t);
}

/* The route's bound: 16 bytes under /small, the server's 64 KiB elsewhere. */
static int64_t small_limit(const sk_http_req *r, void *arg)
{
    (void)arg;
    return strncmp(sk_http_uri(r), "/small", 6) == 0 ? 16 : -1;
}

/* A Content-Length over the route's bound is answered 413 from the head alone: none of
 * the body is sent, yet the answer comes and the connection closes. Within the bound,
 * and on another route, the body is read and handed on. */
static void test_body_refused_from_head(void **state)
{
    (void)state;
    sk_http_opts o = default_opts;
    o.body_limit = small_limit;
    sk_test_http t;
    one(&t, &o, "POST /small HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n");
    assert_int_equal(t.nreq, 0);
    assert_true(has(&t, "HTTP/1.1 413 Payload Too Large\r\n"));
    assert_true(has(&t, "Connection: close\r\n"));
    wait_eof(&t, 3000);
    sk_test_http_stop(&t);

    one(&t, &o, "POST /small HTTP/1.1\r\nHost: h\r\nContent-Length: 16\r\n\r\n0123456789abcdef");
    assert_int_equal(t.nreq, 1);
    assert_true(has(&t, "HTTP/1.1 200 OK\r\n"));
    sk_test_http_stop(&t);

    one(&t, &o, "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n0123456789abcdefg");
    assert_int_equal(t.nreq, 1);
    assert_true(has(&t, "HTTP/1.1 200 OK\r\n"));
    sk_test_http_stop(&t);
}

/* RFC 9112's status codes, as the client reads them. */
static void test_status_codes(void **state)
{
    (void)state;
    static char longline[2048], manyh[4096];
    memcpy(longline, "GET /", 5);
    memset(longline + 5, 'a', 1500);
    strcpy(longline + 1505, " HTTP/1.1\r\nHost: h\r\n\r\n");
    size_t n = (size_t)snprintf(manyh, sizeof(manyh), "GET / HTTP/1.1\r\nHost: h\r\n");
    for (int i = 0; i <= SK_HTTP_MAX_HEADERS; i++)
        n += (size_t)snprintf(manyh + n, sizeof(manyh) - n, "H%d: %d\r\n", i, i);
    snprintf(manyh + n, sizeof(manyh) - n, "\r\n");
    sk_http_opts big = default_opts;
    big.max_header_bytes = 8192;
    static const struct {
        const char *req, *status;
        int big;
    } cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n", 0},
        {"GET / HTTP/1.1\r\nHost:\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n", 0},
        {"GET / HTTP/1.0\r\nHost: a b\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n", 0},
        {longline, "HTTP/1.1 414 URI Too Long\r\n", 0},
        {manyh, "HTTP/1.1 431 Request Header Fields Too Large\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: ", "", 0}, /* filled below: a long header */
        {"GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n",
         "HTTP/1.1 400 Bad Request\r\n", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sk_test_http t;
        if (!cases[i].status[0]) { /* one header line past the bound: 431 */
            char req[2048];
            size_t k = strlen(cases[i].req);
            memcpy(req, cases[i].req, k);
            memset(req + k, 'v', 1100);
            strcpy(req + k + 1100, "\r\n\r\n");
            one(&t, NULL, req);
            if (!has(&t, "HTTP/1.1 431 Request Header Fields Too Large\r\n"))
                fail_msg("long header: %.*s", (int)t.got.len, t.got.p);
        } else {
            one(&t, cases[i].big ? &big : NULL, cases[i].req);
            if (!has(&t, cases[i].status))
                fail_msg("case %zu: want %s got %.*s", i, cases[i].status, (int)t.got.len,
                         t.got.p);
        }
        assert_true(has(&t, "Connection: close\r\n"));
        wait_eof(&t, 3000);
        sk_test_http_stop(&t);
    }
    /* an absolute-form target is served as its path */
    const char *abs[][2] = {{"GET http://x/healthz?a=1 HTTP/1.1\r\nHost: x\r\n\r\n", "#1 /healthz?a=1\n"},
                            {"GET HTTPS://x:8080 HTTP/1.1\r\nHost: x\r\n\r\n", "#1 /\n"}};
    for (size_t i = 0; i < 2; i++) {
        sk_test_http t;
        one(&t, NULL, abs[i][0]);
        assert_int_equal(t.nreq, 1);
        if (!has(&t, abs[i][1]))
            fail_msg("absolute form %zu: %.*s", i, (int)t.got.len, t.got.p);
        sk_test_http_stop(&t);
    }
}

/* The HTTP/2 preface and a TLS ClientHello: answered 400 and closed at once, with no
 * read deadline set (before: 405 to the preface, and a ClientHello waited for a blank
 * line that never comes). */
static void test_h2_tls_closed_at_once(void **state)
{
    (void)state;
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04";
    static const unsigned char hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01,
                                          0xfc, 0x03, 0x03, 0x5a, 0x5a, 0x5a, 0x5a};
    for (int i = 0; i < 2; i++) {
        sk_test_http t;
        start(&t, NULL);
        if (i == 0)
            assert_int_equal(sk_test_http_write(&t, preface, sizeof(preface) - 1), 0);
        else
            assert_int_equal(sk_test_http_write(&t, hello, sizeof(hello)), 0);
        assert_true(wait_eof(&t, 3000) < 1500);
        assert_int_equal(t.nreq, 0);
        assert_true(has(&t, "HTTP/1.1 400 Bad Request\r\n"));
        assert_true(has(&t, "Connection: close\r\n"));
        if (i == 0)
            assert_true(has(&t, "HTTP/2 is not served"));
        sk_test_http_stop(&t);
    }
}

/* ---- the parser's side ---- */

static char pbuf[4096];
static sk_http_head H;

static sk_http_parse_rc parse(const char *text)
{
    size_t n = strlen(text), hl;
    memcpy(pbuf, text, n + 1);
    return sk_http_parse_head(pbuf, n, 0, 1024, 65536, &H, &hl);
}

static void test_parse_rules(void **state)
{
    (void)state;
    static const struct {
        const char *req;
        int host_bad;
    } hosts[] = {
        {"GET / HTTP/1.1\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: \r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 1},
    };
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        assert_int_equal(parse(hosts[i].req), SK_HTTP_OK);
        if (H.host_bad != hosts[i].host_bad)
            fail_msg("host case %zu: host_bad %d", i, H.host_bad);
    }
    assert_int_equal(parse("GET http://x/a/b HTTP/1.1\r\nHost: x\r\n\r\n"), SK_HTTP_OK);
    assert_string_equal(pbuf + H.uri, "/a/b");
    assert_int_equal(parse("GET http://x HTTP/1.1\r\nHost: x\r\n\r\n"), SK_HTTP_OK);
    assert_string_equal(pbuf + H.uri, "/");
    assert_int_equal(parse("GET httpx://x HTTP/1.1\r\nHost: x\r\n\r\n"), SK_HTTP_OK);
    assert_string_equal(pbuf + H.uri, "httpx://x"); /* no absolute form of ours: as sent */
    assert_int_equal(parse("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n"),
                     SK_HTTP_OK);
    assert_string_equal(H.framing, "more than one Authorization header");
    /* refused without the blank line */
    assert_int_equal(parse("PRI * HTTP/2.0\r\n"), SK_HTTP_H2_PREFACE);
    assert_int_equal(parse("PRI * HT"), SK_HTTP_INCOMPLETE);
    assert_int_equal(parse("PRIX"), SK_HTTP_INCOMPLETE);
    assert_int_equal(parse("\x16\x03\x01"), SK_HTTP_BAD);
    assert_int_equal(parse("\r\n{\"a\":1}"), SK_HTTP_BAD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blank_trickle_cut),
        cmocka_unit_test(test_blank_lines_bounded),
        cmocka_unit_test(test_body_refused_from_head),
        cmocka_unit_test(test_status_codes),
        cmocka_unit_test(test_h2_tls_closed_at_once),
        cmocka_unit_test(test_parse_rules),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
