/* Unit tests of sb_hist (latency histogram) and sb_plan (users and base URLs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* latency.prom: the non-empty buckets' upper edges in seconds, cumulative, through sk_prom */
static void test_prom_text(void **state)
{
    (void)state;
    sb_hist h;
    sb_hist_reset(&h);
    uint64_t us[4] = {3, 20, 20, 1000}; /* buckets with upper edges 3, 20 and 1023 us */
    for (int i = 0; i < 4; i++)
        sb_hist_record(&h, us[i]);
    sk_prom_text t;
    assert_int_equal(sk_prom_text_open(&t), 0);
    sk_prom_label l[2] = {{"status", "409"}, {"code", "sold\"out"}};
    sb_hist_write_prom(t.f, "x", l, 2, &h);
    size_t len;
    char *txt = sk_prom_text_close(&t, &len);
    assert_non_null(txt);
    assert_string_equal(txt, "x_bucket{status=\"409\",code=\"sold\\\"out\",le=\"3e-06\"} 1\n"
                             "x_bucket{status=\"409\",code=\"sold\\\"out\",le=\"2e-05\"} 3\n"
                             "x_bucket{status=\"409\",code=\"sold\\\"out\",le=\"0.001023\"} 4\n"
                             "x_bucket{status=\"409\",code=\"sold\\\"out\",le=\"+Inf\"} 4\n"
                             "x_sum{status=\"409\",code=\"sold\\\"out\"} 0.001043\n"
                             "x_count{status=\"409\",code=\"sold\\\"out\"} 4\n");
    free(txt);
}

static void test_plan_every_user_tries_equally(void **state)
{
    /* users, requests: each user gets exactly ceil(requests / users) tries in the plan */
    uint64_t cases[][2] = {{1, 5}, {2, 6}, {7, 20}, {1000, 3000}, {5000, 20000}, {100000, 300000}, {3, 0}};
    for (int s = 0; s < 7; s++) {
        uint64_t n = cases[s][0], req = cases[s][1];
        uint64_t tries = req ? (req + n - 1) / n : 16;
        sb_plan p;
        assert_int_equal(sb_plan_init(&p, n, req, 42 + s), 0);
        assert_true(p.span == n * tries);
        uint32_t *seen = calloc(n + 1, sizeof(*seen));
        for (uint64_t i = 0; i < p.span; i++) {
            uint64_t u = sb_plan_user(&p, i);
            assert_true(u >= 1 && u <= n);
            seen[u]++;
        }
        for (uint64_t u = 1; u <= n; u++)
            assert_int_equal(seen[u], tries);
        /* past the plan, it starts over */
        assert_true(sb_plan_user(&p, p.span + 3) == sb_plan_user(&p, 3));
        free(seen);
    }
    sb_plan p;
    assert_int_equal(sb_plan_init(&p, 0, 10, 1), -1);
    /* neither the identity nor rounds: in the first tenth of a 3-tries plan, some users
     * already come back (the winners' repeat tries during the burst) */
    assert_int_equal(sb_plan_init(&p, 100000, 300000, 1), 0);
    unsigned char *seen = calloc(100001, 1);
    int adjacent = 0, repeats = 0;
    for (uint64_t i = 0; i < 30000; i++) {
        uint64_t u = sb_plan_user(&p, i);
        repeats += seen[u];
        seen[u] = 1;
        if (i && u == sb_plan_user(&p, i - 1) + 1)
            adjacent++;
    }
    assert_true(adjacent < 10);
    assert_true(repeats > 1000 && repeats < 5000); /* about 30000 * 2 * 0.1 = 6000 minus overlaps */
    free(seen);
    /* another seed, another order */
    sb_plan q;
    assert_int_equal(sb_plan_init(&q, 100000, 300000, 2), 0);
    int same = 0;
    for (uint64_t i = 0; i < 1000; i++)
        same += sb_plan_user(&p, i) == sb_plan_user(&q, i);
    assert_true(same < 10);
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
        cmocka_unit_test(test_prom_text),
        cmocka_unit_test(test_plan_every_user_tries_equally),
        cmocka_unit_test(test_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
