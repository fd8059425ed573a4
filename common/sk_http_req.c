/* sk_http_req: a request as the handler sees it, and its answer's bytes (the other
 * half of sk_http; sk_http_int.h says how the two share the work). The request objects
 * come from a per-server free list; the accessors read the head the parser left as
 * offsets from r->base; the handler's added header lines and the formatted answer head
 * are built here, and sk_http.c's sk_http_reply sends them. Nothing here touches a
 * connection or a socket. */
#include "sk_http_int.h"
#include "sk_id.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define FREE_REQS_MAX 256 /* requests kept for reuse per server */
#define BODY_INLINE 2048  /* bodies up to this go out in the head's write */

/* ---- requests ---- */

sk_http_req *sk_http_req_get(sk_http *s)
{
    sk_http_req *r = s->free_reqs;
    if (r) {
        s->free_reqs = r->next_free;
        s->nfree--;
    } else if (!(r = calloc(1, sizeof(*r)))) {
        return NULL;
    }
    r->s = s;
    r->c = NULL;
    r->oxlen = 0;
    r->close = 0;
    r->base = NULL;
    r->body = "";
    r->body_len = 0;
    r->kept_in = NULL;
    return r;
}

void sk_http_req_put(sk_http_req *r)
{
    sk_http *s = r->s;
    free(r->kept_in);
    r->kept_in = NULL;
    if (s && s->nfree < FREE_REQS_MAX) {
        r->next_free = s->free_reqs;
        s->free_reqs = r;
        s->nfree++;
        return;
    }
    free(r->ox);
    free(r);
}

void sk_http_req_pool_free(sk_http *s)
{
    while (s->free_reqs) {
        sk_http_req *r = s->free_reqs;
        s->free_reqs = r->next_free;
        free(r->ox);
        free(r);
    }
    s->nfree = 0;
}

int sk_http_grow(char **buf, size_t *cap, size_t need, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    char *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

/* ---- a request ---- */

sk_http_method sk_http_method_of(const sk_http_req *r)
{
    return (sk_http_method)r->head.method;
}

const char *sk_http_uri(const sk_http_req *r)
{
    return r->base + r->head.uri;
}

/* Called several times per request (the token, the Idempotency-Key, the challenge...):
 * a name's length and its first byte, case-folded, rule out almost every other header
 * before strncasecmp runs (callgrind, a 7-header request, five names of which one is
 * absent: ~280 instructions a lookup with strcasecmp on each, ~120 now). `| 0x20` folds a letter's case; it also pairs a few
 * non-letters (@ and `), which only lets strncasecmp decide. A name never holds a NUL,
 * so equal lengths and strncasecmp over them are strcasecmp's equality. */
const char *sk_http_header(const sk_http_req *r, const char *name)
{
    size_t nlen = strlen(name);
    unsigned char first = (unsigned char)name[0] | 0x20;
    for (int i = 0; i < r->head.nh; i++) {
        const char *hn = r->base + r->head.h[i].name;
        if (r->head.h[i].name_len == nlen && ((unsigned char)hn[0] | 0x20) == first &&
            strncasecmp(hn, name, nlen) == 0)
            return r->base + r->head.h[i].value;
    }
    return NULL;
}

int sk_http_header_count(const sk_http_req *r)
{
    return r->head.nh;
}

int sk_http_header_at(const sk_http_req *r, int i, const char **name, const char **value)
{
    if (i < 0 || i >= r->head.nh)
        return -1;
    *name = r->base + r->head.h[i].name;
    *value = r->base + r->head.h[i].value;
    return 0;
}

const char *sk_http_body(const sk_http_req *r, size_t *len)
{
    *len = r->body_len;
    return r->body_len ? r->body : "";
}

const char *sk_http_framing(const sk_http_req *r)
{
    return r->head.framing;
}

/* ---- the answer ---- */

int sk_http_add_header(sk_http_req *r, const char *name, const char *value)
{
    if (strpbrk(name, "\r\n") || strpbrk(value, "\r\n"))
        return -1;
    if (strcasecmp(name, "Connection") == 0) {
        if (strcasecmp(value, "close") == 0)
            r->close = 1; /* the server writes the line itself */
        return 0;
    }
    size_t nl = strlen(name), vl = strlen(value), need = r->oxlen + nl + vl + 4;
    if (sk_http_grow(&r->ox, &r->oxcap, need, 256) != 0)
        return -1;
    char *p = r->ox + r->oxlen;
    memcpy(p, name, nl);
    p[nl] = ':';
    p[nl + 1] = ' ';
    memcpy(p + nl + 2, value, vl);
    p[nl + 2 + vl] = '\r';
    p[nl + 3 + vl] = '\n';
    r->oxlen = need;
    return 0;
}

void sk_http_close_after(sk_http_req *r)
{
    r->close = 1;
}

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* put() leaves room checks to its caller: sk_http_answer_head grows the scratch to a
 * bound of everything it writes first. */
size_t sk_http_answer_head(const sk_http_req *r, int status, const char *reason,
                           const char *ctype, const void *body, size_t len, int close_after,
                           const void **rest, size_t *restlen)
{
    sk_http *s = r->s;
    size_t rlen = strlen(reason), clen = ctype ? strlen(ctype) : 0;
    if (status < 100 || status > 999)
        status = 500;
    /* HEAD: the length the GET would have, no body; 1xx, 204, 304: neither */
    int head_only = r->head.method == SK_HTTP_HEAD || status < 200 || status == 204 || status == 304;
    size_t inline_body = !head_only && len <= BODY_INLINE ? len : 0;
    size_t need = 256 + rlen + clen + r->oxlen + inline_body;
    if (sk_http_grow(&s->scratch, &s->scratch_cap, need, 4096) != 0)
        return 0;
    char *p = s->scratch;
    p = put(p, "HTTP/1.1 ", 9);
    *p++ = (char)('0' + status / 100);
    *p++ = (char)('0' + status / 10 % 10);
    *p++ = (char)('0' + status % 10);
    *p++ = ' ';
    p = put(p, reason, rlen);
    p = put(p, "\r\nDate: ", 8);
    p = put(p, sk_httpdate_get(&s->date, (int64_t)time(NULL)), 29);
    p = put(p, "\r\n", 2);
    if (ctype) {
        p = put(p, "Content-Type: ", 14);
        p = put(p, ctype, clen);
        p = put(p, "\r\n", 2);
    }
    if (status >= 200 && status != 204 && status != 304) { /* RFC 9110 8.6 */
        p = put(p, "Content-Length: ", 16);
        p += sk_id_format(p, len); /* its NUL is overwritten next */
        p = put(p, "\r\n", 2);
    }
    if (r->oxlen)
        p = put(p, r->ox, r->oxlen);
    if (close_after)
        p = put(p, "Connection: close\r\n", 19);
    else if (r->head.minor == 0)
        p = put(p, "Connection: keep-alive\r\n", 24);
    p = put(p, "\r\n", 2);
    if (inline_body)
        p = put(p, body, inline_body);
    *rest = !head_only && !inline_body ? body : NULL;
    *restlen = *rest ? len : 0;
    return (size_t)(p - s->scratch);
}
