/* sk_http_parse: the request head parser of sk_http (pure: no I/O). See sk_http.h. */
#include "sk_http.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* The framing rule (RFC 9112 6.3), one header at a time: what a request must not carry
 * to be read as one request with a known length. */
typedef struct hdrcheck {
    int content_length, host; /* how many seen */
    int64_t length;           /* the Content-Length value (0 if none) */
    const char *why;          /* static text, set at the first refusal */
} hdrcheck;

/* A Content-Length value: optional spaces/tabs, 1 to 15 digits, optional spaces/tabs
 * ("+6" and " -0" are refused).
 * @returns the value or -1. */
static int64_t parse_length(const char *p, size_t n)
{
    size_t i = 0, digits = 0;
    int64_t v = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++, digits++)
        if (digits < 15)
            v = v * 10 + (p[i] - '0');
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return digits == 0 || digits > 15 || i != n ? -1 : v;
}

static void hdrcheck_init(hdrcheck *h)
{
    memset(h, 0, sizeof(*h));
}

/* name is nlen bytes long (the length tells which names can matter). */
static int hdrcheck_add(hdrcheck *h, const char *name, size_t nlen, const char *value)
{
    if (h->why)
        return -1;
    if (memchr(name, ' ', nlen) || memchr(name, '\t', nlen))
        h->why = "whitespace in a header name";
    else if (nlen == 17 && strcasecmp(name, "Transfer-Encoding") == 0)
        h->why = "Transfer-Encoding is not accepted: send Content-Length";
    else if (nlen == 4 && strcasecmp(name, "Host") == 0 && h->host++ > 0)
        h->why = "more than one Host header";
    else if (nlen == 14 && strcasecmp(name, "Content-Length") == 0 &&
             (h->content_length++ > 0 || (h->length = parse_length(value, strlen(value))) < 0))
        h->why = h->content_length > 1 ? "more than one Content-Length header"
                                       : "Content-Length is not a decimal number";
    return h->why ? -1 : 0;
}

static int hdrcheck_done(hdrcheck *h, int body_allowed)
{
    if (!h->why && h->length > 0 && !body_allowed)
        h->why = "a body on a method without one";
    return h->why ? -1 : 0;
}

/* The methods sk_http knows, by their token (RFC 9110's, and PATCH). */
static int method_of(const char *p, size_t n)
{
    static const struct {
        const char *name;
        size_t len;
        sk_http_method m;
    } known[] = {
        {"GET", 3, SK_HTTP_GET},         {"POST", 4, SK_HTTP_POST},
        {"HEAD", 4, SK_HTTP_HEAD},       {"PUT", 3, SK_HTTP_PUT},
        {"DELETE", 6, SK_HTTP_DELETE},   {"PATCH", 5, SK_HTTP_PATCH},
        {"OPTIONS", 7, SK_HTTP_OPTIONS}, {"CONNECT", 7, SK_HTTP_CONNECT},
        {"TRACE", 5, SK_HTTP_TRACE},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (n == known[i].len && memcmp(p, known[i].name, n) == 0)
            return (int)known[i].m;
    return -1;
}

/* RFC 9110's tchar: what a method token may hold. */
static int is_tchar(unsigned char c)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* 1 if the comma-separated list `v` holds `token` (case-insensitive). */
static int has_token(const char *v, const char *token)
{
    size_t n = strlen(token);
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        size_t len = strcspn(v, ",");
        size_t t = len;
        while (t > 0 && (v[t - 1] == ' ' || v[t - 1] == '\t'))
            t--;
        if (t == n && strncasecmp(v, token, n) == 0)
            return 1;
        v += len;
    }
    return 0;
}

/* Ends the line at lf (its LF, and the CR before it if any) with a NUL; returns the
 * start of the next line, and the line's length in *len. */
static char *end_line(char *line, char *lf, size_t *len)
{
    if (lf > line && lf[-1] == '\r')
        lf[-1] = '\0';
    *lf = '\0';
    *len = (size_t)(lf - line) - (lf > line && lf[-1] == '\0');
    return lf + 1;
}

