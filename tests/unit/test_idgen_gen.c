/* Unit tests of the generator logic (idgen_gen.c) over an in-memory counter store and an
 * injected clock: both modes, day rollover, clocks that step back within a day and
 * across midnight, the end of the 32-bit sequence, counter resets, a store that is down
 * and comes back, the adaptive segment size and many threads. No network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idgen.h"
#include "idgen_core.h"
#include "idgen_int.h"

/* ---- a fake counter store ---- */

#define FAKE_KEYS 16
typedef struct fake {
    pthread_mutex_t mu;
    char key[FAKE_KEYS][IDGEN_KEY_MAX];
    uint64_t val[FAKE_KEYS];
    int64_t ttl[FAKE_KEYS];
    int nkeys;
    int down;
    uint64_t calls;
} fake;

static int fake_slot(fake *f, const char *key)
{
    for (int i = 0; i < f->nkeys; i++)
        if (strcmp(f->key[i], key) == 0)
            return i;
    assert_true(f->nkeys < FAKE_KEYS);
    snprintf(f->key[f->nkeys], IDGEN_KEY_MAX, "%s", key);
    f->val[f->nkeys] = 0;
    f->ttl[f->nkeys] = 0;
    return f->nkeys++;
}

static int fake_incrby(void *arg, const char *key, uint64_t n, int64_t ttl, uint64_t *last,
                       char *err, size_t errsz)
{
    fake *f = arg;
    pthread_mutex_lock(&f->mu);
    f->calls++;
    if (f->down) {
        pthread_mutex_unlock(&f->mu);
        snprintf(err, errsz, "fake: connection refused");
        return IDGEN_ERR_REDIS;
    }
    int i = fake_slot(f, key);
    f->val[i] += n;
    if (ttl > 0)
        f->ttl[i] = ttl;
    *last = f->val[i];
    pthread_mutex_unlock(&f->mu);
    return IDGEN_OK;
}

static void fake_destroy(void *arg)
{
    (void)arg; /* the test owns the fake */
}

static void fake_set(fake *f, const char *key, uint64_t v)
{
    pthread_mutex_lock(&f->mu);
    f->val[fake_slot(f, key)] = v;
    pthread_mutex_unlock(&f->mu);
}

static uint64_t fake_get(fake *f, const char *key)
{
    pthread_mutex_lock(&f->mu);
    uint64_t v = f->val[fake_slot(f, key)];
    pthread_mutex_unlock(&f->mu);
    return v;
}

static void fake_set_down(fake *f, int down)
{
    pthread_mutex_lock(&f->mu);
    f->down = down;
    pthread_mutex_unlock(&f->mu);
}

/* ---- an injected clock ---- */

static _Atomic int64_t clock_now_ms;
static int64_t test_clock(void *arg)
{
    (void)arg;
    return atomic_load(&clock_now_ms);
}

/* Day D = 2033-05-18 (any day works: the keys live in the fake). */
#define DAY_D     ((int64_t)(1999987200 / 86400))
#define MIDNIGHT  ((DAY_D + 1) * 86400) /* the first second of day D+1 */
#define OTHER_DAY 1000000000ULL        /* day D+1's counter starts here: tells days apart */

typedef struct fixture {
    fake f;
    idgen_t *g;
    char key_d[IDGEN_KEY_MAX], key_d1[IDGEN_KEY_MAX];
} fixture;

