/* Unit tests of `idgen serve`'s routes (idgen_serve_route): pure, no network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "idgen_serve_route.h"

static void test_routes(void **state)
{
    (void)state;
    idgen_route r;
    assert_int_equal(idgen_serve_route_parse("/healthz", 1000, &r), 0);
    assert_int_equal(r.kind, IDGEN_ROUTE_HEALTHZ);
    assert_int_equal(idgen_serve_route_parse("/metrics?x=1", 1000, &r), 0);
    assert_int_equal(r.kind, IDGEN_ROUTE_METRICS);
    assert_int_equal(idgen_serve_route_parse("/api/segment/get/order", 1000, &r), 0);
    assert_int_equal(r.kind, IDGEN_ROUTE_GET);
    assert_int_equal(r.mode, IDGEN_ROUTE_SEGMENT);
    assert_string_equal(r.tag, "order");
    assert_int_equal(r.count, 1);
    assert_int_equal(idgen_serve_route_parse("/api/snowflake/get/a_B-9", 1000, &r), 0);
    assert_int_equal(r.mode, IDGEN_ROUTE_SNOWFLAKE);
    assert_int_equal(idgen_serve_route_parse("/api/snowflake/batch/t?x=1&count=1000", 1000, &r), 0);
    assert_int_equal(r.kind, IDGEN_ROUTE_BATCH);
    assert_int_equal(r.count, 1000);
    char tag64[100] = "/api/segment/get/";
    memset(tag64 + strlen(tag64), 'a', 64);
    assert_int_equal(idgen_serve_route_parse(tag64, 1000, &r), 0);
}

static void test_refusals(void **state)
{
    (void)state;
    idgen_route r;
    const char *bad400[] = {
        "/api/segment/get/",        "/api/segment/get/a:b",        "/api/segment/get/a/b",
        "/api/segment/get/a%20b",   "/api/segment/batch/t",        "/api/segment/batch/t?count=",
        "/api/segment/batch/t?count=0", "/api/segment/batch/t?count=1001",
        "/api/segment/batch/t?count=01", "/api/segment/batch/t?count=-1",
        "/api/segment/batch/t?count=1&count=2", "/api/segment/batch/t?count",
    };
    for (size_t i = 0; i < sizeof(bad400) / sizeof(bad400[0]); i++) {
        if (idgen_serve_route_parse(bad400[i], 1000, &r) != 400)
            fail_msg("%s: not 400", bad400[i]);
        assert_non_null(r.why);
    }
    char tag65[100] = "/api/segment/get/";
    memset(tag65 + strlen(tag65), 'a', 65);
    assert_int_equal(idgen_serve_route_parse(tag65, 1000, &r), 400);
    const char *bad404[] = {"/", "/api", "/api/segment", "/api/segment/get", "/api/leaf/get/x",
                            "/healthzz", "/Api/segment/get/x"};
    for (size_t i = 0; i < sizeof(bad404) / sizeof(bad404[0]); i++)
        if (idgen_serve_route_parse(bad404[i], 1000, &r) != 404)
            fail_msg("%s: not 404", bad404[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
