/* Integration: the idgen CLI as separate processes sharing one Redis.
 * - 4 processes x 1,000,000 IDs in segment mode on the shared Redis: 0 duplicates.
 * - 4 processes x 100,000 IDs in incr mode: 0 duplicates, and the counter equals the
 *   number of IDs (incr mode wastes nothing). On a throwaway Redis: the shared one fsyncs
 *   every write (appendfsync always), which would make 400,000 INCRs take minutes and
 *   slow everyone else's tests; uniqueness does not depend on fsync.
 * - The CLI's contract: exit 2 for a bad argument or ID, 1 for Redis down, decode's JSON. */
#include "test_idgen_util.h"

#include "sk_test_redis.h"

#define PROCS 4

static char tmpdir[256];

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "%s/idgen-procs-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < PROCS; i++) {
        char p[512];
        snprintf(p, sizeof(p), "%s/out%d", tmpdir, i);
        unlink(p);
        snprintf(p, sizeof(p), "%s/err%d", tmpdir, i);
        unlink(p);
    }
    rmdir(tmpdir);
    return 0;
}

static void run_procs(const char *url, const char *prefix, const char *mode, const char *n,
                      size_t expect_each)
{
    pid_t pid[PROCS];
    char out[PROCS][512], err[PROCS][512];
    for (int i = 0; i < PROCS; i++) {
        snprintf(out[i], sizeof(out[i]), "%s/out%d", tmpdir, i);
        snprintf(err[i], sizeof(err[i]), "%s/err%d", tmpdir, i);
        char *argv[] = {"idgen", "next", "--redis", (char *)url, "--prefix", (char *)prefix,
                        "--mode", (char *)mode, "-n", (char *)n, NULL};
        pid[i] = tu_spawn(argv, out[i], err[i]);
    }
    for (int i = 0; i < PROCS; i++) {
        int st = tu_wait(pid[i]);
        if (st != 0) {
            char buf[512] = "";
            FILE *f = fopen(err[i], "r");
            if (f) {
                size_t k = fread(buf, 1, sizeof(buf) - 1, f);
                buf[k] = 0;
                fclose(f);
            }
            fail_msg("idgen process %d exited %d: %s", i, st, buf);
        }
    }
    uint64_t *ids = NULL;
    size_t total = 0, cap = 0;
    for (int i = 0; i < PROCS; i++)
        assert_int_equal(tu_read_ids(out[i], &ids, &total, &cap), expect_each);
    assert_int_equal(total, expect_each * PROCS);
    /* Every ID is stamped around now (the real clock). */
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; i < total; i++) {
        idgen_parts p;
        assert_int_equal(idgen_decode(ids[i], &p), IDGEN_OK);
        assert_true(p.unix_seconds > now - 600 && p.unix_seconds <= now + 5);
        assert_true(p.sequence > 0);
    }
    assert_int_equal(tu_count_dups(ids, total), 0);
    free(ids);
}

static void test_segment_4x1m(void **state)
{
    (void)state;
    const char *url = tu_shared_url();
    if (!url)
        skip();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "itest-%d-procseg", (int)getpid());
    run_procs(url, prefix, "segment", "1000000", 1000000);
    tu_cleanup(url, prefix);
}

static void test_incr_4x100k(void **state)
{
    (void)state;
    char err[256];
    sk_test_redis *r = sk_test_redis_start(NULL, err, sizeof(err));
    if (!r)
        fail_msg("%s", err);
    const char *prefix = "procincr";
    run_procs(sk_test_redis_url(r), prefix, "incr", "100000", 100000);
    /* incr mode wastes no number: the day's counter is exactly the IDs handed out (the
     * run could straddle midnight: then the two days' counters add up). */
    redisContext *c = tu_connect(sk_test_redis_url(r));
    assert_non_null(c);
    redisReply *keys = redisCommand(c, "KEYS icr:%s:*", prefix);
    assert_non_null(keys);
    long long sum = 0;
    for (size_t i = 0; i < keys->elements; i++)
        sum += tu_get(c, keys->element[i]->str);
    assert_int_equal(sum, PROCS * 100000);
    freeReplyObject(keys);
    redisFree(c);
    sk_test_redis_free(r);
}

