/* fuzz_reqscan: the request-boundary scanner of seckill-order's read deadline
 * (sk_reqscan_feed) against a reference written the slow, obvious way from the rule
 * in sk_reqscan.h, and against itself fed in pieces.
 *
 * Input: byte 0 picks a split point for the piecewise feed; the rest is the bytes of a
 * connection. Checks: (1) the scanner's verdict ("in a request" or not, refused or not)
 * is the reference's; (2) feeding the same bytes whole, byte by byte, or in two pieces
 * gives the same verdict; (3) refused is sticky; (4) for the first request, when the
 * handler's check (sk_hdrcheck on the headers as evhttp parses them) accepts it, the
 * scanner either refused it (the deadline then holds until the connection closes) or
 * uses the very Content-Length evhttp uses: they agree on where the request ends. A
 * request the handler refuses is answered with Connection: close, so no boundary after
 * it matters. */
#include "fuzz_util.h"
#include "sk_reqscan.h"

#include <ctype.h>
#include <strings.h>

typedef struct ref_result {
    int in_request, refused;
} ref_result;

static int ref_digits_only(const char *p, size_t n, long long *out)
{
    size_t i = 0, d = 0;
    long long v = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    while (i < n && isdigit((unsigned char)p[i])) {
        if (d < 15)
            v = v * 10 + (p[i] - '0');
        i++, d++;
    }
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (d == 0 || d > 15 || i != n)
        return -1;
    *out = v;
    return 0;
}

/* The rule, request by request over the whole buffer. */
static ref_result reference(const char *b, size_t n)
{
    ref_result r = {0, 0};
    size_t i = 0;
    for (;;) {
        while (i < n && (b[i] == '\r' || b[i] == '\n'))
            i++;
        if (i >= n)
            return r; /* between requests */
        int line_no = 0, cl_seen = 0, body_allowed = 0;
        long long cl = 0;
        for (;;) {
            /* one line: up to LF, CRs dropped */
            char line[4096];
            size_t len = 0, raw = 0;
            int ended = 0;
            while (i < n) {
                char c = b[i++];
                if (c == '\n') {
                    ended = 1;
                    break;
                }
                if (c == '\r')
                    continue;
                if (len < sizeof(line))
                    line[len] = c;
                len++, raw++;
            }
            if (!ended) {
                r.in_request = 1;
                return r;
            }
            if (len == 0)
                break; /* end of headers */
            size_t kept = len < SK_REQSCAN_LINE ? len : SK_REQSCAN_LINE;
            if (line_no++ == 0) {
                /* refused: CONNECT, TRACE, and any method evhttp does not know */
                static const char *const ok[] = {"GET ", "POST ", "HEAD ", "PUT ", "DELETE ",
                                                 "OPTIONS ", "PATCH "};
                int known = 0;
                for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
                    known |= kept >= strlen(ok[k]) && memcmp(line, ok[k], strlen(ok[k])) == 0;
                if (!known)
                    goto refused;
                body_allowed = (kept >= 5 && memcmp(line, "POST ", 5) == 0) ||
                               (kept >= 4 && memcmp(line, "PUT ", 4) == 0) ||
                               (kept >= 6 && memcmp(line, "PATCH ", 6) == 0);
                continue;
            }
            const char *colon = memchr(line, ':', kept);
            if (!colon)
                continue;
            size_t nlen = (size_t)(colon - line);
            int ws = 0;
            for (size_t k = 0; k < nlen; k++)
                ws |= line[k] == ' ' || line[k] == '\t';
            if (ws) {
                if (line[0] == ' ' || line[0] == '\t')
                    continue; /* a folded line: evhttp's business */
                goto refused;
            }
            if (nlen == 17 && strncasecmp(line, "transfer-encoding", 17) == 0)
                goto refused;
            if (nlen == 6 && strncasecmp(line, "expect", 6) == 0) {
                const char *v = colon + 1, *e = line + kept;
                while (v < e && (*v == ' ' || *v == '\t'))
                    v++;
                while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                    e--;
                if (len > SK_REQSCAN_LINE || e - v != 12 || strncasecmp(v, "100-continue", 12) != 0)
                    goto refused;
            }
            if (nlen == 14 && strncasecmp(line, "content-length", 14) == 0) {
                if (len > SK_REQSCAN_LINE || cl_seen++ ||
                    ref_digits_only(colon + 1, kept - nlen - 1, &cl) != 0 ||
                    (cl > 0 && !body_allowed))
                    goto refused;
            }
        }
        if ((long long)(n - i) < cl) {
            r.in_request = 1;
            return r;
        }
        i += (size_t)cl;
    }
refused:
    r.in_request = r.refused = 1;
    return r;
}

