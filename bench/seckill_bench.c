/* seckill-bench: the flash-sale load generator.
 *
 * Creates an event through the front (or uses --event), mints one JWT per user before
 * the clock starts, then drives keep-alive connections at the fronts flat out or at a
 * target rate (sb_load), while another thread samples the rows of seckill_order
 * (sb_pg). After the last answer it keeps sampling until PostgreSQL holds as many rows
 * as there were 202s (the drain), then writes summary.json, timeline.csv and
 * accepted.txt into the output directory and prints a short summary.
 *
 * Settings come from one table (sk_config): defaults < --config file < SECKILL_*
 * environment < --key=value arguments, so SECKILL_HTTP, SECKILL_PG and
 * SECKILL_JWT_SECRET from .run/env are picked up as they are. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sb_admin.h"
#include "sb_challenge.h"
#include "sb_hist.h"
#include "order_msg.h"
#include "sb_load.h"
#include "sb_pg.h"
#include "sb_plan.h"
#include "sb_stats.h"
#include "sk_config.h"
#include "sk_jwt.h"
#include "sk_log.h"

#define MAX_URLS 16

typedef struct bench_cfg {
    char *http;
    char *jwt_secret;
    char *pg;
    long long event;
    long long stock;
    char *event_name;
    long long event_minutes;
    long long users;
    long long requests;
    long long duration;
    long long rate;
    int rate_open;
    long long connections;
    long long threads;
    long long pipeline;
    long long seed;
    char *out;
    long long drain_wait;
    long long stall;
    int progress;
    char *log_level;
    long long reads_page, reads_polls;
    long long home_segment, home_of;
    long long challenge; /* issue 31: bits of the created event's challenge; > 0: solve */
    long long quantity;  /* issue 31: > 1: each order asks 1..quantity units */
} bench_cfg;

#define F(x) offsetof(bench_cfg, x)
static const sk_cfg_entry bench_table[] = {
    {"http", SK_CFG_STRING, 0, 0, "http://127.0.0.1:18080", "base URLs of seckill-order, comma-separated (connections are spread over them)", F(http)},
    {"jwt.secret", SK_CFG_SECRET, 0, 0, NULL, "HS256 secret shared with seckill-order (tokens are minted here)", F(jwt_secret)},
    {"pg", SK_CFG_STRING, 0, 0, NULL, "PostgreSQL conninfo to sample seckill_order rows every 100 ms (empty: no sampling, no drain wait)", F(pg)},
    {"event", SK_CFG_INT, 0, 9223372036854775807LL, "0", "event id to buy from; 0: create a new event with `stock` first", F(event)},
    {"stock", SK_CFG_INT, 1, 1000000000, "10000", "stock of the event created when event = 0", F(stock)},
    {"event.name", SK_CFG_STRING, 0, 0, "seckill-bench", "name of the event created when event = 0", F(event_name)},
    {"event.minutes", SK_CFG_INT, 1, 525600, "60", "the created event is on sale from now for this many minutes", F(event_minutes)},
    {"users", SK_CFG_INT, 1, 10000000, "100000", "distinct users 1..N; each tries ceil(requests / users) times, at random moments of the run (repeat tries)", F(users)},
    {"requests", SK_CFG_INT, 0, 1000000000000LL, "300000", "requests to send (0: until `duration`)", F(requests)},
    {"duration", SK_CFG_INT, 0, 86400, "0", "stop sending after this many seconds (0: until `requests`)", F(duration)},
    {"rate", SK_CFG_INT, 0, 100000000, "0", "target requests/s over all connections (0: flat out)", F(rate)},
    {"rate.open", SK_CFG_BOOL, 0, 0, "false", "with rate: open-loop pacing: requests owed after a slow moment are sent as soon as a connection is free (up to 10 s of them) and latency counts from when each was due", F(rate_open)},
    {"connections", SK_CFG_INT, 1, 20000, "64", "keep-alive connections in total", F(connections)},
    {"threads", SK_CFG_INT, 1, 16, "1", "worker threads (each runs its own event loop)", F(threads)},
    {"pipeline", SK_CFG_INT, 1, 64, "1", "requests in flight per connection (HTTP/1.1 pipelining; 1: none)", F(pipeline)},
    {"home.segment", SK_CFG_INT, -1, 63, "-1", "with home.of = K: every user is one whose home segment among K is this one (segmented stock, issue 19: the skewed case); -1: users 1..N", F(home_segment)},
    {"home.of", SK_CFG_INT, 1, 64, "1", "the event's segment count K for home.segment", F(home_of)},
    {"seed", SK_CFG_INT, 0, 9223372036854775807LL, "1", "seed of the user permutation", F(seed)},
    {"out", SK_CFG_STRING, 0, 0, ".", "directory for summary.json, timeline.csv, outcomes.csv, latency.prom, accepted.txt, event_id (created if missing)", F(out)},
    {"drain.wait", SK_CFG_INT, 0, 3600, "120", "after the load, wait up to this many seconds for PostgreSQL to hold every 202 (0: do not wait)", F(drain_wait)},
    {"stall", SK_CFG_INT, 1, 3600, "30", "give up when no answer comes for this many seconds", F(stall)},
    {"progress", SK_CFG_BOOL, 0, 0, "true", "a progress line on stderr (only when it is a terminal)", F(progress)},
    {"log.level", SK_CFG_STRING, 0, 0, "info", "debug, info, warn or error", F(log_level)},
    {"reads.page", SK_CFG_INT, 0, 1000, "0", "before the buying, each user reads the event page (GET /api/v1/events/{id}) this many times, over the same connections", F(reads_page)},
    {"challenge", SK_CFG_INT, 0, 32, "0", "proof-of-work difficulty (leading zero bits) of the event created when event = 0; > 0: before the clock starts every user gets its challenge (GET /api/v1/events/{id}/challenge) and solves it on one core, and its orders carry the solution (the event given by `event` must then have a challenge)", F(challenge)},
    {"quantity", SK_CFG_INT, 1, 100, "1", "units per order: 1 sends no body (one unit, as before); N > 1: each order asks a random quantity from 1 to N ({\"quantity\":q}), and the event created when event = 0 gets per_user_limit N", F(quantity)},
    {"reads.polls", SK_CFG_INT, 0, 1000, "0", "after each 202, the buyer polls GET /api/v1/orders/{id} this many times on its connection before the next order (counted apart from the orders)", F(reads_polls)},
    {NULL, 0, 0, 0, NULL, NULL, 0},
};
#undef F

