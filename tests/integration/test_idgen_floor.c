/* Integration: floor mode, no reissue after Redis lost the counters (issue 35, item 2).
 * A throwaway Redis without AOF or snapshots and a fresh PostgreSQL database with the
 * migrations (the idgen_floor table):
 * - 4 CLI processes issue at a steady rate (--floor, retrying through the outage); Redis is
 *   FLUSHALLed, killed and restarted empty mid-run; a fifth process starts after it. Every
 *   ID of all five is compared: no duplicate. The counter came back under a new epoch
 *   (restored from the floor, not restarted at 1), and the fifth process's first
 *   sequence lies above every sequence issued before the loss. Incr and segment mode.
 * - The reproduction: `next --mode incr -n 5`, the day key deleted, the same
 *   command again at once: five new IDs (they were the same five without the floor). */
#include "test_idgen_util.h"

#include "sk_test_pg.h"
#include "sk_test_redis.h"

#include <signal.h>

#define PROCS 5 /* 4 before the loss, 1 after */

static char tmpdir[256], dbname[64], conninfo[512];

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "%s/idgen-floor-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir))
        return -1;
    sk_test_pg_name(dbname, sizeof(dbname), "idgen_floor");
    if (sk_test_pg_create(dbname, 1, conninfo, sizeof(conninfo)) != 0)
        return -1;
    setenv("SECKILL_PG", conninfo, 1); /* the CLI's --floor reads it */
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    sk_test_pg_drop(dbname);
    sk_test_rmtree(tmpdir);
    return 0;
}

typedef struct size_arg {
    const char *path;
    long bytes;
} size_arg;

static int file_reached(void *arg)
{
    size_arg *a = arg;
    return sk_test_file_size(a->path) >= a->bytes;
}

/* The highest sequence among the IDs in path so far (a writer may be mid-line: only
 * whole lines count). */
static uint32_t max_seq(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[64];
    uint32_t m = 0;
    while (fgets(line, sizeof(line), f))
        if (strchr(line, '\n') && (uint32_t)strtoull(line, NULL, 10) > m)
            m = (uint32_t)strtoull(line, NULL, 10);
    fclose(f);
    return m;
}

static uint32_t first_seq(const char *path)
{
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;
    tu_read_ids(path, &ids, &n, &cap);
    assert_true(n > 0);
    uint32_t s = (uint32_t)ids[0];
    free(ids);
    return s;
}

