/* test_consumer_evutil: what the order-events tests share (test_consumer_events.c,
 * test_consumer_wal.c): a consumer publishing from the slot, its metrics, and the
 * transitions read back from seckill.order-events. */
#ifndef TEST_CONSUMER_EVUTIL_H
#define TEST_CONSUMER_EVUTIL_H

#include "test_consumer_util.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CEV_TOPIC "seckill.order-events"

/** @brief Spawns a consumer of conninfo and bootstrap with /metrics on port, the expiry
 *  off, the slot retried every 200 ms and its lag alarm at 1 byte. */
pid_t cev_spawn(const char *conninfo, const char *bootstrap, int port);

/** @brief Polls the metric (ctu_metric_of) until it equals want or timeout_ms.
 *  @returns its last value. */
double cev_metric_wait(int port, const char *name, double want, int timeout_ms);

/** @brief Inserts orders base + from .. base + to - 1 of event (users 1 + i) as
 *  'created' in one statement (one transaction). @returns 0 or -1. */
int cev_insert(PGconn *pg, int64_t base, int64_t event, int from, int to);

/** @brief Of msgs, how many distinct order ids fall in base .. base + total - 1. */
size_t cev_distinct(const ctu_dlq_msg *msgs, size_t n, int64_t base, size_t total);

/** @brief Reads seckill.order-events until orders base .. base + total - 1 could all be
 *  there (up to 60 s), prints the counts under `what`.
 *  @returns the distinct order ids of that range seen; *messages all messages read. */
size_t cev_read_distinct(const char *bootstrap, int64_t base, size_t total, const char *what,
                         size_t *messages);

#endif
