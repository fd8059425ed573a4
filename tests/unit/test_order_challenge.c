/* Unit tests of order_challenge: issue, solve, verify (its shape, the user, event and
 * key bound by the MAC, the expiry, the zero bits), key rotation, and the check's cost
 * (printed; the bound is asserted loosely, the machine is shared). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "order_challenge.h"
#include "sk_pow.h"

#define K1 "challenge-key-one-0123456789abcdef"
#define K2 "challenge-key-two-0123456789abcdef"
#define NOW 1800000000000LL

static order_challenge_key *key(const char *cur, const char *prev)
{
    order_challenge_key *k = order_challenge_key_new((const unsigned char *)cur, strlen(cur),
                                                     (const unsigned char *)prev,
                                                     prev ? strlen(prev) : 0);
    assert_non_null(k);
    return k;
}

/* A solved challenge of k for (user, event, bits) expiring at NOW + 60 s, into sol. */
static int solved(const order_challenge_key *k, uint64_t user, uint64_t event, unsigned bits,
                  char *sol)
{
    char ch[ORDER_CHALLENGE_MAX];
    int n = order_challenge_issue(k, user, event, bits, NOW + 60000, 0x0123456789abcdefULL, ch,
                                  sizeof(ch));
    assert_true(n > 0);
    assert_int_equal(order_challenge_bits_of(ch, (size_t)n), (int)bits);
    int m = sk_pow_solve(ch, (size_t)n, bits, 0, 1u << 24, sol,
                                  ORDER_CHALLENGE_SOLUTION_MAX, NULL);
    assert_true(m > n);
    assert_true(sk_pow_zero_bits(sol, (size_t)m) >= bits);
    return m;
}

static void test_round_trip(void **state)
{
    (void)state;
    order_challenge_key *k = key(K1, NULL);
    char sol[ORDER_CHALLENGE_SOLUTION_MAX];
    int n = solved(k, 7, 42, 12, sol);
    assert_int_equal(order_challenge_verify(k, sol, (size_t)n, 7, 42, 12, NOW), ORDER_CHALLENGE_OK);
    /* another user, another event: the MAC binds both */
    assert_int_equal(order_challenge_verify(k, sol, (size_t)n, 8, 42, 12, NOW),
                     ORDER_CHALLENGE_ERR_INVALID);
    assert_int_equal(order_challenge_verify(k, sol, (size_t)n, 7, 43, 12, NOW),
                     ORDER_CHALLENGE_ERR_INVALID);
    /* the event asks for more bits than the challenge carries */
    assert_int_equal(order_challenge_verify(k, sol, (size_t)n, 7, 42, 13, NOW),
                     ORDER_CHALLENGE_ERR_INVALID);
    /* expired: at its expiry and after */
    assert_int_equal(order_challenge_verify(k, sol, (size_t)n, 7, 42, 12, NOW + 60000),
                     ORDER_CHALLENGE_ERR_EXPIRED);
    order_challenge_key_free(k);
}

static void test_tampered(void **state)
{
    (void)state;
    order_challenge_key *k = key(K1, NULL);
    char sol[ORDER_CHALLENGE_SOLUTION_MAX], t[ORDER_CHALLENGE_SOLUTION_MAX];
    int n = solved(k, 7, 42, 8, sol);
    /* a lower difficulty written in: the MAC no longer matches */
    memcpy(t, sol, (size_t)n + 1);
    char *bits = strchr(strchr(t, '.') + 1, '.') + 1;
    assert_int_equal(bits[0], '8');
    bits[0] = '1';
    assert_int_equal(order_challenge_verify(k, t, (size_t)n, 7, 42, 1, NOW),
                     ORDER_CHALLENGE_ERR_INVALID);
    /* a later expiry written in */
    memcpy(t, sol, (size_t)n + 1);
    char *exp = strchr(bits, '.') + 1;
    exp[0] = '9';
    assert_int_equal(order_challenge_verify(k, t, (size_t)n, 7, 42, 8, NOW + 100000),
                     ORDER_CHALLENGE_ERR_INVALID);
    /* a counter that does not solve it (find one: most do not at 8 bits) */
    memcpy(t, sol, (size_t)n + 1);
    char *dot = strrchr(t, '.');
    for (int c = 0; c < 1000; c++) {
        int m = snprintf(dot + 1, 24, "%d", 500000 + c);
        size_t len = (size_t)(dot + 1 - t) + (size_t)m;
        if (sk_pow_zero_bits(t, len) < 8) {
            assert_int_equal(order_challenge_verify(k, t, len, 7, 42, 8, NOW),
                             ORDER_CHALLENGE_ERR_INVALID);
            break;
        }
    }
    /* another key's challenge */
    order_challenge_key *k2 = key(K2, NULL);
    assert_int_equal(order_challenge_verify(k2, sol, (size_t)n, 7, 42, 8, NOW),
                     ORDER_CHALLENGE_ERR_INVALID);
    order_challenge_key_free(k2);
    order_challenge_key_free(k);
}

static void test_rotation(void **state)
{
    (void)state;
    order_challenge_key *old = key(K1, NULL), *rotated = key(K2, K1);
    char sol[ORDER_CHALLENGE_SOLUTION_MAX];
    int n = solved(old, 7, 42, 4, sol);
    /* a challenge of the previous key still verifies; a new one is the current key's */
    assert_int_equal(order_challenge_verify(rotated, sol, (size_t)n, 7, 42, 4, NOW),
                     ORDER_CHALLENGE_OK);
    n = solved(rotated, 7, 42, 4, sol);
    assert_int_equal(order_challenge_verify(rotated, sol, (size_t)n, 7, 42, 4, NOW),
                     ORDER_CHALLENGE_OK);
    assert_int_equal(order_challenge_verify(old, sol, (size_t)n, 7, 42, 4, NOW),
                     ORDER_CHALLENGE_ERR_INVALID);
    order_challenge_key_free(old);
    order_challenge_key_free(rotated);
}