static void run_loss(const char *mode, const char *rate, const char *n, size_t n_each,
                     const char *n_last, size_t n_fifth)
{
    const char *extra[] = {"--appendonly", "no", NULL};
    char err[256];
    sk_test_redis *r = sk_test_redis_start(extra, err, sizeof(err));
    if (!r)
        fail_msg("%s", err);
    const char *url = sk_test_redis_url(r);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "floor%s%d", mode, (int)getpid());
    pid_t pid[PROCS];
    char out[PROCS][512], errp[PROCS][512];
    for (int i = 0; i < PROCS; i++) {
        snprintf(out[i], sizeof(out[i]), "%s/%s-out%d", tmpdir, mode, i);
        snprintf(errp[i], sizeof(errp[i]), "%s/%s-err%d", tmpdir, mode, i);
    }
    for (int i = 0; i < PROCS - 1; i++) {
        char *argv[] = {"idgen", "next", "--redis", (char *)url, "--prefix", prefix, "--mode",
                        (char *)mode, "-n", (char *)n, "--rate", (char *)rate, "--floor",
                        "--retry-ms", "20000", NULL};
        pid[i] = tu_spawn(argv, out[i], errp[i]);
    }
    /* Mid-run: every process has issued a quarter of its IDs. */
    for (int i = 0; i < PROCS - 1; i++) {
        size_arg a = {out[i], (long)(n_each / 4 * 20)};
        if (!tu_wait_for(file_reached, &a, 30000))
            fail_msg("process %d issued too little in 30 s", i);
    }
    redisContext *c = tu_connect(url);
    assert_non_null(c);
    redisReply *rep = redisCommand(c, "FLUSHALL");
    assert_non_null(rep);
    freeReplyObject(rep);
    redisFree(c);
    /* What was issued up to the loss (a lower bound: the processes keep going). */
    uint32_t before = 0;
    for (int i = 0; i < PROCS - 1; i++) {
        uint32_t m = max_seq(out[i]);
        before = m > before ? m : before;
    }
    sk_test_redis_stop(r, SIGKILL);
    if (sk_test_redis_restart(r, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    char *argv5[] = {"idgen", "next", "--redis", (char *)url, "--prefix", prefix, "--mode",
                     (char *)mode, "-n", (char *)n_last, "--floor", NULL};
    pid[PROCS - 1] = tu_spawn(argv5, out[PROCS - 1], errp[PROCS - 1]);
    for (int i = 0; i < PROCS; i++) {
        int st = tu_wait(pid[i]);
        if (st != 0) {
            char buf[512] = "";
            sk_test_read_line(errp[i], buf, sizeof(buf));
            fail_msg("idgen process %d exited %d: %s", i, st, buf);
        }
    }
    /* The fifth started on the restored counter: above what was issued before the loss. */
    uint32_t fifth = first_seq(out[PROCS - 1]);
    print_message("%s: max sequence before the loss >= %u, fifth process's first %u\n", mode,
                  before, fifth);
    assert_true(fifth > before);

    uint64_t *ids = NULL;
    size_t total = 0, cap = 0;
    for (int i = 0; i < PROCS - 1; i++)
        assert_int_equal(tu_read_ids(out[i], &ids, &total, &cap), n_each);
    assert_int_equal(tu_read_ids(out[PROCS - 1], &ids, &total, &cap), n_fifth);
    assert_int_equal(tu_count_dups(ids, total), 0);
    free(ids);

    /* The counter was restored under a new epoch (value = epoch * 2^33 + sequence). */
    c = tu_connect(url);
    assert_non_null(c);
    rep = redisCommand(c, "KEYS icr:%s:*", prefix);
    assert_non_null(rep);
    assert_true(rep->elements >= 1);
    long long v = tu_get(c, rep->element[rep->elements - 1]->str);
    freeReplyObject(rep);
    redisFree(c);
    assert_true((v >> 33) >= 2);
    sk_test_redis_free(r);
}

static void test_loss_incr(void **state)
{
    (void)state;
    run_loss("incr", "1500", "6000", 6000, "1000", 1000);
}

static void test_loss_segment(void **state)
{
    (void)state;
    run_loss("segment", "20000", "80000", 80000, "20000", 20000);
}

/* The reproduction, with the floor: the same command after the key is gone gives
 * five new IDs, whether or not it runs in the same second. */
static void test_deleted_within_second(void **state)
{
    (void)state;
    char err[256];
    sk_test_redis *r = sk_test_redis_start(NULL, err, sizeof(err));
    if (!r)
        fail_msg("%s", err);
    const char *url = sk_test_redis_url(r);
    char prefix[64], o1[512], o2[512];
    snprintf(prefix, sizeof(prefix), "floordel%d", (int)getpid());
    snprintf(o1, sizeof(o1), "%s/del1", tmpdir);
    snprintf(o2, sizeof(o2), "%s/del2", tmpdir);
    char *argv[] = {"idgen", "next", "--redis", (char *)url, "--prefix", prefix, "--mode",
                    "incr", "-n", "5", "--floor", NULL};
    assert_int_equal(tu_wait(tu_spawn(argv, o1, NULL)), 0);
    redisContext *c = tu_connect(url);
    assert_non_null(c);
    redisReply *rep = redisCommand(c, "FLUSHALL");
    freeReplyObject(rep);
    redisFree(c);
    assert_int_equal(tu_wait(tu_spawn(argv, o2, NULL)), 0);
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;
    tu_read_ids(o1, &ids, &n, &cap);
    tu_read_ids(o2, &ids, &n, &cap);
    assert_int_equal(n, 10);
    assert_int_equal(tu_count_dups(ids, n), 0);
    free(ids);
    /* Without $SECKILL_PG, --floor is a usage error. */
    char *save = strdup(getenv("SECKILL_PG"));
    unsetenv("SECKILL_PG");
    assert_int_equal(tu_wait(tu_spawn(argv, o1, "/dev/null")), 2);
    setenv("SECKILL_PG", save, 1);
    free(save);
    sk_test_redis_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deleted_within_second),
        cmocka_unit_test(test_loss_incr),
        cmocka_unit_test(test_loss_segment),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
