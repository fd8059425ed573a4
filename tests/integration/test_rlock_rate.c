/* The rate limiter (RRateLimiter, issue 34) in native mode on the shared Redis: `rate`
 * permits per sliding interval, overall and per client; a waiter sleeps until the oldest
 * grant leaves the window; with a keep-alive, no key stays after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "rlock_test_util.h"

static void test_rate(void **state)
{
    (void)state;
    const char *url = rt_redis_url();
    if (url == NULL)
        skip();
    redisContext *raw = rt_connect(url);
    char name[128];
    rt_name(name, sizeof(name), "rate");
    rlock_client_t *c = rt_client(url, 0, 0, 0), *d = rt_client(url, 0, 0, 0);
    rlock_rate_t *r = rlock_rate_new(c, name), *other = rlock_rate_new(d, name);
    assert_non_null(r);
    assert_int_equal(rlock_rate_try_acquire(r, 1, 0), RLOCK_ERR_REDIS); /* no rate yet */
    assert_int_equal(rlock_rate_try_set(r, RLOCK_RATE_OVERALL, 10, 500, 0), 1);
    assert_int_equal(rlock_rate_try_set(r, RLOCK_RATE_OVERALL, 99, 500, 0), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(rlock_rate_try_acquire(r, 1, 0), 0);
    assert_int_equal(rlock_rate_try_acquire(other, 2, 0), 0); /* one budget */
    assert_int_equal(rlock_rate_try_acquire(other, 1, 0), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_rate_try_acquire(r, 11, 0), RLOCK_ERR_REDIS);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_rate_try_acquire(r, 1, 3000), 0);
    int64_t took = rt_now_ms() - t0;
    assert_true(took >= 350 && took < 2000);
    rlock_rate_free(r);
    rlock_rate_free(other);

    /* per client, with a keep-alive: each client its own budget, and the keys go */
    rt_name(name, sizeof(name), "rate-pc");
    r = rlock_rate_new(c, name);
    other = rlock_rate_new(d, name);
    assert_int_equal(rlock_rate_try_set(r, RLOCK_RATE_PER_CLIENT, 2, 200, 400), 1);
    assert_int_equal(rlock_rate_try_acquire(r, 2, 0), 0);
    assert_int_equal(rlock_rate_try_acquire(r, 1, 0), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_rate_try_acquire(other, 2, 0), 0);
    assert_int_equal(rlock_rate_try_set(r, RLOCK_RATE_OVERALL, 1, 100, 50), RLOCK_ERR_ARG);
    int64_t end = rt_now_ms() + 5000;
    long long left;
    while ((left = rt_int(raw, "EXISTS rlock:{%s}:rate rlock:{%s}:rate:permits:%s rlock:{%s}:rate:value:%s", name,
                          name, rlock_client_id(c), name, rlock_client_id(c))) > 0 &&
           rt_now_ms() < end)
        rt_sleep_ms(50);
    assert_int_equal(left, 0);
    rlock_rate_free(r);
    rlock_rate_free(other);
    rlock_client_free(c);
    rlock_client_free(d);
    rt_int(raw, "DEL rlock:{%s}:rate rlock:{%s}:rate:value rlock:{%s}:rate:permits", name, name, name);
    redisFree(raw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
