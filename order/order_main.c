/* seckill-order: the flash-sale front service (HTTP API -> Redis gate -> Kafka).
 *
 *   seckill-order [--config FILE]            run the service
 *   seckill-order token --sub U [--admin] [--ttl S] [--count N] [--challenge E:B] [--config FILE]
 *                                            print JWTs minted with jwt.secret
 *   seckill-order --help | --help-markdown | --version
 *
 * Configuration: defaults < --config file < SECKILL_* environment (order_config.c).
 * A bad setting is reported with its file and line and exits with status 2.
 * SIGTERM/SIGINT: stop accepting, finish the requests in flight, flush the producer,
 * exit 0 (bounded by shutdown.timeout_ms). */
#include "idgen_floor_pg.h"
#include "order_app.h"
#include "order_challenge.h"
#include "order_http.h"
#include "order_place_gate.h"
#include "order_reconcile.h"
#include "order_time.h"
#include "sk_jwt.h"
#include "sk_listen.h"
#include "sk_log.h"
#include "sk_pow.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: seckill-order [--config FILE]\n"
            "       seckill-order token --sub USER_ID [--admin] [--ttl SECONDS] [--count N]\n"
            "                           [--challenge EVENT_ID:BITS] [--config FILE]\n"
            "       seckill-order --help | --help-markdown | --version\n\n"
            "The flash-sale front service: HTTP API, Redis gate (Lua), Kafka producer.\n"
            "`token` prints JWTs (HS256, jwt.secret) for tests and benchmarks: --count N\n"
            "prints N tokens for users USER_ID .. USER_ID+N-1, one a line; --challenge adds\n"
            "after a tab each user's solved challenge for the event (challenge.key; it\n"
            "expires with the token), for benchmarks that must not solve while timed.\n\n"
            "Settings (file `key = value`, or environment SECKILL_<KEY>):\n");
    sk_config_print_help(out, order_config_table, 0);
}

static int load_config(order_config *cfg, sk_cfg_kv **kafka, const char *path)
{
    char err[768];
    if (sk_config_load(order_config_table, cfg, path, kafka, err, sizeof(err)) != 0 ||
        order_config_check(cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "seckill-order: %s\n", err);
        return -1;
    }
    return 0;
}

/* Prints `count` tokens for users sub, sub+1, ... signed with the configuration's
 * jwt.secret. @returns the exit status (0, 1 stdout failed, 2 no secret). */
