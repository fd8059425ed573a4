/* Unit tests of sk_http's connection layer (common/sk_http.c) over a socketpair: a
 * libevent loop in this thread, the server on one end (sk_http_adopt), the test on the
 * other, a stub handler that records what it sees (tests/support/sk_test_http.h). What
 * sk_http.h promises: a request read a byte at a time, pipelined requests answered in
 * order, a half-closed client answered in full before the close, a client that does not
 * read slowed down then cut by the idle deadline, the lingering close after a refusal,
 * DEL refused, a head cut at every byte, a body that outgrows the first buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sk_http.h"
#include "sk_test_http.h"
#include "sk_test_proc.h"

#define TURNS 20000 /* a settle's bound: far above what any case here needs */

static struct event_base *base;

static const sk_http_opts default_opts = {
    .max_header_bytes = 8192,
    .max_body_bytes = 65536,
    .read_timeout_ms = 0,
    .idle_timeout_ms = 0,
    .max_conns = 0,
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

static void start(sk_test_http *t, const sk_http_opts *o, sk_test_answer_mode mode)
{
    assert_int_equal(sk_test_http_start(t, base, o ? o : &default_opts, mode), 0);
}

static void settle(sk_test_http *t)
{
    assert_int_equal(sk_test_http_settle(t, TURNS), 0);
}

static void send_str(sk_test_http *t, const char *s)
{
    assert_int_equal(sk_test_http_write(t, s, strlen(s)), 0);
}

/* Turns until the client saw its end close (EOF or an error), at most ms. */
static void wait_eof(sk_test_http *t, int ms)
{
    int64_t end = sk_test_now_ms() + ms;
    while (!t->eof && sk_test_now_ms() < end)
        sk_test_http_turn(t, 20);
    assert_true(t->eof != 0);
}

/* How many times `needle` occurs in the client's bytes. */
static int count(const sk_test_http *t, const char *needle)
{
    int n = 0;
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= t->got.len; i++)
        if (memcmp(t->got.p + i, needle, nl) == 0)
            n++;
    return n;
}

/* The position of `needle` in the client's bytes, or -1. */
static long pos(const sk_test_http *t, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= t->got.len; i++)
        if (memcmp(t->got.p + i, needle, nl) == 0)
            return (long)i;
    return -1;
}

static const char POST1[] = "POST /o?x=1 HTTP/1.1\r\nHost: h\r\nX-A:  a b \r\n"
                            "Content-Length: 5\r\n\r\nhello";
static const char POST1_SEEN[] = "M2 6:/o?x=1H4:Host1:hH3:X-A3:a bH14:Content-Length1:5B5:hello.\n";

/* A request written one byte at a time, the loop turning after each: the handler sees
 * it once, whole, and answers; then a second one on the same connection. */
static void test_partial_reads(void **state)
{
    (void)state;
    sk_test_http t;
    start(&t, NULL, SK_TEST_ANSWER_NOW);
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof(POST1) - 1; i++) {
            assert_int_equal(sk_test_http_write(&t, POST1 + i, 1), 0);
            settle(&t);
            assert_int_equal(t.nreq, i + 2 < sizeof(POST1) ? round : round + 1);
        }
    }
    assert_int_equal(t.seen.len, 2 * (sizeof(POST1_SEEN) - 1));
    assert_memory_equal(t.seen.p, POST1_SEEN, sizeof(POST1_SEEN) - 1);
    assert_memory_equal(t.seen.p + sizeof(POST1_SEEN) - 1, POST1_SEEN, sizeof(POST1_SEEN) - 1);
    assert_int_equal(count(&t, "HTTP/1.1 200 OK\r\n"), 2);
    assert_int_equal(count(&t, "\r\n\r\n#1 /o?x=1\nhello"), 1);
    assert_int_equal(count(&t, "\r\n\r\n#2 /o?x=1\nhello"), 1);
    assert_int_equal(t.eof, 0); /* kept alive */
    sk_test_http_stop(&t);
}

/* Several requests in one write: each handled once, answered in order, whether the
 * handler answers at once or on a later turn. */
