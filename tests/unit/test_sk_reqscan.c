/* Unit tests of sk_reqscan: request boundaries as the slow-client guard sees them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sk_reqscan.h"

static int feed(sk_reqscan *s, const char *text)
{
    return sk_reqscan_feed(s, (const unsigned char *)text, strlen(text));
}

static void test_get_without_body(void **state)
{
    (void)state;
    sk_reqscan s;
    sk_reqscan_init(&s);
    assert_int_equal(feed(&s, "G"), 1); /* one byte: a request has started */
    assert_int_equal(feed(&s, "ET /healthz HTTP/1.1\r\nHost: x\r\n"), 1);
    assert_int_equal(feed(&s, "\r"), 1);
    assert_int_equal(feed(&s, "\n"), 0); /* the blank line ends it */
    assert_int_equal(feed(&s, "\r\n"), 0); /* stray blank lines between requests */
}

static void test_body_by_content_length(void **state)
{
    (void)state;
    sk_reqscan s;
    sk_reqscan_init(&s);
    assert_int_equal(feed(&s, "POST /x HTTP/1.1\r\ncOnTeNt-LeNgTh:  5\r\n\r\nab"), 1);
    assert_int_equal(feed(&s, "cd"), 1);
    assert_int_equal(feed(&s, "e"), 0);
    /* Two pipelined requests in one read: the second one is partly there. */
    assert_int_equal(feed(&s, "POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\n"), 1);
    assert_int_equal(feed(&s, "\r\n"), 0);
    /* Content-Length of an earlier request is not carried into the next one. */
    assert_int_equal(feed(&s, "GET / HTTP/1.1\r\n\r\n"), 0);
}

static void test_bare_lf_and_long_lines(void **state)
{
    (void)state;
    sk_reqscan s;
    sk_reqscan_init(&s);
    char big[300];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    assert_int_equal(feed(&s, "GET / HTTP/1.1\nX-Long: "), 1);
    assert_int_equal(feed(&s, big), 1);
    assert_int_equal(feed(&s, "\nContent-Length: 0\n\n"), 0);
    /* A header that only starts like Content-Length is not it. */
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nContent-Lengthy: 9\r\n\r\n"), 0);
}

/* Framing the service refuses makes the connection "refused" for good: the scan stays
 * "in a request" (the read deadline holds) instead of guessing a boundary. */
static void test_refused_framing(void **state)
{
    (void)state;
    static const char *reqs[] = {
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 50\r\n\r\nab",
        "POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
        "POST / HTTP/1.1\r\nContent-Length: +2\r\n\r\nab",
        "POST / HTTP/1.1\r\nContent-Length: 2x\r\n\r\nab",
        "POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\nab",
        "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
        "CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n",
        "TRACE / HTTP/1.1\r\n\r\n",
        /* evhttp reads no body for GET: these 5 bytes would be its next request */
        "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nGET /",
    };
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        sk_reqscan s;
        sk_reqscan_init(&s);
        if (feed(&s, reqs[i]) != 1 || !sk_reqscan_refused(&s))
            fail_msg("case %zu not refused", i);
        assert_int_equal(feed(&s, "\r\n\r\nGET / HTTP/1.1\r\n\r\n"), 1); /* sticky */
    }
    /* A method evhttp does not know: refused with its own code (the guard answers 405). */
    static const char *methods[] = {"QUERY / HTTP/1.1\r\n\r\n", "get / HTTP/1.1\r\n\r\n",
                                    "BREW /pot HTTP/1.1\r\n\r\n"};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        sk_reqscan m;
        sk_reqscan_init(&m);
        feed(&m, methods[i]);
        assert_true(sk_reqscan_refused(&m));
        assert_int_equal(m.refusal, SK_REQSCAN_METHOD);
    }
    /* What evhttp reads the same way passes: spaces around the value, one header. */
    sk_reqscan s;
    sk_reqscan_init(&s);
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nContent-Length: \t2 \r\n\r\nab"), 0);
    assert_int_equal(sk_reqscan_refused(&s), 0);
}

/* The bounds and Expect: refused with their own code, so the guard can answer them. */
static void test_limits(void **state)
{
    (void)state;
    sk_reqscan s;
    sk_reqscan_init(&s);
    s.max_header_bytes = 64;
    s.max_body_bytes = 100;
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n"), 1);
    assert_int_equal(sk_reqscan_refused(&s), 0);
    sk_reqscan_init(&s);
    s.max_body_bytes = 100;
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_BODY_LARGE);
    sk_reqscan_init(&s);
    s.max_header_bytes = 64;
    assert_int_equal(feed(&s, "GET / HTTP/1.1\r\nX-A: 01234567890123456789012345678901234567890123456789\r\n"), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_HEADERS_LARGE);
    assert_int_equal(s.requests, 1);
    sk_reqscan_init(&s);
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\nx"), 0);
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nExpect: nope\r\n"), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_EXPECT);
    assert_int_equal(s.requests, 2);
    /* -1: no body at all (seckill-consumer's port); Content-Length 0 still passes. */
    sk_reqscan_init(&s);
    s.max_body_bytes = -1;
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), 0);
    assert_int_equal(feed(&s, "POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n"), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_BODY_LARGE);
    sk_reqscan_init(&s);
    s.max_body_bytes = -1; /* on GET too (evhttp would answer its own HTML 413) */
    assert_int_equal(feed(&s, "GET / HTTP/1.1\r\nContent-Length: 1\r\n\r\n"), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_BODY_LARGE);
}

/* Where each request starts in the connection's bytes (the guard holds a refused later
 * request back from evhttp from there), and nothing is scanned past a refusal. */
