/* Unit tests of sk_id: the one decimal rule (1 to 19 digits, no sign, no spaces, no
 * leading zero; ids in [1, INT64_MAX], other ranges by sk_id_parse_range). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "sk_id.h"

static int id(const char *s, uint64_t *v)
{
    return sk_id_parse(s, strlen(s), v);
}

static void test_ids_taken(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(id("1", &v), 0);
    assert_true(v == 1);
    assert_int_equal(id("42", &v), 0);
    assert_true(v == 42);
    assert_int_equal(id("9223372036854775807", &v), 0);
    assert_true(v == (uint64_t)INT64_MAX);
    assert_int_equal(sk_id_parse("123xyz", 3, &v), 0); /* len bounds it: not NUL-terminated */
    assert_true(v == 123);
}

static void test_ids_refused(void **state)
{
    (void)state;
    static const char *bad[] = {"", "0", "007", "01", "0000000000000000012", "-1", "+1", " 1",
                                "1 ", "1a", "0x10", "9223372036854775808",
                                "18446744073709551615", "18446744073709551616",
                                "99999999999999999999", "12345678901234567890"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = 777;
        assert_int_equal(id(bad[i], &v), -1);
        assert_true(v == 777); /* untouched on refusal */
    }
}

static void test_ranges(void **state)
{
    (void)state;
    uint64_t v = 9;
    /* "0" alone is zero, taken where the caller's range holds it */
    assert_int_equal(sk_id_parse_range("0", 1, 0, 10, &v), 0);
    assert_true(v == 0);
    assert_int_equal(sk_id_parse_range("00", 2, 0, 10, &v), -1);
    assert_int_equal(sk_id_parse_range("010", 3, 0, 100, &v), -1);
    assert_int_equal(sk_id_parse_range("10", 2, 0, 10, &v), 0);
    assert_int_equal(sk_id_parse_range("11", 2, 0, 10, &v), -1);
    assert_int_equal(sk_id_parse_range("4", 1, 5, 10, &v), -1);
    /* a hi past INT64_MAX does not widen the rule */
    assert_int_equal(sk_id_parse_range("9223372036854775808", 19, 0, UINT64_MAX, &v), -1);
    assert_int_equal(sk_id_parse_str("600000", 1, 600000, &v), 0);
    assert_true(v == 600000);
    assert_int_equal(sk_id_parse_str("600001", 1, 600000, &v), -1);
    assert_int_equal(sk_id_parse_str(NULL, 0, 10, &v), -1);
    assert_int_equal(sk_id_parse_str("5\n", 0, 10, &v), -1);
}

static void test_format(void **state)
{
    (void)state;
    char d[SK_ID_DEC_MAX];
    assert_int_equal(sk_id_format(d, 0), 1);
    assert_string_equal(d, "0");
    assert_int_equal(sk_id_format(d, 9223372036854775807ULL), 19);
    assert_string_equal(d, "9223372036854775807");
    assert_int_equal(sk_id_format(d, UINT64_MAX), 20);
    assert_string_equal(d, "18446744073709551615");
    uint64_t v = 0;
    for (uint64_t x = 1; x < (uint64_t)INT64_MAX / 7; x = x * 7 + 3) { /* the writer's text reads back */
        assert_int_equal(sk_id_parse(d, sk_id_format(d, x), &v), 0);
        assert_true(v == x);
    }
    /* eight then two digits at a time: every length and both sides of each power of ten, as printf */
    uint64_t pow10 = 1;
    for (int k = 0; k < 20; k++, pow10 *= 10) {
        const uint64_t xs[] = {pow10 - 1, pow10, pow10 + 1, pow10 * 3 + 7, pow10 * 9 + pow10 / 2};
        for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
            char want[32];
            int wn = snprintf(want, sizeof(want), "%llu", (unsigned long long)xs[i]);
            if (xs[i] > UINT64_MAX / 10 && k == 19 && i > 2)
                continue; /* past 2^64 */
            assert_int_equal(sk_id_format(d, xs[i]), wn);
            assert_string_equal(d, want);
        }
    }
}

/* The successor's digits equal sk_id_format's for a run across every carry length, and
 * all nines (a digit more) is refused. */
static void test_format_succ(void **state)
{
    (void)state;
    char prev[SK_ID_DEC_MAX], next[SK_ID_DEC_MAX], want[SK_ID_DEC_MAX];
    const uint64_t starts[] = {0, 8, 95, 1299, 99990, 393862309363056690ULL,
                               18446744073709551600ULL};
    for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
        uint64_t x = starts[s];
        size_t n = sk_id_format(prev, x);
        for (int k = 0; k < 15; k++, x++) {
            size_t wn = sk_id_format(want, x + 1);
            if (wn != n) { /* all nines: one digit more */
                assert_int_equal(sk_id_format_succ(next, prev, n), 0);
                n = sk_id_format(prev, x + 1);
                continue;
            }
            assert_int_equal(sk_id_format_succ(next, prev, n), 1);
            next[n] = 0;
            assert_string_equal(next, want);
            memcpy(prev, next, n + 1);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_taken),
        cmocka_unit_test(test_ids_refused),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_succ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
