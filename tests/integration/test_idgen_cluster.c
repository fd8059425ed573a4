/* libidgen on a Redis Cluster (throwaway 3+3, with a password): 4 idgen CLI processes x
 * 1,000,000 IDs in segment mode on a redis-cluster:// URL while the test migrates the
 * counter key's slot to another master mid-run (the generators follow MOVED/ASK):
 * 0 duplicates, every process done, and leases taken after the migration. The counter
 * key icr:<prefix>:<day> is the only key of every command (INCRBY, EXPIRE), so each
 * round trip is one slot by construction. */
#include "test_idgen_util.h"

#include "rcluster.h"
#include "sk_test_cluster.h"

#define PROCS 4

static char tmpdir[256];

/* The counter key, looked for on every master; "" until it exists. */
static void find_counter(rcl_ctx *c, const char *prefix, char *key, size_t keysz)
{
    char pattern[128];
    snprintf(pattern, sizeof(pattern), "icr:%s:*", prefix);
    key[0] = '\0';
    for (int m = 0; m < rcl_master_count(c) && !key[0]; m++) {
        const char *v[2] = {"KEYS", pattern};
        redisReply *r = rcl_command_on_master(c, m, 2, v, NULL);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
            snprintf(key, keysz, "%s", r->element[0]->str);
        if (r)
            freeReplyObject(r);
    }
}

static long long counter(rcl_ctx *c, const char *key)
{
    const char *v[2] = {"GET", key};
    redisReply *r = rcl_command_argv(c, 2, v, NULL);
    assert_non_null(r);
    long long n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return n;
}

static void test_segment_4x1m_with_migration(void **state)
{
    char err[512];
    sk_test_cluster *cl = sk_test_cluster_start("idgen-pw", err, sizeof(err));
    if (!cl)
        fail_msg("cluster: %s", err);
    const char *url = sk_test_cluster_url(cl);
    struct timeval tv = {2, 0};
    rcl_ctx *c = rcl_connect(url, tv, err, sizeof(err));
    if (!c)
        fail_msg("rcl_connect: %s", err);
    snprintf(tmpdir, sizeof(tmpdir), "%s/idgen-cluster-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(tmpdir));
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "clu-%d", (int)getpid());

    pid_t pid[PROCS];
    char out[PROCS][512], errf[PROCS][512];
    for (int i = 0; i < PROCS; i++) {
        snprintf(out[i], sizeof(out[i]), "%s/out%d", tmpdir, i);
        snprintf(errf[i], sizeof(errf[i]), "%s/err%d", tmpdir, i);
        char *argv[] = {"idgen", "next", "--redis", (char *)url, "--prefix", prefix,
                        "--mode", "segment", "-n", "1000000", NULL};
        pid[i] = tu_spawn(argv, out[i], errf[i]);
    }
    /* As soon as the counter exists, move its slot. */
    char key[128] = "";
    int64_t deadline = sk_test_now_ms() + 30000;
    while (!key[0] && sk_test_now_ms() < deadline) {
        find_counter(c, prefix, key, sizeof(key));
        if (!key[0])
            sk_test_pause_ms(5);
    }
    assert_true(key[0] != '\0');
    int slot = rcl_keyslot(key, strlen(key));
    int to = sk_test_cluster_other_master(cl, slot);
    assert_true(to >= 0);
    if (sk_test_cluster_migrate_slot(cl, slot, to, err, sizeof(err)) != 0)
        fail_msg("migrate: %s", err);
    long long after_migration = counter(c, key);
    int running = 0, status[PROCS];
    for (int i = 0; i < PROCS; i++) {
        int st;
        status[i] = -1;
        if (waitpid(pid[i], &st, WNOHANG) == 0)
            running++;
        else
            status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    /* The migration must have happened during the run, or it proved nothing. */
    assert_true(running > 0);
    for (int i = 0; i < PROCS; i++) {
        int st = status[i] >= 0 ? status[i] : tu_wait(pid[i]);
        if (st != 0) {
            char buf[512] = "";
            FILE *f = fopen(errf[i], "r");
            if (f) {
                buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
                fclose(f);
            }
            fail_msg("idgen process %d exited %d: %s", i, st, buf);
        }
    }
    uint64_t *ids = NULL;
    size_t total = 0, cap = 0;
    for (int i = 0; i < PROCS; i++) {
        assert_int_equal(tu_read_ids(out[i], &ids, &total, &cap), 1000000);
        unlink(out[i]);
        unlink(errf[i]);
    }
    rmdir(tmpdir);
    assert_int_equal(tu_count_dups(ids, total), 0);
    free(ids);
    /* Leases after the migration went to the new master (through MOVED). */
    assert_int_equal(sk_test_cluster_master_of(cl, slot), to);
    long long final = counter(c, key);
    print_message("counter %s: %lld at the migration, %lld at the end; %d of %d running\n", key,
                  after_migration, final, running, PROCS);
    assert_true(final > after_migration);
    rcl_free(c);
    sk_test_cluster_free(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_4x1m_with_migration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
