/* sk_http_parse: the request head parser of sk_http (pure: no I/O). See sk_http.h.
 *
 * It works in offsets and lengths, as picohttpparser does: what it hands back is an
 * offset into the buffer, so the connection may move or grow its buffer (realloc)
 * under a head it has parsed without a pointer going stale. It writes into the buffer
 * once, when it returns SK_HTTP_OK (the NULs that end the target, the names and the
 * values); any other answer leaves the buffer as it was. A caller that reads a head in
 * pieces passes the length of its previous INCOMPLETE call (last_len), and the search
 * for the blank line goes on from there: a head that comes in n reads costs the bytes
 * once, not n times. */
#include "sk_http.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* The framing rule (RFC 9112 6.3), one header at a time: what a request must not carry
 * to be read as one request with a known length. */
typedef struct hdrcheck {
    int content_length, host, authorization; /* how many seen */
    int64_t length;           /* the Content-Length value (0 if none) */
    const char *why;          /* static text, set at the first refusal */
} hdrcheck;

/* 1 if p[0..n) is `lit` (a literal), case-insensitive. */
#define NAME_IS(p, n, lit) ((n) == sizeof(lit) - 1 && strncasecmp((p), (lit), (n)) == 0)

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

/* One header, name[0..nlen) and value[0..vlen). */
static void hdrcheck_add(hdrcheck *h, const char *name, size_t nlen, const char *value,
                         size_t vlen)
{
    if (h->why)
        return;
    if (memchr(name, ' ', nlen) || memchr(name, '\t', nlen))
        h->why = "whitespace in a header name";
    else if (NAME_IS(name, nlen, "Transfer-Encoding"))
        h->why = "Transfer-Encoding is not accepted: send Content-Length";
    else if (NAME_IS(name, nlen, "Host") && h->host++ > 0)
        h->why = "more than one Host header";
    /* Two credentials: a proxy may have checked the one we would not read. */
    else if (NAME_IS(name, nlen, "Authorization") && h->authorization++ > 0)
        h->why = "more than one Authorization header";
    else if (NAME_IS(name, nlen, "Content-Length") &&
             (h->content_length++ > 0 || (h->length = parse_length(value, vlen)) < 0))
        h->why = h->content_length > 1 ? "more than one Content-Length header"
                                       : "Content-Length is not a decimal number";
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

/* RFC 9110's tchar: what a method token and a field name may hold (no CTL, no DEL, no
 * separator). */
static int is_tchar(unsigned char c)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* 1 if the comma-separated list v[0..n) holds `token` (case-insensitive). */
static int has_token(const char *v, size_t n, const char *token)
{
    size_t tn = strlen(token), i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t t = i;
        while (t > s && (v[t - 1] == ' ' || v[t - 1] == '\t'))
            t--;
        if (t - s == tn && strncasecmp(v + s, token, tn) == 0)
            return 1;
    }
    return 0;
}

/* The length of the line at `line` that ends at lf (its LF, and the CR before it if
 * any, not counted). */
static size_t line_len(const char *line, const char *lf)
{
    size_t n = (size_t)(lf - line);
    return n > 0 && line[n - 1] == '\r' ? n - 1 : n;
}

/* An absolute-form target (RFC 9112 3.2.2: "http://host/path", which a server must
 * accept) at uri[0..n): @returns the offset of its path in uri, or n when it has none
 * (then served as "/"), or 0 when it is no absolute form. The authority is not kept:
 * nothing here routes by host. */
static size_t absolute_path(const char *uri, size_t n)
{
    size_t s = n >= 7 && strncasecmp(uri, "http://", 7) == 0    ? 7
               : n >= 8 && strncasecmp(uri, "https://", 8) == 0 ? 8
                                                                : 0;
    if (!s)
        return 0;
    const char *slash = memchr(uri + s, '/', n - s);
    return slash ? (size_t)(slash - uri) : n;
}