/* Runs the CLI, captures stdout (first line into out) and returns its exit status. */
static int cli(char *out, size_t outsz, char *const argv[])
{
    char path[512];
    snprintf(path, sizeof(path), "%s/cli.out", tmpdir);
    int st = tu_wait(tu_spawn(argv, path, "/dev/null"));
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t k = fread(out, 1, outsz - 1, f);
        out[k] = 0;
        fclose(f);
    }
    unlink(path);
    return st;
}

static void test_cli_contract(void **state)
{
    (void)state;
    char out[4096];
    /* decode: the exact line, for an ID built from a known time and sequence. */
    uint64_t id;
    assert_int_equal(idgen_encode(1795330800, 42, &id), IDGEN_OK); /* 2026-11-22T07:00:00Z */
    char ids[32], ids2[32];
    snprintf(ids, sizeof(ids), "%llu", (unsigned long long)id);
    snprintf(ids2, sizeof(ids2), "%llu", (unsigned long long)id + 1);
    char want[512];
    snprintf(want, sizeof(want),
             "{\"id\":\"%s\",\"unix_seconds\":1795330800,\"utc\":\"2026-11-22T07:00:00Z\","
             "\"sequence\":42}\n{\"id\":\"%s\",\"unix_seconds\":1795330800,"
             "\"utc\":\"2026-11-22T07:00:00Z\",\"sequence\":43}\n",
             ids, ids2);
    assert_int_equal(cli(out, sizeof(out), (char *[]){"idgen", "decode", ids, ids2, NULL}), 0);
    assert_string_equal(out, want);

    /* Bad IDs and bad arguments: exit 2, nothing on stdout. */
    char *bad[][6] = {
        {"idgen", "decode", "abc", NULL},
        {"idgen", "decode", "-5", NULL},
        {"idgen", "decode", "9223372036854775808", NULL}, /* bit 63 */
        {"idgen", "decode", "007", NULL},                 /* leading zero: sk_id.h */
        {"idgen", "decode", "99999999999999999999999", NULL},
        {"idgen", "decode", NULL},
        {"idgen", "next", "--mode", "fast", NULL},
        {"idgen", "next", "-n", "0", NULL},
        {"idgen", "next", "-n", "x", NULL},
        {"idgen", "next", "--prefix", "a:b", "--redis", NULL},
        {"idgen", "frobnicate", NULL},
        {"idgen", "bench", "--seconds", "0", NULL},
        {"idgen", "bench", "--threads", "0", NULL},
        {"idgen", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int st = cli(out, sizeof(out), bad[i]);
        if (st != 2)
            fail_msg("idgen %s %s: exit %d, want 2", bad[i][1] ? bad[i][1] : "",
                     bad[i][1] && bad[i][2] ? bad[i][2] : "", st);
        assert_string_equal(out, "");
    }
    char *badprefix[] = {"idgen", "next", "--redis", "redis://127.0.0.1:1", "--prefix", "a:b",
                         NULL};
    assert_int_equal(cli(out, sizeof(out), badprefix), 2);

    /* Redis down: exit 1, no ID. */
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", sk_test_free_port());
    char *down_incr[] = {"idgen", "next", "--redis", url, "--mode", "incr", NULL};
    char *down_seg[] = {"idgen", "next", "--redis", url, "--mode", "segment", "-n", "3", NULL};
    assert_int_equal(cli(out, sizeof(out), down_incr), 1);
    assert_string_equal(out, "");
    assert_int_equal(cli(out, sizeof(out), down_seg), 1);
    assert_string_equal(out, "");

    /* --help is not an error. */
    assert_int_equal(cli(out, sizeof(out), (char *[]){"idgen", "--help", NULL}), 0);
    assert_non_null(strstr(out, "usage: idgen next"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_contract),
        cmocka_unit_test(test_segment_4x1m),
        cmocka_unit_test(test_incr_4x100k),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
