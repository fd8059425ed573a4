/* Unit tests of sk_httpdate: the Date header's text, made once per second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "sk_httpdate.h"

static void test_rfc_examples(void **state)
{
    (void)state;
    sk_httpdate d;
    sk_httpdate_init(&d);
    assert_string_equal(sk_httpdate_get(&d, 784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_string_equal(sk_httpdate_get(&d, 0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_string_equal(sk_httpdate_get(&d, 951782400), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_string_equal(sk_httpdate_get(&d, 4102444799), "Thu, 31 Dec 2099 23:59:59 GMT");
}

/* Against strftime in the C locale, over a year of seconds in uneven steps, each second
 * asked twice (the second answer is the cached text and must still be right). */
static void test_against_strftime(void **state)
{
    (void)state;
    sk_httpdate d;
    sk_httpdate_init(&d);
    for (int64_t t = 1700000000; t < 1700000000 + 366 * 86400; t += 7919) {
        char want[64];
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(want, sizeof(want), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        assert_string_equal(sk_httpdate_get(&d, t), want);
        const char *again = sk_httpdate_get(&d, t);
        assert_ptr_equal(again, d.text);
        assert_string_equal(again, want);
    }
}

/* The cache is keyed by the second: a new second gives new text. */
static void test_cached_per_second(void **state)
{
    (void)state;
    sk_httpdate d;
    sk_httpdate_init(&d);
    char first[32];
    strcpy(first, sk_httpdate_get(&d, 1700000000));
    assert_string_equal(sk_httpdate_get(&d, 1700000000), first);
    assert_string_not_equal(sk_httpdate_get(&d, 1700000001), first);
    assert_string_equal(d.text, "Tue, 14 Nov 2023 22:13:21 GMT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_examples),
        cmocka_unit_test(test_against_strftime),
        cmocka_unit_test(test_cached_per_second),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
