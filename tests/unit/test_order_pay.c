/* Unit tests of issue 22's pure parts: order_pay_decide (the state machine after the
 * 202), the pay body, the index's status letters, and the order body with pay_by. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "order_body.h"
#include "order_msg.h"
#include "order_pay.h"
#include "order_reply.h"

static void test_decide(void **state)
{
    (void)state;
    static const struct {
        order_pay_op op;
        const char *status, *stored_ref;
        int overdue;
        uint64_t actor;
        int admin;
        const char *ref;
        order_pay_answer answer;
        const char *new_status, *status_after;
    } cases[] = {
        /* pay: created -> paid; repeat with the same ref 200; another ref 409 */
        {ORDER_PAY_OP_PAY, "created", NULL, 0, 7, 0, "r1", ORDER_PAY_OK, "paid", "paid"},
        {ORDER_PAY_OP_PAY, "paid", "r1", 0, 7, 0, "r1", ORDER_PAY_OK, NULL, "paid"},
        {ORDER_PAY_OP_PAY, "paid", "r1", 0, 7, 0, "r2", ORDER_PAY_ALREADY_PAID, NULL, "paid"},
        /* a late payment: the window passed, expired here, 409 closed */
        {ORDER_PAY_OP_PAY, "created", NULL, 1, 7, 0, "r1", ORDER_PAY_CLOSED, "expired", "expired"},
        {ORDER_PAY_OP_PAY, "cancelled", NULL, 0, 7, 0, "r1", ORDER_PAY_CLOSED, NULL, "cancelled"},
        {ORDER_PAY_OP_PAY, "expired", NULL, 1, 7, 0, "r1", ORDER_PAY_CLOSED, NULL, "expired"},
        {ORDER_PAY_OP_PAY, "rejected", NULL, 0, 7, 0, "r1", ORDER_PAY_CLOSED, NULL, "rejected"},
        /* cancel: created -> cancelled, twice 200, paid 409, expired 409 */
        {ORDER_PAY_OP_CANCEL, "created", NULL, 0, 7, 0, NULL, ORDER_PAY_OK, "cancelled", "cancelled"},
        {ORDER_PAY_OP_CANCEL, "cancelled", NULL, 0, 7, 0, NULL, ORDER_PAY_OK, NULL, "cancelled"},
        {ORDER_PAY_OP_CANCEL, "paid", "r1", 0, 7, 0, NULL, ORDER_PAY_ALREADY_PAID, NULL, "paid"},
        {ORDER_PAY_OP_CANCEL, "expired", NULL, 1, 7, 0, NULL, ORDER_PAY_CLOSED, NULL, "expired"},
        {ORDER_PAY_OP_CANCEL, "created", NULL, 1, 7, 0, NULL, ORDER_PAY_CLOSED, "expired", "expired"},
        /* someone else: 403 and no transition; an admin may */
        {ORDER_PAY_OP_PAY, "created", NULL, 0, 8, 0, "r1", ORDER_PAY_FORBIDDEN, NULL, "created"},
        {ORDER_PAY_OP_CANCEL, "created", NULL, 0, 8, 1, NULL, ORDER_PAY_OK, "cancelled", "cancelled"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        order_pay_in in = {cases[i].op, cases[i].status, cases[i].stored_ref, cases[i].overdue,
                           7, cases[i].actor, cases[i].admin, cases[i].ref};
        order_pay_out out;
        order_pay_decide(&in, &out);
        if (out.answer != cases[i].answer ||
            (cases[i].new_status ? !out.new_status || strcmp(out.new_status, cases[i].new_status)
                                 : out.new_status != NULL) ||
            strcmp(out.status, cases[i].status_after) != 0)
            fail_msg("case %zu: answer %d new %s status %s", i, out.answer,
                     out.new_status ? out.new_status : "-", out.status);
    }
    assert_true(order_pay_releases("cancelled"));
    assert_true(order_pay_releases("expired"));
    assert_false(order_pay_releases("paid"));
    assert_false(order_pay_releases(NULL));
}

