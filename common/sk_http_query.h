/* sk_http_query: reading a request target's query string (RFC 3986 section 3.4, with the
 * form rules browsers use: '&' between parameters, '=' between name and value, '+' for a
 * space, %XX escapes).
 *
 * Pure functions on pointer + length: nothing is allocated or copied, the query is never
 * written to; a value is handed back as it stands in the query (still encoded), and
 * decoded only when the caller asks, into the caller's buffer. Names are compared
 * exactly, as they stand (case matters, no decoding). */
#ifndef SK_HTTP_QUERY_H
#define SK_HTTP_QUERY_H

#include <stddef.h>

typedef enum {
    SK_HTTP_QUERY_FOUND = 1,    /* the parameter is there: *val, *vlen set */
    SK_HTTP_QUERY_ABSENT = 0,   /* no such parameter (or no query at all) */
    SK_HTTP_QUERY_INVALID = -1, /* a parameter without '=' or with an empty name, an
                                 * empty one between two '&', or a value that does not
                                 * decode into the caller's bounds */
} sk_http_query_rc;

/** @brief The query of request target `target` (NUL-terminated): what follows the
 *  first '?', up to a '#' or the end.
 *  @returns the query (inside target) and its length in *len, or NULL (and *len = 0)
 *  when the target has no '?'. */
const char *sk_http_query_of(const char *target, size_t *len);

/** @brief Looks up parameter `name` in query q of qlen bytes (q need not be
 *  NUL-terminated). The whole query is checked, so a malformed parameter anywhere is
 *  SK_HTTP_QUERY_INVALID whichever name is asked; a trailing '&' is fine. Of two
 *  parameters of the same name the first counts.
 *  @returns SK_HTTP_QUERY_FOUND with *val (inside q) and *vlen the raw, still encoded
 *  value (possibly empty), SK_HTTP_QUERY_ABSENT, or SK_HTTP_QUERY_INVALID. */
sk_http_query_rc sk_http_query_get(const char *q, size_t qlen, const char *name, const char **val,
                                   size_t *vlen);

/** @brief Decodes a query value: '+' is a space and %XX the byte XX; a '%' not followed
 *  by two hex digits stays as it is (as libevent's evhttp did). dst gets the bytes and a
 *  NUL; dst may not overlap src.
 *  @returns the decoded length, or -1 when it would not fit in dstsz (with its NUL). */
long sk_http_query_decode(const char *src, size_t len, char *dst, size_t dstsz);

/** @brief A decimal integer parameter (after decoding; an optional '-', digits only, no
 *  space) within [lo, hi]; *out = def when the parameter is absent.
 *  @returns SK_HTTP_QUERY_FOUND or SK_HTTP_QUERY_ABSENT (*out set), or
 *  SK_HTTP_QUERY_INVALID: the query is malformed, or the value is empty, not a number,
 *  or out of bounds (*out untouched). */
sk_http_query_rc sk_http_query_int(const char *q, size_t qlen, const char *name, long long lo,
                                   long long hi, long long def, long long *out);

#endif
