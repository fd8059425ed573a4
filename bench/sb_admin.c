/* sb_admin: create an event over the front's admin API. See sb_admin.h. */
#include "sb_admin.h"
#include "sk_id.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sb_http.h"

void sb_rfc3339(time_t t, char *out, size_t outsz)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, outsz, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int sb_admin_connect(const sb_url *url, int timeout_ms, char *err, size_t errsz)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(url->host, url->port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errsz, "%s:%s: %s", url->host, url->port, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
            snprintf(err, errsz, "connect %s:%s: %s", url->host, url->port, strerror(errno));
            close(fd);
            fd = -1;
        }
    } else {
        snprintf(err, errsz, "socket: %s", strerror(errno));
    }
    freeaddrinfo(res);
    return fd;
}

int sb_admin_create_event(const sb_url *url, const char *token, const char *name, long long stock,
                          time_t starts_at, time_t ends_at, int challenge_bits,
                          int per_user_limit, int timeout_ms,
                          uint64_t *event_id, char *err, size_t errsz)
{
    char s[32], e[32];
    sb_rfc3339(starts_at, s, sizeof(s));
    sb_rfc3339(ends_at, e, sizeof(e));
    json_t *o = json_pack("{s:s, s:I, s:s, s:s}", "name", name, "stock", (json_int_t)stock,
                          "starts_at", s, "ends_at", e);
    if (o && per_user_limit > 1) /* issue 31: several units per user */
        json_object_set_new(o, "per_user_limit", json_integer(per_user_limit));
    if (o && challenge_bits > 0) /* issue 31: the event's orders carry a solved challenge */
        json_object_set_new(o, "challenge", json_pack("{s:s, s:i}", "kind", "pow", "difficulty",
                                                      challenge_bits));
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!body) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    size_t blen = strlen(body);
    size_t cap = blen + strlen(token) + 1024;
    char *req = malloc(cap);
    if (!req) {
        free(body);
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    int n = snprintf(req, cap,
                     "POST %s/api/v1/events HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n%s",
                     url->prefix, url->host, url->port, blen, token, body);
    free(body);
    int fd = sb_admin_connect(url, timeout_ms, err, errsz);
    if (fd < 0) {
        free(req);
        return -1;
    }
    int rc = -1;
    size_t off = 0;
    while (off < (size_t)n) {
        ssize_t k = send(fd, req + off, (size_t)n - off, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            snprintf(err, errsz, "send: %s", strerror(errno));
            goto out;
        }
        off += (size_t)k;
    }
    char buf[8192];
    size_t len = 0;
    sb_http_resp r;
    long used = 0;
    while ((used = sb_http_parse(buf, len, &r)) == 0) {
        if (len == sizeof(buf)) {
            snprintf(err, errsz, "answer too long");
            goto out;
        }
        ssize_t k = recv(fd, buf + len, sizeof(buf) - len, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            snprintf(err, errsz, "no complete answer: %s", k == 0 ? "connection closed" : strerror(errno));
            goto out;
        }
        len += (size_t)k;
    }
    if (used < 0) {
        snprintf(err, errsz, "malformed HTTP answer");
        goto out;
    }
    char id[32];
    if (r.status != 201) {
        char code[64] = "";
        sb_json_field(r.body, r.body_len, "error", code, sizeof(code));
        snprintf(err, errsz, "create event: HTTP %d %s", r.status, code);
        goto out;
    }
    if (sb_json_field(r.body, r.body_len, "event_id", id, sizeof(id)) <= 0 ||
        sk_id_parse(id, strlen(id), event_id) != 0) {
        snprintf(err, errsz, "create event: 201 without a decimal event_id");
        goto out;
    }
    rc = 0;
out:
    close(fd);
    free(req);
    return rc;
}
