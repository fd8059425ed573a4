/* fuzz_http: the pure half of seckill-order's request handling, in the order
 * order_http_handle runs it: route the path (order_route_match, order_parse_id), then
 * parse the body (order_body_parse_event, order_body_check_order, and through them
 * order_time_parse_rfc3339).
 *
 * Input: byte 0 picks the method; then the request target up to the first '\n' (cut
 * at "?#" as the handler does; evhttp hands it over as a C string, so a NUL ends it);
 * the rest is the body. Both body parsers see every body: the route decides which one
 * the service calls, but the fuzzer should not have to find a path to reach a parser.
 * Besides memory errors, the harness checks each function's documented contract. */
#include "fuzz_util.h"
#include "order_body.h"
#include "order_route.h"
#include "order_time.h"
#include "sk_order_msg.h"

static int route_has_id(order_route_id id)
{
    return id == ORDER_ROUTE_EVENT_GET || id == ORDER_ROUTE_ORDER_CREATE ||
           id == ORDER_ROUTE_ORDER_GET || id == ORDER_ROUTE_ORDER_PAY ||
           id == ORDER_ROUTE_ORDER_CANCEL || id == ORDER_ROUTE_EVENT_PAUSE ||
           id == ORDER_ROUTE_EVENT_RESUME || id == ORDER_ROUTE_EVENT_CHALLENGE ||
           id == ORDER_ROUTE_EVENT_ORDER_PATH || id == ORDER_ROUTE_EVENT_CHANGE ||
           id == ORDER_ROUTE_EVENT_END || id == ORDER_ROUTE_EVENT_STOCK ||
           id == ORDER_ROUTE_EVENT_AUDIT || id == ORDER_ROUTE_EVENT_DELETE;
}

static void check_route(order_method method, const char *uri)
{
    size_t plen = strcspn(uri, "?#");
    order_route rt;
    int rc = order_route_match(method, uri, plen, &rt);
    FUZZ_CHECK(rc == rt.status);
    FUZZ_CHECK(rc == 0 || rc == 400 || rc == 404 || rc == 405);
    FUZZ_CHECK((unsigned)rt.id < ORDER_ROUTE_COUNT);
    FUZZ_CHECK(order_route_name(rt.id) != NULL);
    if (rc == 404)
        FUZZ_CHECK(rt.id == ORDER_ROUTE_NONE);
    else
        FUZZ_CHECK(rt.id != ORDER_ROUTE_NONE);
    if (rc == 405)
        FUZZ_CHECK(rt.allow != NULL && rt.allow[0] != '\0');
    if (rc == 0 && method == ORDER_METHOD_OTHER)
        FUZZ_CHECK(!"a route accepted a method it never allows");
    if (rc == 0 && route_has_id(rt.id)) {
        /* The id segment must have been a valid decimal id and arg its value. */
        FUZZ_CHECK(rt.arg >= 1 && rt.arg <= (uint64_t)INT64_MAX);
        int on_order = rt.id == ORDER_ROUTE_ORDER_GET || rt.id == ORDER_ROUTE_ORDER_PAY ||
                       rt.id == ORDER_ROUTE_ORDER_CANCEL;
        const char *seg = uri + (on_order ? strlen("/api/v1/orders/") : strlen("/api/v1/events/"));
        size_t seglen = strcspn(seg, "/?#");
        uint64_t want;
        FUZZ_CHECK(fuzz_ref_id(seg, seglen, 19, 1, &want) == 0);
        FUZZ_CHECK(want == rt.arg);
    }
    if (rc == 400)
        FUZZ_CHECK(route_has_id(rt.id));
}

/* order_parse_id against the reference on the same bytes (sk_id's rule: 1 to 19
 * digits, no leading zero, value in [1, INT64_MAX]). */
static void check_parse_id(const char *s, size_t len)
{
    uint64_t got = 0, want = 0;
    int rc = order_parse_id(s, len, &got);
    int ref = fuzz_ref_id(s, len, 19, 1, &want);
    FUZZ_CHECK(rc == ref);
    if (rc == 0)
        FUZZ_CHECK(got == want);
}

#define MAX_RFC3339_MS 253402300799999LL /* 9999-12-31T23:59:59.999Z */

static void check_time(const char *s, size_t len)
{
    int64_t ms;
    if (order_time_parse_rfc3339(s, len, &ms) != 0)
        return;
    /* The instant lies in 1970..9999 (regression seed corpus/fuzz_http/order_time_year10000:
     * an offset once pushed a written 9999-12-31 into year 10000). */
    FUZZ_CHECK(ms >= 0 && ms <= MAX_RFC3339_MS);
    char buf[32], again[32];
    order_time_format_rfc3339(ms, buf, sizeof(buf));
    int64_t ms2;
    FUZZ_CHECK(order_time_parse_rfc3339(buf, strlen(buf), &ms2) == 0);
    FUZZ_CHECK(ms2 == ms);
    order_time_format_rfc3339(ms2, again, sizeof(again));
    FUZZ_CHECK(strcmp(buf, again) == 0);
}

static void check_bodies(const char *body, size_t len)
{
    char err[256];
    order_event_spec spec;
    memset(err, 'x', sizeof(err));
    if (order_body_parse_event(body, len, &spec, err, sizeof(err)) == 0) {
        size_t n = strnlen(spec.name, sizeof(spec.name));
        FUZZ_CHECK(n >= 1 && n <= ORDER_EVENT_NAME_MAX);
        FUZZ_CHECK(spec.stock >= 0 && spec.stock <= INT32_MAX);
        FUZZ_CHECK(spec.starts_at_ms >= 0 && spec.ends_at_ms > spec.starts_at_ms);
        FUZZ_CHECK(spec.ends_at_ms <= MAX_RFC3339_MS);
        FUZZ_CHECK(spec.per_user_limit >= 1 && spec.per_user_limit <= SK_ORDER_MSG_MAX_QUANTITY);
        FUZZ_CHECK(len <= ORDER_BODY_MAX);
    } else {
        FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
    }
    memset(err, 'x', sizeof(err));
    if (order_body_check_order(body, len, err, sizeof(err)) != 0)
        FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    order_method method = (order_method)(data[0] % 4 + 1);
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    const uint8_t *nl = memchr(p, '\n', n);
    size_t urilen = nl ? (size_t)(nl - p) : n;

    char *uri = fuzz_strndup(p, urilen); /* a NUL inside ends it, as in evhttp */
    check_route(method, uri);
    check_parse_id(uri, strlen(uri));
    free(uri);

    if (nl) {
        /* An exact-size heap copy: a read one byte past the body is an ASan report. */
        size_t blen = n - urilen - 1;
        char *body = malloc(blen ? blen : 1);
        if (!body)
            abort();
        memcpy(body, nl + 1, blen);
        check_bodies(body, blen);
        if (blen <= 64)
            check_time(body, blen);
        free(body);
    }
    return 0;
}