/* The handler's check on the first request's headers, parsed as evhttp does (name up
 * to the colon, value with leading spaces and trailing whitespace trimmed). Only
 * meaningful when the headers are complete and short. @returns 1 if refused, 0 if
 * accepted (*cl: the Content-Length evhttp reads, 0 if none), -1 if not judged. */
static int handler_refuses_first(const char *b, size_t n, long long *cl)
{
    *cl = 0;
    size_t i = 0;
    while (i < n && (b[i] == '\r' || b[i] == '\n'))
        i++;
    sk_hdrcheck h;
    sk_hdrcheck_init(&h);
    int first = 1, body_allowed = 0;
    while (i < n) {
        const char *lf = memchr(b + i, '\n', n - i);
        if (!lf)
            return -1;
        size_t len = (size_t)(lf - (b + i));
        char line[512];
        if (len >= sizeof(line))
            return -1;
        memcpy(line, b + i, len);
        line[len] = 0;
        if (len && line[len - 1] == '\r')
            line[--len] = 0;
        i += (size_t)(lf - (b + i)) + 1;
        if (len == 0)
            break;
        if (first) {
            first = 0;
            body_allowed = strncmp(line, "POST ", 5) == 0 || strncmp(line, "PUT ", 4) == 0 ||
                           strncmp(line, "PATCH ", 6) == 0;
            continue;
        }
        if (line[0] == ' ' || line[0] == '\t' || memchr(line, '\0', len) || memchr(line, '\r', len))
            return -1; /* folding or odd bytes: evhttp's own parse differs, skip */
        char *colon = strchr(line, ':');
        if (!colon)
            return -1;
        *colon = 0;
        char *v = colon + 1;
        while (*v == ' ')
            v++;
        size_t vl = strlen(v);
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
            v[--vl] = 0;
        if (sk_hdrcheck_add(&h, line, v) != 0)
            return 1;
        if (strcasecmp(line, "Content-Length") == 0)
            *cl = atoll(v); /* digits only: sk_hdrcheck checked */
    }
    return sk_hdrcheck_done(&h, body_allowed) != 0 ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t split = data[0];
    const char *b = (const char *)data + 1;
    size_t n = size - 1;
    if (split > n)
        split = n;
    char *copy = malloc(n ? n : 1);
    if (!copy)
        abort();
    memcpy(copy, b, n);

    sk_reqscan whole, bytes, two;
    sk_reqscan_init(&whole);
    sk_reqscan_init(&bytes);
    sk_reqscan_init(&two);
    int rw = sk_reqscan_feed(&whole, (const unsigned char *)copy, n);
    int rb = 0;
    for (size_t i = 0; i < n; i++) {
        int was_refused = sk_reqscan_refused(&bytes);
        rb = sk_reqscan_feed(&bytes, (const unsigned char *)copy + i, 1);
        FUZZ_CHECK(!was_refused || (sk_reqscan_refused(&bytes) && rb == 1)); /* sticky */
    }
    if (n == 0)
        rb = 0;
    sk_reqscan_feed(&two, (const unsigned char *)copy, split);
    int rt = sk_reqscan_feed(&two, (const unsigned char *)copy + split, n - split);
    if (n == split)
        rt = sk_reqscan_feed(&two, (const unsigned char *)copy, 0);
    FUZZ_CHECK(rw == rb && rw == rt);
    FUZZ_CHECK(sk_reqscan_refused(&whole) == sk_reqscan_refused(&bytes));
    FUZZ_CHECK(sk_reqscan_refused(&whole) == sk_reqscan_refused(&two));

    ref_result ref = reference(copy, n);
    FUZZ_CHECK(rw == ref.in_request);
    FUZZ_CHECK(sk_reqscan_refused(&whole) == ref.refused);

    /* A first request the scanner takes must not be one the handler refuses for its
     * framing (they would disagree on where it ends). */
    sk_reqscan one;
    sk_reqscan_init(&one);
    const char *end = NULL;
    for (size_t i = 0; i + 1 < n && !end; i++)
        if (copy[i] == '\n' && (copy[i + 1] == '\n' || (copy[i + 1] == '\r' && i + 2 < n && copy[i + 2] == '\n')))
            end = copy + i + (copy[i + 1] == '\n' ? 2 : 3);
    if (end) {
        sk_reqscan_feed(&one, (const unsigned char *)copy, (size_t)(end - copy));
        long long cl;
        if (handler_refuses_first(copy, (size_t)(end - copy), &cl) == 0 &&
            !sk_reqscan_refused(&one))
            FUZZ_CHECK(one.content_length == cl);
    }
    free(copy);
    return 0;
}
