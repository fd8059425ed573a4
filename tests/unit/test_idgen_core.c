/* Unit tests of idgen_core: the bit layout, day keys, the monotonic stamp, lease checks
 * and the adaptive segment size. Pure: no Redis, no clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "idgen.h"
#include "idgen_core.h"

/* 2024-01-01T00:00:00Z, checked against timegm rather than trusted. */
static void test_epoch_constant(void **state)
{
    (void)state;
    struct tm tm = {.tm_year = 124, .tm_mon = 0, .tm_mday = 1};
    assert_int_equal(timegm(&tm), IDGEN_EPOCH_UNIX);
}

static void roundtrip(int64_t secs, uint32_t seq)
{
    uint64_t id;
    assert_int_equal(idgen_encode(secs, seq, &id), IDGEN_OK);
    assert_true(id >> 63 == 0);
    idgen_parts p;
    assert_int_equal(idgen_decode(id, &p), IDGEN_OK);
    assert_int_equal(p.unix_seconds, secs);
    assert_int_equal(p.sequence, seq);
}

static void test_layout_roundtrip(void **state)
{
    (void)state;
    roundtrip(IDGEN_EPOCH_UNIX, 0);                          /* the epoch */
    roundtrip(IDGEN_EPOCH_UNIX, UINT32_MAX);                 /* the epoch, last sequence */
    roundtrip((int64_t)time(NULL), 123456789);               /* now */
    roundtrip(IDGEN_EPOCH_UNIX + IDGEN_MAX_OFFSET, 1);       /* the last second */
    roundtrip(IDGEN_EPOCH_UNIX + IDGEN_MAX_OFFSET, UINT32_MAX);

    /* Bit positions: seconds in 62..32, sequence in 31..0. */
    uint64_t id;
    assert_int_equal(idgen_encode(IDGEN_EPOCH_UNIX + 1, 2, &id), IDGEN_OK);
    assert_true(id == ((UINT64_C(1) << 32) | 2));
    assert_int_equal(idgen_encode(IDGEN_EPOCH_UNIX + IDGEN_MAX_OFFSET, UINT32_MAX, &id), IDGEN_OK);
    assert_true(id == INT64_MAX);
}

static void test_layout_limits(void **state)
{
    (void)state;
    uint64_t id = 42;
    assert_int_equal(idgen_encode(IDGEN_EPOCH_UNIX - 1, 1, &id), IDGEN_ERR_CLOCK);
    assert_int_equal(idgen_encode(IDGEN_EPOCH_UNIX + IDGEN_MAX_OFFSET + 1, 1, &id),
                     IDGEN_ERR_CLOCK);
    assert_int_equal(id, 42); /* untouched on error */
    assert_int_equal(idgen_encode(IDGEN_EPOCH_UNIX, 1, NULL), IDGEN_ERR_ARG);
    idgen_parts p;
    assert_int_equal(idgen_decode(UINT64_C(1) << 63, &p), IDGEN_ERR_ARG);
    assert_int_equal(idgen_decode(UINT64_MAX, &p), IDGEN_ERR_ARG);
    assert_int_equal(idgen_decode(1, NULL), IDGEN_ERR_ARG);
    /* The last representable second is 2^31 - 1 seconds after the epoch: 2092. */
    char utc[32];
    idgen_core_format_utc(IDGEN_EPOCH_UNIX + IDGEN_MAX_OFFSET, utc, sizeof(utc));
    assert_string_equal(utc, "2092-01-19T03:14:07Z");
}

static void check_key(int64_t unix_seconds, const char *want)
{
    char key[IDGEN_KEY_MAX];
    assert_true(idgen_core_day_key("order", idgen_core_day(unix_seconds), key, sizeof(key)) > 0);
    assert_string_equal(key, want);
}