static int token_print(const char *config, uint64_t sub, int admin, long long ttl,
                       long long count, uint64_t ch_event, unsigned ch_bits)
{
    order_challenge_key *ck = NULL;
    order_config cfg = {0};
    sk_cfg_kv *kafka = NULL;
    int rc = 2;
    if (load_config(&cfg, &kafka, config) != 0)
        goto out;
    if (!*cfg.jwt_secret) {
        fprintf(stderr, "seckill-order token: jwt.secret is not set (SECKILL_JWT_SECRET)\n");
        goto out;
    }
    int64_t exp = (int64_t)time(NULL) + ttl;
    char tok[1024], ch[ORDER_CHALLENGE_MAX], sol[ORDER_CHALLENGE_SOLUTION_MAX];
    if (ch_event && !(ck = order_challenge_key_of_config(cfg.challenge_key,
                                                         cfg.challenge_key_previous, cfg.jwt_secret)))
        goto out;
    for (long long i = 0; i < count; i++) {
        if (sk_jwt_mint((const unsigned char *)cfg.jwt_secret, strlen(cfg.jwt_secret),
                        sub + (uint64_t)i, admin, exp, tok, sizeof(tok)) < 0) {
            fprintf(stderr, "seckill-order token: cannot mint\n");
            goto out;
        }
        if (ck) {
            int n = order_challenge_issue(ck, sub + (uint64_t)i, ch_event, ch_bits, exp * 1000,
                                          (uint64_t)i, ch, sizeof(ch));
            if (n < 0 || sk_pow_solve(ch, (size_t)n, ch_bits, 0, UINT64_MAX, sol, sizeof(sol),
                                      NULL) < 0)
                goto out;
            printf("%s\t%s\n", tok, sol);
            continue;
        }
        puts(tok);
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    order_challenge_key_free(ck);
    sk_config_free(order_config_table, &cfg, kafka);
    return rc;
}

static int cmd_token(int argc, char **argv)
{
    const char *config = NULL;
    uint64_t sub = 0;
    long long ttl = 3600, count = 1;
    int admin = 0;
    uint64_t ch_event = 0;
    unsigned long ch_bits = 0;
    static const struct option opts[] = {{"sub", required_argument, 0, 's'},
                                         {"admin", no_argument, 0, 'a'},
                                         {"ttl", required_argument, 0, 't'},
                                         {"count", required_argument, 0, 'n'},
                                         {"config", required_argument, 0, 'c'},
                                         {"challenge", required_argument, 0, 'C'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int o;
    char *end;
    optind = 1;
    while ((o = getopt_long(argc, argv, "s:at:n:c:h", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            errno = 0;
            sub = strtoull(optarg, &end, 10);
            if (errno || *end || sub == 0 || sub > INT64_MAX) {
                fprintf(stderr, "seckill-order token: --sub takes a user id 1..2^63-1\n");
                return 2;
            }
            break;
        case 'a':
            admin = 1;
            break;
        case 't':
            ttl = strtoll(optarg, &end, 10);
            if (*end || ttl < 1 || ttl > 10LL * 365 * 86400) {
                fprintf(stderr, "seckill-order token: --ttl takes 1..315360000 seconds\n");
                return 2;
            }
            break;
        case 'n':
            count = strtoll(optarg, &end, 10);
            if (*end || count < 1 || count > 10000000) {
                fprintf(stderr, "seckill-order token: --count takes 1..10000000\n");
                return 2;
            }
            break;
        case 'c':
            config = optarg;
            break;
        case 'C':
            errno = 0;
            ch_event = strtoull(optarg, &end, 10);
            if (*end == ':')
                ch_bits = strtoul(end + 1, &end, 10);
            if (errno || *end || ch_event == 0 || ch_event > INT64_MAX ||
                ch_bits < ORDER_CHALLENGE_BITS_MIN || ch_bits > ORDER_CHALLENGE_BITS_MAX) {
                fprintf(stderr, "seckill-order token: --challenge takes EVENT_ID:BITS (1..32)\n");
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!sub || optind != argc) {
        usage(stderr);
        return 2;
    }
    return token_print(config, sub, admin, ttl, count, ch_event, (unsigned)ch_bits);
}

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > 64 ? 64 : (int)n);
}

/* Waits until no request is in flight or the deadline passes. @returns what is left. */
static int64_t wait_idle(order_app *app, int64_t deadline_us)
{
    int64_t n;
    while ((n = atomic_load(&app->metrics.requests_inflight)) > 0 &&
           order_time_mono_us() < deadline_us) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return n;
}

/* Checks what cannot work at all (exit 2): no JWT secret, a bad Redis URL. Fills
 * app->redis_url. @returns 0 or 2. */
static int run_check_config(order_app *app)
{
    char err[768];
    if (!*app->cfg.jwt_secret) {
        fprintf(stderr, "seckill-order: jwt.secret is not set (SECKILL_JWT_SECRET)\n");
        return 2;
    }
    if (order_redis_url_check(app->cfg.redis_url, &app->redis_url, err, sizeof(err)) != 0) {
        fprintf(stderr, "seckill-order: redis.url: %s\n", err);
        return 2;
    }
    if (*app->cfg.msg_keys &&
        !(app->msg_keys = sk_order_msg_keys_new(app->cfg.msg_keys, err, sizeof(err)))) {
        fprintf(stderr, "seckill-order: order.msg_keys: %s\n", err);
        return 2;
    }
    if (!app->msg_keys)
        sk_log(SK_LOG_WARN, "msg_keys_unset",
               "msg=\"order.msg_keys is empty: order messages go unsigned, and a consumer "
               "with keys dead-letters them\"");
    return 0;
}

/* Blocks the stop signals (`sigs`) in every thread, main waits for them with sigwait;
 * ignores SIGPIPE; makes libevent thread-safe. @returns 0 or 1. */
static int run_signals_threads(sigset_t *sigs)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (evthread_use_pthreads() != 0) {
        sk_log(SK_LOG_ERROR, "start_failed", "why=\"libevent without thread support\"");
        return 1;
    }
    return 0;
}

/* libidgen's floor store (idgen/README.md, "Floor mode"): with pg set, each day
 * counter's floor is kept in PostgreSQL, so that a Redis that lost the counters cannot
 * reissue order or event ids. Outlives both generators (run_free). */
static idgen_floor_pg *ids_floor;

/* Loads the Lua scripts (not fatal), makes the two id generators and the Kafka
 * producer. `redacted`: the Redis URL without its password, for the logs.
 * @returns 0, 1 (start failed) or 2 (a bad kafka.* setting). */
static int run_open_clients(order_app *app, const char *redacted)
{
    char err[768];
    if (order_scripts_load(&app->scripts, app->cfg.redis_url, (int)app->cfg.redis_timeout_ms, err,
                           sizeof(err)) != 0)
        /* Not fatal: workers reconnect, and a NOSCRIPT answer loads the script. */
        sk_log(SK_LOG_WARN, "scripts_not_loaded", "redis=%s err=\"%s\"", redacted, err);
    idgen_opts io;
    idgen_opts_init(&io);
    io.mode = IDGEN_MODE_SEGMENT;
    io.timeout_ms = (int)app->cfg.redis_timeout_ms;
    if (*app->cfg.pg) {
        if (!(ids_floor = idgen_floor_pg_new(app->cfg.pg, "seckill-order/idgen"))) {
            sk_log(SK_LOG_ERROR, "start_failed", "what=idgen err=\"out of memory\"");
            return 1;
        }
        io.floor = idgen_floor_pg_store(ids_floor);
        /* A million numbers logged ahead: the front needs PostgreSQL once per million ids,
         * so an outage of minutes does not stop orders (fault 4), and a restore skips at
         * most a million numbers of a 2^32 day. */
        io.floor_step = 1000000;
    }
    app->ids_order = idgen_new(app->cfg.redis_url, app->cfg.idgen_order_prefix, &io, err,
                               sizeof(err));
    if (app->ids_order) {
        io.segment_max = 1000; /* events are few: small leases */
        app->ids_event = idgen_new(app->cfg.redis_url, app->cfg.idgen_event_prefix, &io, err,
                                   sizeof(err));
    }
    if (!app->ids_order || !app->ids_event) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=idgen err=\"%s\"", err);
        return 1;
    }
    app->kafka = order_kafka_new(app->kafka_props, app->cfg.topic, order_place_on_delivery, err,
                                 sizeof(err));
    if (!app->kafka) {
        fprintf(stderr, "seckill-order: %s\n", err);
        return 2;
    }
    return 0;
}

/* Makes the script loader, the PostgreSQL pool (when pg is set) and the in-memory
 * caches and limiters the workers share. @returns 0 or 1 (start failed). */
/* Issue 19's levels (order_limit, order_admit, order_window, order_pause, order_evrate). */
static int run_make_limits(order_app *app)
{
    char lerr[256] = "out of memory";
    app->limits = order_limit_new(app->cfg.ratelimit_ip_rate, app->cfg.ratelimit_ip_burst,
                                  app->cfg.ratelimit_ips, app->cfg.http_trusted_proxies, lerr,
                                  sizeof(lerr));
    app->admit = order_admit_new(app->cfg.admit_gate_p99_ms * 1000, app->cfg.admit_window_ms,
                                 app->cfg.admit_min_samples);
    app->window = order_window_new();
    app->paused = order_pause_new();
    /* Always made: an event may have its own rate (order_event_limits) when the
     * configured level is off. A batch is valid for the time the bucket takes to make
     * it at the configured rate (at least 100 ms). */
    int64_t valid = app->cfg.event_rate > 0 ? app->cfg.event_batch * 1000 / app->cfg.event_rate : 100;
    app->evrate = order_evrate_new(valid < 100 ? 100 : valid);
    if (!app->limits || !app->admit || !app->window || !app->paused || !app->evrate) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=limits err=\"%s\"", app->limits ? "out of memory" : lerr);
        return 1;
    }
    return 0;
}

