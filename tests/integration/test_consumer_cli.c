/* Integration (no servers): the command line of seckill-consumer. --help and
 * --version answer 0; a bad config file line is reported as file:line with status 2;
 * an unknown argument, a bad environment override or an unknown log level is 2;
 * `migrate` against an unreachable database fails with 1 and logs no secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_consumer_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the consumer with args and extra env; captures stdout+stderr into out.
 * @returns the exit code. */
static int run(const char *const *env, const char *const *args, char *out, size_t outsz)
{
    char exe[512], path[] = "/tmp/sk-consumer-cli-XXXXXX";
    sk_test_bin(exe, sizeof(exe), "seckill-consumer");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *argv[16] = {exe};
    int n = 1;
    for (const char *const *a = args; a && *a && n < 15; a++)
        argv[n++] = *a;
    argv[n] = NULL;
    sk_test_spawn_opts o = {.env = env, .out_path = path, .err_path = path};
    int status = sk_test_proc_stop(sk_test_spawn(argv, &o), 0, -1);
    ssize_t len = pread(fd, out, outsz - 1, 0);
    out[len > 0 ? len : 0] = '\0';
    close(fd);
    unlink(path);
    return status;
}

static void test_cli(void **state)
{
    (void)state;
    char out[16384];
    const char *help[] = {"--help", NULL};
    assert_int_equal(run(NULL, help, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "batch.max"));
    assert_non_null(strstr(out, "SECKILL_PG"));
    const char *md[] = {"--help-markdown", NULL};
    assert_int_equal(run(NULL, md, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "| `group.id` | `SECKILL_GROUP_ID` |"));
    const char *ver[] = {"--version", NULL};
    assert_int_equal(run(NULL, ver, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "seckill-consumer "));
    const char *bad_arg[] = {"--nope", NULL};
    assert_int_equal(run(NULL, bad_arg, out, sizeof(out)), 2);

    char cfg[] = "/tmp/sk-consumer-cfg-XXXXXX";
    int fd = mkstemp(cfg);
    assert_true(fd >= 0);
    const char *text = "# a comment\ntopic = t1\nbatch.max = 0\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    const char *with_cfg[] = {"--config", cfg, "migrate", NULL};
    assert_int_equal(run(NULL, with_cfg, out, sizeof(out)), 2);
    char where[300];
    snprintf(where, sizeof(where), "%s:3:", cfg);
    assert_non_null(strstr(out, where)); /* file:line of the bad value */
    unlink(cfg);

    const char *env_bad[] = {"SECKILL_BATCH_MS=soon", NULL};
    const char *migrate[] = {"migrate", NULL};
    assert_int_equal(run(env_bad, migrate, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "SECKILL_BATCH_MS"));
    const char *env_bind[] = {"SECKILL_HTTP_BIND=0.0.0.0:80", NULL};
    assert_int_equal(run(env_bind, migrate, out, sizeof(out)), 2); /* before any connection */
    assert_non_null(strstr(out, "http.bind"));
    const char *env_level[] = {"SECKILL_LOG_LEVEL=loud", NULL};
    assert_int_equal(run(env_level, migrate, out, sizeof(out)), 2);

    /* Nothing listens on port 1: migrate fails fast, and the password never shows. */
    const char *env_pg[] = {"SECKILL_PG=host=127.0.0.1 port=1 user=x password=s3cr3t-pw dbname=x "
                            "connect_timeout=2",
                            NULL};
    assert_int_equal(run(env_pg, migrate, out, sizeof(out)), 1);
    assert_non_null(strstr(out, "migrate_failed"));
    assert_null(strstr(out, "s3cr3t-pw"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cli)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
