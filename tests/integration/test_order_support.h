/* test_order_support: what the seckill-order integration tests share: seckill-order
 * and seckill-consumer children with a clean SECKILL_* environment and a log, a tiny
 * blocking HTTP/1.1 client with keep-alive, a Kafka reader, and condition waits with
 * deadlines (no bare sleeps). Processes, the dev Kafka and the database per test come
 * from tests/support (sk_test_proc, sk_test_devkafka, sk_test_pg).
 * Not thread-safe except the HTTP client, which is per connection. */
#ifndef TEST_ORDER_SUPPORT_H
#define TEST_ORDER_SUPPORT_H

#include "sk_test_devkafka.h"
#include "sk_test_pg.h"
#include "sk_test_proc.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* 1 when deploy/local.sh's stack is reachable through the environment (.run/env). */
int to_stack_available(void);

/* ---- child processes ---- */
typedef struct to_proc {
    pid_t pid;
    char log[256]; /* stderr+stdout of the child */
} to_proc;

/** @brief Starts `argv` (sk_test_spawn) with the environment stripped of SECKILL_* and
 *  then `env` ("K=V" strings, NULL-terminated) added, stdout and stderr to log_path.
 *  @returns 0 or -1. */
int to_spawn(to_proc *p, const char *const *argv, const char *const *env, const char *log_path);
/** @brief Sends sig and waits up to timeout_ms. @returns the exit status (0..255),
 *  128+signal if killed, or -1 if it did not exit in time (then it is SIGKILLed).
 *  The child's log is removed after a clean exit (status 0) and kept otherwise. */
int to_stop(to_proc *p, int sig, int timeout_ms);

/** @brief Starts seckill-consumer (from SECKILL_BIN_DIR) on `pg` and `brokers`, HTTP off,
 *  5 ms batches, plus `extra_env` (NULL-terminated, may be NULL); its log is
 *  /tmp/<tag>_consumer_<pid>.log. @returns 0 or -1. */
int to_consumer_start(to_proc *p, const char *pg, const char *brokers,
                      const char *const *extra_env, const char *tag);

/* ---- seckill-order ---- */
typedef struct to_order {
    to_proc proc;
    int port;
    char secret[65];
} to_order;

/** @brief Starts seckill-order on a free port with the given extra env and waits for
 *  /healthz. redis_url, kafka_brokers, pg may be NULL (left unset). @returns 0 or -1. */
int to_order_start(to_order *o, const char *redis_url, const char *kafka_brokers,
                   const char *pg, const char *const *extra_env);

/** @brief A token for `user` minted with o's secret (admin role if admin, exp in ttl s). */
void to_token(const to_order *o, uint64_t user, int admin, int64_t ttl, char *out, size_t outsz);

/* ---- HTTP ---- */
int to_http_connect(int port);
/** @brief One request on fd (keep-alive). token NULL: no Authorization; raw_auth non-NULL:
 *  that exact header value. Body of the answer into body (NUL-terminated, truncated).
 *  @returns the status, or -1 on an I/O error. */
int to_http(int fd, const char *method, const char *path, const char *token, const char *raw_auth,
            const char *body, size_t blen, char *resp, size_t respsz);
/** @brief to_http in two halves, for requests in flight together on several
 *  connections: send returns 0 or -1; recv (method: the one sent) returns as to_http. */
int to_http_send(int fd, const char *method, const char *path, const char *token,
                 const char *raw_auth, const char *body, size_t blen);
int to_http_recv(int fd, const char *method, char *resp, size_t respsz);
/** @brief Same on a fresh connection to port, closed afterwards. */
int to_http1(int port, const char *method, const char *path, const char *token, const char *body,
             char *resp, size_t respsz);
#define TO_BURST_MAX 16
/** @brief n orders (events[i], users[i]) on n connections to o, all sent before any
 *  answer is read, so that the service reads several in one loop turn. Answer i into
 *  statuses[i] and bodies[i]. @returns 0, or -1 if a connection or send failed. */
int to_order_burst(const to_order *o, int n, const uint64_t *events, const uint64_t *users,
                   int *statuses, char (*bodies)[512]);
/** @brief The value of the sample `name` (with its labels) in o's /metrics, or -1. */
long long to_order_metric(const to_order *o, const char *name);
/** @brief The decimal value of "key":"<digits>" in a JSON text, or 0. */
uint64_t to_json_id(const char *json, const char *key);
/* 1 when json is an error body, {"error": code, "message": "..."} (a string message);
 * else 0. */
int to_error_is(const char *json, const char *code);

/* ---- Redis ---- */
redisContext *to_redis(const char *url);
/** @brief A canonical dump of every key matching pattern (type, value, TTL presence) in
 *  out, for before/after comparisons. */
void to_redis_snapshot(redisContext *c, const char *pattern, char *out, size_t outsz);
/** @brief Runs `fmt` (e.g. "HLEN %s") on the event's key of `kind` (an order_key_kind) and
 *  returns its integer answer (a numeric string is read as one), or -999 on anything else. */
long long to_key_int(redisContext *c, uint64_t event, int kind, const char *fmt);
/* The same for any key: `fmt` with one %s (GET %s, HLEN %s ...). */
long long to_cmd_int(redisContext *c, const char *fmt, const char *key);
/** @brief How many order index entries (seckill:oidx:*, every bucket) say that Kafka
 *  acknowledged an order of `event`: one per 202. -999 on a Redis error. */
long long to_acked_orders(redisContext *c, uint64_t event);

/* ---- PostgreSQL ---- */
/** @brief Creates a fresh database of a new name (sk_test_pg_create with migrations)
 *  and writes its name and conninfo. @returns 0 or -1. */
int to_pg_create(char *conninfo, size_t size, char *dbname, size_t dbsize);
void to_pg_drop(const char *dbname);

/* ---- devkafka (tests/support/sk_test_devkafka) ---- */
typedef sk_test_devkafka to_kafka;
int to_kafka_start(to_kafka *k);
void to_kafka_stop(to_kafka *k);
/** @brief Sends one control line. @returns 0 if it answered "ok". */
int to_kafka_control(const to_kafka *k, const char *line);
/** @brief Reads `topic` from the start for up to timeout_ms, looking for a message whose
 *  value holds "order_id":"<order_id>". @returns 1 found, 0 not found. */
int to_kafka_find_order(const char *brokers, const char *topic, uint64_t order_id, int timeout_ms);

/* ---- waiting ---- */
/** @brief Calls cond(arg) every 20 ms until it returns non-zero or timeout_ms passes.
 *  @returns its last result. */
int to_wait(int (*cond)(void *), void *arg, int timeout_ms);

/** @brief The value of header `name` (case-insensitive) in an answer's head (its
 *  status line and header lines, NUL-terminated), copied into out (cut to outsz - 1).
 *  @returns out, or NULL with out "" when there is no such header. */
const char *to_header_value(const char *head, const char *name, char *out, size_t outsz);

#endif
