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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drained_partition),
        cmocka_unit_test(test_lagging_group_uses_the_passed_mark),
        cmocka_unit_test(test_never_with_unbounded_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
