/* sk_test_http: sk_http over a socketpair in one thread. See sk_test_http.h. */
#include "sk_test_http.h"
#include "sk_test_proc.h"

#include <errno.h>
#include <event2/event.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int buf_add(sk_test_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return -1;
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

/* tag, then "<n>:", then s[0..n) (the length makes a record binary-safe). */
static int buf_field(sk_test_buf *b, const char *tag, const char *s, size_t n)
{
    char num[48];
    int k = snprintf(num, sizeof(num), "%s%zu:", tag, n);
    return buf_add(b, num, (size_t)k) == 0 && buf_add(b, s, n) == 0 ? 0 : -1;
}

/* One request as text: "M<method> <len>:<target>", each header "H<len>:<name><len>:<value>",
 * "F<framing>" if any, "B<len>:<body>", then ".\n" (lengths make it binary-safe). */
static void record(sk_test_http *t, sk_http_req *r)
{
    sk_test_buf *b = &t->seen;
    char m[16];
    int k = snprintf(m, sizeof(m), "M%d ", (int)sk_http_method_of(r));
    buf_add(b, m, (size_t)k);
    const char *uri = sk_http_uri(r);
    buf_field(b, "", uri, strlen(uri));
    int nh = sk_http_header_count(r);
    for (int i = 0; i < nh; i++) {
        const char *name, *value;
        if (sk_http_header_at(r, i, &name, &value) != 0)
            abort(); /* in range: a broken promise */
        buf_field(b, "H", name, strlen(name));
        buf_field(b, "", value, strlen(value));
    }
    const char *why = sk_http_framing(r);
    if (why)
        buf_field(b, "F", why, strlen(why));
    size_t blen;
    const char *body = sk_http_body(r, &blen);
    buf_field(b, "B", body, blen);
    buf_add(b, ".\n", 2);
}

static void answer(sk_test_http *t, sk_http_req *r, int seq)
{
    char num[24];
    snprintf(num, sizeof(num), "%d", seq);
    sk_http_add_header(r, "X-Seq", num);
    if (sk_http_framing(r)) {
        sk_http_reply(r, 400, "Bad Request", "application/json", "{\"error\":\"framing\"}", 19);
        return;
    }
    const char *uri = sk_http_uri(r);
    if (strstr(uri, "/close"))
        sk_http_add_header(r, "Connection", "close");
    size_t blen;
    const char *body = sk_http_body(r, &blen);
    sk_test_buf out = {0};
    char head[64];
    int k = snprintf(head, sizeof(head), "#%d ", seq);
    buf_add(&out, head, (size_t)k);
    buf_add(&out, uri, strlen(uri));
    buf_add(&out, "\n", 1);
    buf_add(&out, body, blen);
    char chunk[4096];
    memset(chunk, 'p', sizeof(chunk));
    for (size_t left = t->pad, step; left > 0; left -= step) {
        step = left < sizeof(chunk) ? left : sizeof(chunk);
        buf_add(&out, chunk, step);
    }
    sk_http_reply(r, 200, "OK", "text/plain", out.p, out.len);
    free(out.p);
}

typedef struct later {
    sk_test_http *t;
    sk_http_req *r;
    int seq;
} later;

static void on_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    later *l = arg;
    l->t->pending--;
    answer(l->t, l->r, l->seq);
    free(l);
}

static void on_request(sk_http_req *r, void *arg)
{
    sk_test_http *t = arg;
    int seq = ++t->nreq;
    t->last_req_ms = sk_test_now_ms();
    record(t, r);
    if (t->mode == SK_TEST_ANSWER_NOW || (t->mode == SK_TEST_ANSWER_ODD && seq % 2 == 0)) {
        answer(t, r, seq);
        return;
    }
    later *l = malloc(sizeof(*l));
    struct timeval zero = {0, 0};
    if (l) {
        *l = (later){t, r, seq};
        if (event_base_once(t->base, -1, EV_TIMEOUT, on_later, l, &zero) == 0) {
            t->pending++;
            return;
        }
        free(l);
    }
    answer(t, r, seq); /* could not defer: at once rather than never */
}