/* The request line "METHOD SP target SP HTTP/1.x", buf[at..at+n): fills h->method,
 * h->minor, h->uri, and *uri_end (where the target's NUL goes); *slash_at is where a
 * "/" must be written for an absolute form without a path (0: none). */
static sk_http_parse_rc request_line(const char *buf, size_t at, size_t n, sk_http_head *h,
                                     size_t *uri_end, size_t *slash_at)
{
    const char *line = buf + at, *end = line + n;
    const char *sp = memchr(line, ' ', n);
    if (!sp || sp == line)
        return SK_HTTP_BAD;
    for (const char *p = line; p < sp; p++)
        if (!is_tchar((unsigned char)*p))
            return SK_HTTP_BAD;
    const char *uri = sp + 1;
    const char *sp2 = memchr(uri, ' ', (size_t)(end - uri));
    if (!sp2 || sp2 == uri)
        return SK_HTTP_BAD;
    /* RFC 9112 3.2: no whitespace or control in the target (DEL included) */
    for (const char *p = uri; p < sp2; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p == 0x7f)
            return SK_HTTP_BAD;
    const char *ver = sp2 + 1;
    if (end - ver != 8 || memcmp(ver, "HTTP/", 5) != 0 || ver[5] < '0' || ver[5] > '9' ||
        ver[6] != '.' || ver[7] < '0' || ver[7] > '9')
        return SK_HTTP_BAD;
    h->method = method_of(line, (size_t)(sp - line));
    if (h->method < 0)
        return SK_HTTP_METHOD;
    if (ver[5] != '1')
        return SK_HTTP_VERSION;
    h->minor = ver[7] - '0';
    h->uri = (size_t)(uri - buf);
    *uri_end = (size_t)(sp2 - buf);
    *slash_at = 0;
    size_t ulen = (size_t)(sp2 - uri), path = absolute_path(uri, ulen);
    if (path == ulen) { /* "http://host": its path is "/", written over the host's end */
        h->uri = *uri_end - 1;
        *slash_at = h->uri;
    } else if (path) {
        h->uri += path;
    }
    return SK_HTTP_OK;
}

/* RFC 9110 5.5: a field value holds visible characters, obs-text (0x80-0xff), SP and
 * HTAB; every other control and DEL are refused (a bare CR above all: a line end to
 * some other parser). */
static int is_value_ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* 1 if one of the n bytes at p is refused in a field value. Eight bytes at a time: a
 * header value is mostly a bearer token of a few hundred bytes. */
static int has_ctl(const char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        /* A byte below 0x20 sets its top bit in `below`, a 0x7f in `del` (the byte's
         * own top bit clear in both); a borrow or a carry between bytes can only flag
         * a neighbour too, never hide one: the byte loop decides. */
        uint64_t below = (x - 0x2020202020202020ULL) & ~x;
        uint64_t del = (x + 0x0101010101010101ULL) & ~x;
        if (((below | del) & 0x8080808080808080ULL) == 0)
            continue;
        for (size_t j = i; j < i + 8; j++)
            if (is_value_ctl((unsigned char)p[j]))
                return 1;
    }
    for (; i < n; i++)
        if (is_value_ctl((unsigned char)p[i]))
            return 1;
    return 0;
}

/* Where a header's strings end in the buffer: the NULs written on SK_HTTP_OK. */
typedef struct hdr_ends {
    size_t name, value;
} hdr_ends;

/* One header line "name: value", buf[at..at+n): kept in h (offsets, value trimmed),
 * its ends in *ends. */
