/* Integration: the unguessable layout through libidgen and the CLI on the shared Redis.
 * - Segment and incr mode with a secret: every ID unique, stamped now, and its sequence,
 *   recovered with the secret, a distinct number the day's counter really handed out
 *   (incr mode: exactly 1..N, in issue order).
 * - The IDs of one run are not in issue order, though their seconds are.
 * - The CLI: next --scramble, decode --scramble gives the sequences back; --scramble
 *   without a usable $SECKILL_IDGEN_SECRET is a usage error (exit 2). */
#include "test_idgen_util.h"

#define SECRET "integration-test-secret-0123456789"
#define N_SEG 200000
#define N_INCR 2000

static idgen_t *gen_new(const char *url, const char *prefix, idgen_mode mode)
{
    idgen_opts o;
    idgen_opts_init(&o);
    o.mode = mode;
    o.secret = SECRET;
    o.secret_len = strlen(SECRET);
    char err[256];
    idgen_t *g = idgen_new(url, prefix, &o, err, sizeof(err));
    if (!g)
        fail_msg("%s", err);
    return g;
}

/* Decodes ids with the secret into seqs; checks their time. */
static void decode_all(const uint64_t *ids, uint32_t *seqs, size_t n, int64_t t0)
{
    int64_t t1 = (int64_t)time(NULL);
    for (size_t i = 0; i < n; i++) {
        idgen_parts p;
        assert_int_equal(idgen_decode_keyed(ids[i], SECRET, strlen(SECRET), &p), IDGEN_OK);
        assert_true(p.unix_seconds >= t0 - 1 && p.unix_seconds <= t1 + 1);
        assert_true(p.sequence > 0);
        seqs[i] = p.sequence;
    }
}

static void test_segment_scrambled(void **state)
{
    (void)state;
    const char *url = tu_shared_url();
    if (!url)
        skip();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "itest-%d-scrseg", (int)getpid());
    int64_t t0 = (int64_t)time(NULL);
    idgen_t *g = gen_new(url, prefix, IDGEN_MODE_SEGMENT);
    uint64_t *ids = malloc(N_SEG * sizeof(*ids));
    uint32_t *seqs = malloc(N_SEG * sizeof(*seqs));
    assert_non_null(ids);
    assert_non_null(seqs);
    /* Half through idgen_next (per-thread chunks), half through the batch call. */
    for (size_t i = 0; i < N_SEG / 2; i++)
        assert_int_equal(idgen_next(g, &ids[i]), IDGEN_OK);
    assert_int_equal(idgen_next_batch(g, ids + N_SEG / 2, N_SEG / 2), IDGEN_OK);
    idgen_free(g);

    size_t up = 0, same_sec = 0;
    for (size_t i = 1; i < N_SEG; i++)
        if (ids[i] >> 32 == ids[i - 1] >> 32) {
            same_sec++;
            up += ids[i] > ids[i - 1];
        }
    decode_all(ids, seqs, N_SEG, t0);
    /* A sequence is a counter value: within what the day key holds. */
    redisContext *c = tu_connect(url);
    assert_non_null(c);
    redisReply *keys = redisCommand(c, "KEYS icr:%s:*", prefix);
    assert_non_null(keys);
    long long top = 0;
    for (size_t i = 0; i < keys->elements; i++)
        top += tu_get(c, keys->element[i]->str);
    freeReplyObject(keys);
    redisFree(c);
    for (size_t i = 0; i < N_SEG; i++)
        assert_true((long long)seqs[i] <= top);
    assert_int_equal(tu_count_dups(ids, N_SEG), 0);
    uint64_t *s64 = malloc(N_SEG * sizeof(*s64));
    assert_non_null(s64);
    for (size_t i = 0; i < N_SEG; i++)
        s64[i] = seqs[i];
    assert_int_equal(tu_count_dups(s64, N_SEG), 0); /* a run straddling midnight: skip */
    /* In issue order, a plain layout goes up every time; this one about half the time. */
    print_message("pairs in one second %zu, increasing %.3f\n", same_sec,
                  same_sec ? (double)up / (double)same_sec : 0.0);
    assert_true(same_sec > 1000);
    assert_true(up > same_sec * 4 / 10 && up < same_sec * 6 / 10);
    free(s64);
    free(seqs);
    free(ids);
    tu_cleanup(url, prefix);
}