static void test_shape(void **state)
{
    (void)state;
    order_challenge_key *k = key(K1, NULL);
    char sol[ORDER_CHALLENGE_SOLUTION_MAX];
    solved(k, 7, 42, 4, sol);
    const char *bad[] = {
        "",
        "x",
        "1.42.4.1800000060000.0123456789abcdef", /* no MAC, no counter */
        "2.42.4.1800000060000.0123456789abcdef.00000000000000000000000000000000.1",
        "1.042.4.1800000060000.0123456789abcdef.00000000000000000000000000000000.1",
        "1.42.0.1800000060000.0123456789abcdef.00000000000000000000000000000000.1",
        "1.42.33.1800000060000.0123456789abcdef.00000000000000000000000000000000.1",
        "1.42.4.1800000060000.0123456789ABCDEF.00000000000000000000000000000000.1",
        "1.42.4.1800000060000.0123456789abcdef.0000000000000000000000000000000.1",
        "1.42.4.1800000060000.0123456789abcdef.00000000000000000000000000000000.",
        "1.42.4.1800000060000.0123456789abcdef.00000000000000000000000000000000.1x",
        "1.42.4.1800000060000.0123456789abcdef.00000000000000000000000000000000.1.2",
        "1.42.4.1800000060000.0123456789abcdef.00000000000000000000000000000000."
        "123456789012345678901",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(order_challenge_verify(k, bad[i], strlen(bad[i]), 7, 42, 4, NOW),
                         ORDER_CHALLENGE_ERR_SHAPE);
    /* the right shape, a wrong MAC: invalid, not shape */
    const char *wrong = "1.42.4.1800000060000.0123456789abcdef.00000000000000000000000000000000.1";
    assert_int_equal(order_challenge_verify(k, wrong, strlen(wrong), 7, 42, 4, NOW),
                     ORDER_CHALLENGE_ERR_INVALID);
    /* a challenge without its counter is the wrong shape for a solution */
    char *dot = strrchr(sol, '.');
    assert_int_equal(order_challenge_verify(k, sol, (size_t)(dot - sol), 7, 42, 4, NOW),
                     ORDER_CHALLENGE_ERR_SHAPE);
    assert_int_equal(order_challenge_bits_of("1.42", 4), -1);
    order_challenge_key_free(k);
}

static void test_path_token(void **state)
{
    (void)state;
    order_challenge_key *k = key(K1, NULL), *rotated = key(K2, K1), *other = key(K2, NULL);
    char t[ORDER_CHALLENGE_PATH_TOKEN + 1], u[ORDER_CHALLENGE_PATH_TOKEN + 1];
    order_challenge_path_token(k, 7, 42, t);
    assert_int_equal(strlen(t), ORDER_CHALLENGE_PATH_TOKEN);
    assert_true(order_challenge_path_ok(k, 7, 42, t, strlen(t)));
    assert_false(order_challenge_path_ok(k, 8, 42, t, strlen(t))); /* another user's */
    assert_false(order_challenge_path_ok(k, 7, 43, t, strlen(t))); /* another event's */
    assert_false(order_challenge_path_ok(k, 7, 42, t, strlen(t) - 1));
    assert_false(order_challenge_path_ok(other, 7, 42, t, strlen(t)));
    assert_true(order_challenge_path_ok(rotated, 7, 42, t, strlen(t))); /* the previous key */
    order_challenge_path_token(k, 8, 42, u);
    assert_string_not_equal(t, u);
    /* the configured key: challenge.key, else derived from jwt.secret (not the secret) */
    order_challenge_key *c1 = order_challenge_key_of_config(K1, "", "jwt-secret-0123456789abcdef0123456789");
    order_challenge_path_token(c1, 7, 42, u);
    assert_string_equal(t, u);
    order_challenge_key *d = order_challenge_key_of_config("", "", K1);
    order_challenge_path_token(d, 7, 42, u);
    assert_string_not_equal(t, u);
    order_challenge_key_free(d);
    order_challenge_key_free(c1);
    order_challenge_key_free(k);
    order_challenge_key_free(rotated);
    order_challenge_key_free(other);
}

/* The check's cost: a valid solution verified many times. Printed for order/README.md;
 * asserted under 20 us (the budget is 2 us; the bound leaves room for sanitizers and a
 * shared machine, the README's figure is taken from a release build). */
static void test_cost(void **state)
{
    (void)state;
    order_challenge_key *k = key(K1, NULL);
    char sol[ORDER_CHALLENGE_SOLUTION_MAX];
    int n = solved(k, 7, 42, 8, sol);
    struct timespec a, b;
    const int N = 20000;
    int ok = 0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (int i = 0; i < N; i++)
        ok += order_challenge_verify(k, sol, (size_t)n, 7, 42, 8, NOW) == ORDER_CHALLENGE_OK;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / N;
    printf("order_challenge_verify: %.3f us of CPU per check (%d checks)\n", us, N);
    assert_int_equal(ok, N);
    assert_true(us < 20.0);
    order_challenge_key_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_rotation),   cmocka_unit_test(test_shape),
        cmocka_unit_test(test_path_token), cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
