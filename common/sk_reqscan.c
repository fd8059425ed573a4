/* sk_reqscan: request boundaries on a connection. See sk_reqscan.h. */
#include "sk_reqscan.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

void sk_reqscan_init(sk_reqscan *s)
{
    memset(s, 0, sizeof(*s));
}

int sk_reqscan_refused(const sk_reqscan *s)
{
    return s->state == 3;
}

/* 1 if the n bytes at p are the header name `name` (case-insensitive). */
static int name_is(const char *p, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp(p, name, n) == 0;
}

/* A Content-Length value: optional spaces/tabs, 1 to 15 digits, optional spaces/tabs
 * (evhttp would read "+6" or " -0" too; we refuse them, and so does sk_hdrcheck).
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

/* 1 if the request line starts with a method evhttp parses (libevent 2.1's list). */
static int method_known(const char *line, size_t kept)
{
    static const char *const known[] = {"GET ", "POST ", "HEAD ", "PUT ", "DELETE ",
                                        "OPTIONS ", "TRACE ", "CONNECT ", "PATCH "};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        size_t n = strlen(known[i]);
        if (kept >= n && strncmp(line, known[i], n) == 0)
            return 1;
    }
    return 0;
}

/* The request line ended: CONNECT and TRACE are refused (the handler answers them), and
 * so is a method evhttp does not know, which it would answer with an HTML 501 without
 * ever calling the handler. @returns 0 or -1. */
static int request_line_done(sk_reqscan *s)
{
    size_t kept = s->linelen < SK_REQSCAN_LINE ? s->linelen : SK_REQSCAN_LINE;
    if (!method_known(s->line, kept)) {
        s->refusal = SK_REQSCAN_METHOD;
        return -1;
    }
    if ((kept >= 8 && strncmp(s->line, "CONNECT ", 8) == 0) ||
        (kept >= 6 && strncmp(s->line, "TRACE ", 6) == 0))
        return -1;
    s->body_allowed = (kept >= 5 && strncmp(s->line, "POST ", 5) == 0) ||
                      (kept >= 4 && strncmp(s->line, "PUT ", 4) == 0) ||
                      (kept >= 6 && strncmp(s->line, "PATCH ", 6) == 0);
    return 0;
}

/* A header line ended: keeps the first (and only) Content-Length, as evhttp does.
 * @returns 0, or -1 when the framing is refused. */
static int header_line_done(sk_reqscan *s)
{
    size_t kept = s->linelen < SK_REQSCAN_LINE ? s->linelen : SK_REQSCAN_LINE;
    const char *colon = memchr(s->line, ':', kept);
    if (!colon)
        return 0; /* a long line, or no header at all: evhttp judges it */
    size_t nlen = (size_t)(colon - s->line);
    for (size_t i = 0; i < nlen; i++)
        if (s->line[i] == ' ' || s->line[i] == '\t')
            return s->line[0] == ' ' || s->line[0] == '\t' ? 0 : -1; /* "Host : x" */
    if (name_is(s->line, nlen, "transfer-encoding")) {
        s->refusal = SK_REQSCAN_CHUNKED;
        return -1;
    }
    if (name_is(s->line, nlen, "expect")) {
        const char *v = colon + 1, *end = s->line + kept;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (s->linelen > SK_REQSCAN_LINE || end - v != 12 || strncasecmp(v, "100-continue", 12) != 0) {
            s->refusal = SK_REQSCAN_EXPECT;
            return -1;
        }
        return 0;
    }
    if (!name_is(s->line, nlen, "content-length"))
        return 0;
    if (s->linelen > SK_REQSCAN_LINE || s->cl_seen++ > 0)
        return -1;
    int64_t v = parse_length(colon + 1, kept - nlen - 1);
    if (v > 0 && s->max_body_bytes < 0) { /* no body at all, whatever the method */
        s->refusal = SK_REQSCAN_BODY_LARGE;
        return -1;
    }
    if (v < 0 || (v > 0 && !s->body_allowed))
        return -1;
    if (s->max_body_bytes != 0 && v > (s->max_body_bytes < 0 ? 0 : s->max_body_bytes)) {
        s->refusal = SK_REQSCAN_BODY_LARGE;
        return -1;
    }
    s->content_length = v;
    return 0;
}

