/* The watchdog keeps a lock alive while its holder lives (3x past the watchdog timeout,
 * 600 ms here) and the lock frees within one timeout once the holder is killed with
 * SIGKILL (nothing renews it then). A child process holds; the parent watches. Run for a
 * simple lock and for the read side of a read-write lock (renewal of a reader's deadline). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rlock_test_util.h"
#include "sk_test_redis.h"

#define WD_MS 600

/* A private server without AOF: the bounds are a few hundred ms, and the shared server
 * fsyncs every write. */
static sk_test_redis *srv;

static void run(rlock_kind_t hold_kind, rlock_kind_t probe_kind, const char *tag)
{
    const char *url = sk_test_redis_url(srv);
    char name[128];
    rt_name(name, sizeof(name), tag);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(pfd[0]);
        rlock_client_t *c = rt_client(url, WD_MS, 0, 0);
        rlock_t *l = rlock_new(c, name, hold_kind);
        char ok = rlock_lock(l, 0, NULL) == 0 ? 'y' : 'n';
        if (write(pfd[1], &ok, 1) != 1)
            _exit(2);
        for (;;)
            pause(); /* hold until SIGKILL: the watchdog thread renews */
    }
    close(pfd[1]);
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    char ok = 0;
    assert_int_equal(poll(&p, 1, 20000), 1);
    assert_int_equal(read(pfd[0], &ok, 1), 1);
    close(pfd[0]);
    assert_int_equal(ok, 'y');

    rlock_client_t *c = rt_client(url, WD_MS, 0, 0);
    rlock_t *probe = rlock_new(c, name, probe_kind);
    int64_t until = rt_now_ms() + 3 * WD_MS + 200;
    int probes = 0;
    while (rt_now_ms() < until) {
        assert_int_equal(rlock_try_lock(probe, 0, 1000, NULL), RLOCK_ERR_TIMEOUT);
        probes++;
        rt_sleep_ms(50);
    }
    assert_true(probes > 10);

    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    int64_t killed = rt_now_ms();
    while (rlock_try_lock(probe, 0, 1000, NULL) == RLOCK_ERR_TIMEOUT) {
        if (rt_now_ms() - killed > 5000)
            fail_msg("lock of a killed holder still held after 5 s");
        rt_sleep_ms(10);
    }
    int64_t freed_after = rt_now_ms() - killed;
    fprintf(stderr, "# %s: freed %lld ms after SIGKILL (timeout %d ms)\n", tag, (long long)freed_after, WD_MS);
    /* the last renewal was at most a third of the timeout before the kill */
    assert_true(freed_after >= WD_MS / 2 - 100);
    assert_true(freed_after <= WD_MS + 150);
    assert_int_equal(rlock_unlock(probe), 0);
    rlock_free(probe);
    rlock_client_free(c);
}

static void test_simple(void **state)
{
    (void)state;
    run(RLOCK_SIMPLE, RLOCK_SIMPLE, "wd-simple");
}

static void test_reader(void **state)
{
    (void)state;
    run(RLOCK_READ, RLOCK_WRITE, "wd-read");
}

static int setup(void **state)
{
    (void)state;
    char err[256];
    const char *const noaof[] = {"--appendonly", "no", NULL};
    srv = sk_test_redis_start(noaof, err, sizeof(err));
    if (srv == NULL)
        fprintf(stderr, "sk_test_redis_start: %s\n", err);
    return srv == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    sk_test_redis_free(srv);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple),
        cmocka_unit_test(test_reader),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