static void test_request_start(void **state)
{
    (void)state;
    sk_reqscan s;
    sk_reqscan_init(&s);
    s.max_header_bytes = 40;
    assert_int_equal(feed(&s, "GET / HTTP/1.1\r\n\r\n"), 0); /* 18 bytes */
    assert_int_equal(s.start, 0);
    assert_int_equal(feed(&s, "\r\nGET /a HTTP/1.1\r\n"), 1);
    assert_int_equal(s.requests, 2);
    assert_int_equal(s.start, 20);
    assert_int_equal(s.fed, 20 + 17);
    assert_int_equal(feed(&s, "X-Long: 0123456789012345678901234567890123456789\r\n\r\n"), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_HEADERS_LARGE);
    assert_int_equal(s.fed, 20 + 41); /* the 41st byte of the request refused it */
    assert_int_equal(feed(&s, "GET / HTTP/1.1\r\n\r\n"), 1);
    assert_int_equal(s.fed, 20 + 41);
    assert_int_equal(s.start, 20);
}

static void test_hdrcheck(void **state)
{
    (void)state;
    static const char *bad[][4] = {
        {"Content-Length", "2", "Content-Length", "50"},
        {"Content-Length", "+2", NULL, NULL},
        {"Content-Length", "", NULL, NULL},
        {"Host", "a", "host", "b"},
        {"Host ", "x", NULL, NULL},
        {"Transfer-Encoding", "chunked", NULL, NULL},
        {"transfer-encoding", "identity", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sk_hdrcheck h;
        sk_hdrcheck_init(&h);
        int rc = sk_hdrcheck_add(&h, bad[i][0], bad[i][1]);
        if (bad[i][2])
            rc = sk_hdrcheck_add(&h, bad[i][2], bad[i][3]);
        if (rc != -1 || !h.why)
            fail_msg("case %zu passed", i);
    }
    sk_hdrcheck h;
    sk_hdrcheck_init(&h);
    assert_int_equal(sk_hdrcheck_add(&h, "Host", "x"), 0);
    assert_int_equal(sk_hdrcheck_add(&h, "Content-Length", "12"), 0);
    assert_int_equal(sk_hdrcheck_add(&h, "X-Other", "a b"), 0);
    assert_int_equal(sk_hdrcheck_done(&h, 1), 0);         /* POST with a body */
    assert_int_equal(sk_hdrcheck_done(&h, 0), -1);        /* GET with a body */
}

/* The scan goes a line at a time: wherever the reads split a stream (whole, a byte at a
 * time, 2, 3 or 7 bytes), the boundaries, counts, kept line and refusal point are the
 * same. Streams: pipelined requests with bodies, a CR inside a line, a long header, bare
 * LFs, and each kind of refusal (framing, header bound, body bound). */
static void test_split_invariance(void **state)
{
    (void)state;
    static const char *streams[] = {
        "\r\nPOST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nX: y\r\n",
        "GET / HTTP/1.1\nX-Long: 0123456789012345678901234567890123456789012345678901234567\nA: b\rc\n\nGET",
        "GET / HTTP/1.1\r\nX-A: 0123456789012345678901234567890123456789012345678\r\nB: 1\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 50\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nGET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /x HTTP/1.1\r\nCookie: 01234567890123456789\r\n\r\n",
    };
    static const size_t steps[] = {0, 1, 2, 3, 7};
    for (size_t k = 0; k < sizeof(streams) / sizeof(streams[0]); k++) {
        const unsigned char *p = (const unsigned char *)streams[k];
        size_t n = strlen(streams[k]);
        sk_reqscan ref;
        for (size_t t = 0; t < sizeof(steps) / sizeof(steps[0]); t++) {
            sk_reqscan s;
            sk_reqscan_init(&s);
            s.max_header_bytes = k == 5 ? 40 : 0;
            s.max_body_bytes = 20;
            int rc = 0;
            for (size_t at = 0; at < n;) {
                size_t take = steps[t] == 0 || steps[t] > n - at ? n - at : steps[t];
                rc = sk_reqscan_feed(&s, p + at, take);
                at += take;
            }
            if (t == 0) {
                ref = s;
                continue;
            }
            if (s.state != ref.state || s.refusal != ref.refusal || s.requests != ref.requests ||
                s.fed != ref.fed || s.start != ref.start || s.header_bytes != ref.header_bytes ||
                s.linelen != ref.linelen || s.body_left != ref.body_left ||
                memcmp(s.line, ref.line, s.linelen < SK_REQSCAN_LINE ? s.linelen : SK_REQSCAN_LINE) != 0 ||
                rc != (ref.state != 0))
                fail_msg("stream %zu fed %zu bytes at a time differs from whole", k, steps[t]);
        }
    }
    /* what the streams end in, fed whole */
    sk_reqscan s;
    sk_reqscan_init(&s);
    assert_int_equal(feed(&s, streams[1]), 1);
    assert_int_equal(s.requests, 2);
    assert_int_equal(s.linelen, 3);
    sk_reqscan_init(&s);
    s.max_header_bytes = 40;
    assert_int_equal(feed(&s, streams[5]), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_HEADERS_LARGE);
    assert_int_equal(s.fed, 27 + 41);
    sk_reqscan_init(&s);
    s.max_body_bytes = 20;
    assert_int_equal(feed(&s, streams[3]), 1);
    assert_int_equal(s.refusal, SK_REQSCAN_BODY_LARGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_without_body),
        cmocka_unit_test(test_body_by_content_length),
        cmocka_unit_test(test_bare_lf_and_long_lines),
        cmocka_unit_test(test_refused_framing),
        cmocka_unit_test(test_hdrcheck),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_request_start),
        cmocka_unit_test(test_split_invariance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
