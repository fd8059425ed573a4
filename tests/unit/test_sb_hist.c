/* Unit tests of sb_hist (latency histogram) and sb_plan (users and base URLs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sb_hist.h"
#include "sb_plan.h"

static void test_bucket_bounds(void **state)
{
    /* every value lies at or under its bucket's upper edge, and above the previous one's */
    for (uint64_t v = 0; v < 200000; v += (v < 100 ? 1 : 37)) {
        int b = sb_hist_bucket(v);
        assert_true(v <= sb_hist_bucket_upper(b));
        if (b > 0)
            assert_true(v > sb_hist_bucket_upper(b - 1));
    }
    assert_int_equal(sb_hist_bucket(UINT64_MAX), SB_HIST_BUCKETS - 1);
}

static void test_quantiles_within_precision(void **state)
{
    sb_hist *h = calloc(1, sizeof(*h));
    /* 1..100000 us, once each: the true q-quantile is q * 100000 */
    for (uint64_t v = 1; v <= 100000; v++)
        sb_hist_record(h, v);
    double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (int i = 0; i < 4; i++) {
        double truth = qs[i] * 100000, got = (double)sb_hist_quantile(h, qs[i]);
        assert_true(got >= truth);
        assert_true(got <= truth * (1 + 1.0 / SB_HIST_SUB) + 1);
    }
    assert_int_equal(sb_hist_quantile(h, 1.0), 100000);
    assert_int_equal(h->max, 100000);
    sb_hist *g = calloc(1, sizeof(*g));
    assert_int_equal(sb_hist_quantile(g, 0.5), 0);
    sb_hist_record(g, 5000000);
    sb_hist_merge(g, h);
    assert_int_equal(g->count, 100001);
    assert_int_equal(g->max, 5000000);
    assert_int_equal(sb_hist_quantile(g, 1.0), 5000000);
    free(g);
    free(h);
}

static void test_plan_rounds_are_permutations(void **state)
{
    uint64_t sizes[] = {1, 2, 7, 1000, 5000, 100000};
    for (int s = 0; s < 6; s++) {
        uint64_t n = sizes[s];
        sb_plan p;
        assert_int_equal(sb_plan_init(&p, n, 42 + s), 0);
        unsigned char *seen = calloc(n + 1, 1);
        for (int round = 0; round < 3; round++) {
            memset(seen, 0, n + 1);
            for (uint64_t i = 0; i < n; i++) {
                uint64_t u = sb_plan_user(&p, round * n + i);
                assert_true(u >= 1 && u <= n);
                assert_int_equal(seen[u], 0);
                seen[u] = 1;
            }
        }
        free(seen);
    }
    sb_plan p;
    assert_int_equal(sb_plan_init(&p, 0, 1), -1);
    /* not the identity: neighbours are spread */
    assert_int_equal(sb_plan_init(&p, 1000, 1), 0);
    int adjacent = 0;
    for (uint64_t i = 0; i + 1 < 1000; i++)
        adjacent += sb_plan_user(&p, i + 1) == sb_plan_user(&p, i) + 1;
    assert_true(adjacent < 10);
}

static void test_urls(void **state)
{
    sb_url u[4];
    char err[256];
    assert_int_equal(sb_url_parse_list("http://127.0.0.1:18080, http://localhost/front/", u, 4, err, sizeof(err)), 2);
    assert_string_equal(u[0].host, "127.0.0.1");
    assert_string_equal(u[0].port, "18080");
    assert_string_equal(u[0].prefix, "");
    assert_string_equal(u[1].host, "localhost");
    assert_string_equal(u[1].port, "80");
    assert_string_equal(u[1].prefix, "/front");
    assert_int_equal(sb_url_parse_list("https://x", u, 4, err, sizeof(err)), -1);
    assert_int_equal(sb_url_parse_list("http://x:0", u, 4, err, sizeof(err)), -1);
    assert_int_equal(sb_url_parse_list("http://x:99999", u, 4, err, sizeof(err)), -1);
    assert_int_equal(sb_url_parse_list("http://:80", u, 4, err, sizeof(err)), -1);
    assert_int_equal(sb_url_parse_list("", u, 4, err, sizeof(err)), -1);
    assert_int_equal(sb_url_parse_list("http://a,http://b,http://c", u, 2, err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_bounds),
        cmocka_unit_test(test_quantiles_within_precision),
        cmocka_unit_test(test_plan_rounds_are_permutations),
        cmocka_unit_test(test_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
