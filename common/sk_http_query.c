/* sk_http_query: the query string of a request target, read in place. See sk_http_query.h.
 * It replaced evhttp_parse_query_str in seckill-order (the last use of evhttp there): that
 * one copied every parameter into a malloc'd header list to read two numbers. */
#include "sk_http_query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *sk_http_query_of(const char *target, size_t *len)
{
    const char *q = strchr(target, '?');
    if (!q) {
        *len = 0;
        return NULL;
    }
    q++;
    *len = strcspn(q, "#");
    return q;
}

sk_http_query_rc sk_http_query_get(const char *q, size_t qlen, const char *name, const char **val,
                                   size_t *vlen)
{
    size_t nlen = strlen(name);
    sk_http_query_rc rc = SK_HTTP_QUERY_ABSENT;
    size_t i = 0;
    while (i < qlen) {
        const char *p = q + i;
        const char *amp = memchr(p, '&', qlen - i);
        size_t plen = amp ? (size_t)(amp - p) : qlen - i;
        const char *eq = memchr(p, '=', plen);
        if (!eq || eq == p) /* "a", "=v", or "" between two '&' */
            return SK_HTTP_QUERY_INVALID;
        size_t klen = (size_t)(eq - p);
        if (rc == SK_HTTP_QUERY_ABSENT && klen == nlen && memcmp(p, name, nlen) == 0) {
            *val = eq + 1;
            *vlen = plen - klen - 1;
            rc = SK_HTTP_QUERY_FOUND;
        }
        i += plen + 1; /* past the '&' (or the end) */
    }
    return rc;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long sk_http_query_decode(const char *src, size_t len, char *dst, size_t dstsz)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < len) {
            int hi = hexval(src[i + 1]), lo = hexval(src[i + 2]);
            if (hi >= 0 && lo >= 0) {
                c = (char)(hi << 4 | lo);
                i += 2;
            }
        }
        if (n + 1 >= dstsz)
            return -1;
        dst[n++] = c;
    }
    if (n >= dstsz)
        return -1;
    dst[n] = '\0';
    return (long)n;
}

sk_http_query_rc sk_http_query_int(const char *q, size_t qlen, const char *name, long long lo,
                                   long long hi, long long def, long long *out)
{
    const char *raw;
    size_t rlen;
    sk_http_query_rc rc = sk_http_query_get(q, qlen, name, &raw, &rlen);
    if (rc == SK_HTTP_QUERY_ABSENT) {
        *out = def;
        return rc;
    }
    if (rc != SK_HTTP_QUERY_FOUND)
        return rc;
    char buf[32]; /* a long long is 20 characters at most */
    long n = sk_http_query_decode(raw, rlen, buf, sizeof(buf));
    if (n <= 0 || (size_t)n != strlen(buf)) /* empty, too long, or a %00 inside */
        return SK_HTTP_QUERY_INVALID;
    const char *s = buf[0] == '-' ? buf + 1 : buf;
    if (!*s || strspn(s, "0123456789") != strlen(s))
        return SK_HTTP_QUERY_INVALID;
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        return SK_HTTP_QUERY_INVALID;
    *out = v;
    return SK_HTTP_QUERY_FOUND;
}
