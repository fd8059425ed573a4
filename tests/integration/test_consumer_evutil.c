/* test_consumer_evutil: see test_consumer_evutil.h. */
#include "test_consumer_evutil.h"

#include "sk_test_proc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

pid_t cev_spawn(const char *conninfo, const char *bootstrap, int port)
{
    ctu_env ce;
    char env_port[64];
    ctu_env_fill(&ce, conninfo, bootstrap);
    snprintf(env_port, sizeof(env_port), "SECKILL_HTTP_PORT=%d", port);
    const char *env[] = {ce.pg, ce.brokers, env_port, "SECKILL_GROUP_ID=events-test",
                         "SECKILL_KAFKA_SESSION_TIMEOUT_MS=6000", "SECKILL_EXPIRY_INTERVAL_MS=0",
                         "SECKILL_EVENTS_INTERVAL_MS=200", "SECKILL_EVENTS_LAG_ALARM_BYTES=1",
                         "SECKILL_REDIS_URL=", NULL};
    return ctu_consumer_spawn(env);
}

double cev_metric_wait(int port, const char *name, double want, int timeout_ms)
{
    double v = -1;
    for (int t = 0; t < timeout_ms; t += 100) {
        if ((v = ctu_metric_of(port, name)) == want)
            break;
        sk_test_pause_ms(100);
    }
    return v;
}

int cev_insert(PGconn *pg, int64_t base, int64_t event, int from, int to)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO seckill_order (order_id, event_id, user_id, status) "
             "SELECT %" PRId64 " + g, %" PRId64 ", 1 + g, 'created' FROM generate_series(%d, %d) g",
             base, event, from, to - 1);
    return ctu_pg_exec(pg, sql);
}

size_t cev_distinct(const ctu_dlq_msg *msgs, size_t n, int64_t base, size_t total)
{
    char *seen = calloc(total, 1);
    size_t distinct = 0;
    for (size_t i = 0; seen && i < n; i++) {
        long long oid = atoll(msgs[i].key) - base;
        if (oid >= 0 && (size_t)oid < total && !seen[oid]) {
            seen[oid] = 1;
            distinct++;
        }
    }
    free(seen);
    return distinct;
}

size_t cev_read_distinct(const char *bootstrap, int64_t base, size_t total, const char *what,
                         size_t *messages)
{
    ctu_dlq_msg *msgs = NULL;
    size_t n = ctu_dlq_read(bootstrap, CEV_TOPIC, total, 60000, &msgs);
    size_t distinct = cev_distinct(msgs, n, base, total);
    fprintf(stderr, "%s: %zu messages, %zu distinct, %zu duplicates\n", what, n, distinct,
            n - distinct);
    ctu_dlq_free(msgs, n);
    *messages = n;
    return distinct;
}