static sk_http_parse_rc header_line(const char *buf, size_t at, size_t n, sk_http_head *h,
                                    hdr_ends *ends)
{
    const char *line = buf + at;
    if (*line == ' ' || *line == '\t')
        return SK_HTTP_BAD; /* obsolete line folding (RFC 9112: reject or unfold) */
    const char *colon = memchr(line, ':', n);
    if (!colon || colon == line)
        return SK_HTTP_BAD;
    /* A field name is a token; spaces and tabs are left to the framing rule. */
    for (const char *p = line; p < colon; p++)
        if (*p != ' ' && *p != '\t' && !is_tchar((unsigned char)*p))
            return SK_HTTP_BAD;
    if (h->nh == SK_HTTP_MAX_HEADERS)
        return SK_HTTP_HEADERS_LARGE;
    const char *v = colon + 1, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (has_ctl(v, (size_t)(e - v)))
        return SK_HTTP_BAD;
    h->h[h->nh].name = at;
    h->h[h->nh].value = (size_t)(v - buf);
    h->h[h->nh].name_len = (size_t)(colon - line);
    ends->name = (size_t)(colon - buf);
    ends->value = (size_t)(e - buf);
    h->nh++;
    return SK_HTTP_OK;
}

/* RFC 9112 3.2 / RFC 3986 3.2.2: Host = uri-host [ ":" port ]. Refused: empty, and
 * any byte a reg-name, an IP literal and a port cannot hold (a space, a slash, a
 * control...): such a Host names no authority, and a proxy may read it otherwise. */
static int host_ok(const char *v, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              strchr("-._~%!$&'()*+,;=:[]", c)))
            return 0;
    }
    return 1;
}

/* What can be refused from the first bytes alone, before the blank line: a first
 * byte that cannot start a method (a TLS ClientHello's 0x16, binary) and the HTTP/2
 * preface. Without this such a peer waits out the read deadline for a blank line that
 * never comes. @returns SK_HTTP_OK when nothing is refused yet. */
static sk_http_parse_rc early_refusal(const char *p, size_t n)
{
    static const char preface[] = "PRI * HTTP/2.0";
    if (n == 0)
        return SK_HTTP_OK;
    if (!is_tchar((unsigned char)p[0]))
        return SK_HTTP_BAD;
    size_t m = n < sizeof(preface) - 1 ? n : sizeof(preface) - 1;
    if (m >= 4 && memcmp(p, preface, m) == 0)
        return m == sizeof(preface) - 1 ? SK_HTTP_H2_PREFACE : SK_HTTP_OK;
    return SK_HTTP_OK;
}

/* The blank line that ends a head: LF, optional CR, LF. @returns its last LF, searched
 * from `from` on, or NULL. */
static const char *find_blank(const char *from, const char *end)
{
    for (const char *p = memchr(from, '\n', (size_t)(end - from)); p;
         p = memchr(p + 1, '\n', (size_t)(end - p - 1))) {
        const char *q = p + 1;
        if (q < end && *q == '\r')
            q++;
        if (q >= end)
            return NULL;
        if (*q == '\n')
            return q;
    }
    return NULL;
}

