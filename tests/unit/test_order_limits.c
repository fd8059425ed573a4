/* Unit tests of order_bucket (per-user token buckets in bounded memory) and
 * order_soldout (expiring sold-out flags). Time is injected: no sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "order_bucket.h"
#include "order_soldout.h"

static void test_bucket_rate_and_burst(void **state)
{
    order_bucket_table *t = order_bucket_new(1024, 5, 10); /* 5/s, burst 10 */
    assert_non_null(t);
    int64_t now = 1000000000;
    int ok = 0;
    for (int i = 0; i < 20; i++)
        ok += order_bucket_take(t, 42, now);
    assert_int_equal(ok, 10); /* the burst, then refused */
    assert_int_equal(order_bucket_take(t, 43, now), 1); /* another user is not affected */
    assert_int_equal(order_bucket_take(t, 42, now + 100000), 0); /* 0.5 token after 100 ms */
    assert_int_equal(order_bucket_take(t, 42, now + 200000), 1); /* 1 token after 200 ms */
    assert_int_equal(order_bucket_take(t, 42, now + 200000), 0);
    /* a long pause refills to the burst, not beyond */
    ok = 0;
    for (int i = 0; i < 20; i++)
        ok += order_bucket_take(t, 42, now + 3600LL * 1000000);
    assert_int_equal(ok, 10);
    /* a clock that goes back gives nothing */
    assert_int_equal(order_bucket_take(t, 42, now), 0);
    order_bucket_free(t);
}

static void test_bucket_bounded(void **state)
{
    /* 64 slots; 100000 users: memory stays fixed and an evicted user starts full again. */
    order_bucket_table *t = order_bucket_new(64, 1, 1);
    assert_non_null(t);
    int64_t now = 1000;
    for (uint64_t u = 1; u <= 100000; u++)
        assert_int_equal(order_bucket_take(t, u, now), 1);
    /* the most recent users are still tracked and limited */
    assert_int_equal(order_bucket_take(t, 100000, now), 0);
    order_bucket_free(t);
    assert_null(order_bucket_new(2, 1, 1));
    assert_null(order_bucket_new(64, 0, 1));
    order_bucket_free(NULL);
}

static void test_soldout(void **state)
{
    order_soldout *s = order_soldout_new(500);
    assert_non_null(s);
    assert_int_equal(order_soldout_get(s, 7, 1000), 0);
    order_soldout_set(s, 7, 1000);
    assert_int_equal(order_soldout_get(s, 7, 1000), 1);
    assert_int_equal(order_soldout_get(s, 7, 1499), 1);
    assert_int_equal(order_soldout_get(s, 7, 1500), 0); /* expired: ask Redis again */
    assert_int_equal(order_soldout_get(s, 8, 1200), 0);
    /* two events in one slot: the newer wins, the older only costs a Redis call */
    order_soldout_set(s, 7, 2000);
    order_soldout_set(s, 7 + 1024, 2000);
    assert_int_equal(order_soldout_get(s, 7 + 1024, 2100), 1);
    assert_int_equal(order_soldout_get(s, 7, 2100), 0);
    order_soldout_free(s);
}

/* An expired flag sends one request to Redis (the probe) and holds for the others
 * until the probe's answer: a sold out sets the flag again, any other answer lifts the
 * hold; without an answer everyone asks after 50 ms. A clear lifts it with no hold. */
