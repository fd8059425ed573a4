/* The expirable-permit semaphore (RPermitExpirableSemaphore, issue 34) in native mode on
 * the shared Redis: a permit whose lease ends comes back without a release (its holder
 * died), a release wakes a waiter through pub/sub, an expired or unknown permit is not
 * held, and no key of it is left after its lease but the permit counter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "rlock_test_util.h"

struct waiter {
    rlock_client_t *c;
    const char *name;
    int rv;
    int64_t at;
    char id[RLOCK_PERMIT_ID_SIZE];
};

static void *waiter_main(void *p)
{
    struct waiter *w = p;
    rlock_psem_t *s = rlock_psem_new(w->c, w->name);
    w->rv = rlock_psem_try_acquire(s, 5000, 10000, w->id);
    w->at = rt_now_ms();
    rlock_psem_free(s);
    return NULL;
}

static void test_psem(void **state)
{
    (void)state;
    const char *url = rt_redis_url();
    if (url == NULL)
        skip();
    redisContext *raw = rt_connect(url);
    char name[128];
    rt_name(name, sizeof(name), "psem");
    rlock_client_t *c = rt_client(url, 0, 10000, 0); /* 10 s poll: only messages wake fast */
    rlock_psem_t *s = rlock_psem_new(c, name);
    assert_non_null(s);
    char a[RLOCK_PERMIT_ID_SIZE], b[RLOCK_PERMIT_ID_SIZE], d[RLOCK_PERMIT_ID_SIZE];
    assert_int_equal(rlock_psem_try_set_permits(s, 2), 1);
    assert_int_equal(rlock_psem_try_set_permits(s, 5), 0);
    assert_int_equal(rlock_psem_try_acquire(s, 0, 300, a), 0);
    assert_int_equal(rlock_psem_try_acquire(s, 0, 0, b), 0);
    assert_int_equal((int)strlen(a), 32);
    assert_string_not_equal(a, b);
    assert_int_equal(rlock_psem_available(s), 0);
    assert_int_equal(rlock_psem_try_acquire(s, 0, 0, d), RLOCK_ERR_TIMEOUT);
    /* a's holder "died": its permit comes back at its deadline, no release needed */
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_psem_try_acquire(s, 3000, 0, d), 0);
    int64_t took = rt_now_ms() - t0;
    assert_true(took >= 200 && took < 2000);
    assert_int_equal(rlock_psem_release(s, a), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_psem_release(s, "00000000000000000000000000000000"), RLOCK_ERR_NOT_HELD);
    assert_int_equal(rlock_psem_release(s, "not-hex"), RLOCK_ERR_ARG);
    /* a release wakes a waiter at once (its poll is 10 s) */
    struct waiter w = {.c = c, .name = name};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    rt_sleep_ms(200);
    int64_t sent = rt_now_ms();
    assert_int_equal(rlock_psem_release(s, b), 0);
    pthread_join(t, NULL);
    assert_int_equal(w.rv, 0);
    assert_true(w.at - sent < 1000);
    assert_int_equal(rlock_psem_release(s, w.id), 0);
    assert_int_equal(rlock_psem_release(s, d), 0);
    assert_int_equal(rlock_psem_available(s), 2);
    assert_int_equal(rt_int(raw, "ZCARD rlock:{%s}:psem:timeout", name), 0);
    rt_int(raw, "DEL rlock:{%s}:psem", name);
    rlock_psem_free(s);
    rlock_client_free(c);
    redisFree(raw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_psem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
