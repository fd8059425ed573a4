/* sb_http: HTTP/1.1 response framing and JSON field lookup for seckill-bench. See sb_http.h. */
#include "sb_http.h"
#include "sk_id.h"

#include <string.h>
#include <strings.h>

/* A response head longer than this is not one of ours: refuse instead of buffering. */
#define SB_HTTP_MAX_HEAD 8192

static int header_is(const char *line, size_t len, const char *name, const char **value,
                     size_t *vlen)
{
    size_t n = strlen(name);
    if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
        return 0;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return 1;
}

/* Case-insensitive search of a token in a header value ("keep-alive, close"). */
static int value_has(const char *v, size_t vlen, const char *token)
{
    size_t n = strlen(token);
    for (size_t i = 0; i + n <= vlen; i++)
        if (strncasecmp(v + i, token, n) == 0)
            return 1;
    return 0;
}

long sb_http_parse(const char *buf, size_t len, sb_http_resp *out)
{
    const char *end = memmem(buf, len < SB_HTTP_MAX_HEAD ? len : SB_HTTP_MAX_HEAD, "\r\n\r\n", 4);
    if (!end)
        return len >= SB_HTTP_MAX_HEAD ? -1 : 0;
    size_t head = (size_t)(end - buf) + 4;
    /* Status line: HTTP/1.x SSS reason */
    if (head < 14 || memcmp(buf, "HTTP/1.", 7) != 0 || (buf[7] != '0' && buf[7] != '1') ||
        buf[8] != ' ')
        return -1;
    int http10 = buf[7] == '0';
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
        status = status * 10 + (buf[i] - '0');
    }
    if (status < 100 || (buf[12] != ' ' && buf[12] != '\r'))
        return -1;
    long clen = -1;
    int close = http10, chunked = 0;
    const char *line = (const char *)memchr(buf, '\n', head) + 1;
    while (line < end + 2) {
        const char *eol = memchr(line, '\r', (size_t)(end + 2 - line));
        if (!eol)
            break;
        size_t ll = (size_t)(eol - line), vlen;
        const char *v;
        if (header_is(line, ll, "content-length", &v, &vlen)) {
            uint64_t n;
            if (sk_id_parse_range(v, vlen, 0, 1u << 30, &n) != 0) /* sk_id.h: one rule */
                return -1;
            clen = (long)n;
        } else if (header_is(line, ll, "connection", &v, &vlen)) {
            if (value_has(v, vlen, "close"))
                close = 1;
            else if (value_has(v, vlen, "keep-alive"))
                close = 0;
        } else if (header_is(line, ll, "transfer-encoding", &v, &vlen)) {
            chunked = !value_has(v, vlen, "identity");
        }
        line = eol + 2;
    }
    /* 1xx, 204 and 304 carry no body whatever the headers say. */
    if (status < 200 || status == 204 || status == 304)
        clen = 0;
    if (chunked || clen < 0)
        return -1;
    if (len - head < (size_t)clen)
        return 0;
    out->status = status;
    out->close = close;
    out->body = buf + head;
    out->body_len = (size_t)clen;
    return (long)(head + (size_t)clen);
}

int sb_json_field(const char *json, size_t len, const char *name, char *out, size_t outsz)
{
    size_t n = strlen(name);
    const char *p = json, *end = json + len;
    while (p < end) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q || (size_t)(end - q) < n + 2)
            return -1;
        if (memcmp(q + 1, name, n) != 0 || q[n + 1] != '"') {
            p = q + 1;
            continue;
        }
        const char *v = q + n + 2;
        while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
            v++;
        if (v >= end || *v != ':') {
            p = q + 1; /* the name was a value, not a key */
            continue;
        }
        v++;
        while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
            v++;
        const char *s, *e;
        if (v < end && *v == '"') {
            s = v + 1;
            e = memchr(s, '"', (size_t)(end - s));
            if (!e)
                return -1;
        } else {
            s = v;
            e = v;
            while (e < end && ((*e >= '0' && *e <= '9') || *e == '-'))
                e++;
            if (e == s)
                return -1;
        }
        size_t vl = (size_t)(e - s);
        if (vl + 1 > outsz)
            return -1;
        memcpy(out, s, vl);
        out[vl] = '\0';
        return (int)vl;
    }
    return -1;
}