static int run_make_shared(order_app *app)
{
    app->loader = order_loader_new(app->cfg.redis_url, &app->scripts,
                                   (int)app->cfg.redis_timeout_ms);
    if (!app->loader) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=memory");
        return 1;
    }
    if (*app->cfg.pg && !(app->pg = order_pg_new(app->cfg.pg, (int)app->cfg.pg_pool))) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=pg");
        return 1;
    }
    app->soldout = order_soldout_new(app->cfg.soldout_ttl_ms);
    app->segs = order_segs_new();
    order_events_limits elim = {(size_t)app->cfg.events_cache_size,
                                app->cfg.events_stock_refresh_ms, app->cfg.events_negative_ttl_ms,
                                app->cfg.events_miss_per_s};
    app->events = order_events_new(&elim);
    app->evlist = order_evlist_new(app->cfg.events_list_refresh_ms);
    /* Always made: besides outcomes (none kept when the size is 0) it bounds the
     * PostgreSQL lookups of young orders. */
    int keep = app->cfg.order_status_cache_size > 0;
    if (!(app->ocache = order_ocache_new(keep ? (size_t)app->cfg.order_status_cache_size : 64,
                                         keep ? app->cfg.order_status_cache_ms : 0,
                                         app->cfg.order_pg_lookup_every_ms,
                                         app->cfg.order_pg_lookups_per_s))) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=memory");
        return 1;
    }
    app->buckets = order_bucket_new((size_t)app->cfg.ratelimit_users,
                                    (double)app->cfg.ratelimit_rate,
                                    (double)app->cfg.ratelimit_burst);
    if (!app->soldout || !app->segs || !app->buckets || !app->events || !app->evlist) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=memory");
        return 1;
    }
    return run_make_limits(app);
}