static void test_pay_body(void **state)
{
    (void)state;
    char ref[ORDER_PAYMENT_REF_MAX + 1], err[160];
    assert_int_equal(order_body_parse_pay("{\"payment_ref\":\"abc-1\"}", 23, ref, err, sizeof(err)), 0);
    assert_string_equal(ref, "abc-1");
    const char *bad[] = {"", "{}", "[]", "null", "{\"payment_ref\":\"\"}", "{\"payment_ref\":1}",
                         "{\"payment_ref\":\"a\\u0000b\"}", "{\"payment_ref\":\"\\n\"}",
                         "{\"payment_ref\":\"a\",\"payment_ref\":\"b\"}", "{\"payment_ref\":\"a\""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (order_body_parse_pay(bad[i], strlen(bad[i]), ref, err, sizeof(err)) != -1 || !err[0])
            fail_msg("accepted %s", bad[i]);
    char big[200];
    int n = snprintf(big, sizeof(big), "{\"payment_ref\":\"%0129d\"}", 0);
    assert_int_equal(order_body_parse_pay(big, (size_t)n, ref, err, sizeof(err)), -1);
    n = snprintf(big, sizeof(big), "{\"payment_ref\":\"%0128d\"}", 0);
    assert_int_equal(order_body_parse_pay(big, (size_t)n, ref, err, sizeof(err)), 0);
}

static void test_event_settings(void **state)
{
    (void)state;
    order_event_spec spec;
    char err[160];
    const char *base = "{\"name\":\"n\",\"stock\":1,\"starts_at\":\"2030-01-01T00:00:00Z\","
                       "\"ends_at\":\"2030-01-02T00:00:00Z\"";
    char b[400];
    int n = snprintf(b, sizeof(b), "%s}", base);
    assert_int_equal(order_body_parse_event(b, (size_t)n, &spec, err, sizeof(err)), 0);
    assert_int_equal(spec.payment_window_s, 900);
    assert_int_equal(spec.rebuy_after_release, 0);
    n = snprintf(b, sizeof(b), "%s,\"payment_window_s\":3,\"rebuy_after_release\":true}", base);
    assert_int_equal(order_body_parse_event(b, (size_t)n, &spec, err, sizeof(err)), 0);
    assert_int_equal(spec.payment_window_s, 3);
    assert_int_equal(spec.rebuy_after_release, 1);
    const char *bad[] = {",\"payment_window_s\":0}", ",\"payment_window_s\":\"9\"}",
                         ",\"payment_window_s\":604801}", ",\"rebuy_after_release\":1}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        n = snprintf(b, sizeof(b), "%s%s", base, bad[i]);
        if (order_body_parse_event(b, (size_t)n, &spec, err, sizeof(err)) != -1)
            fail_msg("accepted %s", bad[i]);
    }
}

static void test_index_status(void **state)
{
    (void)state;
    const char *names[] = {"created", "rejected", "paid", "cancelled", "expired"};
    for (size_t i = 0; i < 5; i++) {
        char l = order_index_status_letter(names[i]);
        assert_true(l != 0);
        assert_string_equal(order_index_status_name(l), names[i]);
        /* the letter round-trips through an index value */
        order_index_entry e = {11, 22, 0, l, 0}, d;
        char v[ORDER_INDEX_VALUE_MAX];
        size_t n = order_index_encode(&e, v, sizeof(v));
        assert_int_equal(order_index_decode(v, n, &d), 0);
        assert_int_equal(d.outcome, l);
        assert_int_equal(d.event_id, 11);
    }
    assert_null(order_index_status_name('d'));
    assert_null(order_index_status_name(0));
    assert_int_equal(order_index_status_letter("queued"), 0);
    /* the front's own entries keep their meaning */
    order_index_entry d;
    assert_int_equal(order_index_decode("1:2:a", 5, &d), 0);
    assert_int_equal(d.outcome, 0);
    assert_int_equal(d.acked, 1);
    assert_int_equal(order_index_decode("1:2:p", 5, &d), 0);
    assert_int_equal(d.outcome, 0);
    assert_int_equal(d.acked, 0);
    assert_int_equal(order_index_decode("1:2:Q", 5, &d), -1);
}

static void test_reply_pay_by(void **state)
{
    (void)state;
    char b[320];
    size_t n = order_reply_order_pay_by(b, sizeof(b), 1, 2, 3, "created", 1893456000000LL);
    assert_string_equal(b, "{\"order_id\":\"1\",\"event_id\":\"2\",\"user_id\":\"3\",\"status\":"
                           "\"created\",\"pay_by\":\"2030-01-01T00:00:00.000Z\"}");
    assert_int_equal(n, strlen(b));
    order_reply_order_pay_by(b, sizeof(b), 1, 2, 3, "expired", 1893456000000LL);
    assert_null(strstr(b, "pay_by"));
    order_reply_order_pay_by(b, sizeof(b), 1, 2, 3, "paid", 0);
    assert_null(strstr(b, "pay_by"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_pay_body),
        cmocka_unit_test(test_event_settings),
        cmocka_unit_test(test_index_status),
        cmocka_unit_test(test_reply_pay_by),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