static void test_incr_scrambled(void **state)
{
    (void)state;
    const char *url = tu_shared_url();
    if (!url)
        skip();
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "itest-%d-scrincr", (int)getpid());
    int64_t t0 = (int64_t)time(NULL);
    idgen_t *g = gen_new(url, prefix, IDGEN_MODE_INCR);
    uint64_t ids[N_INCR];
    uint32_t seqs[N_INCR];
    for (size_t i = 0; i < N_INCR; i++)
        assert_int_equal(idgen_next(g, &ids[i]), IDGEN_OK);
    idgen_free(g);
    decode_all(ids, seqs, N_INCR, t0);
    /* One INCR per ID on a fresh prefix: the sequences are 1..N in order (unless the run
     * straddled midnight, which restarts the day's counter at 1). */
    idgen_parts first, last;
    idgen_decode(ids[0], &first);
    idgen_decode(ids[N_INCR - 1], &last);
    if (first.unix_seconds / 86400 == last.unix_seconds / 86400)
        for (size_t i = 0; i < N_INCR; i++)
            assert_int_equal(seqs[i], i + 1);
    assert_int_equal(tu_count_dups(ids, N_INCR), 0);
    tu_cleanup(url, prefix);
}

static void test_cli_scramble(void **state)
{
    (void)state;
    const char *url = tu_shared_url();
    if (!url)
        skip();
    char prefix[64], dir[256], out[512], err[512];
    snprintf(prefix, sizeof(prefix), "itest-%d-scrcli", (int)getpid());
    snprintf(dir, sizeof(dir), "%s/idgen-scr-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(err, sizeof(err), "%s/err", dir);

    /* Without the secret in the environment: a usage error, no ID. */
    unsetenv("SECKILL_IDGEN_SECRET");
    char *next[] = {"idgen", "next", "--redis", (char *)url, "--prefix", prefix, "--mode",
                    "incr", "-n", "50", "--scramble", NULL};
    assert_int_equal(tu_wait(tu_spawn(next, out, err)), 2);
    assert_int_equal(sk_test_file_size(out), 0);
    setenv("SECKILL_IDGEN_SECRET", "too-short", 1);
    assert_int_equal(tu_wait(tu_spawn(next, out, err)), 2);

    setenv("SECKILL_IDGEN_SECRET", SECRET, 1);
    assert_int_equal(tu_wait(tu_spawn(next, out, err)), 0);
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;
    assert_int_equal(tu_read_ids(out, &ids, &n, &cap), 50);
    /* decode --scramble gives back the sequences 1..50 the counter handed out. */
    char idbuf[3][24];
    for (int i = 0; i < 3; i++)
        snprintf(idbuf[i], sizeof(idbuf[i]), "%llu", (unsigned long long)ids[i * 24]);
    char *dec[] = {"idgen", "decode", "--scramble", idbuf[0], idbuf[1], idbuf[2], NULL};
    assert_int_equal(tu_wait(tu_spawn(dec, out, err)), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    char line[256];
    for (int i = 0; i < 3; i++) {
        assert_non_null(fgets(line, sizeof(line), f));
        char want[64];
        snprintf(want, sizeof(want), "\"sequence\":%d}", i * 24 + 1);
        if (!strstr(line, want))
            fail_msg("decode --scramble: %s, want %s", line, want);
    }
    fclose(f);
    unsetenv("SECKILL_IDGEN_SECRET");
    free(ids);
    unlink(out);
    unlink(err);
    rmdir(dir);
    tu_cleanup(url, prefix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_scrambled),
        cmocka_unit_test(test_incr_scrambled),
        cmocka_unit_test(test_cli_scramble),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