static idgen_t *make(fixture *fx, idgen_mode mode, uint32_t seg_min, uint32_t seg_max,
                     int timeout_ms)
{
    idgen_opts o;
    idgen_opts_init(&o);
    o.mode = mode;
    o.segment_min = seg_min;
    o.segment_max = seg_max;
    o.timeout_ms = timeout_ms;
    o.clock_ms = test_clock;
    idgen_backend be = {.incrby = fake_incrby, .destroy = fake_destroy, .arg = &fx->f};
    char err[256];
    idgen_t *g = idgen_new_with_backend(&be, "t", &o, err, sizeof(err));
    assert_non_null(g);
    return g;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    pthread_mutex_init(&fx->f.mu, NULL);
    idgen_core_day_key("t", DAY_D, fx->key_d, sizeof(fx->key_d));
    idgen_core_day_key("t", DAY_D + 1, fx->key_d1, sizeof(fx->key_d1));
    fake_set(&fx->f, fx->key_d1, OTHER_DAY);
    atomic_store(&clock_now_ms, (MIDNIGHT - 3600) * 1000);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    idgen_free(fx->g);
    pthread_mutex_destroy(&fx->f.mu);
    free(fx);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void assert_unique(uint64_t *ids, size_t n)
{
    qsort(ids, n, sizeof(*ids), cmp_u64);
    for (size_t i = 1; i < n; i++)
        if (ids[i] == ids[i - 1])
            fail_msg("duplicate ID %llu", (unsigned long long)ids[i]);
}

/* The invariant: day D's IDs carry D's numbers (< OTHER_DAY), day D+1's carry D+1's. */
static void assert_day_matches(uint64_t id)
{
    idgen_parts p;
    assert_int_equal(idgen_decode(id, &p), IDGEN_OK);
    int64_t day = idgen_core_day(p.unix_seconds);
    if (day == DAY_D)
        assert_true(p.sequence < OTHER_DAY);
    else if (day == DAY_D + 1)
        assert_true(p.sequence > OTHER_DAY);
    else
        fail_msg("ID %llu stamped with day %lld", (unsigned long long)id, (long long)day);
}

static void test_incr_basic(void **state)
{
    fixture *fx = *state;
    fx->g = make(fx, IDGEN_MODE_INCR, 1000, 1000000, 1000);
    uint64_t prev = 0;
    for (int i = 1; i <= 100; i++) {
        uint64_t id;
        assert_int_equal(idgen_next(fx->g, &id), IDGEN_OK);
        idgen_parts p;
        idgen_decode(id, &p);
        assert_int_equal(p.unix_seconds, MIDNIGHT - 3600);
        assert_int_equal(p.sequence, i);
        assert_true(id > prev);
        prev = id;
    }
    assert_int_equal(fake_get(&fx->f, fx->key_d), 100);
    /* A batch is one INCRBY. */
    uint64_t before = fx->f.calls, ids[50];
    assert_int_equal(idgen_next_batch(fx->g, ids, 50), IDGEN_OK);
    assert_int_equal(fx->f.calls - before, 1);
    for (int i = 0; i < 50; i++)
        assert_int_equal((uint32_t)ids[i], 101 + i);
    /* The first lease of the day set the expiry: end of day D + 3 days. */
    assert_int_equal(fx->f.ttl[fake_slot(&fx->f, fx->key_d)], 3600 + 3 * 86400);
}

static void test_segment_basic(void **state)
{
    fixture *fx = *state;
    fx->g = make(fx, IDGEN_MODE_SEGMENT, 100, 100, 1000);
    uint64_t ids[1000];
    for (int i = 0; i < 1000; i++)
        assert_int_equal(idgen_next(fx->g, &ids[i]), IDGEN_OK);
    /* Fixed block size 100: the numbers are 1..1000 in order, 10 or 11 leases. */
    for (int i = 0; i < 1000; i++)
        assert_int_equal((uint32_t)ids[i], i + 1);
    idgen_stats st;
    idgen_get_stats(fx->g, &st);
    assert_true(st.leases >= 10 && st.leases <= 11);
    assert_int_equal(st.segment_size, 100);
    assert_true(fake_get(&fx->f, fx->key_d) <= 1100);
}

static void test_rollover(idgen_mode mode, void **state)
{
    fixture *fx = *state;
    atomic_store(&clock_now_ms, MIDNIGHT * 1000 - 1000);
    fx->g = make(fx, mode, 1000, 1000, 1000);
    uint64_t ids[400];
    size_t n = 0;
    /* Half a second either side of midnight, 100 IDs each 0.5 s. */
    for (int step = 0; step < 4; step++) {
        for (int i = 0; i < 100; i++)
            assert_int_equal(idgen_next(fx->g, &ids[n++]), IDGEN_OK);
        atomic_fetch_add(&clock_now_ms, 500);
    }
    for (size_t i = 0; i < n; i++)
        assert_day_matches(ids[i]);
    /* The first 200 are day D, the last 200 day D+1. */
    idgen_parts p;
    idgen_decode(ids[199], &p);
    assert_int_equal(idgen_core_day(p.unix_seconds), DAY_D);
    idgen_decode(ids[200], &p);
    assert_int_equal(p.unix_seconds, MIDNIGHT);
    assert_int_equal(p.sequence, OTHER_DAY + 1);
    assert_unique(ids, n);
    if (mode == IDGEN_MODE_SEGMENT) {
        idgen_stats st;
        idgen_get_stats(fx->g, &st);
        /* The rest of day D's block, never reused: 800, less what the thread's chunk
         * (64 at a time) and the misses at midnight took out of the block. */
        assert_true(st.dropped >= 700 && st.dropped <= 1000);
    }
}

static void test_rollover_incr(void **state)
{
    test_rollover(IDGEN_MODE_INCR, state);
}

static void test_rollover_segment(void **state)
{
    test_rollover(IDGEN_MODE_SEGMENT, state);
}

static void test_clock_back(idgen_mode mode, void **state)
{
    fixture *fx = *state;
    fx->g = make(fx, mode, 50, 50, 1000);
    uint64_t ids[600];
    size_t n = 0;
    int64_t t0 = (MIDNIGHT - 3600) * 1000;
    atomic_store(&clock_now_ms, t0);
    for (int i = 0; i < 200; i++)
        assert_int_equal(idgen_next(fx->g, &ids[n++]), IDGEN_OK);
    /* Step back 10 s within the day: stamps stay at the high water, never earlier. */
    atomic_store(&clock_now_ms, t0 - 10000);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(idgen_next(fx->g, &ids[n]), IDGEN_OK);
        idgen_parts p;
        idgen_decode(ids[n++], &p);
        assert_int_equal(p.unix_seconds, t0 / 1000);
    }
    /* Across midnight: at D+1 00:00:05, back to D 23:59:58. */
    atomic_store(&clock_now_ms, (MIDNIGHT + 5) * 1000);
    for (int i = 0; i < 100; i++)
        assert_int_equal(idgen_next(fx->g, &ids[n++]), IDGEN_OK);
    atomic_store(&clock_now_ms, (MIDNIGHT - 2) * 1000);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(idgen_next(fx->g, &ids[n]), IDGEN_OK);
        idgen_parts p;
        idgen_decode(ids[n++], &p);
        assert_int_equal(p.unix_seconds, MIDNIGHT + 5);
    }
    for (size_t i = 0; i < n; i++)
        assert_day_matches(ids[i]);
    assert_unique(ids, n);
}

