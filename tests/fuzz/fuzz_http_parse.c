/* fuzz_http_parse: sk_http's request head parser (sk_http_parse_head) and its refusals
 * (sk_http_refusal) against what common/sk_http.h promises, on the bytes of a
 * connection.
 *
 * Input: byte 0 picks the bounds (low 4 bits: max_header_bytes, high 4 bits:
 * max_body_bytes, from the tables below: tiny bounds reach the edges); the rest is the
 * buffer, in an exact-size heap copy so that a read past it is an ASan finding.
 * Checks: the rc is one of sk_http_parse_rc; INCOMPLETE and the refusals leave the
 * buffer byte for byte as it was, and INCOMPLETE happens only within max_header_bytes;
 * OK gives 0 < head_len <= len, leaves the bytes after the head alone, and hands on a
 * method in range, a minor in 0..9, at most SK_HTTP_MAX_HEADERS headers, and a target,
 * names and values (offsets) that lie inside [buf, buf + head_len) with no CR, LF,
 * NUL or DEL inside them (and no control but HTAB in a value); 0 <= content_length <=
 * max(max_body_bytes, 0); a framing refusal comes with content_length 0 and keep_alive
 * 0; the head alone (buf[0..head_len)) parses to the same answer; a parse that goes on
 * from an INCOMPLETE prefix (last_len, at three cuts) gives the same answer as one
 * parse; every refusal maps to 400/405/413/505 with non-empty texts. */
#include "fuzz_util.h"
#include "sk_http.h"

static const size_t max_headers_of[16] = {1,   2,   3,   8,    16,   17,   32,   40,
                                          64,  100, 128, 255,  256,  1024, 4096, 8192};
static const int64_t max_body_of[16] = {-1, -1, 0, 0, 1, 2, 5, 9, 10, 99, 100, 4096, 65536,
                                        999999999999999LL, INT64_MAX, 1 << 20};

/* 1 if the NUL-terminated string at lo + off lies inside [lo, hi) (its NUL included)
 * and holds no CR, LF or DEL (and, if value, no control but HTAB). */
static int inside(size_t off, const char *lo, const char *hi, int value)
{
    if (off >= (size_t)(hi - lo))
        return 0;
    const char *s = lo + off;
    const char *nul = memchr(s, '\0', (size_t)(hi - s));
    if (!nul)
        return 0;
    for (const char *p = s; p < nul; p++)
        if (*p == '\r' || *p == '\n' || *p == 0x7f || (value && (unsigned char)*p < 0x20 && *p != '\t'))
            return 0;
    return 1;
}