/* The request line "METHOD SP target SP HTTP/1.x" (NUL-terminated). */
static sk_http_parse_rc request_line(char *line, sk_http_head *h)
{
    char *sp = strchr(line, ' ');
    if (!sp || sp == line)
        return SK_HTTP_BAD;
    for (char *p = line; p < sp; p++)
        if (!is_tchar((unsigned char)*p))
            return SK_HTTP_BAD;
    char *uri = sp + 1;
    char *sp2 = strchr(uri, ' ');
    if (!sp2 || sp2 == uri)
        return SK_HTTP_BAD;
    for (char *p = uri; p < sp2; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p == 0x7f)
            return SK_HTTP_BAD;
    const char *ver = sp2 + 1;
    if (strncmp(ver, "HTTP/", 5) != 0 || ver[5] < '0' || ver[5] > '9' || ver[6] != '.' ||
        ver[7] < '0' || ver[7] > '9' || ver[8] != '\0')
        return SK_HTTP_BAD;
    h->method = method_of(line, (size_t)(sp - line));
    if (h->method < 0)
        return SK_HTTP_METHOD;
    if (ver[5] != '1')
        return SK_HTTP_VERSION;
    h->minor = ver[7] - '0';
    *sp2 = '\0';
    h->uri = uri;
    return SK_HTTP_OK;
}

/* 1 if one of the n bytes at p is a control character other than HT (a bare CR
 * above all: a line end to some other parser). Eight bytes at a time: a header value
 * is mostly a bearer token of a few hundred bytes. */
static int has_ctl(const char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        /* a byte below 0x20 (with its top bit clear) sets its top bit here */
        if (((x - 0x2020202020202020ULL) & ~x & 0x8080808080808080ULL) == 0)
            continue;
        for (size_t j = i; j < i + 8; j++)
            if ((unsigned char)p[j] < 0x20 && p[j] != '\t')
                return 1;
    }
    for (; i < n; i++)
        if ((unsigned char)p[i] < 0x20 && p[i] != '\t')
            return 1;
    return 0;
}

/* One header line "name: value", line[0..len) (NUL-terminated there): kept in h, value
 * trimmed; *nlen is the name's length. */
static sk_http_parse_rc header_line(char *line, size_t len, sk_http_head *h, size_t *nlen)
{
    if (*line == ' ' || *line == '\t')
        return SK_HTTP_BAD; /* obsolete line folding (RFC 9112: reject or unfold) */
    char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return SK_HTTP_BAD;
    /* A field name is a token; spaces and tabs are left to the framing rule. */
    for (const char *p = line; p < colon; p++)
        if (*p != ' ' && *p != '\t' && !is_tchar((unsigned char)*p))
            return SK_HTTP_BAD;
    if (h->nh == SK_HTTP_MAX_HEADERS)
        return SK_HTTP_HEADERS_LARGE;
    *colon = '\0';
    char *v = colon + 1, *e = line + len;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *e = '\0';
    if (has_ctl(v, (size_t)(e - v)))
        return SK_HTTP_BAD; /* a bare CR, or another control character */
    h->h[h->nh].name = line;
    h->h[h->nh].value = v;
    h->nh++;
    *nlen = (size_t)(colon - line);
    return SK_HTTP_OK;
}

