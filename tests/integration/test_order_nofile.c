/* Out of descriptors (issue 14, item 3): seckill-order started with RLIMIT_NOFILE 128
 * (as under `prlimit --nofile=128`) and limits.connections 10000 must fit its cap to
 * the limit at start and say so, and with 200 idle connections held it must neither
 * spin (CPU time stays low) nor flood its log (accept failures logged once a second at
 * most), and still answer once connections are given back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "test_order_support.h"

#define NCONNS 200
#define HOLD_MS 3000

static to_order srv;

static void test_nofile(void **state)
{
    (void)state;
    if (!to_stack_available()) {
        fprintf(stderr, "skipped: no stack (source .run/env)\n");
        fail();
    }
    /* Start with a soft limit of 128 (inherited; this process takes its own back at
     * once): the service raises it to fit limits.connections, as the hard limit allows. */
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    assert_true(old.rlim_cur >= NCONNS + 64);
    low = old;
    low.rlim_cur = 128;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    static const char *env[] = {"SECKILL_WORKERS=2", "SECKILL_LIMITS_CONNECTIONS=10000", NULL};
    int rc = to_order_start(&srv, getenv("SECKILL_REDIS_URL"), getenv("SECKILL_KAFKA_BROKERS"), NULL, env);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, 0);
    assert_true(sk_test_log_has(srv.proc.log, "event=nofile_raised") ||
                sk_test_log_has(srv.proc.log, "event=connection_cap_lowered"));
    /* Then as `prlimit --pid --nofile=128:128` does: 128 for good, below the cap, so
     * accept() runs out of descriptors with connections still coming. */
    struct rlimit hard128 = {128, 128};
    assert_int_equal(prlimit(srv.proc.pid, RLIMIT_NOFILE, &hard128, NULL), 0);

    int fds[NCONNS];
    int opened = 0;
    for (int i = 0; i < NCONNS; i++) {
        fds[i] = to_http_connect(srv.port);
        if (fds[i] >= 0)
            opened++;
    }
    long log0 = sk_test_file_size(srv.proc.log);
    double cpu0 = sk_test_cpu_seconds(srv.proc.pid);
    int64_t t0 = sk_test_now_ms();
    while (sk_test_now_ms() - t0 < HOLD_MS)
        usleep(100 * 1000); /* measuring an interval: the wait is the point */
    double cpu = sk_test_cpu_seconds(srv.proc.pid) - cpu0;
    long grew = sk_test_file_size(srv.proc.log) - log0;
    fprintf(stderr, "# %d connections opened; over %d ms: cpu %.2f s, log +%ld bytes\n", opened,
            HOLD_MS, cpu, grew);
    assert_true(cpu0 >= 0 && cpu < 0.5 * HOLD_MS / 1000.0);
    assert_true(grew < 16 * 1024);
    assert_true(sk_test_log_has(srv.proc.log, "event=accept_failed"));
    for (int i = 0; i < NCONNS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    /* Connections given back: it serves again. */
    char resp[256];
    int st = -1;
    int64_t deadline = sk_test_now_ms() + 5000;
    while (st != 200 && sk_test_now_ms() < deadline) {
        st = to_http1(srv.port, "GET", "/healthz", NULL, NULL, resp, sizeof(resp));
        if (st != 200)
            usleep(100 * 1000);
    }
    assert_int_equal(st, 200);
    assert_int_equal(to_stop(&srv.proc, SIGTERM, 10000), 0);
    srv.proc.pid = 0;
}

/* A failed assertion leaves the test early: never leave the service behind. */
static int teardown(void **state)
{
    (void)state;
    if (srv.proc.pid && kill(srv.proc.pid, 0) == 0)
        to_stop(&srv.proc, SIGKILL, 5000);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test_teardown(test_nofile, teardown)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
