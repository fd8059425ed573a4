/* Unit tests of sk_http_query: finding a parameter, the malformed queries refused
 * whichever name is asked, percent and '+' decoding with its bounds, and the integer
 * reader seckill-order's GET /api/v1/events uses for offset and limit. Each query is
 * copied into a buffer whose next byte is not a delimiter, so a read past qlen shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sk_http_query.h"

static char B[256];

/* q copied into B with an 'x' after it (not NUL-terminated at qlen on purpose). */
static const char *q_of(const char *q, size_t *len)
{
    *len = strlen(q);
    memset(B, 'x', sizeof(B));
    memcpy(B, q, *len);
    return B;
}

static sk_http_query_rc get(const char *q, const char *name, char *val, size_t valsz)
{
    size_t qlen, vlen;
    const char *v, *b = q_of(q, &qlen);
    sk_http_query_rc rc = sk_http_query_get(b, qlen, name, &v, &vlen);
    if (rc == SK_HTTP_QUERY_FOUND) {
        assert_true(vlen < valsz);
        memcpy(val, v, vlen);
        val[vlen] = '\0';
    }
    return rc;
}

static void test_query_of(void **state)
{
    (void)state;
    size_t len = 99;
    assert_null(sk_http_query_of("/api/v1/events", &len));
    assert_int_equal(len, 0);
    const char *t = "/api/v1/events?offset=1&limit=2#frag";
    const char *q = sk_http_query_of(t, &len);
    assert_ptr_equal(q, t + 15);
    assert_int_equal(len, strlen("offset=1&limit=2"));
    q = sk_http_query_of("/x?", &len);
    assert_non_null(q);
    assert_int_equal(len, 0);
}

static void test_get(void **state)
{
    (void)state;
    char v[64];
    assert_int_equal(get("offset=10&limit=20", "offset", v, sizeof(v)), SK_HTTP_QUERY_FOUND);
    assert_string_equal(v, "10");
    assert_int_equal(get("offset=10&limit=20", "limit", v, sizeof(v)), SK_HTTP_QUERY_FOUND);
    assert_string_equal(v, "20");
    assert_int_equal(get("offset=10&limit=20", "lim", v, sizeof(v)), SK_HTTP_QUERY_ABSENT);
    assert_int_equal(get("offset=10&limit=20", "limit=", v, sizeof(v)), SK_HTTP_QUERY_ABSENT);
    /* the first of two counts; an empty value is a value; a trailing '&' is fine */
    assert_int_equal(get("a=1&a=2", "a", v, sizeof(v)), SK_HTTP_QUERY_FOUND);
    assert_string_equal(v, "1");
    assert_int_equal(get("a=&b=2&", "a", v, sizeof(v)), SK_HTTP_QUERY_FOUND);
    assert_string_equal(v, "");
    /* names are compared exactly, encoded value handed back as it is */
    assert_int_equal(get("Limit=5", "limit", v, sizeof(v)), SK_HTTP_QUERY_ABSENT);
    assert_int_equal(get("q=a%20b+c=d", "q", v, sizeof(v)), SK_HTTP_QUERY_FOUND);
    assert_string_equal(v, "a%20b+c=d");
    assert_int_equal(get("", "a", v, sizeof(v)), SK_HTTP_QUERY_ABSENT);
}

static void test_invalid(void **state)
{
    (void)state;
    char v[64];
    /* malformed anywhere: refused whichever name is asked (as evhttp_parse_query_str) */
    assert_int_equal(get("a", "a", v, sizeof(v)), SK_HTTP_QUERY_INVALID);
    assert_int_equal(get("limit=1&junk", "limit", v, sizeof(v)), SK_HTTP_QUERY_INVALID);
    assert_int_equal(get("=1", "a", v, sizeof(v)), SK_HTTP_QUERY_INVALID);
    assert_int_equal(get("a=1&&b=2", "b", v, sizeof(v)), SK_HTTP_QUERY_INVALID);
    assert_int_equal(get("&", "a", v, sizeof(v)), SK_HTTP_QUERY_INVALID);
}

static void test_decode(void **state)
{
    (void)state;
    char d[16];
    assert_int_equal(sk_http_query_decode("a%20b+c", 7, d, sizeof(d)), 5);
    assert_string_equal(d, "a b c");
    assert_int_equal(sk_http_query_decode("%4a%4A", 6, d, sizeof(d)), 2);
    assert_string_equal(d, "JJ");
    /* a '%' without two hex digits stays, also at the very end of the value */
    assert_int_equal(sk_http_query_decode("1%zz%4", 6, d, sizeof(d)), 6);
    assert_string_equal(d, "1%zz%4");
    assert_int_equal(sk_http_query_decode("%", 1, d, sizeof(d)), 1);
    assert_string_equal(d, "%");
    /* %00 decodes to a NUL byte, counted in the length */
    assert_int_equal(sk_http_query_decode("a%00b", 5, d, sizeof(d)), 3);
    assert_int_equal(d[1], '\0');
    /* the bound counts the NUL: 3 bytes fit in 4, not in 3 */
    assert_int_equal(sk_http_query_decode("abc", 3, d, 4), 3);
    assert_int_equal(sk_http_query_decode("abc", 3, d, 3), -1);
    assert_int_equal(sk_http_query_decode("", 0, d, 1), 0);
    assert_int_equal(sk_http_query_decode("", 0, d, 0), -1);
}

static sk_http_query_rc num(const char *q, const char *name, long long *out)
{
    size_t qlen;
    const char *b = q_of(q, &qlen);
    return sk_http_query_int(b, qlen, name, 1, 100, 20, out);
}

static void test_int(void **state)
{
    (void)state;
    long long n = 0;
    assert_int_equal(num("limit=5", "limit", &n), SK_HTTP_QUERY_FOUND);
    assert_int_equal(n, 5);
    assert_int_equal(num("offset=3", "limit", &n), SK_HTTP_QUERY_ABSENT);
    assert_int_equal(n, 20); /* the default */
    assert_int_equal(num("limit=%31%30%30", "limit", &n), SK_HTTP_QUERY_FOUND);
    assert_int_equal(n, 100);
    n = 7;
    assert_int_equal(num("limit=0", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=101", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=abc", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=5x", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=+5", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=-", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=99999999999999999999", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(num("limit=000000000000000000000000000000005", "limit", &n),
                     SK_HTTP_QUERY_INVALID); /* past the 31 characters a number needs */
    assert_int_equal(num("limit=5&x", "limit", &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(n, 7); /* untouched by every refusal */
    size_t qlen;
    const char *b = q_of("offset=-1", &qlen);
    assert_int_equal(sk_http_query_int(b, qlen, "offset", 0, 10, 0, &n), SK_HTTP_QUERY_INVALID);
    assert_int_equal(sk_http_query_int(b, qlen, "offset", -5, 10, 0, &n), SK_HTTP_QUERY_FOUND);
    assert_int_equal(n, -1);
    /* no query at all: the default */
    assert_int_equal(sk_http_query_int(NULL, 0, "offset", 0, 10, 4, &n), SK_HTTP_QUERY_ABSENT);
    assert_int_equal(n, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_of), cmocka_unit_test(test_get), cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_decode),   cmocka_unit_test(test_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
