/* Unit tests of the unguessable layout (idgen_scramble): SipHash-2-4 against the
 * reference vectors, the Feistel permutation as a bijection over a full 2^20 range that
 * round-trips, no visible order between the IDs of one second, the second as a tweak,
 * and the public keyed encode/decode. Pure: no Redis, no clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "idgen.h"
#include "idgen_core.h"
#include "idgen_scramble.h"

#define RANGE (1u << 20)
static const char secret[] = "0123456789abcdef-a-test-secret";

static idgen_scramble_key test_key(void)
{
    idgen_scramble_key k;
    assert_int_equal(idgen_scramble_key_derive(secret, strlen(secret), &k), 0);
    return k;
}

/* The SipHash paper's vectors: key 00..0f, message 00..(len-1). */
static void test_siphash_vectors(void **state)
{
    (void)state;
    unsigned char key[16], msg[16];
    for (int i = 0; i < 16; i++)
        key[i] = msg[i] = (unsigned char)i;
    uint64_t k0 = 0, k1 = 0;
    for (int i = 7; i >= 0; i--) {
        k0 = k0 << 8 | key[i];
        k1 = k1 << 8 | key[8 + i];
    }
    assert_true(idgen_siphash(k0, k1, msg, 0) == UINT64_C(0x726fdb47dd0e0e31));
    assert_true(idgen_siphash(k0, k1, msg, 8) == UINT64_C(0x93f5f5799a932462));
    assert_true(idgen_siphash(k0, k1, msg, 15) == UINT64_C(0xa129ca6149be45e5));
}