static void test_day_key(void **state)
{
    (void)state;
    check_key(IDGEN_EPOCH_UNIX, "icr:order:20240101");
    check_key(IDGEN_EPOCH_UNIX - 1, "icr:order:20231231");          /* one second before */
    check_key(1709164800, "icr:order:20240229");                   /* a leap day */
    check_key(1709164800 + 86399, "icr:order:20240229");           /* its last second */
    check_key(1709164800 + 86400, "icr:order:20240301");
    check_key(1795330800, "icr:order:20261122");                   /* 2026-11-22T07:00:00Z */
    check_key(4107542400, "icr:order:21000301");                   /* 2100 is not a leap year */
    check_key(0, "icr:order:19700101");
    check_key(-1, "icr:order:19691231");                           /* floors, not truncates */
    /* Every day of 2024..2027 agrees with gmtime. */
    for (int64_t t = IDGEN_EPOCH_UNIX; t < IDGEN_EPOCH_UNIX + 4 * 366 * 86400LL; t += 86400 - 7) {
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        char want[64], got[IDGEN_KEY_MAX];
        snprintf(want, sizeof(want), "icr:p:%04d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday);
        idgen_core_day_key("p", idgen_core_day(t), got, sizeof(got));
        assert_string_equal(got, want);
    }
    char small[10];
    assert_int_equal(idgen_core_day_key("order", 20000, small, sizeof(small)), -1);
}

static void test_prefix(void **state)
{
    (void)state;
    assert_true(idgen_core_prefix_ok("order"));
    assert_true(idgen_core_prefix_ok("svc-1.eu_west"));
    assert_false(idgen_core_prefix_ok(""));
    assert_false(idgen_core_prefix_ok(NULL));
    assert_false(idgen_core_prefix_ok("a:b"));
    assert_false(idgen_core_prefix_ok("a b"));
    assert_false(idgen_core_prefix_ok("a\nb"));
    char longp[IDGEN_PREFIX_MAX + 2];
    memset(longp, 'x', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = 0;
    assert_false(idgen_core_prefix_ok(longp));
    longp[IDGEN_PREFIX_MAX] = 0;
    assert_true(idgen_core_prefix_ok(longp));
}

static void test_stamp_never_goes_back(void **state)
{
    (void)state;
    assert_int_equal(idgen_core_stamp(100, 90), 100);
    assert_int_equal(idgen_core_stamp(90, 100), 100); /* stepped back: keep the high water */
    assert_int_equal(idgen_core_stamp(100, 100), 100);
    /* Across midnight: once past it, a clock back in yesterday still stamps today. */
    int64_t midnight = IDGEN_EPOCH_UNIX + 10 * 86400;
    int64_t s = idgen_core_stamp(midnight - 3, midnight + 2);
    assert_int_equal(idgen_core_day(s), idgen_core_day(midnight));
}

static void test_key_ttl(void **state)
{
    (void)state;
    int64_t day = idgen_core_day(IDGEN_EPOCH_UNIX + 5 * 86400);
    int64_t start = day * 86400;
    /* Lives to the end of its day plus ttl_days, measured from now. */
    assert_int_equal(idgen_core_key_ttl(day, start, 3), 4 * 86400);
    assert_int_equal(idgen_core_key_ttl(day, start + 86399, 3), 3 * 86400 + 1);
    assert_true(idgen_core_key_ttl(day, start + 100 * 86400, 3) > 0); /* never expires at once */
}

static void test_lease_check(void **state)
{
    (void)state;
    assert_int_equal(idgen_core_lease_check(1, 1000, 0), IDGEN_LEASE_OK);
    assert_int_equal(idgen_core_lease_check(1001, 2000, 1000), IDGEN_LEASE_OK);
    assert_int_equal(idgen_core_lease_check(1000, 1999, 1000), IDGEN_LEASE_RESET);
    assert_int_equal(idgen_core_lease_check(1, 1, 5000), IDGEN_LEASE_RESET);
    /* The end of the 32-bit space: partial, then exhausted; never a wrap. */
    assert_int_equal(idgen_core_lease_check(IDGEN_SEQ_MAX - 9, IDGEN_SEQ_MAX, 0), IDGEN_LEASE_OK);
    assert_int_equal(idgen_core_lease_check(IDGEN_SEQ_MAX - 9, IDGEN_SEQ_MAX + 10, 0),
                     IDGEN_LEASE_PARTIAL);
    assert_int_equal(idgen_core_lease_check(IDGEN_SEQ_MAX + 1, IDGEN_SEQ_MAX + 1, 0),
                     IDGEN_LEASE_EXHAUSTED);
    /* A reset wins over exhaustion: it must be reported. */
    assert_int_equal(idgen_core_lease_check(IDGEN_SEQ_MAX + 1, IDGEN_SEQ_MAX + 5,
                                            IDGEN_SEQ_MAX + 3),
                     IDGEN_LEASE_RESET);
}

static void test_next_size(void **state)
{
    (void)state;
    /* Fast: grows towards the target, at most 8x a step. */
    assert_int_equal(idgen_core_next_size(1000, 250, 1000, 1000, 1000000), 4000);
    assert_int_equal(idgen_core_next_size(1000, 1, 1000, 1000, 1000000), 8000);
    assert_int_equal(idgen_core_next_size(1000, 0, 1000, 1000, 1000000), 8000);
    /* Clamped at max. */
    assert_int_equal(idgen_core_next_size(900000, 1, 1000, 1000, 1000000), 1000000);
    /* In the band: unchanged. */
    assert_int_equal(idgen_core_next_size(5000, 600, 1000, 1000, 1000000), 5000);
    assert_int_equal(idgen_core_next_size(5000, 2000, 1000, 1000, 1000000), 5000);
    /* Slow: halves, not below min. */
    assert_int_equal(idgen_core_next_size(5000, 2001, 1000, 1000, 1000000), 2500);
    assert_int_equal(idgen_core_next_size(1500, 60000, 1000, 1000, 1000000), 1000);
    assert_int_equal(idgen_core_next_size(10, 60000, 1000, 1000, 1000000), 1000);
}

static void test_strerror_and_retriable(void **state)
{
    (void)state;
    int errs[] = {IDGEN_OK, IDGEN_ERR_ARG, IDGEN_ERR_REDIS, IDGEN_ERR_EXHAUSTED, IDGEN_ERR_RESET,
                  IDGEN_ERR_NOMEM, IDGEN_ERR_CLOCK};
    for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
        assert_non_null(idgen_strerror(errs[i]));
        assert_string_not_equal(idgen_strerror(errs[i]), "unknown error");
    }
    assert_string_equal(idgen_strerror(-99), "unknown error");
    assert_true(idgen_err_retriable(IDGEN_ERR_REDIS));
    assert_true(idgen_err_retriable(IDGEN_ERR_EXHAUSTED));
    assert_true(idgen_err_retriable(IDGEN_ERR_RESET));
    assert_false(idgen_err_retriable(IDGEN_ERR_ARG));
    assert_false(idgen_err_retriable(IDGEN_ERR_CLOCK));
    assert_false(idgen_err_retriable(IDGEN_OK));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epoch_constant),
        cmocka_unit_test(test_layout_roundtrip),
        cmocka_unit_test(test_layout_limits),
        cmocka_unit_test(test_day_key),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_stamp_never_goes_back),
        cmocka_unit_test(test_key_ttl),
        cmocka_unit_test(test_lease_check),
        cmocka_unit_test(test_next_size),
        cmocka_unit_test(test_strerror_and_retriable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