sk_http_parse_rc sk_http_parse_head(char *buf, size_t len, size_t max_header_bytes,
                                    int64_t max_body_bytes, sk_http_head *h, size_t *head_len)
{
    /* RFC 9112 2.2: empty lines before the request line are ignored. */
    size_t skip = 0;
    while (skip < len && (buf[skip] == '\r' || buf[skip] == '\n'))
        skip++;
    /* The blank line: LF, optional CR, LF. */
    char *start = buf + skip, *end = buf + len, *blank = NULL;
    for (char *p = memchr(start, '\n', (size_t)(end - start)); p;
         p = memchr(p + 1, '\n', (size_t)(end - p - 1))) {
        char *q = p + 1;
        if (q < end && *q == '\r')
            q++;
        if (q < end && *q == '\n') {
            blank = q;
            break;
        }
        if (q >= end)
            break;
    }
    if (!blank)
        return len - skip > max_header_bytes ? SK_HTTP_HEADERS_LARGE : SK_HTTP_INCOMPLETE;
    size_t used = (size_t)(blank + 1 - buf);
    if (used - skip > max_header_bytes)
        return SK_HTTP_HEADERS_LARGE;
    if (memchr(start, '\0', (size_t)(blank - start)))
        return SK_HTTP_BAD; /* a NUL would cut the strings handed on */
    memset(h, 0, sizeof(*h));
    char *lf = memchr(start, '\n', (size_t)(blank + 1 - start));
    size_t llen;
    char *next = end_line(start, lf, &llen);
    sk_http_parse_rc rc = request_line(start, h);
    if (rc != SK_HTTP_OK)
        return rc;
    hdrcheck hc;
    hdrcheck_init(&hc);
    int te = 0, expect_bad = 0, conn_close = 0, conn_keep = 0;
    while (next < blank && !(next + 1 == blank && *next == '\r')) {
        lf = memchr(next, '\n', (size_t)(blank + 1 - next));
        char *line = next;
        size_t nlen;
        next = end_line(line, lf, &llen);
        if ((rc = header_line(line, llen, h, &nlen)) != SK_HTTP_OK)
            return rc;
        const char *name = h->h[h->nh - 1].name, *value = h->h[h->nh - 1].value;
        hdrcheck_add(&hc, name, nlen, value);
        switch (nlen) { /* only the few names the server reads */
        case 17:
            te |= strcasecmp(name, "Transfer-Encoding") == 0;
            break;
        case 6:
            if (strcasecmp(name, "Expect") == 0) {
                if (strcasecmp(value, "100-continue") == 0)
                    h->expect_continue = 1;
                else
                    expect_bad = 1;
            }
            break;
        case 10:
            if (strcasecmp(name, "Connection") == 0) {
                conn_close |= has_token(value, "close");
                conn_keep |= has_token(value, "keep-alive");
            }
            break;
        default:
            break;
        }
    }
    *head_len = used;
    if (te)
        return SK_HTTP_CHUNKED;
    if (expect_bad)
        return SK_HTTP_EXPECT;
    if (!hc.why && max_body_bytes < 0 && hc.length > 0)
        return SK_HTTP_BODY_LARGE; /* a port that takes no body at all */
    int body_allowed = h->method == SK_HTTP_POST || h->method == SK_HTTP_PUT ||
                       h->method == SK_HTTP_PATCH;
    if (hdrcheck_done(&hc, body_allowed) != 0) {
        h->framing = hc.why;
        h->content_length = 0;
        h->keep_alive = 0;
        return SK_HTTP_OK;
    }
    if (max_body_bytes >= 0 && hc.length > max_body_bytes)
        return SK_HTTP_BODY_LARGE;
    h->content_length = hc.length;
    h->keep_alive = h->minor >= 1 ? !conn_close : (conn_keep && !conn_close);
    return SK_HTTP_OK;
}

void sk_http_refusal(sk_http_parse_rc rc, int *status, const char **reason, const char **code,
                     const char **message)
{
    *status = 400;
    *reason = "Bad Request";
    *code = "bad_request";
    switch (rc) {
    case SK_HTTP_HEADERS_LARGE:
        *status = 413, *reason = "Payload Too Large", *code = "payload_too_large";
        *message = "request line and headers too large";
        return;
    case SK_HTTP_BODY_LARGE:
        *status = 413, *reason = "Payload Too Large", *code = "payload_too_large";
        *message = "body too large";
        return;
    case SK_HTTP_CHUNKED:
        *message = "Transfer-Encoding is not accepted: send Content-Length";
        return;
    case SK_HTTP_EXPECT:
        *message = "Expect: only 100-continue";
        return;
    case SK_HTTP_METHOD:
        *status = 405, *reason = "Method Not Allowed", *code = "method_not_allowed";
        *message = "unknown method";
        return;
    case SK_HTTP_VERSION:
        *status = 505, *reason = "HTTP Version Not Supported", *code = "bad_request";
        *message = "HTTP/1.1 and HTTP/1.0 only";
        return;
    default:
        *message = "malformed request line or header line";
        return;
    }
}