static void test_key_bounds(void **state)
{
    (void)state;
    idgen_scramble_key k;
    char big[IDGEN_SECRET_MAX + 1];
    memset(big, 'x', sizeof(big));
    assert_int_equal(idgen_scramble_key_derive("short", 5, &k), -1);
    assert_int_equal(idgen_scramble_key_derive(big, 15, &k), -1);
    assert_int_equal(idgen_scramble_key_derive(big, sizeof(big), &k), -1);
    assert_int_equal(idgen_scramble_key_derive(NULL, 16, &k), -1);
    assert_int_equal(idgen_scramble_key_derive(big, IDGEN_SECRET_MAX, &k), 0);
    /* A byte past the first 16 changes the key: the whole secret counts. */
    idgen_scramble_key a, b;
    assert_int_equal(idgen_scramble_key_derive(big, 40, &a), 0);
    big[39] = 'y';
    assert_int_equal(idgen_scramble_key_derive(big, 40, &b), 0);
    assert_true(a.k0 != b.k0 && a.k1 != b.k1);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Every sequence of a full 2^20 range maps to a distinct value and back, at the bottom
 * of the space and at its top. */
static void check_bijection(uint32_t base)
{
    idgen_scramble_key k = test_key();
    uint32_t *v = malloc(RANGE * sizeof(*v));
    assert_non_null(v);
    const uint32_t off = 12345678;
    for (uint32_t i = 0; i < RANGE; i++) {
        v[i] = idgen_scramble_seq(&k, off, base + i);
        assert_int_equal(idgen_unscramble_seq(&k, off, v[i]), base + i);
    }
    qsort(v, RANGE, sizeof(*v), cmp_u32);
    size_t dups = 0;
    for (uint32_t i = 1; i < RANGE; i++)
        dups += v[i] == v[i - 1];
    assert_int_equal(dups, 0);
    /* Spread over the whole 32-bit space, not packed near the inputs. */
    assert_true(v[0] < (1u << 16) * 64 && v[RANGE - 1] > UINT32_MAX - (1u << 16) * 64);
    free(v);
}

static void test_bijection_low(void **state)
{
    (void)state;
    check_bijection(0);
}

static void test_bijection_high(void **state)
{
    (void)state;
    check_bijection(UINT32_MAX - RANGE + 1);
}

/* Consecutive sequences of one second: the next value is above the previous about half
 * the time (a counter would be always), and adjacent values are far apart (a uniform pair
 * is within 2^16 with probability 2^-15). */
static void test_no_visible_order(void **state)
{
    (void)state;
    idgen_scramble_key k = test_key();
    const uint32_t off = 98765;
    size_t up = 0, close = 0;
    double sum_gap = 0;
    uint32_t prev = idgen_scramble_seq(&k, off, 1);
    for (uint32_t s = 2; s <= RANGE; s++) {
        uint32_t v = idgen_scramble_seq(&k, off, s);
        up += v > prev;
        uint32_t gap = v > prev ? v - prev : prev - v;
        close += gap < (1u << 16);
        sum_gap += gap;
        prev = v;
    }
    double frac_up = (double)up / (RANGE - 1);
    double mean_gap = sum_gap / (RANGE - 1);
    print_message("increasing pairs %.4f, pairs within 2^16 %zu, mean gap %.3g\n", frac_up,
                  close, mean_gap);
    /* 1/2 +- 0.005: about 10 standard deviations of a fair coin over 2^20 pairs. */
    assert_true(frac_up > 0.495 && frac_up < 0.505);
    assert_true(close < 200); /* expected 32 */
    /* The mean distance of two uniform 32-bit values is 2^32/3, about 1.43e9. */
    assert_true(mean_gap > 1.35e9 && mean_gap < 1.51e9);
}

/* The second is the tweak: one sequence in two seconds, or under two secrets, maps to
 * unrelated values. */
static void test_tweak_and_key(void **state)
{
    (void)state;
    idgen_scramble_key k = test_key(), k2;
    assert_int_equal(idgen_scramble_key_derive("another-secret-of-enough-bytes", 30, &k2), 0);
    size_t same_sec = 0, same_key = 0;
    for (uint32_t s = 0; s < (1u << 16); s++) {
        same_sec += idgen_scramble_seq(&k, 1000, s) == idgen_scramble_seq(&k, 1001, s);
        same_key += idgen_scramble_seq(&k, 1000, s) == idgen_scramble_seq(&k2, 1000, s);
    }
    assert_true(same_sec < 4 && same_key < 4); /* expected 2^16 / 2^32 each */
}

static void test_public_keyed_roundtrip(void **state)
{
    (void)state;
    size_t sl = strlen(secret);
    const int64_t t = IDGEN_EPOCH_UNIX + 86400 * 700 + 3600;
    uint64_t prev_max = 0;
    for (int64_t sec = t; sec < t + 3; sec++) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint32_t s = 1; s < 5000; s++) {
            uint64_t id;
            assert_int_equal(idgen_encode_keyed(sec, s, secret, sl, &id), IDGEN_OK);
            assert_true(id >> 63 == 0);
            idgen_parts p;
            assert_int_equal(idgen_decode_keyed(id, secret, sl, &p), IDGEN_OK);
            assert_int_equal(p.unix_seconds, sec);
            assert_int_equal(p.sequence, s);
            /* The plain decode still reads the time: the high bits are untouched. */
            assert_int_equal(idgen_decode(id, &p), IDGEN_OK);
            assert_int_equal(p.unix_seconds, sec);
            lo = id < lo ? id : lo;
            hi = id > hi ? id : hi;
        }
        assert_true(lo > prev_max); /* ordered by second */
        prev_max = hi;
    }
    /* A wrong secret decodes to some other sequence, not an error. */
    uint64_t id;
    idgen_parts p;
    assert_int_equal(idgen_encode_keyed(t, 42, secret, sl, &id), IDGEN_OK);
    assert_int_equal(idgen_decode_keyed(id, "the-wrong-secret-entirely", 25, &p), IDGEN_OK);
    assert_int_not_equal(p.sequence, 42);
    /* Bad arguments. */
    assert_int_equal(idgen_encode_keyed(t, 1, "short", 5, &id), IDGEN_ERR_ARG);
    assert_int_equal(idgen_encode_keyed(IDGEN_EPOCH_UNIX - 1, 1, secret, sl, &id), IDGEN_ERR_CLOCK);
    assert_int_equal(idgen_decode_keyed(UINT64_C(1) << 63, secret, sl, &p), IDGEN_ERR_ARG);
    assert_int_equal(idgen_decode_keyed(id, secret, sl, NULL), IDGEN_ERR_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_vectors),      cmocka_unit_test(test_key_bounds),
        cmocka_unit_test(test_bijection_low),        cmocka_unit_test(test_bijection_high),
        cmocka_unit_test(test_no_visible_order),     cmocka_unit_test(test_tweak_and_key),
        cmocka_unit_test(test_public_keyed_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
