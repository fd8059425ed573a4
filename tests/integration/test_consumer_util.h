/* test_consumer_util: helpers for the seckill-consumer integration and fault tests.
 *
 * Each test gets its own world: a seckill-devkafka process (own topics, own group
 * offsets), a database of its own on the shared PostgreSQL (created fresh, dropped at
 * the end), and seckill-consumer processes spawned from $SECKILL_BIN_DIR, all through
 * the launchers of tests/support (sk_test_devkafka, sk_test_pg, sk_test_proc: use
 * sk_test_now_ms, sk_test_pause_ms, sk_test_proc_stop). Waits poll a condition with a
 * deadline, never a fixed sleep. Not thread-safe. */
#ifndef TEST_CONSUMER_UTIL_H
#define TEST_CONSUMER_UTIL_H

#include "sk_test_devkafka.h"
#include "sk_test_pg.h"
#include "sk_test_proc.h"

#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- a private dev Kafka ---- */
typedef struct ctu_kafka {
    sk_test_devkafka dev; /* the dev Kafka (tests/support); pid 0 on Apache Kafka */
    char bootstrap[256];
    char control[128]; /* empty on Apache Kafka: no fault injection there */
    char topic[96];    /* the orders topic: seckill.orders, or the test's own on Apache Kafka */
    char dlq[112];     /* its dead-letter topic */
} ctu_kafka;

/** @brief Starts seckill-devkafka with `partitions` per topic (sk_test_devkafka_start).
 *  With $E2E_REAL_KAFKA set (the `kafka` label's fixture directory, tests/kafka.cmake),
 *  uses that Apache Kafka instead: creates topics of the test's own (`partitions` each)
 *  and exports SECKILL_TOPIC / SECKILL_DLQ_TOPIC for the consumers it spawns. */
int ctu_kafka_start(ctu_kafka *k, int partitions);
/** @brief SIGTERM, wait, remove its directory. */
void ctu_kafka_stop(ctu_kafka *k);

/* ---- PostgreSQL ---- */
/** @brief (Re)creates database `name`_<pid> owned by role seckill (sk_test_pg_create,
 *  without migrations: the consumer applies them).
 *  @returns a malloc'd conninfo for it as the seckill role ($SECKILL_PG + dbname), or NULL. */
char *ctu_db_create(const char *name);
/** @brief Drops database `name`_<pid> (forcing out sessions). */
void ctu_db_drop(const char *name);
/** @brief Connects or aborts the test. */
PGconn *ctu_pg(const char *conninfo);
/** @brief Runs a command. @returns 0 or -1 (message on stderr). */
int ctu_pg_exec(PGconn *c, const char *sql);
/** @brief The first column of the first row as an integer, or LLONG_MIN on error. */
long long ctu_pg_ll(PGconn *c, const char *sql);
/** @brief Polls `sql` every 50 ms until it equals want or timeout_ms passes.
 *  @returns the last value seen. */
long long ctu_pg_wait_ll(PGconn *c, const char *sql, long long want, int timeout_ms);
/** @brief Inserts an event row (id, stock). @returns 0 or -1. */
int ctu_pg_add_event(PGconn *c, int64_t id, int stock);

/* ---- a throwaway PostgreSQL server (for tests that stop it) ---- */
typedef struct ctu_pgsrv {
    char dir[256];
    int port;
    char conninfo[256]; /* as the postgres superuser, trust auth, database postgres */
} ctu_pgsrv;
/** @brief initdb in a temporary directory (as user postgres when we are root) and
 *  start it on a free port; waits until it accepts connections. @returns 0 or -1. */
int ctu_pgsrv_start(ctu_pgsrv *s);
/** @brief pg_ctl stop -m fast (waits). @returns 0 or -1. */
int ctu_pgsrv_stop(ctu_pgsrv *s);
/** @brief pg_ctl start again on the same port and directory (waits). @returns 0 or -1. */
int ctu_pgsrv_restart(ctu_pgsrv *s);
/** @brief Stops it if running and removes its directory. */
void ctu_pgsrv_destroy(ctu_pgsrv *s);

/* ---- producing ---- */
/** @brief A fast producer (linger 5 ms, idempotent). */
rd_kafka_t *ctu_producer(const char *bootstrap);
/** @brief Produces one message (copied), partition by key when partition < 0.
 *  Retries while the local queue is full. @returns 0 or -1. */
int ctu_produce(rd_kafka_t *p, const char *topic, int32_t partition, const void *key, size_t klen,
                const void *val, size_t vlen);
/** @brief Flushes, checks every delivery report, destroys. @returns 0 if all delivered. */
int ctu_producer_close(rd_kafka_t *p);
/** @brief Writes the contract JSON of one order. @returns its length. */
size_t ctu_order_json(char *buf, size_t sz, int64_t order_id, int64_t event_id, int64_t user_id,
                      int64_t ts_ms);
