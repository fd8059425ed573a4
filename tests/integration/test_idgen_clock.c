/* Integration: simulated midnight and clock steps against the shared Redis.
 *
 * Three generators stand for three hosts (each its own connections, its own high-water
 * stamp, its own clock skew of up to 300 ms) with two threads each, all on one simulated
 * clock injected through idgen_opts.clock_ms that runs at real speed:
 * - midnight: from 23:59:58.5 through midnight to 00:00:01, then back 2.5 s to 23:59:59.5
 *   (a step back across midnight), then on to 00:00:01.5;
 * - a step back of 10 s in the middle of a day.
 * Day D+1's counter is preset to 10^9 so the two days' numbers cannot be confused: an
 * ID stamped on D must carry a number below 10^9, on D+1 above. Checked: 0 duplicates,
 * no ID stamped with the wrong day, and each thread's stamps never go back. */
#include "test_idgen_util.h"

#include <stdatomic.h>

#include "idgen_core.h"

#define GENS      3
#define PER_GEN   2
#define OTHER_DAY 1000000000LL
#define DAY_D     ((int64_t)(1999987200 / 86400)) /* 2033-05-18 */
#define MIDNIGHT_MS ((DAY_D + 1) * 86400 * 1000)

static _Atomic int64_t sim_offset_ms; /* simulated = monotonic + offset + skew */

typedef struct host_clock {
    int64_t skew_ms;
} host_clock;

static int64_t sim_clock(void *arg)
{
    const host_clock *h = arg;
    return sk_test_now_ms() + atomic_load(&sim_offset_ms) + h->skew_ms;
}

static int64_t sim_now(void)
{
    return sk_test_now_ms() + atomic_load(&sim_offset_ms);
}

typedef struct worker {
    pthread_t th;
    idgen_t *g;
    uint64_t *ids;
    size_t n, cap;
    int pace; /* IDs between 1 ms pauses: keeps memory bounded */
    _Atomic int stop;
    int errors;
    char err[256];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    while (!atomic_load(&w->stop) && w->n < w->cap) {
        uint64_t id;
        int rc = idgen_next(w->g, &id);
        if (rc != IDGEN_OK) {
            if (!w->errors++)
                snprintf(w->err, sizeof(w->err), "%s: %s", idgen_strerror(rc),
                         idgen_errstr(w->g));
            continue;
        }
        w->ids[w->n++] = id;
        if (w->n % (size_t)w->pace == 0)
            sk_test_pause_ms(1);
    }
    return NULL;
}

typedef struct run {
    const char *url;
    char prefix[64];
    idgen_t *g[GENS];
    host_clock clk[GENS];
    worker w[GENS * PER_GEN];
} run;

static void run_start(run *r, idgen_mode mode, int64_t sim_start_ms, int pace)
{
    atomic_store(&sim_offset_ms, sim_start_ms - sk_test_now_ms());
    for (int i = 0; i < GENS; i++) {
        r->clk[i].skew_ms = i * 150 - 150; /* -150, 0, +150 ms */
        idgen_opts o;
        idgen_opts_init(&o);
        o.mode = mode;
        o.segment_min = 100;
        o.segment_max = 5000;
        o.clock_ms = sim_clock;
        o.clock_arg = &r->clk[i];
        char err[256];
        r->g[i] = idgen_new(r->url, r->prefix, &o, err, sizeof(err));
        if (!r->g[i])
            fail_msg("%s", err);
    }
    for (int i = 0; i < GENS * PER_GEN; i++) {
        worker *w = &r->w[i];
        memset(w, 0, sizeof(*w));
        w->g = r->g[i / PER_GEN];
        w->cap = 2000000;
        w->pace = pace;
        w->ids = malloc(w->cap * sizeof(uint64_t));
        assert_non_null(w->ids);
        pthread_create(&w->th, NULL, worker_main, w);
    }
}