static void test_pipelining(void **state)
{
    (void)state;
    static const char three[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
                                "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
                                "\r\nGET /c HTTP/1.1\r\nHost: h\r\nX-B: 1\r\n\r\n";
    for (int mode = SK_TEST_ANSWER_NOW; mode <= SK_TEST_ANSWER_LATER; mode++) {
        sk_test_http t;
        start(&t, NULL, (sk_test_answer_mode)mode);
        send_str(&t, three);
        settle(&t);
        assert_int_equal(t.nreq, 3);
        static const char seen[] = "M0 2:/aH4:Host1:hB0:.\n"
                                   "M2 2:/bH4:Host1:hH14:Content-Length1:3B3:xyz.\n"
                                   "M0 2:/cH4:Host1:hH3:X-B1:1B0:.\n";
        assert_int_equal(t.seen.len, sizeof(seen) - 1);
        assert_memory_equal(t.seen.p, seen, sizeof(seen) - 1);
        long a = pos(&t, "#1 /a\n"), b = pos(&t, "#2 /b\nxyz"), c = pos(&t, "#3 /c\n");
        assert_true(a > 0 && b > a && c > b);
        assert_int_equal(count(&t, "HTTP/1.1 200 OK\r\n"), 3);
        assert_int_equal(count(&t, "Connection: close"), 0);
        assert_int_equal(t.eof, 0);
        sk_test_http_stop(&t);
    }
}

/* The client shuts its write side after its requests: every one is answered, then the
 * server closes (a clean EOF). Answered on later turns, the EOF is seen while requests
 * are still buffered, so the last answer says Connection: close. */
static void test_half_close(void **state)
{
    (void)state;
    static const char three[] = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
                                "GET /3 HTTP/1.1\r\nHost: h\r\n\r\n";
    for (int mode = SK_TEST_ANSWER_NOW; mode <= SK_TEST_ANSWER_LATER; mode++) {
        sk_test_http t;
        start(&t, NULL, (sk_test_answer_mode)mode);
        send_str(&t, three);
        assert_int_equal(shutdown(t.cfd, SHUT_WR), 0);
        wait_eof(&t, 5000);
        if (t.eof != 1 || t.nreq != 3)
            fail_msg("mode %d: eof %d, %d requests, answers %.*s", mode, t.eof, t.nreq,
                     (int)t.got.len, t.got.p);
        long a = pos(&t, "#1 /1\n"), b = pos(&t, "#2 /2\n"), c = pos(&t, "#3 /3\n");
        assert_true(a > 0 && b > a && c > b);
        if (mode == SK_TEST_ANSWER_LATER) {
            long close = pos(&t, "Connection: close\r\n");
            assert_true(close > b && close < c);
        }
        settle(&t);
        sk_test_http_stop(&t);
    }
    /* Half a request, then the FIN: nothing to answer, the server just closes. */
    sk_test_http t;
    start(&t, NULL, SK_TEST_ANSWER_NOW);
    send_str(&t, "GET /x HTTP/1.1\r\nHost:");
    assert_int_equal(shutdown(t.cfd, SHUT_WR), 0);
    wait_eof(&t, 5000);
    assert_int_equal(t.nreq, 0);
    assert_int_equal(t.got.len, 0);
    sk_test_http_stop(&t);
}

/* A client that pipelines and does not read. The server hands on one request at a time
 * and writes its answer before it reads the next: with the socket full it stops taking
 * requests, and with its input buffer full it stops reading. A client that then reads
 * within the idle deadline gets every answer (slowed down, not cut); one that never
 * reads is cut after idle_timeout_ms without progress, and not before. */
static void test_client_not_reading(void **state)
{
    (void)state;
    enum { N = 400, IDLE = 1000 }; /* IDLE: room for a loaded machine in the read-later case */
    sk_http_opts o = default_opts;
    o.idle_timeout_ms = IDLE;
    o.read_timeout_ms = 60000; /* not the deadline under test */
    static char reqs[N * 32];
    size_t len = 0;
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(reqs + len, sizeof(reqs) - len, "GET /r%d HTTP/1.1\r\nHost: h\r\n\r\n", i);

    for (int reads_later = 1; reads_later >= 0; reads_later--) {
        sk_test_http t;
        start(&t, &o, SK_TEST_ANSWER_NOW);
        t.pad = 65536; /* a few answers fill the socket */
        t.reading = 0;
        assert_int_equal(send(t.cfd, reqs, len, MSG_NOSIGNAL), (ssize_t)len);
        int64_t t0 = sk_test_now_ms();
        while (sk_test_now_ms() - t0 < 200)
            sk_test_http_turn(&t, 20);
        /* stopped: some requests handled, the rest left unread in the socket */
        assert_true(t.nreq >= 1 && t.nreq < N);
        assert_true(sk_test_http_unread(&t) > 0);
        assert_int_equal(t.eof, 0);
        int stalled = t.nreq;
        if (reads_later) {
            t.reading = 1;
            int64_t end = sk_test_now_ms() + 20000;
            while (t.nreq < N && sk_test_now_ms() < end)
                sk_test_http_turn(&t, 20);
            settle(&t);
            assert_int_equal(t.nreq, N);
            assert_int_equal(count(&t, "HTTP/1.1 200 OK\r\n"), N);
            assert_true(pos(&t, "#400 /r399\n") > 0);
            assert_int_equal(t.eof, 0);
        } else {
            /* not read: POLLHUP on the client's end once the server closed its own */
            struct pollfd p = {.fd = t.cfd, .events = 0};
            int64_t end = sk_test_now_ms() + IDLE + 5000;
            while (sk_test_now_ms() < end) {
                sk_test_http_turn(&t, 20);
                if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
                    break;
            }
            assert_true(p.revents & POLLHUP);
            int64_t cut_after = sk_test_now_ms() - t.last_req_ms;
            /* the last progress came at or after the last request handed on; the coarse
             * clock the server reads may lag by a tick */
            assert_true(cut_after >= IDLE - 20);
            assert_int_equal(t.nreq, stalled);
        }
        sk_test_http_stop(&t);
    }
}

/* A refusal closes with a lingering close: FIN after the answer, the input still read.
 * The client reads the whole answer and then a clean EOF (on a unix socket a close with
 * unread input would make that ECONNRESET), and may still write (drained). */
static void test_linger(void **state)
{
    (void)state;
    sk_test_http t;
    start(&t, NULL, SK_TEST_ANSWER_NOW);
    static char junk[32768];
    memset(junk, 'j', sizeof(junk));
    send_str(&t, "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_int_equal(sk_test_http_write(&t, junk, sizeof(junk)), 0);
    wait_eof(&t, 5000);
    assert_int_equal(t.eof, 1); /* not -ECONNRESET */
    assert_int_equal(t.nreq, 0);
    assert_true(pos(&t, "HTTP/1.1 400 Bad Request\r\n") == 0);
    assert_true(pos(&t, "Connection: close\r\n") > 0);
    static const char body[] =
        "{\"error\":\"bad_request\",\"message\":\"Transfer-Encoding is not accepted: send Content-Length\"}";
    assert_true(t.got.len > sizeof(body) - 1);
    assert_memory_equal(t.got.p + t.got.len - (sizeof(body) - 1), body, sizeof(body) - 1);
    /* still drained: more input is taken, not refused */
    assert_int_equal(sk_test_http_write(&t, junk, sizeof(junk)), 0);
    settle(&t);
    assert_int_equal(sk_test_http_unread(&t), 0);
    sk_test_http_stop(&t);
}

/* DEL (0x7f) in a header value, a name or the target: 400, the handler never sees it,
 * the connection closes; an obs-text byte (0x80) in a value passes. */
static void test_del_refused(void **state)
{
    (void)state;
    static const char *bad[] = {
        "GET / HTTP/1.1\r\nX-A: a\x7f\r\n\r\n",
        "GET / HTTP/1.1\r\nX\x7f: a\r\n\r\n",
        "GET /\x7f HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nX-A: 0123456789\x7f" "abcdef\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sk_test_http t;
        start(&t, NULL, SK_TEST_ANSWER_NOW);
        send_str(&t, bad[i]);
        wait_eof(&t, 5000);
        if (t.nreq != 0 || pos(&t, "HTTP/1.1 400 Bad Request\r\n") != 0)
            fail_msg("case %zu: %d requests handed on, answer %.*s", i, t.nreq, (int)t.got.len,
                     t.got.p);
        assert_true(pos(&t, "malformed request line or header line") > 0);
        settle(&t);
        sk_test_http_stop(&t);
    }
    sk_test_http t;
    start(&t, NULL, SK_TEST_ANSWER_NOW);
    send_str(&t, "GET / HTTP/1.0\r\nX-A: a\x80\r\n\r\n");
    settle(&t);
    assert_int_equal(t.nreq, 1);
    assert_memory_equal(t.seen.p, "M0 1:/H3:X-A2:a\x80" "B0:.\n", 19);
    sk_test_http_stop(&t);
}

/* Two pipelined requests (the second with a body), cut in two at every byte: the
 * handler sees what it sees when they come in one write, and the client reads the same
 * answers (the Date and a 100 Continue masked). */
static void test_split_every_byte(void **state)
{
    (void)state;
    static const char two[] = "\r\nPOST /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                              "Content-Length: 4\r\n\r\nbodyGET /b HTTP/1.1\nHost: h\nX-A: \t1\t\n\n";
    size_t n = sizeof(two) - 1;
    for (int mode = SK_TEST_ANSWER_NOW; mode <= SK_TEST_ANSWER_LATER; mode++) {
        sk_test_http whole;
        start(&whole, NULL, (sk_test_answer_mode)mode);
        send_str(&whole, two);
        settle(&whole);
        assert_int_equal(whole.nreq, 2);
        size_t wlen = sk_test_http_normalize(whole.got.p, whole.got.len, 0);
        for (size_t cut = 1; cut < n; cut++) {
            sk_test_http t;
            start(&t, NULL, (sk_test_answer_mode)mode);
            assert_int_equal(sk_test_http_write(&t, two, cut), 0);
            settle(&t);
            assert_int_equal(sk_test_http_write(&t, two + cut, n - cut), 0);
            settle(&t);
            size_t glen = sk_test_http_normalize(t.got.p, t.got.len, 0);
            if (t.seen.len != whole.seen.len || memcmp(t.seen.p, whole.seen.p, t.seen.len) != 0 ||
                glen != wlen || memcmp(t.got.p, whole.got.p, wlen) != 0)
                fail_msg("mode %d cut at %zu: seen %.*s | answers %.*s", mode, cut,
                         (int)t.seen.len, t.seen.p, (int)glen, t.got.p);
            sk_test_http_stop(&t);
        }
        sk_test_http_stop(&whole);
    }
}

/* A body larger than the first input buffer (4096), arriving in pieces after its head:
 * the buffer grows under the head that waits for it (the offsets path), the body comes
 * out whole. */
static void test_body_grows_buffer(void **state)
{
    (void)state;
    enum { BODY = 20000 };
    static char req[BODY + 128];
    int h = snprintf(req, sizeof(req), "POST /big HTTP/1.0\r\nX-A: v\r\nContent-Length: %d\r\n\r\n",
                     BODY);
    for (int i = 0; i < BODY; i++)
        req[h + i] = (char)('a' + i % 26);
    sk_test_http t;
    start(&t, NULL, SK_TEST_ANSWER_NOW);
    for (size_t off = 0; off < (size_t)h + BODY; off += 999) {
        size_t k = (size_t)h + BODY - off < 999 ? (size_t)h + BODY - off : 999;
        assert_int_equal(sk_test_http_write(&t, req + off, k), 0);
        settle(&t);
    }
    assert_int_equal(t.nreq, 1);
    char want[128];
    int w = snprintf(want, sizeof(want), "M2 4:/bigH3:X-A1:vH14:Content-Length5:%dB%d:", BODY, BODY);
    assert_memory_equal(t.seen.p, want, (size_t)w);
    assert_memory_equal(t.seen.p + w, req + h, BODY);
    assert_true(pos(&t, "#1 /big\nabcdefghij") > 0);
    sk_test_http_stop(&t);
}

/* The slow-client deadline: a head that does not finish within read_timeout_ms is cut
 * (no answer); the connection cap closes one over it at once. */
static void test_deadline_and_cap(void **state)
{
    (void)state;
    sk_http_opts o = default_opts;
    o.read_timeout_ms = 200;
    o.max_conns = 1;
    sk_test_http t;
    start(&t, &o, SK_TEST_ANSWER_NOW);
    int64_t t0 = sk_test_now_ms();
    send_str(&t, "GET / HTTP/1.1\r\nHo");
    wait_eof(&t, 5000);
    assert_true(sk_test_now_ms() - t0 >= 200 - 20);
    assert_int_equal(t.nreq, 0);
    assert_int_equal(t.got.len, 0);
    /* the cap: the first connection is gone now, so one more fits and a second does not */
    int sv[2], sw[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sw), 0);
    settle(&t); /* the sweep freed the cut connection */
    assert_int_equal(sk_http_adopt(t.srv, sv[1]), 0);
    assert_int_equal(sk_http_adopt(t.srv, sw[1]), -1);
    /* answered 503 and closed by the server at once (issue 33: a bare close before) */
    char ans[512];
    ssize_t got = 0, n;
    while ((n = read(sw[0], ans + got, sizeof(ans) - 1 - (size_t)got)) > 0)
        got += n;
    assert_int_equal(n, 0);
    ans[got] = 0;
    assert_non_null(strstr(ans, "HTTP/1.1 503 Service Unavailable\r\n"));
    assert_non_null(strstr(ans, "Connection: close\r\n"));
    assert_non_null(strstr(ans, "\r\n\r\n{\"error\":\"unavailable\""));
    close(sv[0]);
    close(sw[0]);
    settle(&t);
    sk_test_http_stop(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_reads),     cmocka_unit_test(test_pipelining),
        cmocka_unit_test(test_half_close),        cmocka_unit_test(test_client_not_reading),
        cmocka_unit_test(test_linger),            cmocka_unit_test(test_del_refused),
        cmocka_unit_test(test_split_every_byte),  cmocka_unit_test(test_body_grows_buffer),
        cmocka_unit_test(test_deadline_and_cap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
