/* seckill-consumer: drains seckill.orders into PostgreSQL (the peak-shaving half of the
 * pipeline). This file is the program: configuration table, command line, signals,
 * start-up order (migrations, HTTP, consumer loop) and clean exit. */
#include "consumer_db.h"
#include "consumer_events.h"
#include "consumer_expiry.h"
#include "consumer_http.h"
#include "consumer_loop.h"
#include "consumer_metrics.h"
#include "consumer_replay.h"

#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sk_config.h>
#include <sk_group.h>
#include <sk_listen.h>
#include <sk_log.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_MAX (24LL * 3600 * 1000)

/* The one configuration table: the parser, --help and the README table come from it. */
static const sk_cfg_entry config_table[] = {
    {"pg", SK_CFG_SECRET, 0, 0, "",
     "PostgreSQL conninfo or URI (empty: libpq's PG* environment)", offsetof(consumer_cfg, pg)},
    SK_GROUP_CFG_ENTRY(offsetof(consumer_cfg, group_id)), /* shared with the reconciler */
    {"topic", SK_CFG_STRING, 0, 0, "seckill.orders", "topic of the orders",
     offsetof(consumer_cfg, topic)},
    {"dlq.topic", SK_CFG_STRING, 0, 0, "seckill.orders.dlq", "dead-letter topic for poison messages",
     offsetof(consumer_cfg, dlq_topic)},
    /* 2000, not 1000: a transaction's own statements (the events' locks and stock, the
     * commit's flush) are paid per batch; the drain went from 93,765 to 101,760 orders/s
     * (medians of 5 alternating pairs, events on, docs/benchmarks.md round 14); 4000 gave
     * nothing more. */
    {"batch.max", SK_CFG_INT, 1, 100000, "2000", "messages per transaction, at most",
     offsetof(consumer_cfg, batch_max)},
    {"batch.ms", SK_CFG_INT, 1, 60000, "20", "a batch is written when its first message is this old (ms)",
     offsetof(consumer_cfg, batch_ms)},
    {"retry.min.ms", SK_CFG_INT, 1, MS_MAX, "100", "first backoff after a failed transaction (ms)",
     offsetof(consumer_cfg, retry_min_ms)},
    {"retry.max.ms", SK_CFG_INT, 1, MS_MAX, "5000", "backoff cap, doubled from retry.min.ms (ms)",
     offsetof(consumer_cfg, retry_max_ms)},
    {"shutdown.ms", SK_CFG_INT, 0, MS_MAX, "5000",
     "on SIGTERM, time allowed to finish the batch before leaving (ms)",
     offsetof(consumer_cfg, shutdown_ms)},
    {"db.writers", SK_CFG_INT, 1, 16, "2",
     "writer threads, one PostgreSQL connection each (partition p goes to writer p % n)",
     offsetof(consumer_cfg, writers)},
    {"http.port", SK_CFG_INT, 0, 65535, "18081", "port of /healthz and /metrics (0: none)",
     offsetof(consumer_cfg, http_port)},
    {"http.bind", SK_CFG_STRING, 0, 0, "127.0.0.1",
     "address of /healthz and /metrics: a numeric IPv4 address (0.0.0.0: every interface)",
     offsetof(consumer_cfg, http_bind)},
    {"metrics.token", SK_CFG_SECRET, 0, 0, "",
     "if set, GET /metrics needs `Authorization: Bearer <this>` (else 401)",
     offsetof(consumer_cfg, metrics_token)},
    {"metrics.open", SK_CFG_INT, 0, 1, "0",
     "without metrics.token: 1 answers /metrics to anyone, 0 only to peers on this host "
     "(127.0.0.0/8; others 401)",
     offsetof(consumer_cfg, metrics_open)},
    {"http.max_header_bytes", SK_CFG_INT, 1024, 65536, "8192",
     "request line + headers past this: refused and the connection closed",
     offsetof(consumer_cfg, http_max_header_bytes)},
    {"http.timeout_s", SK_CFG_INT, 1, 3600, "10",
     "a connection silent this long (a partial request included) is closed",
     offsetof(consumer_cfg, http_timeout_s)},
    {"http.read_timeout_ms", SK_CFG_INT, 0, 600000, "10000",
     "a request must arrive whole within this from its first byte, or the connection is "
     "closed (0: no deadline; http.timeout_s restarts with every byte)",
     offsetof(consumer_cfg, http_read_timeout_ms)},
    {"limits.connections", SK_CFG_INT, 1, 1000000, "256",
     "connections to /healthz and /metrics held at once; one more is closed at once "
     "(lowered at start to fit RLIMIT_NOFILE)",
     offsetof(consumer_cfg, max_connections)},
    {"migrate", SK_CFG_BOOL, 0, 0, "true", "apply deploy/sql migrations at start",
     offsetof(consumer_cfg, migrate)},
    {"redis.url", SK_CFG_SECRET, 0, 0, "",
     "Redis of seckill-order's order index: each order's outcome is written there after its "
     "commit, so GET /api/v1/orders/{id} needs no PostgreSQL query (empty: not written)",
     offsetof(consumer_cfg, redis_url)},
    {"order.index_ttl_s", SK_CFG_INT, 1, 31536000, "604800",
     "expiry of the order index hashes (the same as seckill-order's)",
     offsetof(consumer_cfg, index_ttl_s)},
    {"expiry.interval_ms", SK_CFG_INT, 0, 60000, "500",
     "between rounds of the payment-window expiry and the release sweep (issue 22; "
     "0: off, for a consumer that should only drain)",
     offsetof(consumer_cfg, expiry_interval_ms)},
    {"expiry.batch", SK_CFG_INT, 1, 100000, "1000",
     "orders expired per statement and released per sweep, at most",
     offsetof(consumer_cfg, expiry_batch)},
    {"events.topic", SK_CFG_STRING, 0, 0, "seckill.order-events",
     "topic of the order transitions, read from the WAL (issue 36; empty: this process does "
     "not publish, the slot keeps them for one that does)",
     offsetof(consumer_cfg, events_topic)},
    {"events.slot", SK_CFG_STRING, 0, 0, "",
     "logical replication slot the transitions are read from, created when missing "
     "(empty: seckill_events_<database>); one process streams it at a time",
     offsetof(consumer_cfg, events_slot)},
    {"events.interval_ms", SK_CFG_INT, 1, 60000, "1000",
     "between two attempts to stream the slot (another process holds it, PostgreSQL or "
     "Kafka away) (ms)",
     offsetof(consumer_cfg, events_interval_ms)},
    {"events.lag_alarm_bytes", SK_CFG_INT, 1, 1099511627776LL, "1073741824",
     "WAL the slot may keep past what Kafka acknowledged before events_slot_lag is logged",
     offsetof(consumer_cfg, events_lag_alarm_bytes)},
    {"log.level", SK_CFG_STRING, 0, 0, "info", "debug, info, warn or error",
     offsetof(consumer_cfg, log_level)},
    {"order.msg_keys", SK_CFG_SECRET, 0, 0, "",
     "keys of the order messages' MAC, as seckill-order's: \"key[,previous]\" (16+ bytes "
     "each); a message without a valid MAC is dead-lettered (bad_mac). Empty: not "
     "verified (a warning at start)",
     offsetof(consumer_cfg, msg_keys)},
    {NULL, 0, 0, 0, NULL, NULL, 0},
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: seckill-consumer [--config FILE] [migrate]\n"
            "       seckill-consumer --help | --version | --help-markdown\n"
            "Drains the orders topic into PostgreSQL in batches, exactly once per order;\n"
            "poison messages go to the dead-letter topic. `migrate` applies the schema and exits.\n"
            "`replay` sends chosen dead letters back:\n");
    consumer_replay_usage(out);
    fprintf(out,
            "Settings (file `key = value`, overridden by SECKILL_<KEY> in the environment;\n"
            "kafka.* go to librdkafka unchanged, SECKILL_KAFKA_BROKERS -> kafka.bootstrap.servers):\n");
    sk_config_print_help(out, config_table, 0);
}