sk_http_parse_rc sk_http_parse_head(char *buf, size_t len, size_t last_len,
                                    size_t max_header_bytes, int64_t max_body_bytes,
                                    sk_http_head *h, size_t *head_len)
{
    /* RFC 9112 2.2: empty lines before the request line are ignored. */
    size_t skip = 0;
    while (skip < len && (buf[skip] == '\r' || buf[skip] == '\n'))
        skip++;
    /* buf[0..last_len) held no blank line: one that ends past it starts at most two
     * bytes before it (LF CR | LF). */
    size_t from = last_len <= len && last_len > 2 ? last_len - 2 : 0;
    if (from < skip)
        from = skip;
    const char *start = buf + skip, *end = buf + len;
    sk_http_parse_rc early = early_refusal(start, len - skip);
    if (early != SK_HTTP_OK)
        return early;
    const char *blank = find_blank(buf + from, end);
    size_t used = blank ? (size_t)(blank + 1 - buf) : len;
    if (used - skip > max_header_bytes) {
        /* 414 when the request line alone is past the bound, else 431 (RFC 9110 15.5.15,
         * RFC 6585 5) */
        size_t n = used - skip < max_header_bytes + 1 ? used - skip : max_header_bytes + 1;
        return memchr(start, '\n', n) ? SK_HTTP_HEADERS_LARGE : SK_HTTP_URI_LONG;
    }
    if (!blank)
        return SK_HTTP_INCOMPLETE;
    if (memchr(start, '\0', (size_t)(blank - start)))
        return SK_HTTP_BAD; /* a NUL would cut the strings handed on */
    memset(h, 0, sizeof(*h));
    const char *lf = memchr(start, '\n', (size_t)(blank + 1 - start));
    size_t uri_end, slash_at;
    sk_http_parse_rc rc = request_line(buf, skip, line_len(start, lf), h, &uri_end, &slash_at);
    if (rc != SK_HTTP_OK)
        return rc;
    hdrcheck hc;
    memset(&hc, 0, sizeof(hc));
    hdr_ends ends[SK_HTTP_MAX_HEADERS];
    int te = 0, expect_bad = 0, conn_close = 0, conn_keep = 0, host_bad = 0;
    const char *next = lf + 1;
    while (next < blank && !(next + 1 == blank && *next == '\r')) {
        lf = memchr(next, '\n', (size_t)(blank + 1 - next));
        size_t at = (size_t)(next - buf);
        rc = header_line(buf, at, line_len(next, lf), h, &ends[h->nh]);
        if (rc != SK_HTTP_OK)
            return rc;
        next = lf + 1;
        const hdr_ends *he = &ends[h->nh - 1];
        const char *name = buf + at, *value = buf + h->h[h->nh - 1].value;
        size_t nlen = he->name - at, vlen = he->value - h->h[h->nh - 1].value;
        hdrcheck_add(&hc, name, nlen, value, vlen);
        /* only the few names the server reads */
        if (NAME_IS(name, nlen, "Transfer-Encoding")) {
            te = 1;
        } else if (NAME_IS(name, nlen, "Expect")) {
            if (NAME_IS(value, vlen, "100-continue"))
                h->expect_continue = 1;
            else
                expect_bad = 1;
        } else if (NAME_IS(name, nlen, "Connection")) {
            conn_close |= has_token(value, vlen, "close");
            conn_keep |= has_token(value, vlen, "keep-alive");
        } else if (NAME_IS(name, nlen, "Host")) {
            host_bad |= !host_ok(value, vlen);
        }
    }
    *head_len = used;
    if (te)
        return SK_HTTP_CHUNKED;
    /* RFC 9112 3.2: 400 to either; said, not returned, so that the server decides
     * (sk_http.c refuses it) after the framing it must refuse first */
    h->host_bad = host_bad || (h->minor >= 1 && hc.host == 0);
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
    } else if (max_body_bytes >= 0 && hc.length > max_body_bytes) {
        return SK_HTTP_BODY_LARGE;
    } else {
        h->content_length = hc.length;
        h->keep_alive = h->minor >= 1 ? !conn_close : (conn_keep && !conn_close);
    }
    /* Accepted: now the strings get their NULs (each on a separator or a line end). */
    buf[uri_end] = '\0';
    if (slash_at)
        buf[slash_at] = '/';
    for (int i = 0; i < h->nh; i++) {
        buf[ends[i].name] = '\0';
        buf[ends[i].value] = '\0';
    }
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
        *status = 431, *reason = "Request Header Fields Too Large";
        *code = "headers_too_large";
        *message = "too many or too large header lines";
        return;
    case SK_HTTP_URI_LONG:
        *status = 414, *reason = "URI Too Long", *code = "uri_too_long";
        *message = "request line too long";
        return;
    case SK_HTTP_HOST:
        *message = "HTTP/1.1 needs one Host header holding host[:port]";
        return;
    case SK_HTTP_H2_PREFACE:
        *message = "HTTP/2 is not served here: HTTP/1.1 only";
        return;
    case SK_HTTP_BLANK_LINES:
        *message = "too many empty lines before the request";
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