/* The same head twice (a in abuf, b in bbuf): 1 if every field agrees. */
static int same_head(const sk_http_head *a, const char *abuf, const sk_http_head *b,
                     const char *bbuf)
{
    if (a->method != b->method || a->minor != b->minor || a->nh != b->nh ||
        a->content_length != b->content_length || a->keep_alive != b->keep_alive ||
        a->expect_continue != b->expect_continue || a->framing != b->framing ||
        strcmp(abuf + a->uri, bbuf + b->uri) != 0)
        return 0;
    for (int i = 0; i < a->nh; i++)
        if (strcmp(abuf + a->h[i].name, bbuf + b->h[i].name) != 0 ||
            strcmp(abuf + a->h[i].value, bbuf + b->h[i].value) != 0)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t maxh = max_headers_of[data[0] & 15];
    int64_t maxb = max_body_of[data[0] >> 4];
    size_t len = size - 1;
    char *buf = malloc(len ? len : 1);
    char *orig = malloc(len ? len : 1);
    char *again = malloc(len ? len : 1);
    if (!buf || !orig || !again)
        abort();
    memcpy(buf, data + 1, len);
    memcpy(orig, data + 1, len);

    sk_http_head h;
    size_t head_len = (size_t)-1;
    sk_http_parse_rc rc = sk_http_parse_head(buf, len, 0, maxh, maxb, &h, &head_len);
    FUZZ_CHECK(rc >= SK_HTTP_OK && rc <= SK_HTTP_H2_PREFACE && rc != SK_HTTP_HOST);
    if (rc != SK_HTTP_OK)
        FUZZ_CHECK(memcmp(buf, orig, len) == 0);

    /* Resumed at a cut: the prefix INCOMPLETE, then the whole from there, same answer. */
    size_t cuts[3] = {len / 2, len > 0 ? len - 1 : 0, len > 0 ? 1 + (size_t)data[0] * 31 % len : 0};
    for (int k = 0; k < 3; k++) {
        sk_http_head hc;
        size_t hl = (size_t)-1;
        memcpy(again, orig, len);
        if (cuts[k] == 0 || cuts[k] >= len ||
            sk_http_parse_head(again, cuts[k], 0, maxh, maxb, &hc, &hl) != SK_HTTP_INCOMPLETE)
            continue;
        FUZZ_CHECK(sk_http_parse_head(again, len, cuts[k], maxh, maxb, &hc, &hl) == rc);
        if (rc == SK_HTTP_OK)
            FUZZ_CHECK(hl == head_len && same_head(&h, buf, &hc, again));
    }

    if (rc == SK_HTTP_INCOMPLETE) {
        FUZZ_CHECK(memcmp(buf, orig, len) == 0);
        size_t skip = 0;
        while (skip < len && (orig[skip] == '\r' || orig[skip] == '\n'))
            skip++;
        FUZZ_CHECK(len - skip <= maxh);
    } else if (rc == SK_HTTP_OK) {
        FUZZ_CHECK(head_len > 0 && head_len <= len);
        FUZZ_CHECK(orig[head_len - 1] == '\n');
        FUZZ_CHECK(memcmp(buf + head_len, orig + head_len, len - head_len) == 0);
        FUZZ_CHECK(h.method >= SK_HTTP_GET && h.method <= SK_HTTP_TRACE);
        FUZZ_CHECK(h.minor >= 0 && h.minor <= 9);
        FUZZ_CHECK(h.nh >= 0 && h.nh <= SK_HTTP_MAX_HEADERS);
        const char *lo = buf, *hi = buf + head_len;
        FUZZ_CHECK(inside(h.uri, lo, hi, 0) && buf[h.uri] != '\0');
        for (int i = 0; i < h.nh; i++) {
            FUZZ_CHECK(inside(h.h[i].name, lo, hi, 0) && buf[h.h[i].name] != '\0');
            FUZZ_CHECK(strlen(buf + h.h[i].name) == h.h[i].name_len); /* sk_http_header's */
            FUZZ_CHECK(inside(h.h[i].value, lo, hi, 1));
        }
        FUZZ_CHECK(h.content_length >= 0 && h.content_length <= (maxb > 0 ? maxb : 0));
        FUZZ_CHECK(h.keep_alive == 0 || h.keep_alive == 1);
        FUZZ_CHECK(h.expect_continue == 0 || h.expect_continue == 1);
        if (h.framing) {
            FUZZ_CHECK(h.framing[0] != '\0');
            FUZZ_CHECK(h.content_length == 0 && h.keep_alive == 0);
        }

        /* The head alone is the same request: nothing after head_len was looked at. */
        sk_http_head h2;
        size_t head_len2 = 0;
        char *alone = malloc(head_len); /* exact size: a read past it is a finding */
        if (!alone)
            abort();
        memcpy(alone, orig, head_len);
        FUZZ_CHECK(sk_http_parse_head(alone, head_len, 0, maxh, maxb, &h2, &head_len2) == SK_HTTP_OK);
        FUZZ_CHECK(head_len2 == head_len && same_head(&h, buf, &h2, alone));
        free(alone);
    } else {
        int status = 0;
        const char *reason = NULL, *code = NULL, *message = NULL;
        sk_http_refusal(rc, &status, &reason, &code, &message);
        FUZZ_CHECK(status == 400 || status == 405 || status == 413 || status == 414 ||
                   status == 431 || status == 505);
        FUZZ_CHECK(reason && reason[0] && code && code[0] && message && message[0]);
        FUZZ_CHECK((rc == SK_HTTP_METHOD) == (status == 405));
        FUZZ_CHECK((rc == SK_HTTP_VERSION) == (status == 505));
        FUZZ_CHECK((rc == SK_HTTP_BODY_LARGE) == (status == 413));
        FUZZ_CHECK((rc == SK_HTTP_HEADERS_LARGE) == (status == 431));
        FUZZ_CHECK((rc == SK_HTTP_URI_LONG) == (status == 414));
    }
    free(buf);
    free(orig);
    free(again);
    return 0;
}
