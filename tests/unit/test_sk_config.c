/* Unit tests of common/sk_config (table, file, environment, kafka.*) and sk_redis_url. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "sk_config.h"
#include "sk_redis_url.h"

#include <hiredis/hiredis.h>

struct cfg {
    char *url;
    char *secret;
    long long workers;
    int flag;
};

static const sk_cfg_entry table[] = {
    {"redis.url", SK_CFG_STRING, 0, 0, "redis://127.0.0.1:6379", "Redis URL", offsetof(struct cfg, url)},
    {"jwt.secret", SK_CFG_SECRET, 0, 0, NULL, "token secret", offsetof(struct cfg, secret)},
    {"workers", SK_CFG_INT, 1, 64, "2", "worker threads", offsetof(struct cfg, workers)},
    {"feature.on", SK_CFG_BOOL, 0, 0, "false", "a flag", offsetof(struct cfg, flag)},
    {NULL, 0, 0, 0, NULL, NULL, 0},
};

static char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/sk-config-test-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

extern char **environ;

/* The test stack exports SECKILL_* addresses: drop them all so only the test's own count. */
static void clear_env(void)
{
    for (;;) {
        char **ep = environ;
        while (*ep && strncmp(*ep, "SECKILL_", 8) != 0)
            ep++;
        if (!*ep)
            return;
        char name[256];
        size_t n = strcspn(*ep, "=");
        snprintf(name, sizeof(name), "%.*s", (int)n, *ep);
        unsetenv(name);
    }
}

