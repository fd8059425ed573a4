/* Redlock over 5 throwaway redis-server processes: acquires with 2 of 5 stopped (quorum
 * 3), refuses with 3 stopped and leaves nothing behind on the others, excludes a second
 * client while held, and reports a validity below the lease. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "rlock_test_util.h"
#include "sk_test_redis.h"

#define N 5

static void test_quorum(void **state)
{
    (void)state;
    sk_test_redis *srv[N];
    const char *urls[N];
    redisContext *raw[N];
    char err[256];
    const char *const noaof[] = {"--appendonly", "no", NULL};
    for (int i = 0; i < N; i++) {
        srv[i] = sk_test_redis_start(noaof, err, sizeof(err));
        if (srv[i] == NULL)
            fail_msg("sk_test_redis_start: %s", err);
        urls[i] = sk_test_redis_url(srv[i]);
        raw[i] = rt_connect(urls[i]);
    }
    rlock_redlock_t *a = rlock_redlock_new(urls, N, "res", 100, err, sizeof(err));
    rlock_redlock_t *b = rlock_redlock_new(urls, N, "res", 100, err, sizeof(err));
    assert_non_null(a);
    assert_non_null(b);
    int64_t validity = 0;

    /* all up */
    assert_int_equal(rlock_redlock_lock(a, 5000, 0, &validity), 0);
    assert_true(validity > 4000 && validity < 5000);
    for (int i = 0; i < 3; i++) /* at least the quorum holds it */
        assert_int_equal(rt_int(raw[i], "EXISTS rlock:{res}"), 1);
    assert_int_equal(rlock_redlock_lock(b, 5000, 200, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_redlock_unlock(a), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(rt_int(raw[i], "EXISTS rlock:{res}"), 0);
    assert_int_equal(rlock_redlock_unlock(a), RLOCK_ERR_NOT_HELD);

    /* 2 of 5 stopped: 3 is still a quorum */
    for (int i = 0; i < 2; i++) {
        redisFree(raw[i]);
        raw[i] = NULL;
        sk_test_redis_stop(srv[i], SIGKILL);
    }
    assert_int_equal(rlock_redlock_lock(a, 5000, 2000, &validity), 0);
    assert_true(validity > 0);
    for (int i = 2; i < N; i++)
        assert_int_equal(rt_int(raw[i], "EXISTS rlock:{res}"), 1);
    assert_int_equal(rlock_redlock_lock(b, 5000, 200, NULL), RLOCK_ERR_TIMEOUT);
    assert_int_equal(rlock_redlock_unlock(a), 0);

    /* 3 of 5 stopped: refused, and the two servers left hold nothing of the attempt */
    redisFree(raw[2]);
    raw[2] = NULL;
    sk_test_redis_stop(srv[2], SIGKILL);
    assert_int_equal(rlock_redlock_lock(a, 5000, 500, NULL), RLOCK_ERR_TIMEOUT);
    assert_non_null(strstr(rlock_redlock_errstr(a), "quorum 3"));
    for (int i = 3; i < N; i++)
        assert_int_equal(rt_int(raw[i], "EXISTS rlock:{res}"), 0);

    /* one back: quorum again (connections reopen by themselves) */
    assert_int_equal(sk_test_redis_restart(srv[0], err, sizeof(err)), 0);
    assert_int_equal(rlock_redlock_lock(a, 5000, 2000, NULL), 0);
    assert_int_equal(rlock_redlock_unlock(a), 0);

    rlock_redlock_free(a);
    rlock_redlock_free(b);
    for (int i = 0; i < N; i++) {
        if (raw[i])
            redisFree(raw[i]);
        sk_test_redis_free(srv[i]);
    }
}

static void test_bad_args(void **state)
{
    (void)state;
    char err[256];
    assert_null(rlock_redlock_new(NULL, 0, "x", 0, err, sizeof(err)));
    const char *bad[1] = {"nope://x"};
    assert_null(rlock_redlock_new(bad, 1, "x", 0, err, sizeof(err)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quorum),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