/* Adds n bytes of a header line (no LF among them) to the line: CRs are not part of it,
 * and only the first SK_REQSCAN_LINE bytes are kept. */
static void line_add(sk_reqscan *s, const unsigned char *p, size_t n)
{
    while (n > 0) {
        const unsigned char *cr = memchr(p, '\r', n);
        size_t k = cr ? (size_t)(cr - p) : n;
        if (s->linelen < SK_REQSCAN_LINE) {
            size_t room = SK_REQSCAN_LINE - s->linelen;
            memcpy(s->line + s->linelen, p, k < room ? k : room);
        }
        s->linelen += k;
        if (!cr)
            break;
        p += k + 1;
        n -= k + 1;
    }
}

/* A line at a time (memchr for its LF), not a byte at a time: the byte loop cost 7k
 * instructions per placed order, about a tenth of the service's work (issue 16). The
 * result is the byte loop's: the same line, counts and refusal point. */
int sk_reqscan_feed(sk_reqscan *s, const unsigned char *p, size_t n)
{
    size_t i = 0;
    uint64_t base = s->fed;
    while (i < n && s->state != 3) {
        if (s->state == 2) { /* body: skip it whole */
            size_t take = (size_t)s->body_left < n - i ? (size_t)s->body_left : n - i;
            s->body_left -= (int64_t)take;
            i += take;
            if (s->body_left == 0)
                s->state = 0;
            continue;
        }
        if (s->state == 0) {
            if (p[i] == '\r' || p[i] == '\n') {
                i++;
                continue; /* blank lines before a request are allowed */
            }
            s->state = 1;
            s->requests++;
            s->start = base + i;
            s->header_bytes = 0;
            s->linelen = 0;
            s->first_line = 1;
            s->body_allowed = 0;
            s->cl_seen = 0;
            s->content_length = 0;
        }
        /* state 1: the rest of the current line, its LF included when it is here */
        const unsigned char *lf = memchr(p + i, '\n', n - i);
        size_t seg = lf ? (size_t)(lf - (p + i)) + 1 : n - i;
        if (s->max_header_bytes && s->header_bytes + seg > s->max_header_bytes) {
            /* scanned up to and including the byte that goes over the bound */
            size_t k = s->max_header_bytes - s->header_bytes;
            line_add(s, p + i, k);
            i += k + 1;
            s->header_bytes = s->max_header_bytes + 1;
            s->refusal = SK_REQSCAN_HEADERS_LARGE;
            s->state = 3;
            break;
        }
        s->header_bytes += seg;
        line_add(s, p + i, lf ? seg - 1 : seg);
        i += seg;
        if (!lf)
            break;
        if (s->linelen == 0) { /* the blank line: headers done */
            if (s->content_length > 0) {
                s->state = 2;
                s->body_left = s->content_length;
            } else
                s->state = 0;
            continue;
        }
        int rc = s->first_line ? request_line_done(s) : header_line_done(s);
        s->first_line = 0;
        s->linelen = 0;
        if (rc != 0) {
            s->state = 3; /* sticky until the connection closes */
            if (s->refusal == SK_REQSCAN_OK)
                s->refusal = SK_REQSCAN_FRAMING;
        }
    }
    s->fed = base + i;
    return s->state != 0;
}

void sk_hdrcheck_init(sk_hdrcheck *h)
{
    memset(h, 0, sizeof(*h));
}

int sk_hdrcheck_add(sk_hdrcheck *h, const char *name, const char *value)
{
    if (h->why)
        return -1;
    if (strpbrk(name, " \t"))
        h->why = "whitespace in a header name";
    else if (strcasecmp(name, "Transfer-Encoding") == 0)
        h->why = "Transfer-Encoding is not accepted: send Content-Length";
    else if (strcasecmp(name, "Host") == 0 && h->host++ > 0)
        h->why = "more than one Host header";
    else if (strcasecmp(name, "Content-Length") == 0 &&
             (h->content_length++ > 0 || (h->length = parse_length(value, strlen(value))) < 0))
        h->why = h->content_length > 1 ? "more than one Content-Length header"
                                       : "Content-Length is not a decimal number";
    return h->why ? -1 : 0;
}

int sk_hdrcheck_done(sk_hdrcheck *h, int body_allowed)
{
    if (!h->why && h->length > 0 && !body_allowed)
        h->why = "a body on a method without one";
    return h->why ? -1 : 0;
}