/* Stops the workers, checks every invariant, frees. */
static void run_finish(run *r, int64_t day_lo, int64_t day_hi)
{
    size_t total = 0;
    for (int i = 0; i < GENS * PER_GEN; i++) {
        atomic_store(&r->w[i].stop, 1);
        pthread_join(r->w[i].th, NULL);
        total += r->w[i].n;
    }
    uint64_t *all = malloc((total ? total : 1) * sizeof(uint64_t));
    size_t k = 0, day_count[2] = {0, 0};
    for (int i = 0; i < GENS * PER_GEN; i++) {
        worker *w = &r->w[i];
        if (w->errors)
            fail_msg("worker %d: %d errors, first: %s", i, w->errors, w->err);
        /* Incr mode on a Redis that fsyncs every write may be slow on a busy CI disk:
         * ask only that every worker took part. */
        assert_true(w->n > 0);
        int64_t prev = 0;
        for (size_t j = 0; j < w->n; j++) {
            idgen_parts p;
            assert_int_equal(idgen_decode(w->ids[j], &p), IDGEN_OK);
            int64_t day = p.unix_seconds / 86400;
            if (day < day_lo || day > day_hi)
                fail_msg("ID %llu stamped on day %lld, outside the run",
                         (unsigned long long)w->ids[j], (long long)day);
            /* The wrong-day check: D+1's numbers start above 10^9. */
            if (day == DAY_D + 1 && p.sequence <= OTHER_DAY)
                fail_msg("ID stamped on D+1 carries day D's number %u", p.sequence);
            if (day == DAY_D && p.sequence > OTHER_DAY)
                fail_msg("ID stamped on D carries day D+1's number %u", p.sequence);
            if (p.unix_seconds < prev)
                fail_msg("a thread's stamps went back: %lld after %lld",
                         (long long)p.unix_seconds, (long long)prev);
            prev = p.unix_seconds;
            day_count[day == DAY_D + 1]++;
            all[k++] = w->ids[j];
        }
        free(w->ids);
    }
    for (int i = 0; i < GENS; i++)
        idgen_free(r->g[i]);
    assert_true(k >= 100);
    assert_int_equal(tu_count_dups(all, k), 0);
    free(all);
    if (day_hi > day_lo) /* both days really got IDs */
        assert_true(day_count[0] > 0 && day_count[1] > 0);
    tu_cleanup(r->url, r->prefix);
}

static void preset_next_day(run *r)
{
    redisContext *c = tu_connect(r->url);
    assert_non_null(c);
    char key[IDGEN_KEY_MAX], val[32];
    idgen_core_day_key(r->prefix, DAY_D + 1, key, sizeof(key));
    assert_string_equal(strrchr(key, ':'), ":20330519");
    snprintf(val, sizeof(val), "%lld", OTHER_DAY);
    tu_cmd(c, "SET %s %s EX 600", key, val);
    redisFree(c);
}

static void midnight(idgen_mode mode, int pace)
{
    run r = {.url = tu_shared_url()};
    if (!r.url)
        skip();
    snprintf(r.prefix, sizeof(r.prefix), "itest-%d-mid%d", (int)getpid(), (int)mode);
    preset_next_day(&r);
    run_start(&r, mode, MIDNIGHT_MS - 1500, pace);
    /* Through midnight to 00:00:01 ... */
    while (sim_now() < MIDNIGHT_MS + 1000)
        sk_test_pause_ms(5);
    /* ... back 2.5 s, across midnight, to 23:59:59.5 ... */
    atomic_fetch_sub(&sim_offset_ms, 2500);
    /* ... and on to 00:00:01.5. */
    while (sim_now() < MIDNIGHT_MS + 1500)
        sk_test_pause_ms(5);
    run_finish(&r, DAY_D, DAY_D + 1);
}

static void test_midnight_segment(void **state)
{
    (void)state;
    midnight(IDGEN_MODE_SEGMENT, 100);
}

static void test_midnight_incr(void **state)
{
    (void)state;
    midnight(IDGEN_MODE_INCR, 1000000);
}

static void step_back(idgen_mode mode, int pace)
{
    run r = {.url = tu_shared_url()};
    if (!r.url)
        skip();
    snprintf(r.prefix, sizeof(r.prefix), "itest-%d-step%d", (int)getpid(), (int)mode);
    int64_t noon = (DAY_D * 86400 + 43200) * 1000;
    run_start(&r, mode, noon, pace);
    while (sim_now() < noon + 700)
        sk_test_pause_ms(5);
    atomic_fetch_sub(&sim_offset_ms, 10000); /* the clock steps back 10 s */
    int64_t until = sim_now() + 800;
    while (sim_now() < until)
        sk_test_pause_ms(5);
    run_finish(&r, DAY_D, DAY_D);
}

static void test_step_back_segment(void **state)
{
    (void)state;
    step_back(IDGEN_MODE_SEGMENT, 100);
}

static void test_step_back_incr(void **state)
{
    (void)state;
    step_back(IDGEN_MODE_INCR, 1000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_midnight_segment),
        cmocka_unit_test(test_midnight_incr),
        cmocka_unit_test(test_step_back_segment),
        cmocka_unit_test(test_step_back_incr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