/** @brief The same order signed with the first key of spec ("key[,previous]"; NULL or
 *  "": unsigned). Aborts on a bad spec. @returns its length (0: buf too small). */
size_t ctu_order_signed(char *buf, size_t sz, int64_t order_id, int64_t event_id,
                        int64_t user_id, int64_t ts_ms, const char *spec);

/** @brief Produces n orders: order_base + i, event event_base + i % nevents (the key),
 *  user user_base + i. @returns 0 or -1. */
int ctu_produce_orders(rd_kafka_t *p, int64_t order_base, int n, int64_t event_base, int nevents,
                       int64_t user_base);
/** @brief Checks the table holds exactly orders order_base .. order_base + n - 1 as
 *  produced by ctu_produce_orders, all 'created', and nothing else.
 *  @returns 0, or -1 with the difference on stderr. */
int ctu_check_orders(PGconn *c, int64_t order_base, int n, int64_t event_base, int nevents,
                     int64_t user_base);

/* ---- the DLQ ---- */
typedef struct ctu_dlq_msg {
    char *key, *val;   /* malloc'd, NUL-terminated copies */
    size_t klen, vlen;
    char error[32];    /* the "error" header */
    int64_t src_offset;
    int32_t src_partition;
    char src_topic[128];    /* the "source.topic" header */
    int truncated;          /* the "truncated" header is "true" */
    int64_t original_size;  /* the "original.size" header, -1 if none */
    char dlq_error[48];     /* the "dlq.error" header: why the copy was cut */
} ctu_dlq_msg;
/** @brief Reads `topic` from the beginning of every partition until `want` messages
 *  arrived and then 1 s more of silence (to catch extras), or timeout_ms.
 *  @returns the number read; *out is malloc'd (free with ctu_dlq_free). */
size_t ctu_dlq_read(const char *bootstrap, const char *topic, size_t want, int timeout_ms,
                    ctu_dlq_msg **out);
void ctu_dlq_free(ctu_dlq_msg *m, size_t n);

/* ---- the usual start of a consumer test ---- */
/** @brief The two environment strings every consumer a test spawns needs. */
typedef struct ctu_env {
    char pg[1024];     /* SECKILL_PG=<the test's database> */
    char brokers[300]; /* SECKILL_KAFKA_BROKERS=<the test's Kafka> */
} ctu_env;
/** @brief Fills e from the test's database and its Kafka's bootstrap servers. */
void ctu_env_fill(ctu_env *e, const char *conninfo, const char *bootstrap);
/** @brief A Kafka of `partitions` (ctu_kafka_start), database `name` created and migrated
 *  (ctu_db_create, ctu_consumer_migrate), and events event_base .. event_base + nevents - 1
 *  of `stock` each. Aborts the test on a failure.
 *  @returns the conninfo (malloc'd), the connection in *pg. */
char *ctu_setup(ctu_kafka *k, int partitions, const char *name, int64_t event_base, int nevents,
                int stock, PGconn **pg);

/* ---- processes ---- */
/** @brief Spawns $SECKILL_BIN_DIR/seckill-consumer with the given extra environment
 *  ("KEY=VALUE" strings, NULL-terminated) on top of ours, stderr inherited. */
pid_t ctu_consumer_spawn(const char *const *env);
/** @brief Like ctu_consumer_spawn with one argument (e.g. "migrate"; NULL for none). */
pid_t ctu_consumer_spawn_arg(const char *const *env, const char *arg);
/** @brief Runs `seckill-consumer migrate` against conninfo. @returns its exit code. */
int ctu_consumer_migrate(const char *conninfo);
/** @brief GET http://127.0.0.1:port/path. @returns the status code (body in *body,
 *  malloc'd, may be NULL) or -1. */
int ctu_http_get(int port, const char *path, char **body);
/** @brief A metric's value from /metrics text ("name" or "name{labels}"), or -1. */
double ctu_metric(const char *text, const char *name);
/** @brief The sample `name` of the /metrics of the consumer on 127.0.0.1:port, -1 when
 *  unreachable or absent. */
double ctu_metric_of(int port, const char *name);

/** @brief Polls GET /healthz until 200 or timeout_ms. @returns 0 when it answered. */
int ctu_wait_healthy(int port, int timeout_ms);
/** @brief Seeds and returns a pseudo-random generator state (prints the seed). */
uint64_t ctu_seed(void);
uint64_t ctu_rand(uint64_t *state);

/** @brief An order of `quantity` units (issue 31), encoded and signed as ctu_order_json
 *  does. @returns its length. */
size_t ctu_order_json_units(char *buf, size_t sz, int64_t order_id, int64_t event_id,
                            int64_t user_id, int64_t ts_ms, uint32_t quantity);

#endif