static sb_load *volatile g_load;
static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
    if (g_load)
        sb_load_request_stop(g_load);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: seckill-bench [--config FILE] [--key=value | --key value ...]\n"
            "       seckill-bench --help | --help-markdown | --version\n\n"
            "Flash-sale load generator: creates an event (or uses --event), sends the requests of\n"
            "users 1..N to seckill-order over keep-alive connections, waits for the drain into\n"
            "PostgreSQL, writes summary.json, timeline.csv, accepted.txt and event_id under --out.\n"
            "Exit status: 0 done, 1 the run failed (no answers, out of memory), 2 bad settings.\n\n"
            "Settings (precedence: default < --config file < environment < arguments):\n");
    sk_config_print_help(out, bench_table, 0);
}

static int parse_args(int argc, char **argv, bench_cfg *cfg, sk_cfg_kv **kafka)
{
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(argv[i], "--help-markdown") == 0) {
            sk_config_print_help(stdout, bench_table, 1);
            exit(0);
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("seckill-bench %s\n", SECKILL_VERSION);
            exit(0);
        }
    }
    /* kafka.* settings (SECKILL_KAFKA_BROKERS is in .run/env) are collected and ignored;
     * as arguments they are refused. */
    int npos;
    if (sk_config_load(bench_table, cfg, sk_config_args_path(argc, argv), kafka, err,
                       sizeof(err)) != 0 ||
        sk_config_args(bench_table, cfg, kafka, 0, argc, argv, NULL, 0, &npos, err,
                       sizeof(err)) != 0) {
        fprintf(stderr, "seckill-bench: %s\n", err);
        return -1;
    }
    return 0;
}

/* One token per user, minted before the clock starts: signing is the costliest thing
 * a request needs, and it must not be measured as the front's latency. */
