/* Unit tests of sb_http: response framing and JSON field lookup of seckill-bench. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sb_http.h"

static long parse(const char *s, sb_http_resp *r)
{
    return sb_http_parse(s, strlen(s), r);
}

static void test_complete_202(void **state)
{
    const char *s = "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\n"
                    "Content-Length: 46\r\n\r\n{\"order_id\":\"1234567890123\",\"status\":\"queued\"}";
    sb_http_resp r;
    assert_int_equal(parse(s, &r), (long)strlen(s));
    assert_int_equal(r.status, 202);
    assert_int_equal(r.close, 0);
    assert_int_equal(r.body_len, 46);
    char id[32];
    assert_int_equal(sb_json_field(r.body, r.body_len, "order_id", id, sizeof(id)), 13);
    assert_string_equal(id, "1234567890123");
}

static void test_incomplete_then_two_pipelined(void **state)
{
    const char *one = "HTTP/1.1 409 Conflict\r\ncontent-length: 22\r\n\r\n{\"error\":\"sold_out\"}\r\n";
    char buf[512];
    snprintf(buf, sizeof(buf), "%s%s", one, one);
    sb_http_resp r;
    size_t l1 = strlen(one);
    /* every strict prefix of the first response needs more bytes */
    for (size_t n = 0; n < l1; n++)
        assert_int_equal(sb_http_parse(buf, n, &r), 0);
    assert_int_equal(sb_http_parse(buf, strlen(buf), &r), (long)l1);
    assert_int_equal(r.status, 409);
    char code[32];
    assert_true(sb_json_field(r.body, r.body_len, "error", code, sizeof(code)) > 0);
    assert_string_equal(code, "sold_out");
    assert_int_equal(sb_http_parse(buf + l1, strlen(buf) - l1, &r), (long)l1);
}

static void test_connection_close_and_http10(void **state)
{
    sb_http_resp r;
    assert_true(parse("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", &r) > 0);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.close, 1);
    assert_true(parse("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", &r) > 0);
    assert_int_equal(r.close, 1);
    assert_true(parse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n{}", &r) > 0);
    assert_int_equal(r.close, 0);
}

static void test_refused_framings(void **state)
{
    sb_http_resp r;
    /* chunked, no length, garbage status, bad length */
    assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", &r), -1);
    assert_int_equal(parse("HTTP/1.1 200 OK\r\nServer: x\r\n\r\n{}", &r), -1);
    assert_int_equal(parse("HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", &r), -1);
    assert_int_equal(parse("SMTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", &r), -1);
    assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", &r), -1);
    assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", &r), -1);
    /* 204 has no body whatever it says */
    assert_int_equal(parse("HTTP/1.1 204 No Content\r\n\r\n", &r), (long)strlen("HTTP/1.1 204 No Content\r\n\r\n"));
    /* a head that never ends is refused once it is longer than any of ours */
    char big[9000];
    memset(big, 'a', sizeof(big));
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
    assert_int_equal(sb_http_parse(big, sizeof(big), &r), -1);
}

static void test_json_field(void **state)
{
    char out[32];
    const char *j = "{ \"message\" : \"error\", \"error\" : \"duplicate\" }";
    /* "error" first appears as a value: the key is the second one */
    assert_int_equal(sb_json_field(j, strlen(j), "error", out, sizeof(out)), 9);
    assert_string_equal(out, "duplicate");
    const char *n = "{\"event_id\":42,\"x\":1}";
    assert_int_equal(sb_json_field(n, strlen(n), "event_id", out, sizeof(out)), 2);
    assert_string_equal(out, "42");
    assert_int_equal(sb_json_field(n, strlen(n), "missing", out, sizeof(out)), -1);
    assert_int_equal(sb_json_field(j, strlen(j), "error", out, 4), -1); /* too small */
    const char *cut = "{\"order_id\":\"12";
    assert_int_equal(sb_json_field(cut, strlen(cut), "order_id", out, sizeof(out)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_202),
        cmocka_unit_test(test_incomplete_then_two_pipelined),
        cmocka_unit_test(test_connection_close_and_http10),
        cmocka_unit_test(test_refused_framings),
        cmocka_unit_test(test_json_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