static void test_clock_back_incr(void **state)
{
    test_clock_back(IDGEN_MODE_INCR, state);
}

static void test_clock_back_segment(void **state)
{
    test_clock_back(IDGEN_MODE_SEGMENT, state);
}

static void test_exhausted(idgen_mode mode, void **state)
{
    fixture *fx = *state;
    fake_set(&fx->f, fx->key_d, IDGEN_SEQ_MAX - 30);
    fx->g = make(fx, mode, 8, 8, 200);
    uint32_t prev = 0;
    int ok = 0, rc;
    uint64_t id;
    while ((rc = idgen_next(fx->g, &id)) == IDGEN_OK) {
        assert_true((uint32_t)id > prev); /* never a wrap */
        prev = (uint32_t)id;
        assert_true(++ok <= 30);
    }
    assert_int_equal(rc, IDGEN_ERR_EXHAUSTED);
    assert_true(idgen_err_retriable(rc));
    assert_non_null(strstr(idgen_errstr(fx->g), "exhausted"));
    assert_int_equal(ok, 30); /* every number up to 2^32-1, then the error */
    assert_int_equal(prev, UINT32_MAX);
    assert_int_equal(idgen_next(fx->g, &id), IDGEN_ERR_EXHAUSTED); /* and it stays */
    /* The next UTC day works again. */
    atomic_store(&clock_now_ms, (MIDNIGHT + 1) * 1000);
    assert_int_equal(idgen_next(fx->g, &id), IDGEN_OK);
    assert_day_matches(id);
}

static void test_exhausted_incr(void **state)
{
    test_exhausted(IDGEN_MODE_INCR, state);
}