static int mint_tokens(const bench_cfg *cfg, sb_tokens *tk)
{
    uint64_t n = (uint64_t)cfg->users;
    size_t cap = (size_t)n * 200 + 512, used = 0;
    tk->arena = malloc(cap);
    tk->off = malloc((n + 1) * sizeof(*tk->off));
    tk->n = n;
    if (!tk->arena || !tk->off)
        return -1;
    const unsigned char *secret = (const unsigned char *)cfg->jwt_secret;
    size_t slen = strlen(cfg->jwt_secret);
    int64_t exp = (int64_t)time(NULL) + 86400;
    tk->off[0] = 0;
    if (cfg->home_segment >= cfg->home_of)
        return -1; /* no user is homed there */
    uint64_t sub = 0;
    for (uint64_t u = 1; u <= n; u++) {
        /* user u's id: u, or the u-th id homed on home.segment */
        sub++;
        if (cfg->home_segment >= 0)
            while (order_seg_home(sub, (unsigned)cfg->home_of) != (unsigned)cfg->home_segment)
                sub++;
        if (cap - used < 400) {
            if (cap > 0xF0000000u)
                return -1; /* offsets are 32-bit */
            char *a = realloc(tk->arena, cap * 2);
            if (!a)
                return -1;
            tk->arena = a;
            cap *= 2;
        }
        int len = sk_jwt_mint(secret, slen, sub, 0, exp, tk->arena + used, cap - used);
        if (len < 0)
            return -1;
        used += (size_t)len;
        tk->off[u] = (uint32_t)used;
    }
    return 0;
}

static int write_accepted(const char *path, const sb_stats *st)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (size_t i = 0; i < st->naccepted; i++)
        fprintf(f, "%llu\n", (unsigned long long)st->accepted[i]);
    return fclose(f) == 0 ? 0 : -1;
}

static void print_progress(const sb_load_progress_t *p, double secs, double rate, int final)
{
    fprintf(stderr, "\r[%6.1fs] sent %llu  answered %llu  %.0f req/s  accepted %llu  errors %llu   %s",
            secs, (unsigned long long)p->sent, (unsigned long long)p->answered, rate,
            (unsigned long long)p->accepted, (unsigned long long)p->errors, final ? "\n" : "");
}

/* outcomes.csv: one line per answer class with its own latency, for scripts (the fault
 * tests read "were the 503s fast" from it without a JSON parser). */
static int write_outcomes(FILE *f, const sb_stats *st)
{
    fprintf(f, "status,code,n,p50_ms,p90_ms,p99_ms,max_ms\n");
    for (int i = 0; i < st->noutcomes; i++) {
        const sb_outcome *o = &st->outcomes[i];
        fprintf(f, "%d,%s,%llu,%.3f,%.3f,%.3f,%.3f\n", o->status, o->code[0] ? o->code : "-",
                (unsigned long long)o->n, sb_hist_quantile(&o->lat, 0.5) / 1000.0,
                sb_hist_quantile(&o->lat, 0.9) / 1000.0, sb_hist_quantile(&o->lat, 0.99) / 1000.0,
                o->lat.max / 1000.0);
    }
    return ferror(f) ? -1 : 0;
}

/* latency.prom: each outcome's latencies as one Prometheus histogram, the text the
 * services' /metrics pages are written in (sk_prom), to be read beside them. */
static int write_latency_prom(FILE *f, const sb_stats *st)
{
    const char *name = "seckill_bench_response_seconds";
    sk_prom_head(f, name, "histogram",
                 "Answers' latency seen by the load generator, by HTTP status and error code "
                 "(status 0: no answer)");
    for (int i = 0; i < st->noutcomes; i++) {
        const sb_outcome *o = &st->outcomes[i];
        char status[12];
        snprintf(status, sizeof(status), "%d", o->status);
        sk_prom_label l[2] = {{"status", status}, {"code", o->code}};
        sb_hist_write_prom(f, name, l, 2, &o->lat);
    }
    return ferror(f) ? -1 : 0;
}

/* The time (since start, seconds) of the first sample holding at least `want` rows: -1 if none. */
static double drain_time(const sb_db_sample *v, size_t n, uint64_t want)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].rows >= 0 && (uint64_t)v[i].rows >= want)
            return (double)v[i].t_ms / 1000.0;
    return -1;
}

