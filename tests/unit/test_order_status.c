/* Unit tests of order_status: every status's spellings, and the transitions allowed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "order_msg.h"
#include "order_status.h"

static void test_names_round_trip(void **state)
{
    (void)state;
    const char *names[] = {"queued", "created", "rejected", "paid", "cancelled", "expired"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        order_status s = order_status_parse(names[i]);
        assert_int_not_equal(s, ORDER_STATUS_UNKNOWN);
        assert_string_equal(order_status_name(s), names[i]);
    }
    const char *bad[] = {"", "Created", "created ", "released", "pending", "unknown"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(order_status_parse(bad[i]), ORDER_STATUS_UNKNOWN);
    assert_int_equal(order_status_parse(NULL), ORDER_STATUS_UNKNOWN);
    assert_null(order_status_name(ORDER_STATUS_UNKNOWN));
    assert_null(order_status_name(ORDER_STATUS__COUNT));
    assert_null(order_status_name((order_status)-1));
}

/* The index letters are order_msg.h's wire format: they must not change. */
static void test_letters(void **state)
{
    (void)state;
    const struct {
        order_status s;
        char l;
    } want[] = {{ORDER_STATUS_CREATED, 'c'}, {ORDER_STATUS_REJECTED, 'r'}, {ORDER_STATUS_PAID, 'P'},
                {ORDER_STATUS_CANCELLED, 'X'}, {ORDER_STATUS_EXPIRED, 'E'}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(order_status_letter(want[i].s), want[i].l);
        assert_int_equal(order_status_of_letter(want[i].l), want[i].s);
        assert_string_equal(order_index_status_name(want[i].l), order_status_name(want[i].s));
        assert_int_equal(order_index_status_letter(order_status_name(want[i].s)), want[i].l);
    }
    assert_int_equal(order_status_letter(ORDER_STATUS_QUEUED), 0);
    assert_int_equal(order_status_letter(ORDER_STATUS_UNKNOWN), 0);
    const char others[] = {'a', 'p', 'd', 0, 'C', '?'};
    for (size_t i = 0; i < sizeof(others); i++)
        assert_int_equal(order_status_of_letter(others[i]), ORDER_STATUS_UNKNOWN);
}

static const char *name_of(int s)
{
    const char *n = order_status_name((order_status)s);
    return n ? n : "?";
}

static void test_transitions(void **state)
{
    (void)state;
    /* The whole table: from x to (row), 1 where the diagram of order_status.h has an arrow. */
    static const int want[ORDER_STATUS__COUNT][ORDER_STATUS__COUNT] = {
        /*                     unk q  c  r  P  X  E */
        [ORDER_STATUS_QUEUED] = {0, 0, 1, 1, 0, 0, 0},
        [ORDER_STATUS_CREATED] = {0, 0, 0, 1, 1, 1, 1},
    };
    for (int f = 0; f < ORDER_STATUS__COUNT; f++)
        for (int t = 0; t < ORDER_STATUS__COUNT; t++)
            if (order_status_transition_allowed((order_status)f, (order_status)t) != want[f][t])
                fail_msg("%s -> %s", name_of(f), name_of(t));
    assert_false(order_status_transition_allowed(ORDER_STATUS__COUNT, ORDER_STATUS_PAID));
    assert_false(order_status_transition_allowed(ORDER_STATUS_CREATED, ORDER_STATUS__COUNT));

    assert_false(order_status_is_final(ORDER_STATUS_QUEUED));
    assert_false(order_status_is_final(ORDER_STATUS_CREATED));
    assert_false(order_status_is_final(ORDER_STATUS_UNKNOWN));
    for (order_status s = ORDER_STATUS_REJECTED; s <= ORDER_STATUS_EXPIRED; s++)
        assert_true(order_status_is_final(s));

    for (int s = 0; s < ORDER_STATUS__COUNT; s++)
        assert_int_equal(order_status_releases((order_status)s),
                         s == ORDER_STATUS_CANCELLED || s == ORDER_STATUS_EXPIRED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_letters),
        cmocka_unit_test(test_transitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
