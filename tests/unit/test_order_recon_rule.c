/* Unit tests of order_recon_rule: when the reconciler may give a reservation back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
    assert_int_equal(order_recon_pending_parse("42:1700000000123", user, sizeof(user), &ts), 0);
    assert_string_equal(user, "42");
    assert_int_equal(ts, 1700000000123LL);
    const char *bad[] = {"42", ":5", "42:", "42:5x", "42:99999999999999999999",
                         "123456789012345678901234:5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(order_recon_pending_parse(bad[i], user, sizeof(user), &ts), -1);
}

static void test_msg_timeout_and_lost(void **state)
{
    (void)state;
    assert_int_equal(order_recon_msg_timeout_ms(NULL, NULL), 10000);
    assert_int_equal(order_recon_msg_timeout_ms("2000", "9000"), 2000);
    assert_int_equal(order_recon_msg_timeout_ms(NULL, "9000"), 9000);
    assert_int_equal(order_recon_msg_timeout_ms("0", NULL), INT64_MAX / 4);
    order_recon_lost prev[2] = {{7, 1000}, {9, 2000}};
    assert_int_equal(order_recon_lost_since(prev, 2, 9, 5000), 2000);
    assert_int_equal(order_recon_lost_since(prev, 2, 8, 5000), 5000);
    assert_int_equal(order_recon_lost_since(NULL, 0, 7, 5000), 5000);
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
        cmocka_unit_test(test_msg_timeout_and_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
