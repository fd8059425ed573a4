/* consumer_events: the outbox publisher. See consumer_events.h. */
#include "consumer_events.h"
#include "consumer_every.h"
#include "consumer_loop.h"

#include "sk_kafka_conf.h"
#include "sk_log.h"
#include "sk_pg.h"

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct consumer_events {
    char *pg, *topic;
    long long interval_ms, batch;
    PGconn *conn;
    rd_kafka_t *rk;
    consumer_every *thread; /* NULL until started */
    _Atomic int stopping;   /* set by consumer_events_free: a batch waiting on Kafka gives up */
    char err[256];
};

/* $1: the most rows. In id order: one order's transitions in the order they committed. */
static const char SQL_TAKE[] =
    "SELECT id, order_id, event_id, user_id, status, "
    "(extract(epoch from at) * 1000)::bigint FROM seckill_order_outbox "
    "ORDER BY id LIMIT $1::int FOR UPDATE SKIP LOCKED";
/* $1: the ids published, as a PostgreSQL array literal. */
static const char SQL_DONE[] = "DELETE FROM seckill_order_outbox WHERE id = ANY($1::bigint[])";

typedef struct delivery {
    int pending, failed;
} delivery;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    delivery *d = m->_private;
    d->pending--;
    if (m->err)
        d->failed++;
}

static int exec_ok(consumer_events *e, const char *sql)
{
    return sk_pg_exec(e->conn, sql, sql, 0, NULL, PGRES_COMMAND_OK, NULL, e->err, sizeof(e->err));
}

/* One batch: take, produce, wait, delete, commit. @returns rows published, or -1. */
static long publish_batch(consumer_events *e)
{
    if (!e->conn || PQstatus(e->conn) != CONNECTION_OK) {
        PQfinish(e->conn);
        if (!(e->conn = sk_pg_connect(e->pg, "seckill-consumer/events", e->err, sizeof(e->err))))
            return -1;
    }
    if (exec_ok(e, "BEGIN") != 0)
        return -1;
    char lim[24];
    snprintf(lim, sizeof(lim), "%lld", e->batch);
    const char *params[1] = {lim /* $1 the most rows */};
    PGresult *r = NULL;
    long n = -1;
    char *ids = NULL;
    if (sk_pg_exec(e->conn, "take", SQL_TAKE, 1, params, PGRES_TUPLES_OK, &r, e->err,
                   sizeof(e->err)) != SK_PG_OK)
        goto rollback;
    int rows = PQntuples(r);
    if (rows == 0) {
        n = 0;
        goto rollback;
    }
    size_t cap = (size_t)rows * 21 + 3, len = 1;
    if (!(ids = malloc(cap))) {
        snprintf(e->err, sizeof(e->err), "out of memory");
        goto rollback;
    }
    ids[0] = '{';
    delivery d = {0, 0};
    for (int i = 0; i < rows; i++) {
        const char *oid = PQgetvalue(r, i, 1);
        char value[256];
        int vlen = snprintf(value, sizeof(value),
                            "{\"v\":1,\"order_id\":\"%s\",\"event_id\":\"%s\",\"user_id\":\"%s\","
                            "\"status\":\"%s\",\"at_ms\":%s}",
                            oid, PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4),
                            PQgetvalue(r, i, 5));
        rd_kafka_resp_err_t err = rd_kafka_producev(
            e->rk, RD_KAFKA_V_TOPIC(e->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(oid, strlen(oid)), RD_KAFKA_V_VALUE(value, (size_t)vlen),
            RD_KAFKA_V_OPAQUE(&d), RD_KAFKA_V_END);
        if (err) {
            d.failed++;
            snprintf(e->err, sizeof(e->err), "produce: %s", rd_kafka_err2str(err));
            break;
        }
        d.pending++;
        len += (size_t)snprintf(ids + len, cap - len, "%s%s", len > 1 ? "," : "", PQgetvalue(r, i, 0));
    }
    /* Every acknowledgement before anything is deleted: at least once. A stop does not
     * wait for a broker that cannot take them (a missing topic waits message.timeout.ms):
     * the batch is purged, fails, and its rows stay for the next publisher. */
    while (d.pending > 0) {
        if (atomic_load(&e->stopping))
            rd_kafka_purge(e->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(e->rk, 100);
    }
    if (d.failed) {
        if (!e->err[0])
            snprintf(e->err, sizeof(e->err), "%d deliveries failed", d.failed);
        goto rollback;
    }
    snprintf(ids + len, cap - len, "}");
    const char *p_ids[1] = {ids};
    if (sk_pg_exec(e->conn, "delete", SQL_DONE, 1, p_ids, PGRES_COMMAND_OK, NULL, e->err,
                   sizeof(e->err)) != SK_PG_OK ||
        exec_ok(e, "COMMIT") != 0)
        goto rollback;
    PQclear(r);
    free(ids);
    return rows;
rollback:
    PQclear(r);
    free(ids);
    if (PQstatus(e->conn) == CONNECTION_OK) { /* the batch's own error is the one to tell */
        char ignored[8];
        sk_pg_exec(e->conn, "rollback", "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL, ignored,
                   sizeof(ignored));
    }
    return n;
}

static long events_tick(void *arg)
{
    consumer_events *e = arg;
    e->err[0] = '\0';
    long n = publish_batch(e);
    if (n < 0)
        sk_log(SK_LOG_WARN, "events_failed", "err=\"%s\"", e->err);
    return n;
}

consumer_events *consumer_events_start(const struct consumer_cfg *cfg, const sk_cfg_kv *kafka,
                                       char *err, size_t errsz)
{
    consumer_events *e = calloc(1, sizeof(*e));
    if (!e || !(e->pg = strdup(cfg->pg ? cfg->pg : "")) ||
        !(e->topic = strdup(cfg->events_topic))) {
        snprintf(err, errsz, "events: out of memory");
        consumer_events_free(e);
        return NULL;
    }
    e->interval_ms = cfg->events_interval_ms;
    e->batch = cfg->events_batch;
    /* A batch waits for its acknowledgements: 30 s, not librdkafka's 300, before it fails
     * and is retried (a missing topic, a broker away) */
    const char *defaults[] = {"client.id", "seckill-consumer-events", "linger.ms", "5",
                              "message.timeout.ms", "30000", NULL};
    const char *forced[] = {"enable.idempotence", "true", "acks", "all", NULL};
    rd_kafka_conf_t *conf = sk_kafka_conf_new(SK_KAFKA_PRODUCER, defaults, kafka, forced, err, errsz);
    if (!conf) {
        consumer_events_free(e);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    if (!(e->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, errsz))) {
        rd_kafka_conf_destroy(conf);
        consumer_events_free(e);
        return NULL;
    }
    if (!(e->thread = consumer_every_start(events_tick, e, e->interval_ms, e->batch, err, errsz))) {
        consumer_events_free(e);
        return NULL;
    }
    return e;
}

void consumer_events_free(consumer_events *e)
{
    if (!e)
        return;
    atomic_store(&e->stopping, 1);
    consumer_every_stop(e->thread);
    if (e->rk) {
        rd_kafka_flush(e->rk, 5000);
        rd_kafka_destroy(e->rk);
    }
    PQfinish(e->conn);
    free(e->pg);
    free(e->topic);
    free(e);
}