/* The graceful stop: stop accepting, wait for the requests in flight, flush Kafka
 * (purging what is left), drain the PostgreSQL pool, free the workers, all within
 * shutdown.timeout_ms. The reconciler must be stopped already. */
static void run_drain(order_app *app)
{
    int64_t deadline = order_time_mono_us() + app->cfg.shutdown_timeout_ms * 1000;
    atomic_store(&app->draining, 1);
    if (app->workers)
        order_workers_stop_accepting(app);
    int64_t left = wait_idle(app, deadline);
    if (app->kafka) {
        order_workers_detach_kafka(app); /* reports are served on this thread from here */
        int64_t ms = (deadline - order_time_mono_us()) / 1000;
        int queued = order_kafka_flush(app->kafka, ms > 0 ? (int)ms : 0);
        /* Whatever is still queued is purged now; its reports (NOT_PERSISTED) reach the
         * workers, which give the stock back and answer 503. */
        order_kafka_free(app->kafka);
        app->kafka = NULL;
        if (queued > 0 || left > 0)
            left = wait_idle(app, order_time_mono_us() + 1000 * 1000);
    }
    order_pg_free(app->pg); /* finishes queued jobs; their answers go through the workers */
    app->pg = NULL;
    left = wait_idle(app, order_time_mono_us() + 500 * 1000);
    order_workers_free(app);
    sk_log(left ? SK_LOG_WARN : SK_LOG_INFO, "stopped", "unanswered=%" PRId64, left);
}

/* Frees what run made, in dependency order; each free takes NULL. */
static void run_free(order_app *app)
{
    order_kafka_free(app->kafka);
    order_pg_free(app->pg); /* before the loader, which its threads use */
    order_loader_free(app->loader);
    idgen_free(app->ids_order);
    idgen_free(app->ids_event);
    idgen_floor_pg_free(ids_floor);
    ids_floor = NULL;
    order_bucket_free(app->buckets);
    order_limit_free(app->limits);
    order_admit_free(app->admit);
    order_window_free(app->window);
    order_pause_free(app->paused);
    order_evrate_free(app->evrate);
    order_soldout_free(app->soldout);
    order_segs_free(app->segs);
    order_events_free(app->events);
    order_evlist_free(app->evlist);
    order_ocache_free(app->ocache);
    sk_order_msg_keys_free(app->msg_keys);
    sk_config_free(order_config_table, &app->cfg, app->kafka_props);
    libevent_global_shutdown();
}

