/* Out of descriptors on the consumer's HTTP port (issue 14, item 3), as
 * test_order_nofile does for seckill-order: started with RLIMIT_NOFILE 128 (as under
 * `prlimit --nofile=128`) and limits.connections 10000, seckill-consumer must fit its
 * cap to the limit at start and say so; then held at 128:128 with 200 idle connections
 * on its port it must neither spin (CPU time stays low) nor flood its log (accept
 * failures logged once a second at most), and still answer once they are given back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_test_redis.h"
#include "test_consumer_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define DB_NAME "sk_test_consumer_nofile"
#define NCONNS 200
#define HOLD_MS 3000

static void test_nofile(void **state)
{
    (void)state;
    ctu_kafka k;
    assert_int_equal(ctu_kafka_start(&k, 1), 0);
    char *conninfo = ctu_db_create(DB_NAME);
    assert_non_null(conninfo);
    int port = sk_test_free_port();
    ctu_env ce;
    char env_port[64];
    ctu_env_fill(&ce, conninfo, k.bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_HTTP_BIND=127.0.0.1",
                         "SECKILL_GROUP_ID=nofile-test", "SECKILL_LIMITS_CONNECTIONS=10000", NULL};

    /* The consumer logs to its stderr, which it inherits: a file for the time of the
     * spawn, so that its log can be measured. */
    char logpath[] = "/tmp/sk_test_consumer_nofile_XXXXXX";
    int logfd = mkstemp(logpath);
    assert_true(logfd >= 0);
    int saved = dup(2);
    assert_true(saved >= 0);
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    assert_true(old.rlim_cur >= NCONNS + 64);
    low = old;
    low.rlim_cur = 128;
    dup2(logfd, 2);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    pid_t pid = ctu_consumer_spawn(env);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    dup2(saved, 2);
    close(saved);
    close(logfd);
    assert_true(pid > 0);
    assert_int_equal(ctu_wait_healthy(port, 60000), 0);
    assert_true(sk_test_log_has(logpath, "event=nofile_raised") ||
                sk_test_log_has(logpath, "event=connection_cap_lowered"));
    /* Then 128 for good, below the cap, so accept() runs out of descriptors with
     * connections still coming. */
    struct rlimit hard128 = {128, 128};
    assert_int_equal(prlimit(pid, RLIMIT_NOFILE, &hard128, NULL), 0);

    int fds[NCONNS];
    int opened = 0;
    for (int i = 0; i < NCONNS; i++) {
        fds[i] = sk_test_connect_port(port);
        opened += fds[i] >= 0;
    }
    long log0 = sk_test_file_size(logpath);
    double cpu0 = sk_test_cpu_seconds(pid);
    int64_t t0 = sk_test_now_ms();
    while (sk_test_now_ms() - t0 < HOLD_MS)
        usleep(100 * 1000); /* measuring an interval: the wait is the point */
    double cpu = sk_test_cpu_seconds(pid) - cpu0;
    long grew = sk_test_file_size(logpath) - log0;
    fprintf(stderr, "# %d connections opened; over %d ms: cpu %.2f s, log +%ld bytes\n", opened,
            HOLD_MS, cpu, grew);
    assert_true(cpu0 >= 0 && cpu < 0.5 * HOLD_MS / 1000.0);
    assert_true(grew < 16 * 1024);
    assert_true(sk_test_log_has(logpath, "event=accept_failed"));
    for (int i = 0; i < NCONNS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    /* Connections given back: it serves again. */
    assert_int_equal(ctu_wait_healthy(port, 5000), 0);
    assert_int_equal(sk_test_proc_stop(pid, SIGTERM, 15000), 0);
    unlink(logpath);
    free(conninfo);
    ctu_db_drop(DB_NAME);
    ctu_kafka_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_nofile)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