int sk_test_http_start(sk_test_http *t, struct event_base *base, const sk_http_opts *opts,
                       sk_test_answer_mode mode)
{
    memset(t, 0, sizeof(*t));
    t->base = base;
    t->mode = mode;
    t->reading = 1;
    t->cfd = -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    t->srv = sk_http_new(base, opts, on_request, t);
    if (!t->srv) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    t->cfd = sv[0];
    return sk_http_adopt(t->srv, sv[1]);
}

void sk_test_http_stop(sk_test_http *t)
{
    sk_http_free(t->srv);
    t->srv = NULL;
    if (t->cfd >= 0)
        close(t->cfd);
    t->cfd = -1;
    free(t->seen.p);
    free(t->got.p);
    memset(&t->seen, 0, sizeof(t->seen));
    memset(&t->got, 0, sizeof(t->got));
}

int sk_test_http_turn(sk_test_http *t, int block_ms)
{
    int nreq = t->nreq, pending = t->pending;
    size_t got = t->got.len;
    if (block_ms > 0) {
        struct timeval tv = {block_ms / 1000, (block_ms % 1000) * 1000};
        event_base_loopexit(t->base, &tv);
        event_base_loop(t->base, EVLOOP_ONCE);
    } else {
        event_base_loop(t->base, EVLOOP_NONBLOCK);
    }
    int moved = 0;
    while (t->reading && !t->eof) {
        char b[16384];
        ssize_t n = read(t->cfd, b, sizeof(b));
        if (n > 0) {
            buf_add(&t->got, b, (size_t)n);
        } else if (n == 0) {
            t->eof = 1;
            moved = 1;
        } else if (errno != EINTR) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                t->eof = -errno;
                moved = 1;
            }
            break;
        }
    }
    return moved || t->nreq != nreq || t->pending != pending || t->got.len != got;
}

size_t sk_test_http_unread(const sk_test_http *t)
{
    int n = 0;
    return ioctl(t->cfd, SIOCOUTQ, &n) == 0 && n > 0 ? (size_t)n : 0;
}

int sk_test_http_settle(sk_test_http *t, int max_turns)
{
    int quiet = 0;
    for (int i = 0; i < max_turns; i++) {
        int moved = sk_test_http_turn(t, 0);
        if (!moved && t->pending == 0 && (t->eof || sk_test_http_unread(t) == 0))
            quiet++;
        else
            quiet = 0;
        if (quiet >= 3)
            return 0;
    }
    return -1;
}

int sk_test_http_write(sk_test_http *t, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t k = send(t->cfd, s, n, MSG_NOSIGNAL);
        if (k > 0) {
            s += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            sk_test_http_turn(t, 10);
        } else if (k < 0 && errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

size_t sk_test_http_normalize(char *p, size_t n, int mask_connection)
{
    static const char date[] = "\r\nDate: ", conn[] = "\r\nConnection: ";
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    size_t dl = sizeof(date) - 1, nl = sizeof(conn) - 1, cl = sizeof(cont) - 1, w = 0;
    for (size_t i = 0; i < n;) {
        if (n - i >= cl && memcmp(p + i, cont, cl) == 0) {
            i += cl;
            continue;
        }
        if (mask_connection && n - i >= nl && memcmp(p + i, conn, nl) == 0) {
            for (i += nl; i < n && p[i] != '\r'; i++)
                ; /* the whole line goes: present in one run, absent in the other */
            continue;
        }
        if (n - i >= dl && memcmp(p + i, date, dl) == 0) {
            memmove(p + w, p + i, dl);
            w += dl;
            i += dl;
            for (size_t k = 0; k < 29 && i < n; k++, i++) /* an IMF-fixdate is 29 bytes */
                p[w++] = 'D';
            continue;
        }
        p[w++] = p[i++];
    }
    return w;
}
