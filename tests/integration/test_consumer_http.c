/* Integration: the limits of seckill-consumer's HTTP port (issue 14, item 2). With
 * http.bind 127.0.0.1 and http.timeout_s 2: a 300 MB POST is refused before its body is
 * buffered (the process stays small), 100 KB of headers are refused, a partial request
 * is closed within the timeout, methods other than GET/HEAD get 405, and /healthz still
 * answers after all of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_test_redis.h"
#include "test_consumer_util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DB_NAME "sk_test_consumer_http"
#define TIMEOUT_S 2

/* A connection the test cannot do without (sk_test_connect_port). */
static int connect_to(int port)
{
    int fd = sk_test_connect_port(port);
    assert_true(fd >= 0);
    return fd;
}

/* Reads until EOF/reset or timeout_ms. @returns 1 if the server closed; out holds what came. */
static int read_until_closed(int fd, int timeout_ms, char *out, size_t outsz)
{
    size_t got = 0;
    int64_t deadline = sk_test_now_ms() + timeout_ms;
    out[0] = 0;
    while (sk_test_now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - sk_test_now_ms())) <= 0)
            return 0;
        ssize_t r = recv(fd, out + got, outsz - 1 - got, 0);
        if (r <= 0)
            return 1;
        got += (size_t)r;
        out[got] = 0;
        if (got == outsz - 1)
            got = 0; /* keep reading; only the close matters past here */
    }
    return 0;
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

static void assert_json_refusal(const char *out, const char *status);

