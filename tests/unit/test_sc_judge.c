/* Unit tests of seckill-check's pure parts: accepted.txt, the match against the rows,
 * the verdict lines, and the dead-letter matcher. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sc_accepted.h"
#include "sc_dlq_match.h"
#include "sc_judge.h"

static sc_ids ids_from(const char *text)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    sc_ids ids;
    assert_int_equal(sc_ids_read(f, &ids), 0);
    fclose(f);
    return ids;
}

static void test_accepted_file(void **state)
{
    sc_ids ids = ids_from("30\n10\n\n20\n10\n  40 \r\nabc\n18446744073709551616\n");
    assert_int_equal(ids.n, 4);
    assert_int_equal(ids.repeated, 1);
    assert_int_equal(ids.bad_lines, 2);
    assert_true(ids.v[0] == 10 && ids.v[3] == 40);
    assert_true(sc_ids_contains(&ids, 20));
    assert_false(sc_ids_contains(&ids, 25));
    sc_ids_free(&ids);
    char err[256];
    assert_int_equal(sc_ids_load("/nonexistent/accepted.txt", &ids, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/accepted.txt"));
}

/* A healthy sale: 3 stock, 3 accepted, all created, Redis drained. */
static sc_figures healthy(sc_ids *acc, sc_row *rows)
{
    sc_figures f;
    memset(&f, 0, sizeof(f));
    f.event_id = 7;
    f.event_found = 1;
    f.stock_total = 3;
    f.stock_left = 0;
    f.accepted = acc->n;
    assert_int_equal(sc_match(acc, rows, 3, &f), 0);
    f.redis_ok = 1;
    f.stock_present = 1;
    f.redis_stock = 0;
    f.pending = 0;
    f.buyers = 3;
    f.dlq_checked = 1;
    f.drained = 1;
    snprintf(f.dlq_topic, sizeof(f.dlq_topic), "seckill.orders.dlq");
    return f;
}

static int judge(const sc_figures *f, char **text)
{
    size_t len;
    FILE *out = open_memstream(text, &len);
    int bad = sc_judge(f, out);
    fclose(out);
    return bad;
}

static void test_all_hold(void **state)
{
    sc_ids acc = ids_from("3\n1\n2\n");
    sc_row rows[3] = {{2, 20, 1, 0, 0, 1}, {1, 10, 1, 0, 0, 1}, {3, 30, 1, 0, 0, 1}};
    sc_figures f = healthy(&acc, rows);
    assert_int_equal(f.created, 3);
    assert_int_equal(f.missing, 0);
    char *text;
    assert_int_equal(judge(&f, &text), 0);
    assert_non_null(strstr(text, "ok   lost           0 "));
    assert_non_null(strstr(text, "ok   oversold       0 "));
    assert_non_null(strstr(text, "ok   duplicates     0 "));
    assert_non_null(strstr(text, "ok   dlq            0 "));
    assert_non_null(strstr(text, "all guarantees hold for event 7"));
    free(text);
    sc_ids_free(&acc);
}

/* Issue 22: paid orders hold their unit, cancelled and expired ones gave it back (and
 * may be resold, one user holding again after a rebuy); every release must be recorded
 * in PostgreSQL and in the gate's released set exactly once. */