static void test_defaults_file_env(void **state)
{
    (void)state;
    clear_env();
    struct cfg c = {0};
    sk_cfg_kv *kafka = NULL;
    char err[256];
    char *path = write_tmp("# comment\n\nworkers = 8\nfeature.on = yes\n"
                           "kafka.acks = all\n  jwt.secret=s3cret  \n");
    setenv("SECKILL_WORKERS", "4", 1);
    setenv("SECKILL_KAFKA_BROKERS", "127.0.0.1:9092", 1);
    setenv("SECKILL_KAFKA_LINGER_MS", "5", 1);
    assert_int_equal(sk_config_load(table, &c, path, &kafka, err, sizeof(err)), 0);
    unlink(path);
    assert_string_equal(c.url, "redis://127.0.0.1:6379"); /* default */
    assert_string_equal(c.secret, "s3cret");               /* file, trimmed */
    assert_int_equal(c.workers, 4);                        /* env beats file */
    assert_int_equal(c.flag, 1);
    int seen = 0;
    for (sk_cfg_kv *kv = kafka; kv; kv = kv->next) {
        if (strcmp(kv->key, "acks") == 0 && strcmp(kv->value, "all") == 0)
            seen |= 1;
        if (strcmp(kv->key, "bootstrap.servers") == 0 && strcmp(kv->value, "127.0.0.1:9092") == 0)
            seen |= 2;
        if (strcmp(kv->key, "linger.ms") == 0 && strcmp(kv->value, "5") == 0)
            seen |= 4;
    }
    assert_int_equal(seen, 7);
    sk_config_free(table, &c, kafka);
    clear_env();
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    clear_env();
    struct {
        const char *text, *expect;
    } cases[] = {
        {"workers = 2\nnonsense\n", ":2: expected \"key = value\""},
        {"\n\nbogus.key = 1\n", ":3: unknown setting \"bogus.key\""},
        {"workers = 99\n", ":1: workers: 99 is out of range [1, 64]"},
        {"workers = 3x\n", ":1: workers: not an integer"},
        {"feature.on = maybe\n", ":1: feature.on: not a boolean"},
        {" = 3\n", ":1: empty key"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cfg c = {0};
        sk_cfg_kv *kafka = NULL;
        char err[256] = "";
        char *path = write_tmp(cases[i].text);
        assert_int_equal(sk_config_load(table, &c, path, &kafka, err, sizeof(err)), -1);
        assert_non_null(strstr(err, path));
        assert_non_null(strstr(err, cases[i].expect));
        unlink(path);
        sk_config_free(table, &c, kafka);
    }
    struct cfg c = {0};
    sk_cfg_kv *kafka = NULL;
    char err[256];
    assert_int_equal(sk_config_load(table, &c, "/nonexistent/x.conf", &kafka, err, sizeof(err)), -1);
    sk_config_free(table, &c, kafka);
    setenv("SECKILL_WORKERS", "0", 1);
    assert_int_equal(sk_config_load(table, &c, NULL, &kafka, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "SECKILL_WORKERS"));
    sk_config_free(table, &c, kafka);
    clear_env();
}

static void test_nul_byte_and_long_line(void **state)
{
    (void)state;
    clear_env();
    char path[] = "/tmp/sk-config-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char nul_line[] = "workers = 2\nworkers = 3\0x\n";
    assert_int_equal(write(fd, nul_line, sizeof(nul_line) - 1), (ssize_t)sizeof(nul_line) - 1);
    close(fd);
    struct cfg c = {0};
    sk_cfg_kv *kafka = NULL;
    char err[256];
    assert_int_equal(sk_config_load(table, &c, path, &kafka, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: NUL byte in line"));
    sk_config_free(table, &c, kafka);
    kafka = NULL;
    char big[5000];
    memset(big, 'a', sizeof(big) - 2);
    big[sizeof(big) - 2] = '\n';
    big[sizeof(big) - 1] = '\0';
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, big, strlen(big)), (ssize_t)strlen(big));
    close(fd);
    assert_int_equal(sk_config_load(table, &c, path, &kafka, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":1: line too long"));
    sk_config_free(table, &c, kafka);
    unlink(path);
}

static void test_command_line(void **state)
{
    (void)state;
    clear_env();
    char *path = write_tmp("workers = 8\n");
    char cfgarg[80];
    snprintf(cfgarg, sizeof(cfgarg), "--config=%s", path);
    char *argv[] = {"prog", "--workers", "5", cfgarg, "EVENT", "--feature.on=yes",
                    "--kafka.acks=all", "FILE", NULL};
    int argc = 8;
    assert_string_equal(sk_config_args_path(argc, argv), path);
    struct cfg c = {0};
    sk_cfg_kv *kafka = NULL;
    char err[256];
    const char *pos[2];
    int npos = -1;
    assert_int_equal(sk_config_load(table, &c, path, &kafka, err, sizeof(err)), 0);
    assert_int_equal(c.workers, 8);
    assert_int_equal(sk_config_args(table, &c, &kafka, 1, argc, argv, pos, 2, &npos, err,
                                    sizeof(err)), 0);
    assert_int_equal(c.workers, 5); /* the argument wins over the file */
    assert_int_equal(c.flag, 1);
    assert_int_equal(npos, 2);
    assert_string_equal(pos[0], "EVENT");
    assert_string_equal(pos[1], "FILE");
    assert_non_null(kafka);
    assert_string_equal(kafka->key, "acks");
    /* Refusals, each with its message. */
    struct {
        char *args[4];
        int allow_kafka, max_pos;
        const char *expect;
    } bad[] = {
        {{"prog", "--kafka.acks=1", NULL}, 0, 0, "--kafka.acks: not a setting of this program"},
        {{"prog", "--workers", NULL}, 1, 0, "--workers needs a value"},
        {{"prog", "--workers=99", NULL}, 1, 0, "--workers: workers: 99 is out of range"},
        {{"prog", "--nope=1", NULL}, 1, 0, "--nope: unknown setting"},
        {{"prog", "--=1", NULL}, 1, 0, "bad argument \"--=1\""},
        {{"prog", "A", "B", NULL}, 1, 1, "unexpected argument \"B\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = 0;
        while (bad[i].args[n])
            n++;
        assert_int_equal(sk_config_args(table, &c, &kafka, bad[i].allow_kafka, n, bad[i].args, pos,
                                        bad[i].max_pos, &npos, err, sizeof(err)), -1);
        assert_non_null(strstr(err, bad[i].expect));
    }
    unlink(path);
    sk_config_free(table, &c, kafka);
}

static void test_help_hides_secrets(void **state)
{
    (void)state;
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    sk_config_print_help(f, table, 1);
    fclose(f);
    assert_non_null(strstr(buf, "`SECKILL_REDIS_URL`"));
    assert_non_null(strstr(buf, "(secret)"));
    assert_non_null(strstr(buf, "kafka.*"));
}

static void test_redis_url(void **state)
{
    (void)state;
    sk_redis_url u;
    char err[128], red[512];
    assert_int_equal(sk_redis_url_parse("redis://127.0.0.1:16379", &u, err, sizeof(err)), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 16379);
    assert_int_equal(u.db, 0);
    assert_int_equal(sk_redis_url_parse("redis://app:pw@redis.local/3", &u, err, sizeof(err)), 0);
    assert_string_equal(u.user, "app");
    assert_string_equal(u.pass, "pw");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 3);
    sk_redis_url_redacted(&u, red, sizeof(red));
    assert_null(strstr(red, "pw"));
    assert_int_equal(sk_redis_url_parse("redis://:only@h:1", &u, err, sizeof(err)), 0);
    assert_string_equal(u.user, "");
    assert_string_equal(u.pass, "only");
    assert_int_equal(sk_redis_url_parse("unix:///run/redis.sock?db=2", &u, err, sizeof(err)), 0);
    assert_true(u.is_unix);
    assert_string_equal(u.host, "/run/redis.sock");
    assert_int_equal(u.db, 2);
    const char *bad[] = {"", "http://x", "redis://", "redis://h:0", "redis://h:70000",
                         "redis://h:12ab", "redis://h/x", "unix://relative", "unix:///s?db=x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sk_redis_url_parse(bad[i], &u, err, sizeof(err)), -1);
}

/* redis-sentinel://: the sentinels, the master's name, ?db; the password never shown. */
static void test_redis_sentinel_url(void **state)
{
    (void)state;
    sk_redis_url u;
    char err[128], red[512];
    assert_int_equal(sk_redis_url_parse("redis-sentinel://app:s3cret@h1:26380,h2,10.0.0.3:1/mymaster?db=4",
                                        &u, err, sizeof(err)), 0);
    assert_true(u.is_sentinel);
    assert_int_equal(u.nsentinels, 3);
    assert_string_equal(u.sentinels[0].host, "h1");
    assert_int_equal(u.sentinels[0].port, 26380);
    assert_string_equal(u.sentinels[1].host, "h2");
    assert_int_equal(u.sentinels[1].port, 26379);
    assert_int_equal(u.sentinels[2].port, 1);
    assert_string_equal(u.master_name, "mymaster");
    assert_int_equal(u.db, 4);
    assert_string_equal(u.user, "app");
    assert_string_equal(u.pass, "s3cret");
    assert_string_equal(u.host, "");
    sk_redis_url_redacted(&u, red, sizeof(red));
    assert_null(strstr(red, "s3cret"));
    assert_string_equal(red, "redis-sentinel://app:***@h1:26380,h2:26379,10.0.0.3:1/mymaster?db=4");
    assert_true(sk_redis_url_is_sentinel("redis-sentinel://h/m"));
    assert_false(sk_redis_url_is_sentinel("redis://h"));
    assert_int_equal(sk_redis_url_parse("redis-sentinel://h/m", &u, err, sizeof(err)), 0);
    assert_int_equal(u.db, 0);
    const char *bad[] = {"redis-sentinel://", "redis-sentinel://h", "redis-sentinel://h/",
                         "redis-sentinel:///m", "redis-sentinel://h,/m", "redis-sentinel://h:0/m",
                         "redis-sentinel://h/m?db=x", "redis-sentinel://h/m/2",
                         "redis-sentinel://a,b,c,d,e,f,g,h,i/m"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sk_redis_url_parse(bad[i], &u, err, sizeof(err)), -1);
        assert_true(err[0] != '\0');
    }
}

/* The replies that send a sentinel client back to the sentinels. */
static void test_readonly_and_role(void **state)
{
    (void)state;
    redisReply ro = {.type = REDIS_REPLY_ERROR, .str = "READONLY You can't write against a read only replica."};
    redisReply in_script = {.type = REDIS_REPLY_ERROR,
                            .str = "ERR Error running script: -READONLY You can't write"};
    redisReply other = {.type = REDIS_REPLY_ERROR, .str = "ERR wrong number of arguments"};
    redisReply ok = {.type = REDIS_REPLY_STATUS, .str = "OK"};
    assert_true(sk_redis_reply_is_readonly(&ro));
    assert_true(sk_redis_reply_is_readonly(&in_script));
    assert_false(sk_redis_reply_is_readonly(&other));
    assert_false(sk_redis_reply_is_readonly(&ok));
    assert_false(sk_redis_reply_is_readonly(NULL));
    redisReply master = {.type = REDIS_REPLY_STRING, .str = "master", .len = 6};
    redisReply slave = {.type = REDIS_REPLY_STRING, .str = "slave", .len = 5};
    redisReply *e1[] = {&master}, *e2[] = {&slave};
    redisReply role_m = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = e1};
    redisReply role_s = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = e2};
    assert_true(sk_redis_role_is_master(&role_m));
    assert_false(sk_redis_role_is_master(&role_s));
    assert_false(sk_redis_role_is_master(&ok));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_file_env),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_nul_byte_and_long_line),
        cmocka_unit_test(test_command_line),
        cmocka_unit_test(test_help_hides_secrets),
        cmocka_unit_test(test_redis_url),
        cmocka_unit_test(test_redis_sentinel_url),
        cmocka_unit_test(test_readonly_and_role),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
