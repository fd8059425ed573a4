/* Redlock over 5 throwaway redis-server processes: acquires with 2 of 5 stopped (quorum
 * 3), refuses with 3 stopped and leaves nothing behind on the others, excludes a second
 * client while held, and reports a validity below the lease. With one server down and
 * two slow (SIGSTOP for a while, then SIGCONT: a real stall of the process), a lock
 * costs one stall, not one per slow server (all asked at once); fail-fast does not wait
 * for a slow one when a quorum answered; extend, valid and the retry-delay function. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rlock_test_util.h"
#include "sk_test_redis.h"

#define N 5

/* N throwaway servers without AOF, their URLs and a raw connection to each. */
static void start_servers(sk_test_redis **srv, const char **urls, redisContext **raw)
{
    char err[256];
    const char *const noaof[] = {"--appendonly", "no", NULL};
    for (int i = 0; i < N; i++) {
        srv[i] = sk_test_redis_start(noaof, err, sizeof(err));
        if (srv[i] == NULL)
            fail_msg("sk_test_redis_start: %s", err);
        urls[i] = sk_test_redis_url(srv[i]);
        raw[i] = rt_connect(urls[i]);
    }
}

static void free_servers(sk_test_redis **srv, redisContext **raw)
{
    for (int i = 0; i < N; i++) {
        if (raw[i])
            redisFree(raw[i]);
        sk_test_redis_free(srv[i]);
    }
}

static void test_quorum(void **state)
{
    (void)state;
    sk_test_redis *srv[N];
    const char *urls[N];
    redisContext *raw[N];
    char err[256];
    start_servers(srv, urls, raw);
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
    free_servers(srv, raw);
}

struct stall {
    pid_t pid[2];
    int64_t ms;
};

/* Sleeps st->ms, then lets the stopped servers go on. */
static void *cont_later(void *p)
{
    struct stall *st = p;
    rt_sleep_ms(st->ms);
    for (int i = 0; i < 2; i++)
        kill(st->pid[i], SIGCONT);
    return NULL;
}

static int delay_calls, delay_last_try;

static int64_t delay_fn(int tries, void *arg)
{
    delay_calls++;
    delay_last_try = tries;
    return *(int64_t *)arg;
}

static void test_concurrent_slow_down(void **state)
{
    (void)state;
    sk_test_redis *srv[N];
    const char *urls[N];
    redisContext *raw[N];
    char err[256];
    start_servers(srv, urls, raw);
    rlock_redlock_t *a = rlock_redlock_new(urls, N, "slow", 600, err, sizeof(err));
    rlock_redlock_t *b = rlock_redlock_new(urls, N, "slow", 600, err, sizeof(err));
    assert_non_null(a);
    assert_non_null(b);
    int64_t validity = 0;
    /* warm: connections open, scripts loaded */
    assert_int_equal(rlock_redlock_lock(a, 5000, 0, NULL), 0);
    assert_int_equal(rlock_redlock_unlock(a), 0);

    /* server 4 down, servers 2 and 3 stalled 150 ms: the quorum (3) needs one of them */
    redisFree(raw[4]);
    raw[4] = NULL;
    sk_test_redis_stop(srv[4], SIGKILL);
    struct stall st = {{sk_test_redis_pid(srv[2]), sk_test_redis_pid(srv[3])}, 150};
    pthread_t th;
    for (int k = 0; k < 2; k++)
        kill(st.pid[k], SIGSTOP);
    int64_t t0 = rt_now_ms();
    assert_int_equal(pthread_create(&th, NULL, cont_later, &st), 0);
    assert_int_equal(rlock_redlock_lock(a, 5000, 0, &validity), 0);
    int64_t took = rt_now_ms() - t0;
    pthread_join(th, NULL);
    print_message("redlock with 2 servers stalled 150 ms, 1 down: acquired in %lld ms, validity %lld\n",
                  (long long)took, (long long)validity);
    /* one stall, not two (asked in turn, it would be >= 300 ms) */
    assert_true(took >= 140 && took < 290);
    assert_true(validity > 5000 - took - 100 && validity <= 5000 - took);
    assert_true(rlock_redlock_validity_ms(a) > 0 && rlock_redlock_validity_ms(a) <= validity);

    /* extend: all at once, a new validity from now */
    assert_int_equal(rlock_redlock_extend(a, 20000, &validity), 0);
    assert_true(validity > 19000);
    for (int i = 0; i < 4; i++)
        assert_true(rt_int(raw[i], "PTTL rlock:{slow}") > 15000);
    assert_int_equal(rlock_redlock_valid(a), 1);
    assert_int_equal(rlock_redlock_extend(b, 20000, NULL), RLOCK_ERR_NOT_HELD);

    /* fail-fast: with 2 stalled again, a quorum of fast answers ends the step at once */
    rlock_redlock_set_fail_fast(a, 1);
    for (int k = 0; k < 2; k++)
        kill(st.pid[k], SIGSTOP);
    t0 = rt_now_ms();
    /* 0, 1 fast; 2, 3 stalled: extend cannot reach the quorum before the stall ends */
    st.ms = 100;
    assert_int_equal(pthread_create(&th, NULL, cont_later, &st), 0);
    assert_int_equal(rlock_redlock_extend(a, 20000, NULL), 0);
    took = rt_now_ms() - t0;
    pthread_join(th, NULL);
    assert_true(took >= 90 && took < 500);
    assert_int_equal(rlock_redlock_unlock(a), 0);
    /* now only server 3 stalled: 0, 1, 2 are a quorum, and fail-fast does not wait */
    kill(st.pid[1], SIGSTOP);
    t0 = rt_now_ms();
    assert_int_equal(rlock_redlock_lock(a, 5000, 0, NULL), 0);
    took = rt_now_ms() - t0;
    print_message("fail-fast with 1 stalled, 1 down: acquired in %lld ms\n", (long long)took);
    assert_true(took < 100);
    kill(st.pid[1], SIGCONT);
    /* another holder's keys: valid no more once a quorum lost ours */
    for (int i = 0; i < 3; i++)
        rt_int(raw[i], "DEL rlock:{slow}");
    assert_int_equal(rlock_redlock_valid(a), 0);
    assert_int_equal(rlock_redlock_unlock(a), 0); /* server 3 still had it */

    /* retry delay function: called per failed attempt with the attempt count */
    assert_int_equal(rlock_redlock_lock(a, 5000, 0, NULL), 0);
    int64_t d = 40;
    rlock_redlock_set_retry_delay_fn(b, delay_fn, &d);
    t0 = rt_now_ms();
    assert_int_equal(rlock_redlock_lock(b, 5000, 300, NULL), RLOCK_ERR_TIMEOUT);
    assert_true(delay_calls >= 3 && delay_calls <= 10);
    assert_int_equal(delay_last_try, delay_calls);
    assert_int_equal(rlock_redlock_unlock(a), 0);
    assert_int_equal(rlock_redlock_lock(b, 5000, 1000, NULL), 0);
    assert_int_equal(rlock_redlock_unlock(b), 0);

    rlock_redlock_free(a);
    rlock_redlock_free(b);
    free_servers(srv, raw);
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
        cmocka_unit_test(test_concurrent_slow_down),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