static void test_after_the_202(void **state)
{
    (void)state;
    char *text;
    /* 3 stock: 1 paid, 2 closed and released, resold to 2 new orders (one by user 20 again) */
    sc_ids acc = ids_from("1\n2\n3\n4\n5\n");
    sc_row rows[5] = {{1, 10, 1, 0, 0, 1}, {2, 20, 0, 1, 1, 1}, {3, 30, 0, 1, 1, 1},
                      {4, 40, 1, 0, 0, 1}, {5, 20, 1, 0, 0, 1}};
    sc_figures f;
    memset(&f, 0, sizeof(f));
    f.event_id = 7;
    f.event_found = 1;
    f.stock_total = 3;
    f.accepted = acc.n;
    assert_int_equal(sc_match(&acc, rows, 5, &f), 0);
    assert_int_equal(f.created, 3);
    assert_int_equal(f.closed, 2);
    assert_int_equal(f.not_created, 0);
    assert_int_equal(f.dup_users, 0);
    f.redis_ok = 1;
    f.stock_present = 1;
    f.buyers = 4; /* 10, 20, 30 (kept after its cancel), 40 */
    f.redis_released = 2;
    f.dlq_checked = 1;
    f.drained = 1;
    assert_int_equal(judge(&f, &text), 0);
    assert_non_null(strstr(text, "ok   releases"));
    free(text);
    /* a release given twice in the gate, and one not recorded in PostgreSQL */
    f.redis_released = 3;
    assert_int_equal(judge(&f, &text), 1);
    assert_non_null(strstr(text, "FAIL releases"));
    free(text);
    rows[1].released = 0;
    assert_int_equal(sc_match(&acc, rows, 5, &f), 0);
    f.redis_released = 2;
    assert_int_equal(judge(&f, &text), 1);
    assert_non_null(strstr(text, "FAIL releases       1 "));
    free(text);
    /* two held units of one user at once is a duplicate */
    rows[1].closed = 0;
    rows[1].created = 1;
    assert_int_equal(sc_match(&acc, rows, 5, &f), 0);
    assert_int_equal(f.dup_users, 1);
    sc_ids_free(&acc);
}

static void test_each_violation_is_named(void **state)
{
    char *text;
    /* lost: an accepted id with no row, and one row rejected */
    sc_ids acc = ids_from("1\n2\n3\n4\n");
    sc_row rows[3] = {{1, 10, 1, 0, 0, 1}, {2, 20, 0, 0, 0, 1}, {3, 30, 1, 0, 0, 1}};
    sc_figures f = healthy(&acc, rows);
    f.accepted = acc.n;
    assert_int_equal(f.missing, 1);
    assert_int_equal(f.not_created, 1);
    f.stock_left = 1; /* 3 - 2 created */
    f.redis_stock = 1;
    f.buyers = 2;
    assert_int_equal(judge(&f, &text), 1);
    assert_non_null(strstr(text, "FAIL lost           2 "));
    assert_non_null(strstr(text, "1 guarantee(s) violated"));
    free(text);
    sc_ids_free(&acc);

    /* oversold + duplicate user + stock_left off + leaked stock + dead letters */
    acc = ids_from("1\n2\n3\n");
    sc_row rows2[3] = {{1, 10, 1, 0, 0, 1}, {2, 10, 1, 0, 0, 1}, {3, 30, 1, 0, 0, 1}};
    f = healthy(&acc, rows2);
    assert_int_equal(f.dup_users, 1);
    f.stock_total = 2;
    f.stock_left = 0;
    f.redis_stock = 1; /* 1 + 0 + 3 != 2 */
    f.dlq = 4;
    int bad = judge(&f, &text);
    assert_int_equal(bad, 5);
    assert_non_null(strstr(text, "FAIL oversold       1 "));
    assert_non_null(strstr(text, "FAIL duplicates     1 "));
    assert_non_null(strstr(text, "FAIL stock_left     1 "));
    assert_non_null(strstr(text, "FAIL redis_balance  2 "));
    assert_non_null(strstr(text, "FAIL dlq            4 "));
    free(text);

    /* Redis unreachable and dlq unreadable fail rather than pass silently */
    sc_row rows3[3] = {{1, 10, 1, 0, 0, 1}, {2, 20, 1, 0, 0, 1}, {3, 30, 1, 0, 0, 1}};
    f = healthy(&acc, rows3);
    f.redis_ok = 0;
    f.dlq_checked = -1;
    bad = judge(&f, &text);
    assert_int_equal(bad, 2);
    assert_non_null(strstr(text, "Redis unreachable"));
    free(text);
    sc_ids_free(&acc);
}

