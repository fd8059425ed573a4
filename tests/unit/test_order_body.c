/* Unit tests of order_body (request bodies) and order_time (RFC 3339). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "order_body.h"
#include "order_time.h"

static int64_t t(const char *s)
{
    int64_t ms = -42;
    if (order_time_parse_rfc3339(s, strlen(s), &ms) != 0)
        return -1;
    return ms;
}

static void test_rfc3339(void **state)
{
    assert_int_equal(t("1970-01-01T00:00:00Z"), 0);
    assert_int_equal(t("2026-11-22T10:00:00Z"), 1795341600000LL);
    assert_int_equal(t("2026-11-22T10:00:00.5Z"), 1795341600500LL);
    assert_int_equal(t("2026-11-22T10:00:00.123456789Z"), 1795341600123LL);
    assert_int_equal(t("2026-11-22T12:00:00+02:00"), 1795341600000LL);
    assert_int_equal(t("2026-11-22T05:30:00-04:30"), 1795341600000LL);
    assert_int_equal(t("2026-11-22t10:00:00z"), 1795341600000LL);
    assert_int_equal(t("2024-02-29T00:00:00Z"), 1709164800000LL);
    assert_int_equal(t("9999-12-31T23:59:59.999Z"), 253402300799999LL); /* the last instant */
    static const char *bad[] = {"",
                                "2026-11-22",
                                "2026-11-22T10:00:00",      /* no offset */
                                "2026-11-22T10:00Z",
                                "2026-13-01T00:00:00Z",
                                "2026-02-29T00:00:00Z",     /* not a leap year */
                                "2026-11-31T00:00:00Z",
                                "2026-11-22T24:00:00Z",
                                "2026-11-22T10:00:00.Z",
                                "2026-11-22T10:00:00+0200",
                                "2026-11-22T10:00:00Z ",
                                "1969-12-31T23:59:59Z",
                                "9999-12-31T23:59:59.999-05:34", /* instant in year 10000 (found by fuzz_http) */
                                "2026/11/22T10:00:00Z",
                                "２026-11-22T10:00:00Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (t(bad[i]) != -1)
            fail_msg("accepted %s", bad[i]);
    char out[32];
    assert_string_equal(order_time_format_rfc3339(1795341600123LL, out, sizeof(out)),
                        "2026-11-22T10:00:00.123Z");
    assert_string_equal(order_time_format_rfc3339(0, out, sizeof(out)), "1970-01-01T00:00:00.000Z");
    /* round trip over a range of days, leap years included */
    for (int64_t ms = 0; ms < 4102444800000LL; ms += 86400000LL * 37 + 12345) {
        order_time_format_rfc3339(ms, out, sizeof(out));
        assert_int_equal(t(out), ms);
    }
}

static int parse(const char *body, order_event_spec *spec, char *err)
{
    return order_body_parse_event(body, strlen(body), spec, err, 160);
}

