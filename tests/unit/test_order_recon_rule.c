/* Unit tests of order_recon_rule: when the reconciler may give a reservation back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "order_msg.h"
#include "order_recon_rule.h"

#define WAIT 15000 /* message timeout + margin */

static void test_drained_partition(void **state)
{
    (void)state;
    order_recon_mark m = {0};
    /* Group at the high watermark: everything produced before now is in PostgreSQL. */
    int64_t cut = order_recon_cutoff(&m, 100000, 50, 50);
    assert_int_equal(cut, 100000);
    assert_true(order_recon_may_cancel(100000 - WAIT, cut, WAIT));
    assert_false(order_recon_may_cancel(100000 - WAIT + 1, cut, WAIT)); /* may still land */
    /* An empty partition and a group that never committed: drained. */
    order_recon_mark e = {0};
    assert_int_equal(order_recon_cutoff(&e, 5000, 0, -1001), 5000);
    /* Messages there and no commit: not drained. */
    order_recon_mark f = {0};
    assert_int_equal(order_recon_cutoff(&f, 5000, 3, -1001), ORDER_RECON_NEVER);
    assert_false(order_recon_may_cancel(0, ORDER_RECON_NEVER, WAIT));
}

static void test_lagging_group_uses_the_passed_mark(void **state)
{
    (void)state;
    order_recon_mark m = {0};
    /* scan 1 at t=1000: hw 100, group at 40: nothing yet; mark (100, 1000) */
    assert_int_equal(order_recon_cutoff(&m, 1000, 100, 40), ORDER_RECON_NEVER);
    /* scan 2 at t=2000: hw 180, group at 90: mark not passed, kept */
    assert_int_equal(order_recon_cutoff(&m, 2000, 180, 90), ORDER_RECON_NEVER);
    assert_int_equal(m.hw, 100);
    assert_int_equal(m.t_ms, 1000);
    /* scan 3 at t=3000: hw 260, group at 120 >= 100: cutoff is the mark's time (1000),
     * not now: messages between 1000 and 3000 may still be unread */
    assert_int_equal(order_recon_cutoff(&m, 3000, 260, 120), 1000);
    assert_int_equal(m.hw, 260); /* a new mark */
    assert_int_equal(m.t_ms, 3000);
    /* scan 4: group at 250 < 260: nothing new may go */
    assert_int_equal(order_recon_cutoff(&m, 4000, 300, 250), ORDER_RECON_NEVER);
    /* scan 5: group caught up completely */
    assert_int_equal(order_recon_cutoff(&m, 5000, 300, 300), 5000);
}

static void test_never_with_unbounded_timeout(void **state)
{
    (void)state;
    /* message.timeout.ms = 0 (librdkafka: for ever) is mapped to a huge wait */
    assert_false(order_recon_may_cancel(0, 1800000000000LL, INT64_MAX / 4));
    assert_false(order_recon_may_cancel(0, 1800000000000LL, -1));
}

static void test_decide(void **state)
{
    (void)state;
    /* stored: confirmed whatever its age or the cutoff */
    assert_int_equal(order_recon_decide(1, 0, ORDER_RECON_NEVER, WAIT), ORDER_RECON_CONFIRM);
    /* not stored: cancelled only once old enough under the cutoff */
    assert_int_equal(order_recon_decide(0, 100000 - WAIT, 100000, WAIT), ORDER_RECON_CANCEL);
    assert_int_equal(order_recon_decide(0, 100000 - WAIT + 1, 100000, WAIT), ORDER_RECON_KEEP);
    assert_int_equal(order_recon_decide(0, 0, ORDER_RECON_NEVER, WAIT), ORDER_RECON_KEEP);
}