static void test_extra_rows_are_reported_not_failed(void **state)
{
    /* a created row whose 202 never reached the bench is not a lost order */
    sc_ids acc = ids_from("1\n2\n");
    sc_row rows[3] = {{1, 10, 1, 0, 0, 1}, {2, 20, 1, 0, 0, 1}, {3, 30, 1, 0, 0, 1}};
    sc_figures f = healthy(&acc, rows);
    assert_int_equal(f.extra_created, 1);
    assert_int_equal(f.created, 3);
    char *text;
    assert_int_equal(judge(&f, &text), 0);
    assert_non_null(strstr(text, "1 created rows without a 202"));
    free(text);
    sc_ids_free(&acc);
}

static void test_dlq_match(void **state)
{
    const char *msg = "{\"v\":1,\"order_id\":\"5\",\"event_id\":\"123\",\"user_id\":\"9\",\"ts_ms\":1}";
    assert_true(sc_dlq_matches(NULL, 0, msg, strlen(msg), "123"));
    assert_false(sc_dlq_matches(NULL, 0, msg, strlen(msg), "12"));
    assert_false(sc_dlq_matches(NULL, 0, msg, strlen(msg), "1234"));
    assert_true(sc_dlq_matches("123", 3, "garbage", 7, "123"));
    assert_false(sc_dlq_matches("1234", 4, "garbage", 7, "123"));
    const char *num = "{\"event_id\" : 123}";
    assert_true(sc_dlq_matches(NULL, 0, num, strlen(num), "123"));
    const char *num2 = "{\"event_id\":1234}";
    assert_false(sc_dlq_matches(NULL, 0, num2, strlen(num2), "123"));
    const char *val = "{\"note\":\"event_id\",\"x\":\"123\"}";
    assert_false(sc_dlq_matches(NULL, 0, val, strlen(val), "123"));
    assert_false(sc_dlq_matches(NULL, 0, NULL, 0, "123"));
}

/* Several units (issue 31): held stock is counted in units, and a user may hold up to
 * per_user_limit of them over several orders. */
static void test_units(void **state)
{
    (void)state;
    sc_ids acc = ids_from("1\n2\n3\n");
    /* user 10: 2 + 1 units, user 30: 3 units; stock 6, limit 3 */
    sc_row rows[3] = {{1, 10, 1, 0, 0, 2}, {2, 10, 1, 0, 0, 1}, {3, 30, 1, 0, 0, 3}};
    sc_figures f;
    memset(&f, 0, sizeof(f));
    f.event_id = 7;
    f.event_found = 1;
    f.stock_total = 6;
    f.per_user_limit = 3;
    f.accepted = acc.n;
    assert_int_equal(sc_match(&acc, rows, 3, &f), 0);
    assert_int_equal(f.created, 6);
    assert_int_equal(f.dup_users, 0);
    /* the same rows under a limit of 2: user 10 (3) and user 30 (3) are over it */
    f.per_user_limit = 2;
    assert_int_equal(sc_match(&acc, rows, 3, &f), 0);
    assert_int_equal(f.dup_users, 2);
    /* 7 units held of 6: oversold by one unit, though there are 3 orders */
    rows[2].quantity = 4;
    f.per_user_limit = 4;
    assert_int_equal(sc_match(&acc, rows, 3, &f), 0);
    assert_int_equal(f.created, 7);
    char *text;
    assert_true(judge(&f, &text) > 0);
    assert_non_null(strstr(text, "FAIL oversold       1 "));
    free(text);
    sc_ids_free(&acc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted_file),
        cmocka_unit_test(test_all_hold),
        cmocka_unit_test(test_each_violation_is_named),
        cmocka_unit_test(test_extra_rows_are_reported_not_failed),
        cmocka_unit_test(test_dlq_match),
        cmocka_unit_test(test_after_the_202),
        cmocka_unit_test(test_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
