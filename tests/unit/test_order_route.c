/* Unit tests of order_route: the API's routing table and id parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "order_console.h"
#include "order_route.h"

static int match(order_method m, const char *path, order_route *rt)
{
    return order_route_match(m, path, strlen(path), rt);
}

static void test_routes(void **state)
{
    static const struct {
        order_method method;
        const char *path;
        int status;
        order_route_id id;
        uint64_t arg;
    } cases[] = {
        {ORDER_METHOD_POST, "/api/v1/events", 0, ORDER_ROUTE_EVENT_CREATE, 0},
        {ORDER_METHOD_GET, "/console", 0, ORDER_ROUTE_CONSOLE, 0},
        {ORDER_METHOD_GET, "/console/app.js", 0, ORDER_ROUTE_CONSOLE, 0},
        {ORDER_METHOD_POST, "/console", 405, ORDER_ROUTE_CONSOLE, 0},
        {ORDER_METHOD_GET, "/consolex", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/api/v1/events", 0, ORDER_ROUTE_EVENT_LIST, 0},
        {ORDER_METHOD_HEAD, "/api/v1/events", 0, ORDER_ROUTE_EVENT_LIST, 0},
        {ORDER_METHOD_OTHER, "/api/v1/events", 405, ORDER_ROUTE_EVENT_CREATE, 0},
        {ORDER_METHOD_GET, "/api/v1/events/42", 0, ORDER_ROUTE_EVENT_GET, 42},
        {ORDER_METHOD_HEAD, "/api/v1/events/42", 0, ORDER_ROUTE_EVENT_GET, 42},
        {ORDER_METHOD_POST, "/api/v1/events/42", 405, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_POST, "/api/v1/events/7/orders", 0, ORDER_ROUTE_ORDER_CREATE, 7},
        {ORDER_METHOD_GET, "/api/v1/events/7/orders", 405, ORDER_ROUTE_ORDER_CREATE, 0},
        {ORDER_METHOD_POST, "/api/v1/events/7/pause", 0, ORDER_ROUTE_EVENT_PAUSE, 7},
        {ORDER_METHOD_POST, "/api/v1/events/8/resume", 0, ORDER_ROUTE_EVENT_RESUME, 8},
        {ORDER_METHOD_GET, "/api/v1/events/7/pause", 405, ORDER_ROUTE_EVENT_PAUSE, 0},
        {ORDER_METHOD_POST, "/api/v1/events/07/resume", 400, ORDER_ROUTE_EVENT_RESUME, 0},
        {ORDER_METHOD_POST, "/api/v1/events/7/pauses", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_PATCH, "/api/v1/events/42", 0, ORDER_ROUTE_EVENT_CHANGE, 42},
        {ORDER_METHOD_OTHER, "/api/v1/events/42", 405, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_PATCH, "/api/v1/events/042", 400, ORDER_ROUTE_EVENT_CHANGE, 0},
        {ORDER_METHOD_POST, "/api/v1/events/9/end", 0, ORDER_ROUTE_EVENT_END, 9},
        {ORDER_METHOD_POST, "/api/v1/events/9/stock", 0, ORDER_ROUTE_EVENT_STOCK, 9},
        {ORDER_METHOD_GET, "/api/v1/events/9/stock", 405, ORDER_ROUTE_EVENT_STOCK, 0},
        {ORDER_METHOD_GET, "/api/v1/events/9/audit", 0, ORDER_ROUTE_EVENT_AUDIT, 9},
        {ORDER_METHOD_DELETE, "/api/v1/events/9", 0, ORDER_ROUTE_EVENT_DELETE, 9},
        {ORDER_METHOD_DELETE, "/api/v1/events/9/end", 405, ORDER_ROUTE_EVENT_END, 0},
        {ORDER_METHOD_DELETE, "/api/v1/events", 405, ORDER_ROUTE_EVENT_CREATE, 0},
        {ORDER_METHOD_POST, "/api/v1/events/9/audit", 405, ORDER_ROUTE_EVENT_AUDIT, 0},
        {ORDER_METHOD_PATCH, "/api/v1/events/9/end", 405, ORDER_ROUTE_EVENT_END, 0},
        {ORDER_METHOD_POST, "/api/v1/events//pause", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_OTHER, "/api/v1/events/7/orders", 405, ORDER_ROUTE_ORDER_CREATE, 0},
        {ORDER_METHOD_GET, "/api/v1/orders/9223372036854775807", 0, ORDER_ROUTE_ORDER_GET,
         9223372036854775807ULL},
        {ORDER_METHOD_POST, "/api/v1/orders/5/pay", 0, ORDER_ROUTE_ORDER_PAY, 5},
        {ORDER_METHOD_POST, "/api/v1/orders/5/cancel", 0, ORDER_ROUTE_ORDER_CANCEL, 5},
        {ORDER_METHOD_GET, "/api/v1/orders/5/pay", 405, ORDER_ROUTE_ORDER_PAY, 0},
        {ORDER_METHOD_HEAD, "/api/v1/orders/5/cancel", 405, ORDER_ROUTE_ORDER_CANCEL, 0},
        {ORDER_METHOD_POST, "/api/v1/orders/0x5/pay", 400, ORDER_ROUTE_ORDER_PAY, 0},
        {ORDER_METHOD_POST, "/api/v1/orders/05/cancel", 400, ORDER_ROUTE_ORDER_CANCEL, 0},
        {ORDER_METHOD_POST, "/api/v1/orders//pay", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_POST, "/api/v1/orders/5/pay/", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_POST, "/api/v1/orders/5/refund", 404, ORDER_ROUTE_NONE, 0},
        /* issue 31: the challenge, the hidden order path and an order by it */
        {ORDER_METHOD_GET, "/api/v1/events/5/challenge", 0, ORDER_ROUTE_EVENT_CHALLENGE, 5},
        {ORDER_METHOD_POST, "/api/v1/events/5/challenge", 405, ORDER_ROUTE_EVENT_CHALLENGE, 0},
        {ORDER_METHOD_GET, "/api/v1/events/5/order-path", 0, ORDER_ROUTE_EVENT_ORDER_PATH, 5},
        {ORDER_METHOD_GET, "/api/v1/events/05/order-path", 400, ORDER_ROUTE_EVENT_ORDER_PATH, 0},
        {ORDER_METHOD_POST, "/api/v1/events/5/orders/abc", 0, ORDER_ROUTE_ORDER_CREATE, 5},
        {ORDER_METHOD_GET, "/api/v1/events/5/orders/abc", 405, ORDER_ROUTE_ORDER_CREATE, 0},
        {ORDER_METHOD_POST, "/api/v1/events/5/orders/abc/x", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/healthz", 0, ORDER_ROUTE_HEALTHZ, 0},
        {ORDER_METHOD_GET, "/readyz", 0, ORDER_ROUTE_READYZ, 0},
        {ORDER_METHOD_GET, "/metrics", 0, ORDER_ROUTE_METRICS, 0},
        {ORDER_METHOD_POST, "/metrics", 405, ORDER_ROUTE_METRICS, 0},
        /* ids: not decimal, zero, over 63 bits, signs, spaces -> 400 */
        {ORDER_METHOD_GET, "/api/v1/events/abc", 400, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_GET, "/api/v1/events/0", 400, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_GET, "/api/v1/events/-1", 400, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_GET, "/api/v1/events/+1", 400, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_GET, "/api/v1/events/9223372036854775808", 400, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_GET, "/api/v1/events/18446744073709551616", 400, ORDER_ROUTE_EVENT_GET, 0},
        {ORDER_METHOD_GET, "/api/v1/orders/12x", 400, ORDER_ROUTE_ORDER_GET, 0},
        {ORDER_METHOD_POST, "/api/v1/events/1e3/orders", 400, ORDER_ROUTE_ORDER_CREATE, 0},
        {ORDER_METHOD_POST, "/api/v1/events/%31/orders", 400, ORDER_ROUTE_ORDER_CREATE, 0},
        /* unknown paths -> 404 */
        {ORDER_METHOD_GET, "/", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/api/v1/events/", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/api/v1/events/1/", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_POST, "/api/v1/events/1/orders/", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_POST, "/api/v1/events//orders", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/api/v1/orders/", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/api/v1/orders/1/x", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/api/v2/events/1", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_GET, "/healthzz", 404, ORDER_ROUTE_NONE, 0},
        {ORDER_METHOD_OTHER, "/nope", 404, ORDER_ROUTE_NONE, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        order_route rt;
        int st = match(cases[i].method, cases[i].path, &rt);
        if (st != cases[i].status || rt.status != st || rt.id != cases[i].id ||
            (st == 0 && rt.arg != cases[i].arg))
            fail_msg("case %zu %s: status %d id %d arg %llu", i, cases[i].path, st, rt.id,
                     (unsigned long long)rt.arg);
        if (st == 405)
            assert_non_null(rt.allow);
    }
}

static void test_path_len_is_respected(void **state)
{
    /* The caller cuts the query string off by length: the bytes after it are not read. */
    const char *uri = "/api/v1/orders/77?x=1";
    order_route rt;
    assert_int_equal(order_route_match(ORDER_METHOD_GET, uri, 17, &rt), 0);
    assert_int_equal(rt.id, ORDER_ROUTE_ORDER_GET);
    assert_int_equal(rt.arg, 77);
}

/* The console's files: the page, its script and style with their types, nothing else. */
static void test_console_files(void **state)
{
    (void)state;
    const char *ctype;
    size_t len;
    const char *f = order_console_find("/console", 8, &ctype, &len);
    assert_non_null(f);
    assert_string_equal(ctype, "text/html; charset=utf-8");
    assert_non_null(strstr(f, "<script src=\"/console/app.js\">"));
    assert_int_equal(len, strlen(f));
    assert_ptr_equal(order_console_find("/console/", 9, &ctype, &len), f);
    assert_non_null(order_console_find("/console/app.js", 15, &ctype, &len));
    assert_string_equal(ctype, "text/javascript; charset=utf-8");
    assert_non_null(order_console_find("/console/style.css", 18, &ctype, &len));
    assert_string_equal(ctype, "text/css; charset=utf-8");
    assert_null(order_console_find("/console/nope.js", 16, &ctype, &len));
    assert_null(order_console_find("/console/../order_http.c", 24, &ctype, &len));
    assert_null(order_console_find("/consolex", 9, &ctype, &len));
    /* The length bounds the path: "/console/app.jsX" cut to 15 bytes is the script. */
    assert_non_null(order_console_find("/console/app.jsX", 15, &ctype, &len));
}

static void test_parse_id(void **state)
{
    uint64_t v = 0;
    assert_int_equal(order_parse_id("1", 1, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(order_parse_id("9223372036854775807", 19, &v), 0);
    assert_int_equal(v, 9223372036854775807ULL);
    assert_int_equal(order_parse_id("00000000000000000012", 20, &v), -1); /* 20 digits */
    assert_int_equal(order_parse_id("", 0, &v), -1);
    assert_int_equal(order_parse_id(" 1", 2, &v), -1);
    assert_int_equal(order_parse_id("0", 1, &v), -1);
    /* leading zeros would alias real ids ("012" and "12"): refused, as the consumer does */
    assert_int_equal(order_parse_id("012", 3, &v), -1);
    assert_int_equal(order_parse_id("0000000000000000012", 19, &v), -1);
    assert_int_equal(order_parse_id("99999999999999999999", 20, &v), -1);
    assert_string_equal(order_route_name(ORDER_ROUTE_ORDER_CREATE), "order_create");
    assert_string_equal(order_route_name((order_route_id)99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_path_len_is_respected),
        cmocka_unit_test(test_parse_id),
        cmocka_unit_test(test_console_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