int main(int argc, char **argv)
{
    bench_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    sk_log_init("seckill-bench", SK_LOG_INFO);
    int rc = 2;
    sb_tokens tk = {0};
    sb_load *load = NULL;
    sb_pg *pg = NULL;
    sb_stats st;
    sb_stats_init(&st);
    sb_db_sample *samples = NULL;
    size_t nsamples = 0;
    char err[512];

    sk_cfg_kv *kafka = NULL;
    if (parse_args(argc, argv, &cfg, &kafka) != 0)
        goto out;
    sk_log_level lvl;
    if (sk_log_level_parse(cfg.log_level, &lvl) != 0) {
        fprintf(stderr, "seckill-bench: log.level: unknown level \"%s\"\n", cfg.log_level);
        goto out;
    }
    sk_log_min_level = lvl;
    sb_url urls[MAX_URLS];
    int nurls = sb_url_parse_list(cfg.http, urls, MAX_URLS, err, sizeof(err));
    if (nurls < 0) {
        fprintf(stderr, "seckill-bench: http: %s\n", err);
        goto out;
    }
    if (!cfg.jwt_secret || !*cfg.jwt_secret) {
        fprintf(stderr, "seckill-bench: jwt.secret is required (SECKILL_JWT_SECRET)\n");
        goto out;
    }
    if (cfg.requests == 0 && cfg.duration == 0) {
        fprintf(stderr, "seckill-bench: set requests or duration (or both)\n");
        goto out;
    }
    if (cfg.connections < cfg.threads) {
        fprintf(stderr, "seckill-bench: connections must be at least threads\n");
        goto out;
    }
    if (mkdir(cfg.out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "seckill-bench: out: %s: %s\n", cfg.out, strerror(errno));
        goto out;
    }
    rc = 1;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    uint64_t event_id = (uint64_t)cfg.event;
    if (event_id == 0) {
        char admin[512];
        time_t now = time(NULL);
        if (sk_jwt_mint((const unsigned char *)cfg.jwt_secret, strlen(cfg.jwt_secret), 1, 1,
                        (int64_t)now + 3600, admin, sizeof(admin)) < 0) {
            sk_log(SK_LOG_ERROR, "create_event_failed", "err=\"cannot mint the admin token\"");
            goto out;
        }
        /* starts_at one second back: RFC 3339 here has whole seconds, and "now" must
         * already be inside the window when the first request lands. */
        if (sb_admin_create_event(&urls[0], admin, cfg.event_name, cfg.stock, now - 1,
                                  now + (time_t)cfg.event_minutes * 60, (int)cfg.challenge,
                                  (int)cfg.quantity, 10000,
                                  &event_id, err, sizeof(err)) != 0) {
            sk_log(SK_LOG_ERROR, "create_event_failed", "err=\"%s\"", err);
            goto out;
        }
        sk_log(SK_LOG_INFO, "event_created", "event_id=%llu stock=%lld",
               (unsigned long long)event_id, cfg.stock);
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/event_id", cfg.out);
    FILE *ef = fopen(path, "w");
    if (!ef || fprintf(ef, "%llu\n", (unsigned long long)event_id) < 0 || fclose(ef) != 0) {
        sk_log(SK_LOG_ERROR, "write_failed", "path=%s", path);
        goto out;
    }

    uint64_t t_mint = now_ns();
    if (mint_tokens(&cfg, &tk) != 0) {
        sk_log(SK_LOG_ERROR, "mint_failed", "users=%lld", cfg.users);
        goto out;
    }
    sk_log(SK_LOG_INFO, "tokens_minted", "users=%lld ms=%.0f", cfg.users,
           (double)(now_ns() - t_mint) / 1e6);
    double solve_s = 0;
    uint64_t hashes = 0;
    if (cfg.challenge > 0) {
        /* before the clock: what a bot pays per order, reported apart from the front's */
        if (sb_challenge_prepare(&urls[0], event_id, &tk, 10000, &solve_s, &hashes, err,
                                 sizeof(err)) != 0) {
            sk_log(SK_LOG_ERROR, "challenge_failed", "err=\"%s\"", err);
            goto out;
        }
        sk_log(SK_LOG_INFO, "challenges_solved",
               "users=%lld bits=%lld cpu_s=%.3f per_order_ms=%.3f hashes_per_s=%.0f", cfg.users,
               cfg.challenge, solve_s, solve_s * 1e3 / (double)cfg.users,
               solve_s > 0 ? (double)hashes / solve_s : 0.0);
    }

    sb_plan plan;
    if (sb_plan_init(&plan, (uint64_t)cfg.users, (uint64_t)cfg.requests, (uint64_t)cfg.seed) != 0) {
        sk_log(SK_LOG_ERROR, "bad_plan", "users=%lld requests=%lld", cfg.users, cfg.requests);
        goto out;
    }
    sb_load_cfg lc = {
        .urls = urls,
        .nurls = nurls,
        .connections = (int)cfg.connections,
        .threads = (int)cfg.threads,
        .pipeline = (int)cfg.pipeline,
        .requests = (uint64_t)cfg.requests,
        .duration_s = (double)cfg.duration,
        .rate = (double)cfg.rate,
        .open_loop = cfg.rate_open,
        .stall_s = (double)cfg.stall,
        .event_id = event_id,
        .quantity = (int)cfg.quantity,
        .plan = &plan,
        .tokens = &tk,
    };
    /* The page reads that come before the sale: each user reads the event page
     * reads.page times (a plan of users x reads.page requests: exactly that many each). */
    sb_stats page_st;
    sb_stats_init(&page_st);
    double page_s = 0;
    if (cfg.reads_page > 0) {
        sb_plan page_plan;
        sb_load_cfg pc = lc;
        pc.read_page = 1;
        pc.polls = 0;
        pc.duration_s = 0;
        pc.rate = 0;
        pc.requests = (uint64_t)cfg.users * (uint64_t)cfg.reads_page;
        pc.plan = &page_plan;
        sb_load *pl = NULL;
        uint64_t p0 = now_ns();
        if (sb_plan_init(&page_plan, (uint64_t)cfg.users, pc.requests, (uint64_t)cfg.seed + 1) != 0 ||
            !(pl = sb_load_new(&pc, err, sizeof(err))) || sb_load_start(pl, p0, err, sizeof(err)) != 0 ||
            (g_load = pl, 0)) {
            sk_log(SK_LOG_ERROR, "page_reads_failed", "err=\"%s\"", err);
            sb_load_free(pl);
            goto out;
        }
        while (!sb_load_finished(pl)) {
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
        int pf = sb_load_join(pl, &page_st, err, sizeof(err));
        g_load = NULL;
        sb_load_free(pl);
        page_s = (double)(now_ns() - p0) / 1e9;
        sk_log(SK_LOG_INFO, "page_reads_done", "requests=%llu ok=%llu s=%.2f",
               (unsigned long long)page_st.answered,
               (unsigned long long)sb_stats_count_status(&page_st, 200), page_s);
        if (pf != 0 || g_stop) {
            sk_log(SK_LOG_ERROR, "page_reads_failed", "err=\"%s\"", pf ? err : "stopped");
            sb_stats_free(&page_st);
            goto out;
        }
    }
    lc.polls = (int)cfg.reads_polls;
    load = sb_load_new(&lc, err, sizeof(err));
    if (!load) {
        sk_log(SK_LOG_ERROR, "load_setup_failed", "err=\"%s\"", err);
        sb_stats_free(&page_st);
        goto out;
    }
    uint64_t start = now_ns();
    /* The same instant on the wall clock: lets a script line the timeline up with what
     * it did meanwhile (a fault test kills a server at a wall-clock time). */
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    long long start_unix_ms = (long long)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
    if (cfg.pg && *cfg.pg) {
        pg = sb_pg_start(cfg.pg, event_id, start, SB_BUCKET_MS, err, sizeof(err));
        if (!pg) /* the load still runs: the timeline just has no database column */
            sk_log(SK_LOG_WARN, "pg_sampler_off", "err=\"%s\"", err);
    }
    /* Rows the event already had (a run on an existing event): the drain is over when
     * PostgreSQL holds those plus this run's 202s. A new event has none. */
    int64_t baseline = 0;
    if (pg && cfg.event != 0) {
        uint64_t deadline = now_ns() + 5000000000ull;
        while ((baseline = sb_pg_first_rows(pg)) < 0 && now_ns() < deadline) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
        if (baseline < 0)
            baseline = 0;
    }
    g_load = load;
    if (sb_load_start(load, start, err, sizeof(err)) != 0) {
        sk_log(SK_LOG_ERROR, "load_start_failed", "err=\"%s\"", err);
        goto out;
    }
    int tty = cfg.progress && isatty(STDERR_FILENO);
    sb_load_progress_t p, prev = {0};
    uint64_t prev_t = start;
    while (!sb_load_finished(load)) {
        struct timespec ts = {0, 20000000}; /* 20 ms: the check is two atomic loads */
        nanosleep(&ts, NULL);
        uint64_t t = now_ns();
        if (tty && t - prev_t >= 500000000ull) {
            sb_load_progress(load, &p);
            print_progress(&p, (double)(t - start) / 1e9,
                           (double)(p.answered - prev.answered) * 1e9 / (double)(t - prev_t), 0);
            prev = p;
            prev_t = t;
        }
    }
    int load_failed = sb_load_join(load, &st, err, sizeof(err)) != 0;
    g_load = NULL;
    uint64_t load_end = now_ns();
    if (tty) {
        sb_load_progress(load, &p);
        print_progress(&p, (double)(load_end - start) / 1e9,
                       (double)p.answered * 1e9 / (double)(load_end - start), 1);
    }
    if (load_failed)
        sk_log(SK_LOG_ERROR, "load_failed", "err=\"%s\"", err);

    /* The drain: PostgreSQL catches up with the 202s behind the burst. */
    uint64_t accepted = st.naccepted;
    int drained = -1;
    if (pg && cfg.drain_wait > 0) {
        uint64_t deadline = now_ns() + (uint64_t)cfg.drain_wait * 1000000000ull;
        int64_t rows;
        while ((rows = sb_pg_rows(pg)) < baseline + (int64_t)accepted && now_ns() < deadline && !g_stop) {
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
            if (tty)
                fprintf(stderr, "\r[%6.1fs] draining: %lld of %llu rows in seckill_order   ",
                        (double)(now_ns() - start) / 1e9, (long long)(rows - baseline), (unsigned long long)accepted);
        }
        /* One more period, so the timeline shows the last rows land. */
        struct timespec ts = {0, SB_BUCKET_MS * 2 * 1000000L};
        nanosleep(&ts, NULL);
        drained = sb_pg_rows(pg) >= baseline + (int64_t)accepted;
        if (tty)
            fprintf(stderr, "\n");
    }
    sb_pg_stop(pg, &samples, &nsamples);
    pg = NULL;

    /* --- results --- */
    double burst_s = (double)st.last_answer_ms / 1000.0;
    if (burst_s <= 0)
        burst_s = (double)(load_end - start) / 1e9;
    double rate = st.answered / burst_s;
    double drain_s = accepted ? drain_time(samples, nsamples, (uint64_t)baseline + accepted) : -1;
    double last_202_s = (double)st.last_202_ms / 1000.0;
    double peak_202 = sb_stats_peak_rate(&st, 1), peak_db = sb_db_peak_rate(samples, nsamples);
    snprintf(path, sizeof(path), "%s/accepted.txt", cfg.out);
    if (write_accepted(path, &st) != 0) {
        sk_log(SK_LOG_ERROR, "write_failed", "path=%s", path);
        load_failed = 1;
    }
    snprintf(path, sizeof(path), "%s/timeline.csv", cfg.out);
    FILE *tf = fopen(path, "w");
    if (!tf || sb_stats_write_timeline(tf, &st, samples, nsamples) != 0 || fclose(tf) != 0) {
        sk_log(SK_LOG_ERROR, "write_failed", "path=%s", path);
        load_failed = 1;
    }

    json_t *outc = json_object(), *outlat = json_object();
    for (int i = 0; i < st.noutcomes; i++) {
        const sb_outcome *o = &st.outcomes[i];
        char k[64];
        snprintf(k, sizeof(k), o->code[0] ? "%d %s" : "%d", o->status, o->code);
        json_object_set_new(outc, k, json_integer((json_int_t)o->n));
        json_object_set_new(outlat, k, json_pack("{s:f, s:f, s:f, s:f}", "p50",
                                                 sb_hist_quantile(&o->lat, 0.5) / 1000.0, "p90",
                                                 sb_hist_quantile(&o->lat, 0.9) / 1000.0, "p99",
                                                 sb_hist_quantile(&o->lat, 0.99) / 1000.0, "max",
                                                 o->lat.max / 1000.0));
    }
    snprintf(path, sizeof(path), "%s/outcomes.csv", cfg.out);
    FILE *of = fopen(path, "w");
    if (!of || write_outcomes(of, &st) != 0 || fclose(of) != 0) {
        sk_log(SK_LOG_ERROR, "write_failed", "path=%s", path);
        load_failed = 1;
    }
    snprintf(path, sizeof(path), "%s/latency.prom", cfg.out);
    FILE *lf = fopen(path, "w");
    if (!lf || write_latency_prom(lf, &st) != 0 || fclose(lf) != 0) {
        sk_log(SK_LOG_ERROR, "write_failed", "path=%s", path);
        load_failed = 1;
    }
    json_t *js = json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:o, s:I, s:I,"
        " s:{s:f, s:f, s:f, s:f, s:f, s:f}, s:f, s:f, s:f, s:I, s:f, s:f, s:b}",
        "event_id", "", "http", cfg.http, "users", (json_int_t)cfg.users, "connections",
        (json_int_t)cfg.connections, "threads", (json_int_t)cfg.threads, "pipeline",
        (json_int_t)cfg.pipeline, "target_rate", (json_int_t)cfg.rate, "sent", (json_int_t)st.sent,
        "answered", (json_int_t)st.answered, "burst_s", burst_s, "rate_rps", rate, "outcomes", outc,
        "accepted", (json_int_t)accepted, "bad_202", (json_int_t)st.bad_202, "latency_ms", "p50",
        sb_hist_quantile(&st.lat, 0.5) / 1000.0, "p90", sb_hist_quantile(&st.lat, 0.9) / 1000.0,
        "p99", sb_hist_quantile(&st.lat, 0.99) / 1000.0, "p999", sb_hist_quantile(&st.lat, 0.999) / 1000.0,
        "max", st.lat.max / 1000.0, "mean", st.lat.count ? (double)st.lat.sum / st.lat.count / 1000.0 : 0.0,
        "peak_accepted_rps", peak_202, "peak_409_rps", sb_stats_peak_rate(&st, 2), "peak_db_rows_ps",
        peak_db, "db_rows", (json_int_t)(nsamples ? samples[nsamples - 1].rows : -1), "drain_s",
        drain_s, "drain_after_last_202_s", drain_s >= 0 ? drain_s - last_202_s : -1.0, "drained",
        drained == 1);
    char eid[24];
    snprintf(eid, sizeof(eid), "%llu", (unsigned long long)event_id);
    if (js) {
        json_object_set_new(js, "event_id", json_string(eid));
        json_object_set_new(js, "last_202_s", json_real(last_202_s));
        json_object_set_new(js, "start_unix_ms", json_integer((json_int_t)start_unix_ms));
        json_object_set_new(js, "open_loop", json_boolean(cfg.rate > 0 && cfg.rate_open));
        json_object_set_new(js, "outcome_latency_ms", outlat);
        if (cfg.challenge > 0)
            json_object_set_new(js, "challenge",
                                json_pack("{s:I, s:f, s:f, s:I}", "difficulty",
                                          (json_int_t)cfg.challenge, "solve_cpu_s", solve_s,
                                          "solve_ms_per_order", solve_s * 1e3 / (double)cfg.users,
                                          "hashes", (json_int_t)hashes));
        json_object_set_new(
            js, "reads",
            json_pack("{s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:I, s:f, s:f}", "page_per_user",
                      (json_int_t)cfg.reads_page, "page_requests", (json_int_t)page_st.answered,
                      "page_ok", (json_int_t)sb_stats_count_status(&page_st, 200), "page_rps",
                      page_s > 0 ? (double)page_st.answered / page_s : 0.0, "page_p50_ms",
                      sb_hist_quantile(&page_st.lat, 0.5) / 1000.0, "page_p99_ms",
                      sb_hist_quantile(&page_st.lat, 0.99) / 1000.0, "polls_per_202",
                      (json_int_t)cfg.reads_polls, "polls", (json_int_t)st.polls, "polls_ok",
                      (json_int_t)st.polls_ok, "poll_p50_ms",
                      sb_hist_quantile(&st.poll_lat, 0.5) / 1000.0, "poll_p99_ms",
                      sb_hist_quantile(&st.poll_lat, 0.99) / 1000.0));
    } else {
        json_decref(outlat);
    }
    snprintf(path, sizeof(path), "%s/summary.json", cfg.out);
    if (!js || json_dump_file(js, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
        sk_log(SK_LOG_ERROR, "write_failed", "path=%s", path);
        load_failed = 1;
    }
    json_decref(js);

    printf("seckill-bench: event %s, %llu requests, %lld users, %lld connections, %lld thread(s)\n",
           eid, (unsigned long long)st.sent, cfg.users, cfg.connections, cfg.threads);
    printf("  answered         %llu in %.2f s = %.0f req/s (accepted + refused)\n",
           (unsigned long long)st.answered, burst_s, rate);
    for (int i = 0; i < st.noutcomes; i++)
        printf("  %3d %-12s %-9llu p50 %.2f ms, max %.2f ms\n", st.outcomes[i].status,
               st.outcomes[i].code[0] ? st.outcomes[i].code : (st.outcomes[i].status == 202 ? "queued" : "-"),
               (unsigned long long)st.outcomes[i].n, sb_hist_quantile(&st.outcomes[i].lat, 0.5) / 1000.0,
               st.outcomes[i].lat.max / 1000.0);
    printf("  latency ms       p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f\n",
           sb_hist_quantile(&st.lat, 0.5) / 1000.0, sb_hist_quantile(&st.lat, 0.9) / 1000.0,
           sb_hist_quantile(&st.lat, 0.99) / 1000.0, sb_hist_quantile(&st.lat, 0.999) / 1000.0,
           st.lat.max / 1000.0);
    printf("  peak accepted    %.0f orders/s (best 100 ms)\n", peak_202);
    if (cfg.reads_page > 0)
        printf("  page reads       %llu before the sale (%llu x 200) in %.2f s = %.0f req/s, p99 %.2f ms\n",
               (unsigned long long)page_st.answered,
               (unsigned long long)sb_stats_count_status(&page_st, 200), page_s,
               page_s > 0 ? (double)page_st.answered / page_s : 0.0,
               sb_hist_quantile(&page_st.lat, 0.99) / 1000.0);
    if (cfg.reads_polls > 0)
        printf("  order polls      %llu after the 202s (%llu x 200), p50 %.2f ms, p99 %.2f ms\n",
               (unsigned long long)st.polls, (unsigned long long)st.polls_ok,
               sb_hist_quantile(&st.poll_lat, 0.5) / 1000.0, sb_hist_quantile(&st.poll_lat, 0.99) / 1000.0);
    sb_stats_free(&page_st);
    if (nsamples) {
        printf("  peak db writes   %.0f rows/s (best 100 ms)\n", peak_db);
        if (accepted == 0)
            printf("  drain            no 202, nothing to drain\n");
        else if (drain_s >= 0)
            printf("  drain            all %llu orders in seckill_order at %.2f s, %.2f s after the last 202\n",
                   (unsigned long long)accepted, drain_s, drain_s - last_202_s);
        else
            printf("  drain            not over: %lld of %llu rows after the wait\n",
                   (long long)(samples[nsamples - 1].rows - baseline), (unsigned long long)accepted);
    }
    printf("  files            %s/{summary.json,timeline.csv,outcomes.csv,latency.prom,accepted.txt}\n", cfg.out);
    fflush(stdout);
    rc = load_failed ? 1 : 0;
out:
    sb_pg_stop(pg, NULL, NULL);
    sb_load_free(load);
    free(samples);
    sb_stats_free(&st);
    free(tk.arena);
    free(tk.off);
    sk_config_free(bench_table, &cfg, kafka);
    return rc;
}