static int run_migrate(consumer_cfg *cfg)
{
    consumer_db *db = consumer_db_new(cfg->pg);
    if (!db) {
        sk_log(SK_LOG_ERROR, "migrate_failed", "err=\"out of memory\"");
        return -1;
    }
    char warn[256];
    int n = consumer_db_migrate_events(db, cfg->events_topic[0] ? cfg->events_slot : NULL, warn,
                                       sizeof(warn));
    if (warn[0]) /* the publisher tries again; the writes do not need the slot */
        sk_log(SK_LOG_WARN, "events_slot_failed", "err=\"%s\"", warn);
    if (n < 0)
        sk_log(SK_LOG_ERROR, "migrate_failed", "err=\"%s\"", consumer_db_errstr(db));
    else
        sk_log(SK_LOG_INFO, "migrated", "applied=%d", n);
    consumer_db_free(db);
    return n < 0 ? -1 : 0;
}

/* Reads the command line into *config_path and *migrate_only, or (`replay ...`, the rest
 * of the line its options) *replay.
 * @returns -1 to go on, or the exit status (0 after --help or --version, 2 on a bad
 * argument). */
static int parse_args(int argc, char **argv, const char **config_path, int *migrate_only,
                      consumer_replay_opts **replay)
{
    static consumer_replay_opts ro;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--help-markdown") == 0) {
            sk_config_print_help(stdout, config_table, 1);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("seckill-consumer %s (librdkafka %s)\n", SECKILL_VERSION, rd_kafka_version_str());
            return 0;
        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            *config_path = argv[++i];
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            *config_path = argv[i] + 9;
        } else if (strcmp(argv[i], "migrate") == 0) {
            *migrate_only = 1;
        } else if (strcmp(argv[i], "replay") == 0 && !*migrate_only) {
            char err[256];
            if (consumer_replay_parse(argc - i - 1, argv + i + 1, &ro, err, sizeof(err)) != 0) {
                fprintf(stderr, "seckill-consumer: %s\n", err);
                consumer_replay_usage(stderr);
                return 2;
            }
            *replay = &ro;
            return -1;
        } else {
            fprintf(stderr, "seckill-consumer: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

/* Loads the configuration (file, then environment) into cfg and *kafka, sets the log
 * level and checks what the table cannot. @returns 0, or 2 with a message on stderr
 * (cfg and *kafka are then still the caller's to free). */
static int load_config(consumer_cfg *cfg, sk_cfg_kv **kafka, const char *config_path)
{
    char err[512];
    sk_log_init("seckill-consumer", SK_LOG_INFO);
    if (sk_config_load(config_table, cfg, config_path, kafka, err, sizeof(err)) != 0) {
        fprintf(stderr, "seckill-consumer: %s\n", err);
        return 2;
    }
    sk_log_level level;
    if (sk_log_level_parse(cfg->log_level, &level) != 0) {
        fprintf(stderr, "seckill-consumer: log.level: unknown level \"%s\"\n", cfg->log_level);
        return 2;
    }
    sk_log_init("seckill-consumer", level);
    struct in_addr bind_addr;
    if (inet_pton(AF_INET, cfg->http_bind, &bind_addr) != 1) {
        fprintf(stderr, "seckill-consumer: http.bind: \"%s\" is not a numeric IPv4 address\n",
                cfg->http_bind);
        return 2;
    }
    if (cfg->retry_max_ms < cfg->retry_min_ms)
        cfg->retry_max_ms = cfg->retry_min_ms;
    return 0;
}

/* Migrations first: the order service's tests rely on the tables once we are up.
 * A database that is not there yet is retried, with a doubling backoff, until it is
 * or until a signal. @returns 0 (migrated) or -1 (stopped by a signal). */
static int migrate_until_done(consumer_cfg *cfg)
{
    int64_t backoff = cfg->retry_min_ms;
    while (run_migrate(cfg) != 0 && !stop_requested) {
        struct timespec ts = {.tv_sec = backoff / 1000, .tv_nsec = (backoff % 1000) * 1000000};
        nanosleep(&ts, NULL);
        backoff = backoff * 2 > cfg->retry_max_ms ? cfg->retry_max_ms : backoff * 2;
    }
    return stop_requested ? -1 : 0;
}

/* The service: migrations, /healthz and /metrics, then the consumer loop until a
 * signal. @returns the exit status (0 or 1). */
static int serve(consumer_cfg *cfg, sk_cfg_kv *kafka)
{
    char err[512];
    int rc = 0;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    consumer_metrics metrics;
    consumer_metrics_init(&metrics);
    consumer_http *http = NULL;
    consumer_loop *loop = NULL;
    consumer_expiry *expiry = NULL;
    consumer_events *events = NULL;
    if (cfg->migrate && migrate_until_done(cfg) != 0)
        goto out;
    if (cfg->http_port > 0) {
        /* Descriptors besides the connections: Kafka's, each writer's PostgreSQL, Redis,
         * the loop's own, logs. */
        sk_listen_fit_nofile(&cfg->max_connections, 64 + 2 * cfg->writers, "limits.connections");
        http = consumer_http_start(cfg, &metrics, err, sizeof(err));
        if (!http) {
            sk_log(SK_LOG_ERROR, "start_failed", "err=\"%s\"", err);
            rc = 1;
            goto out;
        }
        sk_log(SK_LOG_INFO, "listening", "addr=%s port=%lld", cfg->http_bind, cfg->http_port);
    }
    loop = consumer_loop_new(cfg, kafka, &metrics, err, sizeof(err));
    if (!loop) {
        sk_log(SK_LOG_ERROR, "start_failed", "err=\"%s\"", err);
        rc = 1;
        goto out;
    }
    if (cfg->expiry_interval_ms > 0 && !(expiry = consumer_expiry_start_cfg(cfg, err, sizeof(err))))
        sk_log(SK_LOG_WARN, "expiry_off", "err=\"%s\"", err);
    if (cfg->events_topic[0] && !(events = consumer_events_start(cfg, kafka, &metrics, err, sizeof(err))))
        sk_log(SK_LOG_WARN, "events_off", "err=\"%s\"", err);
    rc = consumer_loop_run(loop, &stop_requested) == 0 ? 0 : 1;
out:
    consumer_events_free(events);
    consumer_expiry_free(expiry);
    consumer_loop_free(loop);
    consumer_http_stop(http);
    consumer_metrics_destroy(&metrics);
    return rc;
}

int main(int argc, char **argv)
{
    const char *config_path = NULL;
    int migrate_only = 0;
    consumer_replay_opts *replay = NULL;
    int rc = parse_args(argc, argv, &config_path, &migrate_only, &replay);
    if (rc >= 0)
        return rc;
    consumer_cfg cfg = {0};
    sk_cfg_kv *kafka = NULL;
    rc = load_config(&cfg, &kafka, config_path);
    if (rc == 0 && replay)
        rc = consumer_replay_run(&cfg, kafka, replay, stdout);
    else if (rc == 0 && migrate_only)
        rc = run_migrate(&cfg) == 0 ? 0 : 1;
    else if (rc == 0)
        rc = serve(&cfg, kafka);
    sk_config_free(config_table, &cfg, kafka);
    return rc;
}
