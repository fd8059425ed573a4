/* sk_redis_url: parse Redis URLs and open a blocking connection. See sk_redis_url.h. */
#include "sk_redis_url.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_part(char *dst, size_t dstsize, const char *src, size_t n)
{
    if (n >= dstsize)
        return -1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

static int parse_int(const char *s, size_t n, int lo, int hi, int *out)
{
    if (n == 0 || n > 9)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* "user:pass@" or ":pass@" or "pass@" (redis-cli takes the last form too). */
static int parse_userinfo(const char *s, size_t n, sk_redis_url *out)
{
    const char *colon = memchr(s, ':', n);
    if (!colon)
        return copy_part(out->pass, sizeof(out->pass), s, n);
    if (copy_part(out->user, sizeof(out->user), s, (size_t)(colon - s)) != 0)
        return -1;
    return copy_part(out->pass, sizeof(out->pass), colon + 1, n - (size_t)(colon - s) - 1);
}

/* "?db=N" or nothing (q NULL). @returns 0, or -1 with err. */
static int parse_query(const char *q, int *db, char *err, size_t errsz)
{
    if (!q || (strncmp(q, "?db=", 4) == 0 && parse_int(q + 4, strlen(q + 4), 0, 100000, db) == 0))
        return 0;
    snprintf(err, errsz, "Redis URL: bad query (only ?db=N)");
    return -1;
}

/* host[:port] of n bytes into host/port (port left as is when absent). */
static int parse_hostport(const char *s, size_t n, char *host, size_t hostsize, int *port)
{
    const char *colon = memchr(s, ':', n);
    size_t hostlen = colon ? (size_t)(colon - s) : n;
    if (hostlen == 0 || copy_part(host, hostsize, s, hostlen) != 0)
        return -1;
    return colon ? parse_int(colon + 1, n - hostlen - 1, 1, 65535, port) : 0;
}

/* The part of a redis-sentinel:// URL after the userinfo: h1[:p1],h2[:p2]/name[?db=N]. */
static int parse_sentinel(const char *rest, sk_redis_url *out, char *err, size_t errsz)
{
    const char *slash = strchr(rest, '/');
    if (!slash) {
        snprintf(err, errsz, "Redis URL: redis-sentinel:// needs /master_name after the sentinels");
        return -1;
    }
    const char *h = rest;
    while (h < slash) {
        const char *comma = memchr(h, ',', (size_t)(slash - h));
        size_t n = comma ? (size_t)(comma - h) : (size_t)(slash - h);
        if (out->nsentinels == SK_REDIS_SENTINELS_MAX) {
            snprintf(err, errsz, "Redis URL: more than %d sentinels", SK_REDIS_SENTINELS_MAX);
            return -1;
        }
        int i = out->nsentinels;
        out->sentinels[i].port = 26379;
        if (parse_hostport(h, n, out->sentinels[i].host, sizeof(out->sentinels[i].host),
                           &out->sentinels[i].port) != 0) {
            snprintf(err, errsz, "Redis URL: bad sentinel %.*s (host[:port])", (int)(n > 64 ? 64 : n), h);
            return -1;
        }
        out->nsentinels++;
        h += n + (comma != NULL);
        if (comma && h == slash) {
            snprintf(err, errsz, "Redis URL: trailing comma in the sentinels");
            return -1;
        }
    }
    if (out->nsentinels == 0) {
        snprintf(err, errsz, "Redis URL: no sentinel");
        return -1;
    }
    const char *name = slash + 1;
    const char *q = strchr(name, '?');
    size_t nlen = q ? (size_t)(q - name) : strlen(name);
    if (nlen == 0 || memchr(name, '/', nlen) ||
        copy_part(out->master_name, sizeof(out->master_name), name, nlen) != 0) {
        snprintf(err, errsz, "Redis URL: missing or bad master name after the sentinels");
        return -1;
    }
    return parse_query(q, &out->db, err, errsz);
}

int sk_redis_url_is_sentinel(const char *url)
{
    return url && strncmp(url, "redis-sentinel://", 17) == 0;
}

int sk_redis_url_parse(const char *url, sk_redis_url *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof(*out));
    out->port = 6379;
    if (!url || !*url) {
        snprintf(err, errsz, "empty Redis URL");
        return -1;
    }
    const char *rest;
    if (strncmp(url, "redis://", 8) == 0) {
        rest = url + 8;
    } else if (strncmp(url, "unix://", 7) == 0) {
        rest = url + 7;
        out->is_unix = 1;
    } else if (sk_redis_url_is_sentinel(url)) {
        rest = url + 17;
        out->is_sentinel = 1;
        out->port = 0;
    } else {
        snprintf(err, errsz, "Redis URL must start with redis://, unix:// or redis-sentinel://");
        return -1;
    }
    const char *at = strrchr(rest, '@');
    if (at) {
        if (parse_userinfo(rest, (size_t)(at - rest), out) != 0) {
            snprintf(err, errsz, "Redis URL: user or password too long");
            return -1;
        }
        rest = at + 1;
    }
    if (out->is_sentinel)
        return parse_sentinel(rest, out, err, errsz);
    if (out->is_unix) {
        const char *q = strchr(rest, '?');
        size_t plen = q ? (size_t)(q - rest) : strlen(rest);
        if (plen == 0 || rest[0] != '/' || copy_part(out->host, sizeof(out->host), rest, plen)) {
            snprintf(err, errsz, "Redis URL: unix:// needs an absolute socket path");
            return -1;
        }
        return parse_query(q, &out->db, err, errsz);
    }
    const char *slash = strchr(rest, '/');
    size_t hlen = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *colon = memchr(rest, ':', hlen);
    size_t hostlen = colon ? (size_t)(colon - rest) : hlen;
    if (hostlen == 0 || copy_part(out->host, sizeof(out->host), rest, hostlen) != 0) {
        snprintf(err, errsz, "Redis URL: missing or too long host");
        return -1;
    }
    if (colon && parse_int(colon + 1, hlen - hostlen - 1, 1, 65535, &out->port) != 0) {
        snprintf(err, errsz, "Redis URL: bad port");
        return -1;
    }
    if (slash && slash[1] && parse_int(slash + 1, strlen(slash + 1), 0, 100000, &out->db) != 0) {
        snprintf(err, errsz, "Redis URL: bad database number");
        return -1;
    }
    return 0;
}

const char *sk_redis_url_redacted(const sk_redis_url *u, char *buf, size_t bufsize)
{
    const char *auth = u->pass[0] ? ":***@" : "";
    if (u->is_sentinel) {
        size_t n = (size_t)snprintf(buf, bufsize, "redis-sentinel://%s%s", u->user,
                                    u->pass[0] ? auth : u->user[0] ? "@" : "");
        for (int i = 0; i < u->nsentinels && n < bufsize; i++)
            n += (size_t)snprintf(buf + n, bufsize - n, "%s%s:%d", i ? "," : "",
                                  u->sentinels[i].host, u->sentinels[i].port);
        if (n < bufsize)
            snprintf(buf + n, bufsize - n, "/%s?db=%d", u->master_name, u->db);
        return buf;
    }
    if (u->is_unix)
        snprintf(buf, bufsize, "unix://%s%s%s?db=%d", u->user, auth, u->host, u->db);
    else
        snprintf(buf, bufsize, "redis://%s%s%s:%d/%d", u->user, auth, u->host, u->port, u->db);
    return buf;
}

static int run_ok(redisContext *c, char *err, size_t errsz, const char *what, int argc,
                  const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r) {
        snprintf(err, errsz, "%s: %s", what, c->errstr);
        return -1;
    }
    int rc = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        /* The reply never echoes the password, so it is safe to show. */
        snprintf(err, errsz, "%s: %s", what, r->str);
        rc = -1;
    }
    freeReplyObject(r);
    return rc;
}

redisContext *sk_redis_url_connect(const sk_redis_url *u, struct timeval tv, char *err,
                                   size_t errsz)
{
    if (u->is_sentinel)
        return sk_redis_sentinel_connect(u, tv, err, errsz);
    redisContext *c = u->is_unix ? redisConnectUnixWithTimeout(u->host, tv)
                                 : redisConnectWithTimeout(u->host, u->port, tv);
    if (!c || c->err) {
        snprintf(err, errsz, "connect to %s%s%d: %s", u->host, u->is_unix ? "" : ":",
                 u->is_unix ? 0 : u->port, c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, errsz, "set timeout: %s", c->errstr);
        redisFree(c);
        return NULL;
    }
    if (u->pass[0]) {
        const char *argv[3] = {"AUTH", u->user[0] ? u->user : u->pass, u->pass};
        if (run_ok(c, err, errsz, "AUTH", u->user[0] ? 3 : 2, argv) != 0) {
            redisFree(c);
            return NULL;
        }
    }
    if (u->db) {
        char db[16];
        snprintf(db, sizeof(db), "%d", u->db);
        const char *argv[2] = {"SELECT", db};
        if (run_ok(c, err, errsz, "SELECT", 2, argv) != 0) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}
