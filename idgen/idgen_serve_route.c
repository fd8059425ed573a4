/* idgen_serve_route: see idgen_serve_route.h. */
#include "idgen_serve_route.h"

#include "sk_id.h"

#include <stdint.h>
#include <string.h>

int idgen_serve_tag_ok(const char *tag, size_t len)
{
    if (len < 1 || len > IDGEN_TAG_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = tag[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* count=N in the query q[0..len): the one decimal rule (sk_id.h). @returns N or -1. */
static long query_count(const char *q, size_t len, long max)
{
    const char *p = q, *end = q + len;
    long found = -1;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        if ((size_t)(e - p) > 6 && memcmp(p, "count=", 6) == 0) {
            uint64_t v;
            if (found != -1 || sk_id_parse_range(p + 6, (size_t)(e - p - 6), 1, (uint64_t)max, &v) != 0)
                return -1; /* twice, or not a count in range */
            found = (long)v;
        } else if ((size_t)(e - p) >= 5 && memcmp(p, "count", 5) == 0) {
            return -1; /* "count" without a value, "count=" empty */
        }
        p = amp ? amp + 1 : end;
    }
    return found;
}

int idgen_serve_route_parse(const char *uri, long batch_max, idgen_route *out)
{
    memset(out, 0, sizeof(*out));
    size_t plen = strcspn(uri, "?");
    const char *q = uri[plen] == '?' ? uri + plen + 1 : NULL;
    if (plen == 8 && memcmp(uri, "/healthz", 8) == 0) {
        out->kind = IDGEN_ROUTE_HEALTHZ;
        return 0;
    }
    if (plen == 8 && memcmp(uri, "/metrics", 8) == 0) {
        out->kind = IDGEN_ROUTE_METRICS;
        return 0;
    }
    static const struct {
        const char *prefix;
        idgen_route_kind kind;
        idgen_route_mode mode;
    } routes[] = {
        {"/api/segment/get/", IDGEN_ROUTE_GET, IDGEN_ROUTE_SEGMENT},
        {"/api/snowflake/get/", IDGEN_ROUTE_GET, IDGEN_ROUTE_SNOWFLAKE},
        {"/api/segment/batch/", IDGEN_ROUTE_BATCH, IDGEN_ROUTE_SEGMENT},
        {"/api/snowflake/batch/", IDGEN_ROUTE_BATCH, IDGEN_ROUTE_SNOWFLAKE},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        size_t n = strlen(routes[i].prefix);
        if (plen < n || memcmp(uri, routes[i].prefix, n) != 0)
            continue;
        const char *tag = uri + n;
        size_t tlen = plen - n;
        out->kind = routes[i].kind;
        out->mode = routes[i].mode;
        if (!idgen_serve_tag_ok(tag, tlen)) {
            out->why = "a tag is 1..64 of A-Z a-z 0-9 _ -";
            return 400;
        }
        memcpy(out->tag, tag, tlen);
        out->tag[tlen] = 0;
        out->count = 1;
        if (out->kind == IDGEN_ROUTE_BATCH) {
            long c = q ? query_count(q, strlen(q), batch_max) : -1;
            if (c < 1) {
                out->why = "count must be a decimal in 1..batch_max, given once";
                return 400;
            }
            out->count = c;
        }
        return 0;
    }
    return 404;
}