static void test_http_limits(void **state)
{
    (void)state;
    ctu_kafka k;
    assert_int_equal(ctu_kafka_start(&k, 1), 0);
    char *conninfo = ctu_db_create(DB_NAME);
    assert_non_null(conninfo);
    int port = sk_test_free_port();
    ctu_env ce;
    char env_port[64], env_to[64];
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    snprintf(env_to, sizeof(env_to), "SECKILL_HTTP_TIMEOUT_S=%d", TIMEOUT_S);
    const char *env[] = {ce.pg, ce.brokers, env_port, env_to, "SECKILL_HTTP_BIND=127.0.0.1",
                         "SECKILL_GROUP_ID=http-test", NULL};
    pid_t pid = ctu_consumer_spawn(env);
    assert_int_equal(ctu_wait_healthy(port, 60000), 0);
    long rss0 = rss_kb(pid);
    char out[4096];

    /* 300 MB announced, 32 MB sent: refused before buffering, connection closed. */
    int fd = connect_to(port);
    const char *head = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 300000000\r\n\r\n";
    assert_int_equal(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
    static char chunk[1 << 20];
    memset(chunk, 'a', sizeof(chunk));
    for (int i = 0; i < 32; i++)
        if (send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) < 0)
            break; /* closed on us: what we want */
    assert_int_equal(read_until_closed(fd, 5000, out, sizeof(out)), 1);
    close(fd);
    long rss1 = rss_kb(pid);
    fprintf(stderr, "# RSS %ld kB before, %ld kB after the big POST\n", rss0, rss1);
    assert_true(rss1 > 0 && rss1 - rss0 < 16 * 1024);

    /* 100 KB of headers: refused and closed. */
    fd = connect_to(port);
    char *big = malloc(100 * 1024 + 256);
    int n = snprintf(big, 256, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + n, 'b', 100 * 1024);
    memcpy(big + n + 100 * 1024, "\r\n\r\n", 4);
    send(fd, big, (size_t)n + 100 * 1024 + 4, MSG_NOSIGNAL);
    free(big);
    assert_int_equal(read_until_closed(fd, 5000, out, sizeof(out)), 1);
    assert_null(strstr(out, "200 OK"));
    close(fd);

    /* A partial request: closed within the timeout (plus scheduling slack). */
    fd = connect_to(port);
    const char *part = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
    assert_int_equal(send(fd, part, strlen(part), MSG_NOSIGNAL), (ssize_t)strlen(part));
    int64_t t0 = sk_test_now_ms();
    assert_int_equal(read_until_closed(fd, (TIMEOUT_S + 5) * 1000, out, sizeof(out)), 1);
    assert_true(sk_test_now_ms() - t0 < (TIMEOUT_S + 3) * 1000);
    close(fd);

    /* Not GET: 405, closed. */
    fd = connect_to(port);
    const char *del = "DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(fd, del, strlen(del), MSG_NOSIGNAL), (ssize_t)strlen(del));
    assert_int_equal(read_until_closed(fd, 5000, out, sizeof(out)), 1);
    assert_json_refusal(out, "HTTP/1.1 405 ");
    close(fd);
    /* An unknown path: a JSON 404 like every other error of the port. */
    fd = connect_to(port);
    const char *nf = "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(send(fd, nf, strlen(nf), MSG_NOSIGNAL), (ssize_t)strlen(nf));
    assert_int_equal(read_until_closed(fd, 5000, out, sizeof(out)), 1);
    assert_json_refusal(out, "HTTP/1.1 404 ");
    close(fd);

    assert_int_equal(ctu_http_get(port, "/healthz", NULL), 200);
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

/* Sends `req` on a new connection: it must be closed within 5 s; out holds what came. */
static void one_refusal(int port, const char *req, char *out, size_t outsz)
{
    int fd = connect_to(port);
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    assert_int_equal(read_until_closed(fd, 5000, out, outsz), 1);
    close(fd);
}

static void assert_json_refusal(const char *out, const char *status)
{
    fprintf(stderr, "# %.*s\n", (int)strcspn(out, "\r"), out);
    assert_true(strncmp(out, status, strlen(status)) == 0);
    assert_non_null(strstr(out, "Content-Type: application/json"));
    assert_non_null(strstr(out, "Connection: close"));
    assert_non_null(strstr(out, "\r\n\r\n{\"error\":\""));
    assert_non_null(strstr(out, "\"message\":\""));
}

/* GET /healthz, then `req` on the same connection (after the first answer, or with it
 * when pipelined): the first answered 200, the second refused in JSON with `status`,
 * then the connection closed. */
static void second_refused(int port, const char *req, const char *status, int pipelined)
{
    static char both[4096], out[8192];
    const char *first = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    out[0] = 0;
    int fd = connect_to(port);
    if (pipelined) {
        snprintf(both, sizeof(both), "%s%s", first, req);
        assert_int_equal(send(fd, both, strlen(both), MSG_NOSIGNAL), (ssize_t)strlen(both));
    } else {
        assert_int_equal(send(fd, first, strlen(first), MSG_NOSIGNAL), (ssize_t)strlen(first));
        /* the whole first answer (its body is "ok\n") before the second request */
        size_t got = 0;
        int64_t t0 = sk_test_now_ms();
        while (!strstr(out, "\r\n\r\nok\n") && sk_test_now_ms() - t0 < 5000) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 100) == 1) {
                ssize_t r = recv(fd, out + got, sizeof(out) - 1 - got, 0);
                assert_true(r > 0);
                got += (size_t)r;
            }
            out[got] = 0;
        }
        assert_non_null(strstr(out, "\r\n\r\nok\n"));
        assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    }
    char rest[4096];
    assert_int_equal(read_until_closed(fd, 5000, rest, sizeof(rest)), 1);
    close(fd);
    const char *answer = rest;
    if (pipelined) {
        assert_true(strncmp(rest, "HTTP/1.1 200 ", 13) == 0);
        answer = strstr(rest, "\r\n\r\nok\n");
        assert_non_null(answer);
        answer += 7;
    }
    assert_json_refusal(answer, status);
}

/* The HTTP server shared with seckill-order (common/sk_http.c): a whole-request deadline
 * (a byte every 200 ms keeps an idle timeout of 10 s from ever firing), a connection
 * cap, and JSON refusals. */
