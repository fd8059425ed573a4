/* sb_challenge: fetch and solve each user's challenge. See sb_challenge.h. */
#include "sb_challenge.h"
#include "sb_admin.h"
#include "sb_http.h"
#include "sk_pow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEADER "\r\nSeckill-Challenge: "
#define SOLUTION_MAX 200

typedef struct {
    const sb_url *url;
    int timeout_ms, fd;
    char buf[8192];
    size_t len; /* bytes in buf not yet parsed */
} client;

/* One GET of `path` with `token` on the keep-alive connection (reconnected when the
 * server closed it); the answer's body is copied into body. @returns the status or -1. */
static int get(client *c, const char *path, const char *token, size_t tlen, char *body,
               size_t bodysz, char *err, size_t errsz)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->fd < 0) {
            if ((c->fd = sb_admin_connect(c->url, c->timeout_ms, err, errsz)) < 0)
                return -1;
            c->len = 0;
        }
        char req[2048];
        int n = snprintf(req, sizeof(req),
                         "GET %s%s HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: Bearer %.*s\r\n\r\n",
                         c->url->prefix, path, c->url->host, c->url->port, (int)tlen, token);
        if (n < 0 || (size_t)n >= sizeof(req)) {
            snprintf(err, errsz, "request too long");
            return -1;
        }
        int ok = send(c->fd, req, (size_t)n, MSG_NOSIGNAL) == n;
        sb_http_resp r;
        long used = 0;
        while (ok && (used = sb_http_parse(c->buf, c->len, &r)) == 0) {
            ssize_t k = c->len < sizeof(c->buf) ? recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0) : -1;
            if (k < 0 && errno == EINTR)
                continue;
            ok = k > 0;
            c->len += ok ? (size_t)k : 0;
        }
        if (!ok || used < 0) { /* closed under us (an idle timeout): once more, afresh */
            close(c->fd);
            c->fd = -1;
            snprintf(err, errsz, "no answer to GET %s", path);
            continue;
        }
        snprintf(body, bodysz, "%.*s", (int)r.body_len, r.body);
        memmove(c->buf, c->buf + used, c->len - (size_t)used);
        c->len -= (size_t)used;
        if (r.close) {
            close(c->fd);
            c->fd = -1;
        }
        return r.status;
    }
    return -1;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int sb_challenge_prepare(const sb_url *url, uint64_t event_id, sb_tokens *tk, int timeout_ms,
                         double *solve_cpu_s, uint64_t *hashes, char *err, size_t errsz)
{
    *solve_cpu_s = 0;
    *hashes = 0;
    size_t cap = (size_t)tk->off[tk->n] + (size_t)tk->n * (sizeof(HEADER) + SOLUTION_MAX);
    char *arena = malloc(cap);
    uint32_t *off = malloc((tk->n + 1) * sizeof(*off));
    client c = {url, timeout_ms, -1, {0}, 0};
    char path[96], body[1024], ch[160], sol[SOLUTION_MAX];
    snprintf(path, sizeof(path), "/api/v1/events/%llu/challenge", (unsigned long long)event_id);
    int rc = -1;
    if (!arena || !off || cap > 0xF0000000u) {
        snprintf(err, errsz, "out of memory (or over 4 GiB of tokens)");
        goto out;
    }
    size_t used = 0;
    off[0] = 0;
    for (uint64_t u = 1; u <= tk->n; u++) {
        const char *tok = tk->arena + tk->off[u - 1];
        size_t tlen = tk->off[u] - tk->off[u - 1];
        int st = get(&c, path, tok, tlen, body, sizeof(body), err, errsz);
        if (st != 200) {
            if (st > 0)
                snprintf(err, errsz, "GET %s: HTTP %d %s", path, st, body);
            goto out;
        }
        char bits_s[8];
        int n = sb_json_field(body, strlen(body), "challenge", ch, sizeof(ch));
        if (n <= 0 || sb_json_field(body, strlen(body), "difficulty", bits_s, sizeof(bits_s)) <= 0) {
            snprintf(err, errsz, "GET %s: no challenge in %s", path, body);
            goto out;
        }
        double t0 = cpu_s();
        uint64_t tries;
        int m = sk_pow_solve(ch, (size_t)n, (unsigned)atoi(bits_s), 0, UINT64_MAX, sol, sizeof(sol),
                             &tries);
        *solve_cpu_s += cpu_s() - t0;
        *hashes += tries;
        if (m < 0) {
            snprintf(err, errsz, "challenge %s: no solution", ch);
            goto out;
        }
        memcpy(arena + used, tok, tlen);
        used += tlen;
        memcpy(arena + used, HEADER, sizeof(HEADER) - 1);
        used += sizeof(HEADER) - 1;
        memcpy(arena + used, sol, (size_t)m);
        used += (size_t)m;
        off[u] = (uint32_t)used;
    }
    free(tk->arena);
    free(tk->off);
    tk->arena = arena;
    tk->off = off;
    arena = NULL;
    off = NULL;
    rc = 0;
out:
    if (c.fd >= 0)
        close(c.fd);
    free(arena);
    free(off);
    return rc;
}
