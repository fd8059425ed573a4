/* Integration test of sb_load, seckill-bench's engine, against a scripted HTTP server in
 * this process (loopback only): keep-alive, pipelining over two worker threads, a
 * server that says Connection: close, one that drops a connection without answering,
 * and the rate limiter. Every request must be counted exactly once. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sb_load.h"
#include "sk_jwt.h"

/* --- the scripted server --------------------------------------------------------------- */

#define MAXC 64

typedef struct server {
    int lfd, port;
    pthread_t th;
    atomic_int stop;
    int stock;           /* the first `stock` requests get a 202 */
    int close_every;     /* every Nth answer says Connection: close (0: never) */
    int drop_at;         /* the Nth request overall is dropped: connection closed, no answer */
    int seen, accepts;   /* requests read, connections accepted (server thread only until joined) */
    int bad_auth;        /* requests without a Bearer token */
} server;

static void serve_conn(server *s, int fd, char *buf, size_t *len, int *open)
{
    ssize_t n = recv(fd, buf + *len, 65536 - *len, 0);
    if (n <= 0) {
        *open = 0;
        return;
    }
    *len += (size_t)n;
    char *p = buf, *end;
    while ((end = memmem(p, (size_t)(buf + *len - p), "\r\n\r\n", 4)) != NULL) {
        s->seen++;
        if (!memmem(p, (size_t)(end - p), "Authorization: Bearer ey", 24))
            s->bad_auth++;
        p = end + 4;
        if (s->seen == s->drop_at) {
            *open = 0;
            return;
        }
        char out[256], body[128];
        int close = s->close_every && s->seen % s->close_every == 0;
        int status = s->seen <= s->stock ? 202 : 409;
        if (status == 202)
            snprintf(body, sizeof(body), "{\"order_id\":\"%d\",\"status\":\"queued\"}", 1000 + s->seen);
        else
            snprintf(body, sizeof(body), "{\"error\":\"sold_out\",\"message\":\"no stock left\"}");
        int ol = snprintf(out, sizeof(out), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n%s",
                          status, close ? "Connection: close\r\n" : "", strlen(body), body);
        if (send(fd, out, (size_t)ol, MSG_NOSIGNAL) != ol) {
            *open = 0;
            return;
        }
        if (close) {
            *open = 0;
            return;
        }
    }
    memmove(buf, p, (size_t)(buf + *len - p));
    *len = (size_t)(buf + *len - p);
}