static void test_event_cutoff(void **state)
{
    (void)state;
    int64_t c[3] = {500, ORDER_RECON_NEVER, 300};
    assert_int_equal(order_recon_event_cutoff(c, 3, 0), 500);
    assert_int_equal(order_recon_event_cutoff(c, 3, 2), 300);
    /* a partition we cannot compute: every partition must have passed its mark */
    assert_int_equal(order_recon_event_cutoff(c, 3, -1), ORDER_RECON_NEVER);
    int64_t d[2] = {500, 300};
    assert_int_equal(order_recon_event_cutoff(d, 2, 7), 300);
    assert_int_equal(order_recon_event_cutoff(d, 0, -1), ORDER_RECON_NEVER);
}

static void test_pending_entries(void **state)
{
    (void)state;
    assert_true(order_recon_is_order_id("1"));
    assert_true(order_recon_is_order_id("12345678901234567890"));
    assert_false(order_recon_is_order_id("123456789012345678901")); /* 21 digits */
    assert_false(order_recon_is_order_id(""));
    assert_false(order_recon_is_order_id("12a"));
    assert_false(order_recon_is_order_id("-1"));
    char user[24];
    int64_t ts = 0;
    int claim = -1;
    assert_int_equal(order_recon_pending_parse("42:1700000000123", user, sizeof(user), &ts, &claim), 0);
    assert_string_equal(user, "42");
    assert_int_equal(ts, 1700000000123LL);
    assert_int_equal(claim, 0);
    /* a segmented event's claim (reserve.lua): released like an entry, flagged */
    assert_int_equal(order_recon_pending_parse("43:1700000000124:c", user, sizeof(user), &ts, &claim), 0);
    assert_string_equal(user, "43");
    assert_int_equal(ts, 1700000000124LL);
    assert_int_equal(claim, 1);
    /* several units (issue 31): ":q" after the time, a claim's before its ":c" */
    assert_int_equal(order_recon_pending_parse("44:1700000000125:3", user, sizeof(user), &ts, &claim), 0);
    assert_int_equal(claim, 0);
    assert_int_equal(ts, 1700000000125LL);
    assert_int_equal(order_recon_pending_parse("45:1700000000126:100:c", user, sizeof(user), &ts, &claim), 0);
    assert_string_equal(user, "45");
    assert_int_equal(claim, 1);
    const char *bad[] = {"42", ":5", "42:", "42:5x", "42:99999999999999999999", "42:5:", "42:5:cc",
                         "42:5:x", "42::c", "42:5:1", "42:5:0", "42:5:101", "42:5:3x", "42:5:3:",
                         "42:5:c:3",
                         "123456789012345678901234:5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(order_recon_pending_parse(bad[i], user, sizeof(user), &ts, NULL), -1);
}

static void test_msg_timeout(void **state)
{
    (void)state;
    assert_int_equal(order_recon_msg_timeout_ms(NULL, NULL), 10000);
    assert_int_equal(order_recon_msg_timeout_ms("2000", "9000"), 2000);
    assert_int_equal(order_recon_msg_timeout_ms(NULL, "9000"), 9000);
    assert_int_equal(order_recon_msg_timeout_ms("0", NULL), INT64_MAX / 4);
}

static void test_claims_and_id_array(void **state)
{
    (void)state;
    assert_true(order_recon_is_claim("42:5:c", 6));
    assert_false(order_recon_is_claim("42:5", 4));
    assert_false(order_recon_is_claim("c", 1));
    assert_false(order_recon_is_claim("", 0));
    /* the units a pending entry holds or claims (issue 31) */
    assert_int_equal(order_recon_pending_units("42:5"), 1);
    assert_int_equal(order_recon_pending_units("42:5:c"), 1);
    assert_int_equal(order_recon_pending_units("42:5:3"), 3);
    assert_int_equal(order_recon_pending_units("42:5:100:c"), 100);
    assert_int_equal(order_recon_pending_units("junk"), 1);
    const char *ids[] = {"12", "x1", "", "123456789012345678901", "34", "12345678901234567890"};
    char *a = order_recon_id_array(ids, 6);
    assert_non_null(a);
    assert_string_equal(a, "{12,34,12345678901234567890}"); /* only ids of ours */
    free(a);
    a = order_recon_id_array(NULL, 0);
    assert_string_equal(a, "{}");
    free(a);
    const char *worst[3] = {"99999999999999999999", "99999999999999999999", "99999999999999999999"};
    a = order_recon_id_array(worst, 3); /* the longest literal fits (ASan checks it) */
    assert_int_equal(strlen(a), 3 * 20 + 2 + 2);
    free(a);
}

static void test_segments(void **state)
{
    (void)state;
    assert_int_equal(order_recon_segments_k("3"), 3);
    assert_int_equal(order_recon_segments_k("64"), 64);
    assert_int_equal(order_recon_segments_k("65"), 1);
    assert_int_equal(order_recon_segments_k("1"), 1);
    assert_int_equal(order_recon_segments_k("0"), 1);
    assert_int_equal(order_recon_segments_k("-2"), 1);
    assert_int_equal(order_recon_segments_k(NULL), 1);
    /* 600 units over 3 segments, 300 sold; segment 2 lost: the others hold 187 and 3
     * pending units, 1 of them already created in PostgreSQL: 300 - 187 - 2 = 111 */
    assert_int_equal(order_recon_segment_stock(300, 187, 3, 1), 111);
    /* nothing pending, no sale meanwhile: exactly what it had */
    assert_int_equal(order_recon_segment_stock(300, 187, 0, 0), 113);
    /* the others hold more than stock_left says is left: never negative */
    assert_int_equal(order_recon_segment_stock(10, 20, 5, 0), 0);
    /* the buyers homed on a segment, in place and in order */
    const char *users[40];
    char buf[40][8];
    for (int i = 0; i < 40; i++) {
        snprintf(buf[i], sizeof(buf[i]), "%d", 1000 + i);
        users[i] = buf[i];
    }
    int total = 0;
    for (unsigned seg = 0; seg < 3; seg++) {
        const char *u[40];
        memcpy(u, users, sizeof(u));
        int n = order_recon_buyers_homed(u, 40, seg, 3);
        for (int i = 0; i < n; i++) {
            assert_int_equal(order_seg_home(strtoull(u[i], NULL, 10), 3), seg);
            assert_true(i == 0 || strcmp(u[i - 1], u[i]) < 0);
        }
        total += n;
    }
    assert_int_equal(total, 40); /* each user in exactly one segment */
    const char *one[1] = {"1000"};
    assert_int_equal(order_recon_buyers_homed(one, 1, 0, 1), 1); /* K = 1: all at home */
}

static void test_lost_carry(void **state)
{
    (void)state;
    order_recon_lost *prev = calloc(3, sizeof(*prev));
    prev[0] = (order_recon_lost){.id = 7, .seg = 0, .k = 1, .since_ms = 1000};
    prev[1] = (order_recon_lost){.id = 9, .seg = 1, .k = 3, .since_ms = 2000};
    prev[2] = (order_recon_lost){.id = 9, .seg = 2, .k = 3, .since_ms = 2500};
    assert_int_equal(order_recon_snap_add(&prev[2], "11"), 0);
    assert_int_equal(order_recon_snap_add(&prev[2], "12"), 0);
    prev[2].snap_ms = 2600;
    prev[2].snap_stock = 187;
    order_recon_lost l = {.id = 9, .seg = 2, .k = 3};
    assert_int_equal(order_recon_lost_carry(prev, 3, &l, 5000), 2500);
    /* the snapshot moved: prev's copy gives it up, so freeing prev leaves it alone */
    assert_int_equal(l.snap_ms, 2600);
    assert_int_equal(l.snap_stock, 187);
    assert_int_equal(l.nsnap, 2);
    assert_string_equal(l.snap_ids[1], "12");
    assert_null(prev[2].snap_ids);
    assert_int_equal(prev[2].nsnap, 0);
    order_recon_lost m = {.id = 9, .seg = 0, .k = 3}; /* another segment: new */
    assert_int_equal(order_recon_lost_carry(prev, 3, &m, 5000), 5000);
    assert_int_equal(m.snap_ms, 0);
    order_recon_lost n = {.id = 7, .seg = 0, .k = 1};
    assert_int_equal(order_recon_lost_carry(prev, 3, &n, 5000), 1000);
    assert_int_equal(order_recon_lost_carry(NULL, 0, &n, 6000), 6000);
    for (int i = 0; i < 200; i++) /* past the first capacity */
        assert_int_equal(order_recon_snap_add(&l, "13"), 0);
    assert_int_equal(l.nsnap, 202);
    order_recon_snap_drop(&l);
    assert_int_equal(l.nsnap, 0);
    assert_int_equal(l.snap_ms, 0);
    assert_null(l.snap_ids);
    order_recon_lost_free(prev, 3);
    order_recon_lost_free(NULL, 0);
}

/* Issue 22: the closed orders homed on a segment (its released set after a reload), and
 * those owed to another live segment (kept out of a lost segment's stock). */
static void test_closed_and_owed(void **state)
{
    (void)state;
    char ubuf[30][8], ibuf[30][8];
    const char *users[30], *ids[30];
    unsigned home[30];
    for (int i = 0; i < 30; i++) {
        snprintf(ubuf[i], sizeof(ubuf[i]), "%d", 5000 + i);
        snprintf(ibuf[i], sizeof(ibuf[i]), "%d", 900 + i);
        users[i] = ubuf[i];
        ids[i] = ibuf[i];
        home[i] = order_seg_home(5000 + (uint64_t)i, 3);
    }
    /* closed_homed keeps ids and users together */
    const char *ki[30], *ku[30];
    memcpy(ki, ids, sizeof(ki));
    memcpy(ku, users, sizeof(ku));
    int n1 = order_recon_closed_homed(ki, ku, 30, 1, 3), want1 = 0;
    for (int i = 0; i < 30; i++)
        want1 += home[i] == 1;
    assert_int_equal(n1, want1);
    for (int i = 0; i < n1; i++) {
        assert_int_equal(order_seg_home(strtoull(ku[i], NULL, 10), 3), 1);
        assert_int_equal(atoi(ki[i]) - 900, atoi(ku[i]) - 5000);
    }
    /* segment 0 lost; segment 1 was loaded at the snapshot and had released the first
     * of its closed orders; segment 2 was lost too (its own reload names its orders) */
    order_recon_lost l = {.id = 9, .seg = 0, .k = 3, .snap_present = 1u << 1};
    int first1 = -1, in1 = 0, in2 = 0;
    for (int i = 0; i < 30; i++) {
        if (home[i] == 1 && first1 < 0)
            first1 = i;
        in1 += home[i] == 1;
        in2 += home[i] == 2;
    }
    assert_true(first1 >= 0 && in1 > 1 && in2 > 0); /* the ids spread over the segments */
    assert_int_equal(order_recon_snap_add_released(&l, "zz-not-an-order"), 0);
    assert_int_equal(order_recon_snap_add_released(&l, ids[first1]), 0);
    order_recon_snap_sort_released(&l);
    assert_int_equal(order_recon_owed_elsewhere(ids, users, 30, &l), in1 - 1);
    /* segment 2 loaded too, nothing released there: all its orders owed as well */
    l.snap_present |= 1u << 2;
    assert_int_equal(order_recon_owed_elsewhere(ids, users, 30, &l), in1 - 1 + in2);
    /* K = 1: everything is home, nothing owed */
    order_recon_lost one = {.id = 9, .seg = 0, .k = 1, .snap_present = 1};
    assert_int_equal(order_recon_owed_elsewhere(ids, users, 30, &one), 0);
    order_recon_snap_drop(&l);
    assert_int_equal(l.nrel, 0);
    assert_int_equal(l.snap_present, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drained_partition),
        cmocka_unit_test(test_lagging_group_uses_the_passed_mark),
        cmocka_unit_test(test_never_with_unbounded_timeout),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_event_cutoff),
        cmocka_unit_test(test_pending_entries),
        cmocka_unit_test(test_msg_timeout),
        cmocka_unit_test(test_claims_and_id_array),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_lost_carry),
        cmocka_unit_test(test_closed_and_owed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