static void test_exhausted_segment(void **state)
{
    test_exhausted(IDGEN_MODE_SEGMENT, state);
}

static void test_reset(idgen_mode mode, void **state)
{
    fixture *fx = *state;
    fx->g = make(fx, mode, 10, 10, 1000);
    uint64_t ids[2000];
    size_t n = 0;
    for (int i = 0; i < 500; i++)
        assert_int_equal(idgen_next(fx->g, &ids[n++]), IDGEN_OK);
    uint32_t high = 0;
    for (size_t i = 0; i < n; i++)
        high = (uint32_t)ids[i] > high ? (uint32_t)ids[i] : high;
    /* Redis loses the key (restart without persistence, failover to a stale replica). */
    fake_set(&fx->f, fx->key_d, 0);
    int resets = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t id;
        int rc = idgen_next(fx->g, &id);
        if (rc == IDGEN_ERR_RESET) {
            resets++;
            assert_non_null(strstr(idgen_errstr(fx->g), "went back"));
            continue;
        }
        assert_int_equal(rc, IDGEN_OK);
        ids[n++] = id;
        if (resets) /* nothing handed out after the report reuses a number */
            assert_true((uint32_t)id > high);
    }
    assert_int_equal(resets, 1); /* reported, once */
    idgen_stats st;
    idgen_get_stats(fx->g, &st);
    assert_int_equal(st.resets, 1);
    assert_true(fake_get(&fx->f, fx->key_d) > high); /* the counter was pushed past */
    assert_unique(ids, n);
}

static void test_reset_incr(void **state)
{
    test_reset(IDGEN_MODE_INCR, state);
}

static void test_reset_segment(void **state)
{
    test_reset(IDGEN_MODE_SEGMENT, state);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_down_and_back(idgen_mode mode, void **state)
{
    fixture *fx = *state;
    fx->g = make(fx, mode, 100, 100, 300);
    uint64_t ids[400], id;
    size_t n = 0;
    for (int i = 0; i < 150; i++)
        assert_int_equal(idgen_next(fx->g, &ids[n++]), IDGEN_OK);
    fake_set_down(&fx->f, 1);
    /* Segment mode serves what it already holds, then errs; never a made-up ID. */
    int64_t t0 = mono_ms();
    int rc, served = 0;
    while ((rc = idgen_next(fx->g, &id)) == IDGEN_OK) {
        ids[n++] = id;
        assert_true(++served <= 200);
    }
    assert_int_equal(rc, IDGEN_ERR_REDIS);
    assert_true(idgen_err_retriable(rc));
    assert_true(mono_ms() - t0 < 300 + 700); /* within timeout_ms (+ slack for ASan) */
    assert_true(strlen(idgen_errstr(fx->g)) > 0);
    if (mode == IDGEN_MODE_INCR)
        assert_int_equal(served, 0);
    /* Back: it recovers by itself within a few calls. */
    fake_set_down(&fx->f, 0);
    int64_t deadline = mono_ms() + 5000;
    while ((rc = idgen_next(fx->g, &id)) != IDGEN_OK && mono_ms() < deadline)
        ;
    assert_int_equal(rc, IDGEN_OK);
    ids[n++] = id;
    for (int i = 0; i < 100; i++)
        assert_int_equal(idgen_next(fx->g, &ids[n++]), IDGEN_OK);
    assert_unique(ids, n);
}

static void test_down_incr(void **state)
{
    test_down_and_back(IDGEN_MODE_INCR, state);
}

static void test_down_segment(void **state)
{
    test_down_and_back(IDGEN_MODE_SEGMENT, state);
}

static void test_segment_grows(void **state)
{
    fixture *fx = *state;
    fx->g = make(fx, IDGEN_MODE_SEGMENT, 100, 100000, 1000);
    uint64_t id;
    for (int i = 0; i < 300000; i++)
        assert_int_equal(idgen_next(fx->g, &id), IDGEN_OK);
    idgen_stats st;
    idgen_get_stats(fx->g, &st);
    /* Consumed far faster than one block per second: the size went up, within bounds,
     * so 300,000 IDs took far fewer than 3,000 leases. */
    assert_true(st.segment_size > 100 && st.segment_size <= 100000);
    assert_true(st.leases < 300);
}

#define THREADS 4
#define PER_THREAD 100000
typedef struct tharg {
    idgen_t *g;
    uint64_t *ids;
    int batch;
} tharg;

static void *thread_main(void *arg)
{
    tharg *a = arg;
    for (int i = 0; i < PER_THREAD;) {
        if (a->batch) {
            int k = PER_THREAD - i < 37 ? PER_THREAD - i : 37;
            if (idgen_next_batch(a->g, a->ids + i, (size_t)k) != IDGEN_OK)
                return (void *)1;
            i += k;
        } else if (idgen_next(a->g, &a->ids[i++]) != IDGEN_OK) {
            return (void *)1;
        }
    }
    return NULL;
}

static void run_threads(fixture *fx, idgen_mode mode, int batch)
{
    fx->g = make(fx, mode, 64, 4096, 2000);
    uint64_t *ids = malloc(sizeof(uint64_t) * THREADS * PER_THREAD);
    pthread_t th[THREADS];
    tharg a[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i] = (tharg){fx->g, ids + (size_t)i * PER_THREAD, batch};
        pthread_create(&th[i], NULL, thread_main, &a[i]);
    }
    /* Midnight passes while they run. */
    atomic_store(&clock_now_ms, MIDNIGHT * 1000 - 2);
    for (int i = 0; i < 20; i++) {
        atomic_fetch_add(&clock_now_ms, 1);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        assert_null(r);
    }
    for (size_t i = 0; i < (size_t)THREADS * PER_THREAD; i++)
        assert_day_matches(ids[i]);
    assert_unique(ids, (size_t)THREADS * PER_THREAD);
    free(ids);
}