static void test_soldout_probe(void **state)
{
    (void)state;
    order_soldout *s = order_soldout_new(500);
    assert_non_null(s);
    order_soldout_set(s, 7, 1000);
    assert_int_equal(order_soldout_get(s, 7, 1500), 0); /* the probe */
    assert_int_equal(order_soldout_get(s, 7, 1500), 1); /* the others: still 409 */
    assert_int_equal(order_soldout_get(s, 7, 1549), 1);
    order_soldout_set(s, 7, 1510); /* the probe's answer: sold out */
    assert_int_equal(order_soldout_get(s, 7, 2009), 1);
    assert_int_equal(order_soldout_get(s, 7, 2010), 0); /* the next expiry's probe */
    assert_int_equal(order_soldout_get(s, 7, 2059), 1);
    /* no sold out came back (the probe sold, or never reached Redis): after the hold,
     * every request asks, as without a flag */
    assert_int_equal(order_soldout_get(s, 7, 2060), 0);
    assert_int_equal(order_soldout_get(s, 7, 2061), 0);
    /* the probe sold (or was refused for another reason): the hold lifts at once, so
     * no buyer is told "sold out" while units are left */
    order_soldout_set(s, 7, 2100);
    assert_int_equal(order_soldout_get(s, 7, 2600), 0); /* the probe */
    assert_int_equal(order_soldout_get(s, 7, 2601), 1); /* held */
    order_soldout_probe_done(s, 7);
    assert_int_equal(order_soldout_get(s, 7, 2602), 0);
    assert_int_equal(order_soldout_get(s, 7, 2603), 0);
    order_soldout_probe_done(s, 8); /* another event: nothing to lift */
    order_soldout_set(s, 7, 2700);
    order_soldout_probe_done(s, 7); /* a flag that is set (not a hold) stays */
    assert_int_equal(order_soldout_get(s, 7, 2701), 1);
    /* a unit came back: no flag, no hold */
    order_soldout_set(s, 7, 3000);
    order_soldout_clear(s, 7);
    assert_int_equal(order_soldout_get(s, 7, 3001), 0);
    assert_int_equal(order_soldout_get(s, 7, 3001), 0);
    order_soldout_free(s);
    /* a ttl below the hold: the hold is the ttl */
    s = order_soldout_new(10);
    order_soldout_set(s, 9, 1000);
    assert_int_equal(order_soldout_get(s, 9, 1010), 0);
    assert_int_equal(order_soldout_get(s, 9, 1019), 1);
    assert_int_equal(order_soldout_get(s, 9, 1020), 0);
    order_soldout_free(s);
}

/* Segment flags (issue 19): each expires alone; the event is flagged once all K are;
 * another event sharing the slot reads none of them; a clear lifts them all. */
static void test_soldout_segments(void **state)
{
    order_soldout *s = order_soldout_new(500);
    assert_non_null(s);
    uint64_t ev = 1700000000123ULL, other = ev + 1024;
    assert_int_equal(order_soldout_seg_get(s, ev, 0, 1000), 0);
    assert_int_equal(order_soldout_seg_set(s, ev, 0, 3, 1000), 0);
    assert_int_equal(order_soldout_seg_get(s, ev, 0, 1000), 1);
    assert_int_equal(order_soldout_seg_get(s, ev, 1, 1000), 0);
    assert_int_equal(order_soldout_seg_get(s, other, 0, 1000), 0);
    assert_int_equal(order_soldout_get(s, ev, 1000), 0); /* one of three: not sold out */
    assert_int_equal(order_soldout_seg_set(s, ev, 2, 3, 1100), 0);
    assert_int_equal(order_soldout_seg_get(s, ev, 0, 1500), 0); /* expired alone */
    assert_int_equal(order_soldout_seg_get(s, ev, 2, 1500), 1);
    /* segment 0 expired: flagging 1 leaves the event open */
    assert_int_equal(order_soldout_seg_set(s, ev, 1, 3, 1500), 0);
    assert_int_equal(order_soldout_get(s, ev, 1500), 0);
    assert_int_equal(order_soldout_seg_set(s, ev, 0, 3, 1550), 1); /* all three now */
    assert_int_equal(order_soldout_get(s, ev, 1550), 1);
    assert_int_equal(order_soldout_get(s, ev, 2049), 1);
    assert_int_equal(order_soldout_get(s, ev, 2050), 0);
    order_soldout_clear(s, ev);
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(order_soldout_seg_get(s, ev, i, 1600), 0);
    assert_int_equal(order_soldout_get(s, ev, 1600), 0);
    /* out of range: never flagged */
    assert_int_equal(order_soldout_seg_set(s, ev, ORDER_SOLDOUT_SEGS, 3, 1000), 0);
    assert_int_equal(order_soldout_seg_get(s, ev, ORDER_SOLDOUT_SEGS, 1000), 0);
    order_soldout_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_rate_and_burst),
        cmocka_unit_test(test_bucket_bounded),
        cmocka_unit_test(test_soldout),
        cmocka_unit_test(test_soldout_probe),
        cmocka_unit_test(test_soldout_segments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