static void test_http_guard(void **state)
{
    (void)state;
    ctu_kafka k;
    assert_int_equal(ctu_kafka_start(&k, 1), 0);
    char *conninfo = ctu_db_create(DB_NAME);
    assert_non_null(conninfo);
    int port = sk_test_free_port();
    ctu_env ce;
    char env_port[64];
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_HTTP_BIND=127.0.0.1",
                         "SECKILL_HTTP_TIMEOUT_S=10", "SECKILL_HTTP_READ_TIMEOUT_MS=1500",
                         "SECKILL_LIMITS_CONNECTIONS=4", "SECKILL_HTTP_MAX_HEADER_BYTES=1024",
                         "SECKILL_GROUP_ID=http-guard-test", NULL};
    pid_t pid = ctu_consumer_spawn(env);
    assert_int_equal(ctu_wait_healthy(port, 60000), 0);
    char out[4096];

    /* A byte every 200 ms: cut at the read deadline, long before evhttp's 10 s. */
    int fd = connect_to(port);
    const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    int64_t t0 = sk_test_now_ms(), cut_at = -1;
    for (size_t i = 0; req[i] && cut_at < 0 && sk_test_now_ms() - t0 < 9000; i++) {
        if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1 || read_until_closed(fd, 200, out, sizeof(out)))
            cut_at = sk_test_now_ms();
    }
    close(fd);
    fprintf(stderr, "# dribbling client cut after %lld ms\n", (long long)(cut_at - t0));
    assert_true(cut_at > 0);
    assert_true(cut_at - t0 >= 1400 && cut_at - t0 < 1500 + 3000);

    /* An empty line every 500 ms (issue 33: each one restarted the clocks, and the
     * connection stayed as long as the trickle went on): cut at the same deadline,
     * counted from the first. */
    fd = connect_to(port);
    t0 = sk_test_now_ms(), cut_at = -1;
    for (int i = 0; i < 4 && cut_at < 0; i++) {
        if (send(fd, "\r\n", 2, MSG_NOSIGNAL) != 2 || read_until_closed(fd, 500, out, sizeof(out)))
            cut_at = sk_test_now_ms();
    }
    if (cut_at < 0 && read_until_closed(fd, 5000, out, sizeof(out)))
        cut_at = sk_test_now_ms();
    close(fd);
    fprintf(stderr, "# CRLF trickle cut after %lld ms\n", (long long)(cut_at - t0));
    assert_true(cut_at > 0);
    assert_true(cut_at - t0 >= 1400 && cut_at - t0 < 1500 + 3000);

    /* Four connections held (each answered once, kept alive): a fifth is answered 503
     * and closed at once, and one given back makes room again. */
    int held[4];
    for (int i = 0; i < 4; i++) {
        held[i] = connect_to(port);
        const char *get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_int_equal(send(held[i], get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
        assert_int_equal(read_until_closed(held[i], 500, out, sizeof(out)), 0);
        assert_true(strncmp(out, "HTTP/1.1 200 ", 13) == 0);
    }
    fd = connect_to(port);
    assert_int_equal(read_until_closed(fd, 3000, out, sizeof(out)), 1);
    assert_true(strncmp(out, "HTTP/1.1 503 ", 13) == 0); /* issue 33: answered, then closed */
    close(fd);
    close(held[0]);
    int st = -1;
    for (int64_t t1 = sk_test_now_ms(); st != 200 && sk_test_now_ms() - t1 < 5000;) {
        st = ctu_http_get(port, "/healthz", NULL);
        if (st != 200)
            sk_test_pause_ms(50); /* the close reaches the server's loop */
    }
    assert_int_equal(st, 200);
    for (int i = 1; i < 4; i++)
        close(held[i]);

    /* What evhttp would answer in HTML (or not at all): JSON, Connection: close, closed. */
    static char big[2048];
    int n = snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + n, 'b', 1200);
    memcpy(big + n + 1200, "\r\n\r\n", 5);
    one_refusal(port, big, out, sizeof(out));
    assert_json_refusal(out, "HTTP/1.1 431 ");
    one_refusal(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", out,
                sizeof(out));
    assert_json_refusal(out, "HTTP/1.1 413 ");
    one_refusal(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: nope\r\n\r\n", out, sizeof(out));
    assert_json_refusal(out, "HTTP/1.1 400 ");
    one_refusal(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                out, sizeof(out));
    assert_json_refusal(out, "HTTP/1.1 400 ");
    one_refusal(port, "QUERY /metrics HTTP/1.1\r\nHost: x\r\n\r\n", out, sizeof(out));
    assert_json_refusal(out, "HTTP/1.1 405 ");
    assert_non_null(strstr(out, "Allow: GET, HEAD\r\n"));
    /* No body on any method (evhttp: HTML 413). */
    one_refusal(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", out,
                sizeof(out));
    assert_json_refusal(out, "HTTP/1.1 413 ");
    /* Framing evhttp would take (two Content-Length headers): the handler answers 400
     * JSON and the guard closes. */
    one_refusal(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
                out, sizeof(out));
    assert_json_refusal(out, "HTTP/1.1 400 ");

    /* The same refusals as a connection's second request, kept alive (sent after the
     * first answer) and pipelined (both at once): the first gets its 200, the second
     * the JSON answer with Connection: close (never evhttp's HTML), then the close. */
    const char *second[] = {big,
                            "GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: nope\r\n\r\n",
                            "QUERY /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                            "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
                            "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"};
    const char *status[] = {"HTTP/1.1 431 ", "HTTP/1.1 400 ", "HTTP/1.1 405 ", "HTTP/1.1 400 ",
                            "HTTP/1.1 413 ", "HTTP/1.1 400 "};
    for (int pipelined = 0; pipelined < 2; pipelined++)
        for (size_t i = 0; i < sizeof(second) / sizeof(second[0]); i++)
            second_refused(port, second[i], status[i], pipelined);

    assert_int_equal(ctu_http_get(port, "/healthz", NULL), 200);
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

/* GET /metrics from `ip` to `port` (with `auth` as the Authorization value, or none):
 * @returns the status, or -1. */
static int metrics_status(const char *ip, int port, const char *auth)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (fd < 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char req[256], out[65536];
    int n = snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: x\r\n%s%s%s"
                     "Connection: close\r\n\r\n", auth ? "Authorization: " : "",
                     auth ? auth : "", auth ? "\r\n" : "");
    int st = -1;
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n && read_until_closed(fd, 5000, out, sizeof(out)) &&
        strncmp(out, "HTTP/1.1 ", 9) == 0)
        st = atoi(out + 9);
    close(fd);
    return st;
}

