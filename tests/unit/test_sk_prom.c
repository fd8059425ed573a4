/* Unit tests of sk_prom (common/): the Prometheus text writer and its histogram, checked
 * against whole expected texts, byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sk_prom.h"

/* Closes t and compares the whole text with want. */
static void assert_text(sk_prom_text *t, const char *want)
{
    size_t len = 0;
    char *got = sk_prom_text_close(t, &len);
    assert_non_null(got);
    assert_int_equal(len, strlen(got));
    assert_string_equal(got, want);
    free(got);
}

static void test_counter_gauge(void **state)
{
    (void)state;
    sk_prom_text t;
    assert_int_equal(sk_prom_text_open(&t), 0);
    sk_prom_counter(t.f, "a_total", "Things done.", 18446744073709551615ull);
    sk_prom_gauge(t.f, "b", "Signed.", -3);
    sk_prom_gauge_fixed(t.f, "c_seconds", "Fixed point.", 1.2345, 3);
    assert_text(&t, "# HELP a_total Things done.\n# TYPE a_total counter\n"
                    "a_total 18446744073709551615\n"
                    "# HELP b Signed.\n# TYPE b gauge\nb -3\n"
                    "# HELP c_seconds Fixed point.\n# TYPE c_seconds gauge\nc_seconds 1.234\n");
}

static void test_labels_escaped(void **state)
{
    (void)state;
    sk_prom_text t;
    assert_int_equal(sk_prom_text_open(&t), 0);
    /* HELP escapes backslash and newline only; a label value also the double quote */
    sk_prom_head(t.f, "x_total", "counter", "a \"quoted\" \\ back\nslash");
    sk_prom_label l[2] = {{"route", "a\"b\\c\nd"}, {"status", "200"}};
    sk_prom_sample_u64(t.f, "x_total", l, 2, 7);
    sk_prom_sample_i64(t.f, "x_total", l + 1, 1, -1);
    sk_prom_sample_fixed(t.f, "x_total", NULL, 0, 0.5, 6);
    assert_text(&t, "# HELP x_total a \"quoted\" \\\\ back\\nslash\n# TYPE x_total counter\n"
                    "x_total{route=\"a\\\"b\\\\c\\nd\",status=\"200\"} 7\n"
                    "x_total{status=\"200\"} -1\n"
                    "x_total 0.500000\n");
}

static const double le_s[] = {0.00025, 0.001, 1};
static const sk_prom_bounds bounds = {le_s, 3};

static void test_histogram(void **state)
{
    (void)state;
    sk_prom_hist h;
    memset(&h, 0, sizeof(h));
    /* whole microseconds on the bounds land in the bucket of that bound */
    sk_prom_hist_observe_micro(&h, &bounds, 250);
    sk_prom_hist_observe_micro(&h, &bounds, 251);
    sk_prom_hist_observe_micro(&h, &bounds, 1000);
    sk_prom_hist_observe_micro(&h, &bounds, -5); /* a clock step: bucket 0, adds 0 */
    sk_prom_hist_observe_micro(&h, &bounds, 2000000);
    sk_prom_hist_observe(&h, &bounds, 0.5);
    sk_prom_text t;
    assert_int_equal(sk_prom_text_open(&t), 0);
    sk_prom_label l = {"stage", "reserve"};
    sk_prom_hist_write(t.f, "s_seconds", &l, 1, &h, &bounds);
    assert_text(&t, "s_seconds_bucket{stage=\"reserve\",le=\"0.00025\"} 2\n"
                    "s_seconds_bucket{stage=\"reserve\",le=\"0.001\"} 4\n"
                    "s_seconds_bucket{stage=\"reserve\",le=\"1\"} 5\n"
                    "s_seconds_bucket{stage=\"reserve\",le=\"+Inf\"} 6\n"
                    "s_seconds_sum{stage=\"reserve\"} 2.501501\n"
                    "s_seconds_count{stage=\"reserve\"} 6\n");
}

static void test_histogram_unlabelled(void **state)
{
    (void)state;
    static const double le[] = {1, 10, 50000};
    const sk_prom_bounds b = {le, 3};
    sk_prom_hist h;
    memset(&h, 0, sizeof(h));
    assert_int_equal(sk_prom_bucket(&b, 1), 0);
    assert_int_equal(sk_prom_bucket(&b, 1.5), 1);
    assert_int_equal(sk_prom_bucket(&b, 50001), 3);
    sk_prom_hist_observe(&h, &b, 3);
    sk_prom_hist_observe(&h, &b, 70000);
    sk_prom_text t;
    assert_int_equal(sk_prom_text_open(&t), 0);
    sk_prom_head(t.f, "batch", "histogram", "Per batch.");
    sk_prom_hist_write(t.f, "batch", NULL, 0, &h, &b);
    assert_text(&t, "# HELP batch Per batch.\n# TYPE batch histogram\n"
                    "batch_bucket{le=\"1\"} 0\nbatch_bucket{le=\"10\"} 1\n"
                    "batch_bucket{le=\"50000\"} 1\nbatch_bucket{le=\"+Inf\"} 2\n"
                    "batch_sum 70003.000000\nbatch_count 2\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_gauge),
        cmocka_unit_test(test_labels_escaped),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_histogram_unlabelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
