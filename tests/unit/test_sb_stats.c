/* Unit tests of sb_stats: outcomes, merge, peaks, the PostgreSQL join, timeline.csv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sb_stats.h"

static void test_outcomes_and_merge(void **state)
{
    sb_stats a, b, m;
    sb_stats_init(&a);
    sb_stats_init(&b);
    sb_stats_init(&m);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(sb_stats_sent(&a, 50), 0);
        assert_int_equal(sb_stats_answer(&a, 60, 202, "", 1000), 0);
        assert_int_equal(sb_stats_accept(&a, 100 + i), 0);
    }
    for (int i = 0; i < 30; i++) {
        assert_int_equal(sb_stats_sent(&b, 150), 0);
        assert_int_equal(sb_stats_answer(&b, 250, 409, i % 3 ? "sold_out" : "duplicate", 2000), 0);
    }
    assert_int_equal(sb_stats_answer(&b, 250, 0, "io", 0), 0);
    assert_int_equal(sb_stats_merge(&m, &a), 0);
    assert_int_equal(sb_stats_merge(&m, &b), 0);
    assert_int_equal(m.sent, 40);
    assert_int_equal(m.answered, 41);
    assert_int_equal(m.naccepted, 10);
    assert_int_equal(sb_stats_count_status(&m, 409), 30);
    assert_int_equal(sb_stats_count_status(&m, 202), 10);
    assert_int_equal(sb_stats_count_status(&m, 0), 1);
    assert_int_equal(m.lat.count, 40); /* the io failure has no latency */
    assert_int_equal(m.ntl, 3);
    assert_int_equal(m.tl[0].ok202, 10);
    assert_int_equal(m.tl[2].r409, 30);
    assert_int_equal(m.tl[2].other, 1);
    assert_int_equal(m.last_answer_ms, 250);
    /* 10 answers in one 100 ms bucket = 100/s; 30 in another = 300/s */
    assert_true(sb_stats_peak_rate(&m, 1) == 100.0);
    assert_true(sb_stats_peak_rate(&m, 2) == 300.0);
    assert_true(sb_stats_peak_rate(&m, 0) == 300.0);
    sb_stats_free(&a);
    sb_stats_free(&b);
    sb_stats_free(&m);
}

static void test_db_join_and_timeline(void **state)
{
    sb_db_sample v[] = {{0, 0}, {100, 0}, {200, 50}, {300, 150}, {400, 150}, {600, 160}};
    size_t n = sizeof(v) / sizeof(v[0]);
    assert_int_equal(sb_db_rows_at(v, 0, 100), -1);
    assert_int_equal(sb_db_rows_at(v, n, 250), 50);
    assert_int_equal(sb_db_rows_at(v, n, 300), 150);
    assert_int_equal(sb_db_rows_at(v, n, 10000), 160);
    /* best pair: 50 -> 150 rows in 100 ms */
    assert_true(sb_db_peak_rate(v, n) == 1000.0);

    sb_stats s;
    sb_stats_init(&s);
    sb_stats_sent(&s, 10);
    sb_stats_answer(&s, 20, 202, "", 1500);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(sb_stats_write_timeline(f, &s, v, n), 0);
    fclose(f);
    /* header + buckets until the last sample (600 ms -> 7 buckets) */
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    assert_int_equal(lines, 1 + 7);
    assert_non_null(strstr(buf, "\n0.1,1,1,0,0,0,0,0,0,1.5"));
    assert_non_null(strstr(buf, "\n0.3,0,0,0,0,0,0,150,1000,,,,,\n"));
    free(buf);
    sb_stats_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcomes_and_merge),
        cmocka_unit_test(test_db_join_and_timeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