/* An IPv4 address of this host that is not loopback, into ip; 0, or -1 if none. */
static int outside_ip(char *ip, size_t sz)
{
    struct ifaddrs *ifs, *i;
    int rc = -1;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (i = ifs; i && rc != 0; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
            if ((ntohl(a->sin_addr.s_addr) >> 24) != 127 && inet_ntop(AF_INET, &a->sin_addr, ip, (socklen_t)sz))
                rc = 0;
        }
    freeifaddrs(ifs);
    return rc;
}

/* /metrics is no longer open to all (issue 33): without metrics.token only this host's
 * peers get it; with a token only its bearer. */
static void test_metrics_guard(void **state)
{
    (void)state;
    ctu_kafka k;
    assert_int_equal(ctu_kafka_start(&k, 1), 0);
    char *conninfo = ctu_db_create(DB_NAME);
    assert_non_null(conninfo);
    ctu_env ce;
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    char ip[64];
    int have_outside = outside_ip(ip, sizeof(ip)) == 0;
    for (int with_token = 0; with_token < 2; with_token++) {
        int port = sk_test_free_port();
        char env_port[64];
        snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
        const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_HTTP_BIND=0.0.0.0",
                             "SECKILL_GROUP_ID=http-metrics-test",
                             with_token ? "SECKILL_METRICS_TOKEN=t0ken-of-the-test" : "SECKILL_METRICS_TOKEN=",
                             NULL};
        pid_t pid = ctu_consumer_spawn(env);
        assert_int_equal(ctu_wait_healthy(port, 60000), 0);
        if (!with_token) {
            assert_int_equal(metrics_status("127.0.0.1", port, NULL), 200);
            if (have_outside)
                assert_int_equal(metrics_status(ip, port, NULL), 401);
            else
                fprintf(stderr, "# no non-loopback IPv4 address: the outside case is skipped\n");
        } else {
            assert_int_equal(metrics_status("127.0.0.1", port, NULL), 401);
            assert_int_equal(metrics_status("127.0.0.1", port, "Bearer t0ken-of-the-tesT"), 401);
            assert_int_equal(metrics_status("127.0.0.1", port, "Bearer t0ken-of-the-test"), 200);
            if (have_outside)
                assert_int_equal(metrics_status(ip, port, "Bearer t0ken-of-the-test"), 200);
        }
        assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    }
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_http_limits),
                                       cmocka_unit_test(test_http_guard),
                                       cmocka_unit_test(test_metrics_guard)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