/* Starts the workers, serves until SIGTERM or SIGINT, then drains.
 * @returns 0 (stopped on a signal) or 1 (the workers did not start). */
static int run_serve(order_app *app, order_reconciler **reconciler, sigset_t *sigs,
                     const char *redacted)
{
    int rc = 1;
    char err[768];
    app->nworkers = app->cfg.workers ? (int)app->cfg.workers : online_cores();
    app->hooks = order_http_hooks;
    /* Descriptors besides the connections: Redis, Kafka, PostgreSQL, each loop's own. */
    sk_listen_fit_nofile(&app->cfg.max_connections, 64 + 8LL * app->nworkers + app->cfg.pg_pool,
                         "limits.connections");
    if (order_workers_start(app, err, sizeof(err)) != 0) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=workers err=\"%s\"", err);
    } else {
        sk_log(SK_LOG_INFO, "listening",
               "addr=%s port=%d workers=%d event_method=%s redis=%s topic=%s ratelimit=%s "
               "version=%s",
               app->cfg.http_bind, app->port, app->nworkers, app->cfg.http_event_method, redacted,
               app->cfg.topic, app->cfg.ratelimit_mode, SECKILL_VERSION);
        int sig = 0;
        sigwait(sigs, &sig);
        sk_log(SK_LOG_INFO, "stopping", "signal=%d", sig);
        rc = 0;
    }
    /* First, so that the lock is free for another instance while this one drains. */
    order_reconciler_stop(*reconciler);
    *reconciler = NULL;
    run_drain(app);
    return rc;
}

/* The service: configuration, clients, workers, then the wait for a stop signal.
 * @returns the exit status (0, 1 start failed, 2 bad configuration). */
static int run(const char *config)
{
    static order_app app; /* static: big (metrics), and lives as long as the process */
    char err[768];
    order_reconciler *reconciler = NULL;
    if (load_config(&app.cfg, &app.kafka_props, config) != 0)
        return 2;
    sk_log_level lvl = SK_LOG_INFO;
    sk_log_level_parse(app.cfg.log_level, &lvl);
    sk_log_init("seckill-order", lvl);
    int rc = run_check_config(&app);
    if (rc != 0)
        goto out;
    rc = 1;
    if (order_scripts_init(&app.scripts) != 0) {
        sk_log(SK_LOG_ERROR, "start_failed", "why=\"a Lua script is missing from the build\"");
        goto out;
    }
    sigset_t sigs;
    if (run_signals_threads(&sigs) != 0)
        goto out;
    char redacted[600];
    order_redis_url_redacted(app.cfg.redis_url, redacted, sizeof(redacted));
    if ((rc = run_open_clients(&app, redacted)) != 0)
        goto out;
    rc = 1;
    if (run_make_shared(&app) != 0)
        goto out;
    if (*app.cfg.pg && app.cfg.reconcile_interval_ms > 0 &&
        !(reconciler = order_reconciler_start(&app.cfg, app.kafka_props, &app.scripts,
                                              &app.metrics, err, sizeof(err)))) {
        sk_log(SK_LOG_ERROR, "start_failed", "what=reconciler err=\"%s\"", err);
        goto out;
    }
    rc = run_serve(&app, &reconciler, &sigs, redacted);
out:
    order_reconciler_stop(reconciler);
    run_free(&app);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "token") == 0)
        return cmd_token(argc - 1, argv + 1);
    const char *config = NULL;
    static const struct option opts[] = {{"config", required_argument, 0, 'c'},
                                         {"help", no_argument, 0, 'h'},
                                         {"help-markdown", no_argument, 0, 'm'},
                                         {"version", no_argument, 0, 'V'},
                                         {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
        switch (o) {
        case 'c':
            config = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'm':
            sk_config_print_help(stdout, order_config_table, 1);
            return 0;
        case 'V':
            printf("seckill-order %s\n", SECKILL_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    return run(config);
}