static void test_event_body(void **state)
{
    order_event_spec s;
    char err[160];
    assert_int_equal(parse("{\"name\":\"phone\",\"stock\":1000,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\"}", &s, err), 0);
    assert_string_equal(s.name, "phone");
    assert_int_equal(s.stock, 1000);
    assert_int_equal(s.starts_at_ms, 1795341600000LL);
    assert_int_equal(s.ends_at_ms, 1795345200000LL);
    assert_int_equal(s.per_user_limit, 1);
    assert_int_equal(s.segments, 1); /* default: one segment, the keys of before */
    assert_int_equal(parse("{\"name\":\"x\",\"stock\":9,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\",\"segments\":3}", &s, err), 0);
    assert_int_equal(s.segments, 3);
    /* segments with rebuy: a release goes to the buyer's home segment (issue 22) */
    assert_int_equal(parse("{\"name\":\"x\",\"stock\":9,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\",\"segments\":3,"
                           "\"rebuy_after_release\":true}", &s, err), 0);
    assert_int_equal(s.segments, 3);
    assert_true(s.rebuy_after_release);
    assert_int_equal(order_event_limits_any(&s.limits), 0); /* no override: the defaults */
    assert_int_equal(parse("{\"name\":\"x\",\"stock\":9,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"ip_rate\":7,"
                           "\"event_rate\":10000000}}", &s, err), 0);
    assert_int_equal(s.limits.ip_rate, 7);
    assert_int_equal(s.limits.user_rate, 0);
    assert_int_equal(s.limits.event_rate, 10000000);
    assert_int_equal(order_event_limits_any(&s.limits), 1);
    assert_int_equal(parse("{\"name\":\"x\",\"stock\":9,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{}}", &s, err), 0);
    assert_int_equal(order_event_limits_any(&s.limits), 0);
    /* a challenge (issue 31): kept with the levels, but not an override of one */
    assert_int_equal(parse("{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\","
                           "\"challenge\":{\"kind\":\"pow\",\"difficulty\":20}}", &s, err), 0);
    assert_int_equal(s.limits.challenge_bits, 20);
    assert_int_equal(order_event_limits_any(&s.limits), 0);
    assert_int_equal(parse("{\"name\":\"x\",\"stock\":0,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\",\"per_user_limit\":1}", &s, err), 0);
    /* several units per user (issue 31), up to the message's bound */
    assert_int_equal(parse("{\"name\":\"x\",\"stock\":0,\"starts_at\":\"2026-11-22T10:00:00Z\","
                           "\"ends_at\":\"2026-11-22T11:00:00Z\",\"per_user_limit\":100}", &s, err), 0);
    assert_int_equal(s.per_user_limit, 100);

    static const struct {
        const char *body;
        const char *err_has;
    } bad[] = {
        {"", "invalid JSON"},
        {"{", "invalid JSON"},
        {"[]", "JSON object"},
        {"{}", "name"},
        {"{\"name\":\"\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "name"},
        {"{\"name\":7,\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "name"},
        {"{\"name\":\"a\\u0000b\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "invalid JSON"},
        {"{\"name\":\"x\",\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "stock"},
        {"{\"name\":\"x\",\"stock\":-1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "stock"},
        {"{\"name\":\"x\",\"stock\":1.5,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "stock"},
        {"{\"name\":\"x\",\"stock\":\"1\",\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "stock"},
        {"{\"name\":\"x\",\"stock\":2147483648,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "stock"},
        {"{\"name\":\"x\",\"stock\":1,\"ends_at\":\"2026-11-22T11:00:00Z\"}", "starts_at"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"tomorrow\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "starts_at"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\"}", "ends_at"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T10:00:00Z\"}", "after"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"per_user_limit\":101}", "per_user_limit: an integer from 1 to 100"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"per_user_limit\":0}", "per_user_limit"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"per_user_limit\":2.5}", "per_user_limit"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"segments\":0}", "segments"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"segments\":65}", "segments"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"segments\":\"3\"}", "segments"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":[1]}", "limits: an object"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"ip_rate\":0}}", "limits.ip_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"user_rate\":-3}}", "limits.user_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"user_rate\":1000001}}", "limits.user_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"event_rate\":10000001}}", "limits.event_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"event_rate\":2.5}}", "limits.event_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"ip_rate\":\"5\"}}", "limits.ip_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"ip_rate\":null}}", "limits.ip_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"limits\":{\"per_ip\":5}}", "only ip_rate"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"challenge\":{\"kind\":\"captcha\",\"difficulty\":20}}", "challenge.kind"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"challenge\":\"pow\"}", "challenge.kind"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"challenge\":null}", "challenge.kind"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"challenge\":{\"kind\":\"pow\",\"difficulty\":0}}", "challenge.difficulty"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"challenge\":{\"kind\":\"pow\",\"difficulty\":33}}", "challenge.difficulty"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"challenge\":{\"kind\":\"pow\"}}", "challenge.difficulty"},
        {"{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\",\"challenge\":{\"kind\":\"pow\",\"difficulty\":8,\"ttl\":5}}", "only kind and difficulty"},
        {"{\"name\":\"x\",\"stock\":1,\"stock\":5,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (parse(bad[i].body, &s, err) != -1 || !strstr(err, bad[i].err_has))
            fail_msg("case %zu: err \"%s\"", i, err);
    }
    char big[ORDER_BODY_MAX + 64];
    memset(big, ' ', sizeof(big));
    big[0] = '{';
    big[sizeof(big) - 2] = '}';
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(parse(big, &s, err), -1);
    char longname[400];
    snprintf(longname, sizeof(longname), "{\"name\":\"%0*d\",\"stock\":1,\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\"}", ORDER_EVENT_NAME_MAX + 1, 0);
    assert_int_equal(parse(longname, &s, err), -1);
}

/* PATCH /api/v1/events/{id} (issue 32): what is named is flagged, the rest untouched;
 * unknown fields and bad values are refused with the field's name. */
static void test_patch_body(void **state)
{
    (void)state;
    order_event_patch p;
    char err[160];
    assert_int_equal(order_body_parse_patch("{\"per_user_limit\":3}", 20, &p, err, sizeof(err)), 0);
    assert_int_equal(p.per_user_limit, 3);
    assert_int_equal(p.has, ORDER_PATCH_PER_USER);
    assert_int_equal(order_body_parse_patch("{\"name\":\"new\"}", 14, &p, err, sizeof(err)), 0);
    assert_int_equal(p.has, ORDER_PATCH_NAME);
    assert_string_equal(p.name, "new");
    const char *all = "{\"starts_at\":\"2026-11-22T10:00:00Z\",\"ends_at\":\"2026-11-22T11:00:00Z\","
                      "\"per_user_limit\":1,\"limits\":{\"ip_rate\":5,\"event_rate\":null}}";
    assert_int_equal(order_body_parse_patch(all, strlen(all), &p, err, sizeof(err)), 0);
    assert_int_equal(p.has, ORDER_PATCH_STARTS | ORDER_PATCH_ENDS | ORDER_PATCH_PER_USER |
                                ORDER_PATCH_IP_RATE | ORDER_PATCH_EVENT_RATE);
    assert_int_equal(p.ends_at_ms - p.starts_at_ms, 3600000);
    assert_int_equal(p.limits.ip_rate, 5);
    assert_int_equal(p.limits.event_rate, 0);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{}", "naming what changes"},
        {"[]", "naming what changes"},
        {"{\"stock\":5}", "stock: unknown field"},
        {"{\"name\":\"x\",\"nmae\":\"y\"}", "nmae: unknown field"},
        {"{\"name\":\"\"}", "name"},
        {"{\"starts_at\":\"soon\"}", "starts_at"},
        {"{\"starts_at\":\"2026-11-22T11:00:00Z\",\"ends_at\":\"2026-11-22T10:00:00Z\"}", "after"},
        {"{\"per_user_limit\":101}", "per_user_limit"},
        {"{\"per_user_limit\":\"2\"}", "per_user_limit"},
        {"{\"limits\":{}}", "limits: an object"},
        {"{\"limits\":{\"ip_rate\":0}}", "limits.ip_rate"},
        {"{\"limits\":{\"per_ip\":3}}", "only ip_rate"},
        {"{\"name\":\"a\",\"name\":\"b\"}", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (order_body_parse_patch(bad[i].body, strlen(bad[i].body), &p, err, sizeof(err)) != -1 ||
            !strstr(err, bad[i].want))
            fail_msg("%s: got \"%s\", want \"%s\"", bad[i].body, err, bad[i].want);
    }
}

static void test_stock_body(void **state)
{
    (void)state;
    int64_t add, total;
    char err[160];
    assert_int_equal(order_body_parse_stock("{\"add\":-5}", 10, &add, &total, err, sizeof(err)), 0);
    assert_int_equal(add, -5);
    assert_int_equal(total, -1);
    assert_int_equal(order_body_parse_stock("{\"total\":0}", 11, &add, &total, err, sizeof(err)), 0);
    assert_int_equal(total, 0);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{}", "one of them"},
        {"{\"add\":1,\"total\":2}", "one of them"},
        {"{\"add\":1,\"note\":\"x\"}", "one of them"},
        {"{\"more\":1}", "one of them"},
        {"{\"add\":0}", "add: a non-zero"},
        {"{\"add\":1.5}", "add: a non-zero"},
        {"{\"add\":2147483648}", "add: a non-zero"},
        {"{\"total\":-1}", "total: an integer from 0"},
        {"{\"total\":\"5\"}", "total: an integer from 0"},
        {"[5]", "one of them"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (order_body_parse_stock(bad[i].body, strlen(bad[i].body), &add, &total, err,
                                   sizeof(err)) != -1 ||
            !strstr(err, bad[i].want))
            fail_msg("%s: got \"%s\", want \"%s\"", bad[i].body, err, bad[i].want);
    }
}

static void test_order_body(void **state)
{
    char err[160];
    assert_int_equal(order_body_check_order("", 0, err, sizeof(err)), 0);
    assert_int_equal(order_body_check_order(" \r\n", 3, err, sizeof(err)), 0);
    assert_int_equal(order_body_check_order("{}", 2, err, sizeof(err)), 0);
    assert_int_equal(order_body_check_order("{\"qty\":1}", 9, err, sizeof(err)), 0);
    assert_int_equal(order_body_check_order("{", 1, err, sizeof(err)), -1);
    assert_int_equal(order_body_check_order("[1]", 3, err, sizeof(err)), -1);
    assert_int_equal(order_body_check_order("hello", 5, err, sizeof(err)), -1);
    /* a cancel body's fields are ignored, "quantity" too */
    assert_int_equal(order_body_check_order("{\"quantity\":0}", 14, err, sizeof(err)), 0);

    /* the order's quantity (issue 31): 1 when absent; 0, negative, not an integer or
     * past the bound: refused, the message naming the field */
    int q = 0;
    assert_int_equal(order_body_parse_order("", 0, &q, err, sizeof(err)), 0);
    assert_int_equal(q, 1);
    assert_int_equal(order_body_parse_order("{}", 2, &q, err, sizeof(err)), 0);
    assert_int_equal(q, 1);
    const char *ok = "{\"quantity\":3}";
    assert_int_equal(order_body_parse_order(ok, strlen(ok), &q, err, sizeof(err)), 0);
    assert_int_equal(q, 3);
    ok = "{\"quantity\":100}";
    assert_int_equal(order_body_parse_order(ok, strlen(ok), &q, err, sizeof(err)), 0);
    assert_int_equal(q, 100);
    const char *bad[] = {"{\"quantity\":0}", "{\"quantity\":-1}", "{\"quantity\":1.5}",
                         "{\"quantity\":\"2\"}", "{\"quantity\":null}", "{\"quantity\":101}",
                         "{\"quantity\":99999999999999999999}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        if (order_body_parse_order(bad[i], strlen(bad[i]), &q, err, sizeof(err)) != -1)
            fail_msg("%s accepted", bad[i]);
        if (!strstr(err, "quantity") && !strstr(err, "JSON"))
            fail_msg("%s: message %s does not name the field", bad[i], err);
    }
    assert_int_equal(order_body_parse_order("[1]", 3, &q, err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_event_body),
        cmocka_unit_test(test_order_body),
        cmocka_unit_test(test_patch_body),
        cmocka_unit_test(test_stock_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