static void *server_main(void *arg)
{
    server *s = arg;
    struct pollfd pf[MAXC + 1];
    char *bufs[MAXC];
    size_t lens[MAXC];
    int n = 0;
    pf[0].fd = s->lfd;
    pf[0].events = POLLIN;
    while (!atomic_load(&s->stop)) {
        if (poll(pf, (nfds_t)(n + 1), 20) <= 0)
            continue;
        if ((pf[0].revents & POLLIN) && n < MAXC) {
            int fd = accept(s->lfd, NULL, NULL);
            if (fd >= 0) {
                s->accepts++;
                pf[n + 1].fd = fd;
                pf[n + 1].events = POLLIN;
                pf[n + 1].revents = 0;
                bufs[n] = malloc(65536);
                lens[n] = 0;
                n++;
            }
        }
        for (int i = 0; i < n; i++) {
            if (!(pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int open = 1;
            serve_conn(s, pf[i + 1].fd, bufs[i], &lens[i], &open);
            if (!open) {
                close(pf[i + 1].fd);
                free(bufs[i]);
                pf[i + 1] = pf[n];
                bufs[i] = bufs[n - 1];
                lens[i] = lens[n - 1];
                n--;
                i--;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        close(pf[i + 1].fd);
        free(bufs[i]);
    }
    return NULL;
}

static server *server_start(int stock, int close_every, int drop_at)
{
    server *s = calloc(1, sizeof(*s));
    s->stock = stock;
    s->close_every = close_every;
    s->drop_at = drop_at;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t al = sizeof(a);
    getsockname(s->lfd, (struct sockaddr *)&a, &al);
    s->port = ntohs(a.sin_port);
    assert_int_equal(listen(s->lfd, 128), 0);
    pthread_create(&s->th, NULL, server_main, s);
    return s;
}

static void server_stop(server *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    close(s->lfd);
    free(s);
}

/* --- driving sb_load -------------------------------------------------------------------- */

typedef struct run {
    sb_url url;
    sb_plan plan;
    sb_tokens tk;
    sb_stats st;
    double secs;
} run;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int g_open_loop; /* run_load's pacing: 0 closed loop, 1 open loop */

static void run_load(run *r, int port, uint64_t users, uint64_t requests, int conns, int threads,
                     int pipeline, double rate)
{
    char err[256], u[64];
    snprintf(u, sizeof(u), "http://127.0.0.1:%d", port);
    assert_int_equal(sb_url_parse(u, strlen(u), &r->url, err, sizeof(err)), 0);
    assert_int_equal(sb_plan_init(&r->plan, users, requests, 7), 0);
    r->tk.n = users;
    r->tk.arena = malloc(users * 300);
    r->tk.off = malloc((users + 1) * sizeof(uint32_t));
    r->tk.off[0] = 0;
    for (uint64_t i = 1; i <= users; i++) {
        int n = sk_jwt_mint((const unsigned char *)"k", 1, i, 0, 4000000000LL, r->tk.arena + r->tk.off[i - 1], 300);
        assert_true(n > 0);
        r->tk.off[i] = r->tk.off[i - 1] + (uint32_t)n;
    }
    sb_load_cfg cfg = {.urls = &r->url, .nurls = 1, .connections = conns, .threads = threads,
                       .pipeline = pipeline, .requests = requests, .rate = rate, .open_loop = g_open_loop, .stall_s = 10,
                       .event_id = 77, .plan = &r->plan, .tokens = &r->tk};
    sb_load *l = sb_load_new(&cfg, err, sizeof(err));
    assert_non_null(l);
    sb_stats_init(&r->st);
    uint64_t t0 = now_ns();
    assert_int_equal(sb_load_start(l, t0, err, sizeof(err)), 0);
    while (!sb_load_finished(l)) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    r->secs = (double)(now_ns() - t0) / 1e9;
    int rc = sb_load_join(l, &r->st, err, sizeof(err));
    sb_load_free(l);
    free(r->tk.arena);
    free(r->tk.off);
    assert_int_equal(rc, 0);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_pipelined_two_threads(void **state)
{
    server *s = server_start(300, 0, 0);
    run r;
    run_load(&r, s->port, 500, 3000, 8, 2, 4, 0);
    server_stop(s);
    assert_int_equal(r.st.sent, 3000);
    assert_int_equal(r.st.answered, 3000);
    assert_int_equal(sb_stats_count_status(&r.st, 202), 300);
    assert_int_equal(sb_stats_count_status(&r.st, 409), 2700);
    assert_int_equal(sb_stats_count_status(&r.st, 0), 0);
    /* every 202's id kept once: 1001..1300 */
    assert_int_equal(r.st.naccepted, 300);
    qsort(r.st.accepted, r.st.naccepted, sizeof(uint64_t), cmp_u64);
    for (size_t i = 0; i < r.st.naccepted; i++)
        assert_int_equal(r.st.accepted[i], 1001 + i);
    assert_int_equal(r.st.lat.count, 3000);
    int found = 0;
    for (int i = 0; i < r.st.noutcomes; i++)
        found |= r.st.outcomes[i].status == 409 && strcmp(r.st.outcomes[i].code, "sold_out") == 0;
    assert_true(found);
    sb_stats_free(&r.st);
}

static void test_connection_close_reconnects(void **state)
{
    server *s = server_start(10, 7, 0);
    run r;
    run_load(&r, s->port, 100, 500, 4, 1, 1, 0);
    int accepts = s->accepts, bad = s->bad_auth;
    server_stop(s);
    assert_int_equal(bad, 0);
    assert_int_equal(r.st.answered, 500);
    assert_int_equal(sb_stats_count_status(&r.st, 0), 0); /* a clean close loses nothing */
    assert_int_equal(sb_stats_count_status(&r.st, 202), 10);
    assert_true(accepts >= 500 / 7); /* it reconnected after each close */
    sb_stats_free(&r.st);
}

static void test_dropped_connection_counts_io(void **state)
{
    server *s = server_start(0, 0, 50);
    run r;
    run_load(&r, s->port, 100, 400, 4, 1, 1, 0);
    server_stop(s);
    assert_int_equal(r.st.sent, 400);
    assert_int_equal(r.st.answered, 400);
    assert_int_equal(sb_stats_count_status(&r.st, 0), 1); /* the dropped request, once */
    assert_int_equal(sb_stats_count_status(&r.st, 409), 399);
    sb_stats_free(&r.st);
}

static void test_rate_limit(void **state)
{
    server *s = server_start(0, 0, 0);
    run r;
    run_load(&r, s->port, 100, 1000, 8, 1, 1, 2000);
    server_stop(s);
    assert_int_equal(r.st.answered, 1000);
    /* 1000 requests at 2000/s: half a second, not the few ms flat out would take */
    assert_true(r.secs >= 0.4);
    assert_true(r.secs < 3.0);
    sb_stats_free(&r.st);
}

/* Open loop keeps the same average rate on a server that keeps up, and every request is
 * counted once. */
static void test_rate_open_loop(void **state)
{
    server *s = server_start(0, 0, 0);
    run r;
    g_open_loop = 1;
    run_load(&r, s->port, 100, 1000, 8, 1, 1, 2000);
    g_open_loop = 0;
    server_stop(s);
    assert_int_equal(r.st.answered, 1000);
    assert_int_equal(sb_stats_count_status(&r.st, 409), 1000);
    assert_true(r.secs >= 0.4);
    assert_true(r.secs < 3.0);
    sb_stats_free(&r.st);
}

static void test_nobody_listening_gives_up(void **state)
{
    /* a port nobody listens on: connect fails, the engine stops after stall_s (10 s is
     * too long for a test: use a small stall) */
    server *s = server_start(0, 0, 0);
    int port = s->port;
    server_stop(s); /* closed: connections are refused */
    char err[256], u[64];
    sb_url url;
    snprintf(u, sizeof(u), "http://127.0.0.1:%d", port);
    assert_int_equal(sb_url_parse(u, strlen(u), &url, err, sizeof(err)), 0);
    sb_plan plan;
    sb_plan_init(&plan, 1, 10, 1);
    char tok[300];
    int n = sk_jwt_mint((const unsigned char *)"k", 1, 1, 0, 4000000000LL, tok, sizeof(tok));
    uint32_t off[2] = {0, (uint32_t)n};
    sb_tokens tk = {.arena = tok, .off = off, .n = 1};
    sb_load_cfg cfg = {.urls = &url, .nurls = 1, .connections = 2, .threads = 1, .pipeline = 1,
                       .requests = 10, .stall_s = 1, .event_id = 1, .plan = &plan, .tokens = &tk};
    sb_load *l = sb_load_new(&cfg, err, sizeof(err));
    assert_non_null(l);
    assert_int_equal(sb_load_start(l, now_ns(), err, sizeof(err)), 0);
    sb_stats st;
    sb_stats_init(&st);
    assert_int_equal(sb_load_join(l, &st, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "no connection answered"));
    sb_load_progress_t p;
    sb_load_progress(l, &p);
    assert_true(p.connect_errors > 0);
    assert_int_equal(st.answered, 0);
    sb_load_free(l);
    sb_stats_free(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelined_two_threads),
        cmocka_unit_test(test_connection_close_reconnects),
        cmocka_unit_test(test_dropped_connection_counts_io),
        cmocka_unit_test(test_rate_limit),
        cmocka_unit_test(test_rate_open_loop),
        cmocka_unit_test(test_nobody_listening_gives_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
