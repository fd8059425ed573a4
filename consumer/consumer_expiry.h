/* consumer_expiry: the payment window's end (issue 22), a periodic task of
 * seckill-consumer on a thread of its own, with its own PostgreSQL and Redis connections.
 *
 * Each round (every expiry.interval_ms):
 *   1. expire: one statement (data-modifying CTEs, atomic) takes up to expiry.batch
 *      created orders whose pay_by has passed, FOR UPDATE SKIP LOCKED, sets them expired
 *      (closed_at) and adds their count to their events' stock_left. Several consumers
 *      run it at once without waiting on each other and never expire an order twice; a
 *      front's pay or cancel holding the row lock is skipped and re-checked next round
 *      (its own transaction re-reads the status: one winner, order_pay.h).
 *   2. release sweep: closed orders (cancelled or expired) whose released_at is NULL get
 *      their unit back in the Redis gate (release.lua, once per order id), their status
 *      in the order index ("<id>:s", order_msg.h), then released_at. This covers the
 *      rounds' own expiries and any crash (kill -9 of a front or a consumer) between a
 *      PostgreSQL commit and its Redis half.
 * Nothing here runs on the consumer's Kafka loop: a slow database only delays expiries.
 * Threads: start and stop from the main thread; consumer_expiry_round is for tests (not
 * while the thread runs). */
#ifndef CONSUMER_EXPIRY_H
#define CONSUMER_EXPIRY_H

#include <stddef.h>
#include <stdint.h>

typedef struct consumer_expiry consumer_expiry;

typedef struct consumer_expiry_cfg {
    const char *pg;        /* conninfo (copied) */
    const char *redis_url; /* "" or NULL: no Redis half (released_at stays NULL) */
    long long interval_ms; /* between rounds */
    long long batch;       /* orders per statement, at most */
    long long index_ttl_s; /* the order index's expiry */
} consumer_expiry_cfg;

/** @brief A task for cfg (strings copied). @returns NULL on OOM. */
consumer_expiry *consumer_expiry_new(const consumer_expiry_cfg *cfg);

/** @brief Starts the thread. @returns 0 or -1 with err. */
int consumer_expiry_start(consumer_expiry *e, char *err, size_t errsz);

/** @brief One round on the calling thread: @returns the orders expired now (>= 0), or -1
 *  (message in consumer_expiry_errstr). *released: units given back by the sweep. */
long consumer_expiry_round(consumer_expiry *e, long *released);

/** @brief The last error. */
const char *consumer_expiry_errstr(const consumer_expiry *e);

/** @brief Totals since start (thread-safe reads). */
uint64_t consumer_expiry_expired_total(const consumer_expiry *e);
uint64_t consumer_expiry_released_total(const consumer_expiry *e);

struct consumer_cfg;
/** @brief new + start from seckill-consumer's configuration (expiry.*, pg, redis.url,
 *  order.index_ttl_s). @returns the running task, or NULL with err. */
consumer_expiry *consumer_expiry_start_cfg(const struct consumer_cfg *cfg, char *err, size_t errsz);

/** @brief Stops the thread (the round under way finishes) and frees. NULL is fine. */
void consumer_expiry_free(consumer_expiry *e);

#endif