static void test_threads_segment(void **state)
{
    run_threads(*state, IDGEN_MODE_SEGMENT, 0);
}

static void test_threads_segment_batch(void **state)
{
    run_threads(*state, IDGEN_MODE_SEGMENT, 1);
}

static void test_args(void **state)
{
    fixture *fx = *state;
    idgen_backend be = {.incrby = fake_incrby, .destroy = fake_destroy, .arg = &fx->f};
    char err[256];
    assert_null(idgen_new_with_backend(&be, "a:b", NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "prefix"));
    idgen_opts o;
    idgen_opts_init(&o);
    o.segment_min = 10;
    o.segment_max = 5;
    assert_null(idgen_new_with_backend(&be, "ok", &o, err, sizeof(err)));
    idgen_opts_init(&o);
    o.timeout_ms = 0;
    assert_null(idgen_new_with_backend(&be, "ok", &o, err, sizeof(err)));
    idgen_opts_init(&o);
    o.wait_replicas = 1;
    o.wait_timeout_ms = 0; /* WAIT 1 0 would block forever */
    assert_null(idgen_new_with_backend(&be, "ok", &o, err, sizeof(err)));
    assert_non_null(strstr(err, "WAIT"));
    assert_null(idgen_new("http://x", "ok", NULL, err, sizeof(err)));
    assert_null(idgen_new(NULL, "ok", NULL, err, sizeof(err)));
    idgen_free(NULL);
    uint64_t id;
    assert_int_equal(idgen_next(NULL, &id), IDGEN_ERR_ARG);
    /* A clock before the epoch is an error, not an ID. */
    atomic_store(&clock_now_ms, (IDGEN_EPOCH_UNIX - 10) * 1000);
    fx->g = make(fx, IDGEN_MODE_SEGMENT, 10, 10, 200);
    assert_int_equal(idgen_next(fx->g, &id), IDGEN_ERR_CLOCK);
    assert_false(idgen_err_retriable(IDGEN_ERR_CLOCK));
    assert_int_equal(idgen_next_batch(fx->g, NULL, 0), IDGEN_OK);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_incr_basic),          T(test_segment_basic),     T(test_rollover_incr),
        T(test_rollover_segment),    T(test_clock_back_incr),   T(test_clock_back_segment),
        T(test_exhausted_incr),      T(test_exhausted_segment), T(test_reset_incr),
        T(test_reset_segment),       T(test_down_incr),         T(test_down_segment),
        T(test_segment_grows),       T(test_threads_segment),   T(test_threads_segment_batch),
        T(test_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
