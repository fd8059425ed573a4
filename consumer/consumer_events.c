/* consumer_events: the order-events publisher, from a logical replication slot. See
 * consumer_events.h; the bytes are consumer_walproto.h's.
 *
 * Design: one thread (consumer_every) owns two connections, the replication stream and a
 * plain one for the slot's upkeep (its name, its creation, its lag), and the producer.
 * Transactions read from the stream are queued in commit order, each counting its
 * messages Kafka has not yet acknowledged (delivery reports run on this thread, from
 * rd_kafka_poll); the confirmed position is the end LSN of the longest acknowledged
 * prefix. A failed delivery ends the stream: everything queued is purged and the stream
 * restarts from the confirmed position, so nothing is skipped. */
#include "consumer_events.h"
#include "consumer_every.h"
#include "consumer_loop.h"
#include "consumer_walproto.h"

#include "sk_kafka_conf.h"
#include "sk_log.h"
#include "sk_pg.h"

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPORT_MS 100             /* the least time between two confirmations */
#define REPORT_IDLE_MS 10000      /* a confirmation at least this often (wal_sender_timeout) */
#define LAG_CHECK_MS 1000         /* between two reads of the slot's lag */
#define START_TIMEOUT_MS 10000    /* START_REPLICATION's answer */
#define STOP_FLUSH_MS 5000        /* acknowledgements awaited at a stop */

/* A transaction read from the stream and not yet confirmed. */
typedef struct txn {
    struct txn *next;
    uint64_t end_lsn; /* known at its commit */
    long pending;     /* messages produced and not yet acknowledged */
    int committed;
} txn;

struct consumer_events {
    char *pg, *pg_repl, *topic;
    char *slot_cfg;                        /* events.slot ("": from the database) */
    char slot[CONSUMER_EVENTS_SLOT_MAX + 1]; /* the slot's name, once known */
    long long interval_ms, lag_alarm;
    consumer_metrics *m;
    PGconn *repl, *sql;
    rd_kafka_t *rk;
    consumer_every *thread; /* NULL until started */
    _Atomic int stopping;   /* set by consumer_events_free */
    /* The stream's state: the thread's only. */
    txn *head, *tail, *open;
    uint64_t acked;    /* every transition committed before this LSN is in Kafka */
    uint64_t reported; /* the last position confirmed to the server */
    int64_t last_report_ms, last_lag_ms, last_alarm_ms;
    int failed;        /* a delivery failed: the stream restarts from the confirmed position */
    int waiting;       /* the slot is another's: logged once per wait */
    char err[256];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    consumer_events *e = opaque;
    txn *t = msg->_private;
    t->pending--;
    if (msg->err) {
        if (!e->failed)
            snprintf(e->err, sizeof(e->err), "delivery: %s", rd_kafka_err2str(msg->err));
        e->failed = 1;
    } else {
        atomic_fetch_add_explicit(&e->m->events_published, 1, memory_order_relaxed);
    }
}

/* Pops the acknowledged prefix of the queue, moving `acked` to its last end. */
static void advance(consumer_events *e)
{
    while (e->head && e->head->committed && e->head->pending == 0) {
        txn *t = e->head;
        if (t->end_lsn > e->acked)
            e->acked = t->end_lsn;
        e->head = t->next;
        if (!e->head)
            e->tail = NULL;
        free(t);
    }
}

/* Confirms `acked` to the server when it moved (at most every REPORT_MS) or when asked.
 * @returns 0, -1 when the stream broke. */
static int report(consumer_events *e, int force)
{
    int64_t now = now_ms();
    if (!force && !(e->acked > e->reported && now - e->last_report_ms >= REPORT_MS) &&
        now - e->last_report_ms < REPORT_IDLE_MS)
        return 0;
    char buf[CONSUMER_WAL_STATUS_LEN];
    consumer_wal_status(buf, e->acked, now * 1000);
    if (PQputCopyData(e->repl, buf, sizeof(buf)) != 1 || PQflush(e->repl) != 0) {
        snprintf(e->err, sizeof(e->err), "status update: %s", PQerrorMessage(e->repl));
        return -1;
    }
    e->reported = e->acked;
    e->last_report_ms = now;
    return 0;
}

/* The plain connection, (re)opened when needed. @returns 0, -1 with e->err. */
static int sql_conn(consumer_events *e)
{
    if (e->sql && PQstatus(e->sql) == CONNECTION_OK)
        return 0;
    PQfinish(e->sql);
    e->sql = sk_pg_connect(e->pg, "seckill-consumer/events", e->err, sizeof(e->err));
    return e->sql ? 0 : -1;
}

/* Reads the WAL the slot keeps past its confirmed point into the metric; logs past the
 * alarm (again every 30 s while it lasts). */
static void lag_check(consumer_events *e)
{
    int64_t now = now_ms();
    if (now - e->last_lag_ms < LAG_CHECK_MS)
        return;
    e->last_lag_ms = now;
    char err[256];
    PGresult *r = NULL;
    const char *p[1] = {e->slot /* $1 the slot */};
    if (!e->slot[0] || sql_conn(e) != 0 ||
        sk_pg_exec(e->sql, "slot lag",
                   "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint "
                   "FROM pg_replication_slots WHERE slot_name = $1",
                   1, p, PGRES_TUPLES_OK, &r, err, sizeof(err)) != SK_PG_OK) {
        atomic_store(&e->m->events_slot_lag, -1);
        return;
    }
    long long lag = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    atomic_store(&e->m->events_slot_lag, lag);
    if (lag > e->lag_alarm && now - e->last_alarm_ms >= 30000) {
        e->last_alarm_ms = now;
        sk_log(SK_LOG_WARN, "events_slot_lag", "slot=%s lag_bytes=%lld alarm_bytes=%lld", e->slot,
               lag, e->lag_alarm);
    } else if (lag >= 0 && lag <= e->lag_alarm) {
        e->last_alarm_ms = 0;
    }
}

int consumer_events_slot_ensure(PGconn *c, const char *slot_cfg, char *slot, char *err,
                                size_t errsz)
{
    PGresult *r = NULL;
    if (!slot_cfg || !slot_cfg[0]) {
        if (sk_pg_exec(c, "database", "SELECT current_database()", 0, NULL, PGRES_TUPLES_OK, &r,
                       err, errsz) != SK_PG_OK)
            return -1;
        char name[CONSUMER_EVENTS_SLOT_MAX + 1];
        snprintf(name, sizeof(name), "seckill_events_%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        for (char *p = name; *p; p++) /* a slot name is [a-z0-9_] */
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
                *p = (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : '_';
        memcpy(slot, name, sizeof(name));
    } else {
        snprintf(slot, CONSUMER_EVENTS_SLOT_MAX + 1, "%s", slot_cfg);
    }
    /* The publication before the slot: pgoutput reads it as of each decoded
     * transaction, so a slot older than its publication fails on everything before it.
     * 42710: another process made it first. */
    if (sk_pg_exec(c, "create publication",
                   "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '"
                   CONSUMER_EVENTS_PUBLICATION "') THEN CREATE PUBLICATION "
                   CONSUMER_EVENTS_PUBLICATION "; END IF; END $$",
                   0, NULL, PGRES_COMMAND_OK, NULL, err, errsz) != SK_PG_OK &&
        strcmp(sk_pg_sqlstate(c), "42710") != 0)
        return -1;
    const char *p[1] = {slot /* $1 the slot */};
    int rc = sk_pg_exec(c, "create slot",
                        "SELECT pg_create_logical_replication_slot($1, 'pgoutput') "
                        "WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)",
                        1, p, PGRES_TUPLES_OK, NULL, err, errsz);
    /* 42710: another process created it between our check and our create. */
    if (rc != SK_PG_OK && strcmp(sk_pg_sqlstate(c), "42710") != 0)
        return -1;
    return 0;
}

/* The slot, named and created when missing, on the plain connection. */
static int slot_ensure(consumer_events *e)
{
    if (sql_conn(e) != 0)
        return -1;
    return consumer_events_slot_ensure(e->sql, e->slot_cfg, e->slot, e->err, sizeof(e->err));
}

/* Waits up to ms for the stream's socket to be readable. @returns 0, -1 on error. */
static int wait_readable(PGconn *c, int ms)
{
    struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN};
    if (pfd.fd < 0)
        return -1;
    return poll(&pfd, 1, ms) < 0 ? -1 : 0;
}

/* Opens the replication connection and starts streaming the slot from its confirmed
 * position. @returns 0, 1 when the slot is another's (object_in_use), -1 with e->err. */
static int stream_open(consumer_events *e)
{
    if (slot_ensure(e) != 0)
        return -1;
    if (!(e->repl = sk_pg_connect(e->pg_repl, "seckill-consumer/events-stream", e->err,
                                  sizeof(e->err))))
        return -1;
    char sql[256];
    snprintf(sql, sizeof(sql),
             "START_REPLICATION SLOT \"%s\" LOGICAL 0/0 (proto_version '1', "
             "publication_names '" CONSUMER_EVENTS_PUBLICATION "', messages 'true')",
             e->slot);
    if (!PQsendQuery(e->repl, sql)) {
        snprintf(e->err, sizeof(e->err), "start: %s", PQerrorMessage(e->repl));
        return -1;
    }
    int64_t deadline = now_ms() + START_TIMEOUT_MS;
    while (PQisBusy(e->repl)) {
        if (now_ms() > deadline || wait_readable(e->repl, 100) != 0 || !PQconsumeInput(e->repl)) {
            snprintf(e->err, sizeof(e->err), "start: no answer");
            return -1;
        }
    }
    PGresult *r = PQgetResult(e->repl);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_COPY_BOTH) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        rc = state && strcmp(state, "55006") == 0 ? 1 : -1;
        snprintf(e->err, sizeof(e->err), "start: %s", PQresultErrorMessage(r));
        e->err[strcspn(e->err, "\n")] = '\0';
    }
    PQclear(r);
    e->acked = e->reported = 0;
    e->last_report_ms = 0;
    return rc;
}

/* Produces one transition with t as its delivery's opaque; waits while librdkafka's
 * queue is full. @returns 0, -1 when stopping or on a produce error. */
static int produce(consumer_events *e, txn *t, const char *line, size_t len)
{
    char value[512], key[24];
    int vlen = consumer_wal_line_json(line, len, value, sizeof(value), key);
    if (vlen < 0) { /* not ours to fix: counted, logged, skipped */
        atomic_fetch_add_explicit(&e->m->events_bad, 1, memory_order_relaxed);
        sk_log(SK_LOG_WARN, "events_bad_line", "len=%zu", len);
        return 0;
    }
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            e->rk, RD_KAFKA_V_TOPIC(e->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(value, (size_t)vlen),
            RD_KAFKA_V_OPAQUE(t), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            t->pending++;
            return 0;
        }
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || atomic_load(&e->stopping)) {
            snprintf(e->err, sizeof(e->err), "produce: %s", rd_kafka_err2str(err));
            return -1;
        }
        rd_kafka_poll(e->rk, 50); /* the broker is behind: so is the stream */
        advance(e);
    }
}

/* One frame from the stream. @returns 0, -1 with e->err. */
static int handle(consumer_events *e, const char *buf, size_t len)
{
    consumer_wal_frame f;
    if (consumer_wal_parse(buf, len, &f) != 0) {
        snprintf(e->err, sizeof(e->err), "malformed replication frame (%zu bytes)", len);
        return -1;
    }
    switch (f.kind) {
    case CONSUMER_WAL_KEEPALIVE:
        /* Nothing read and unconfirmed: everything before wal_end was sent to us and had
         * no transition, so the slot may move past it (else it keeps the WAL forever). */
        if (!e->open && !e->head && f.wal_end > e->acked)
            e->acked = f.wal_end;
        return f.reply_requested ? report(e, 1) : 0;
    case CONSUMER_WAL_BEGIN: {
        txn *t = calloc(1, sizeof(*t));
        if (!t) {
            snprintf(e->err, sizeof(e->err), "out of memory");
            return -1;
        }
        if (e->tail)
            e->tail->next = t;
        else
            e->head = t;
        e->tail = e->open = t;
        return 0;
    }
    case CONSUMER_WAL_MESSAGE: {
        if (!e->open || !f.transactional || strcmp(f.prefix, CONSUMER_WAL_PREFIX) != 0)
            return 0; /* another prefix, or a non-transactional message: not ours */
        size_t pos = 0, n;
        const char *line;
        while (consumer_wal_next_line(f.content, f.content_len, &pos, &line, &n))
            if (produce(e, e->open, line, n) != 0)
                return -1;
        return 0;
    }
    case CONSUMER_WAL_COMMIT:
        if (e->open) {
            e->open->end_lsn = f.end_lsn;
            e->open->committed = 1;
            e->open = NULL;
        }
        return 0;
    default:
        return 0;
    }
}

/* Ends the stream. graceful: what was produced gets STOP_FLUSH_MS to be acknowledged and
 * is confirmed; else everything queued is purged (it is read again from the slot). */
static void stream_close(consumer_events *e, int graceful)
{
    if (graceful) {
        int64_t deadline = now_ms() + STOP_FLUSH_MS;
        while (rd_kafka_outq_len(e->rk) > 0 && !e->failed && now_ms() < deadline) {
            rd_kafka_poll(e->rk, 50);
            advance(e);
        }
        if (e->repl && PQstatus(e->repl) == CONNECTION_OK)
            (void)report(e, 1);
    }
    rd_kafka_purge(e->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    while (rd_kafka_outq_len(e->rk) > 0)
        rd_kafka_poll(e->rk, 50); /* every delivery report (purged ones fail) */
    while (e->head) {
        txn *t = e->head;
        e->head = t->next;
        free(t);
    }
    e->tail = e->open = NULL;
    e->failed = 0;
    PQfinish(e->repl);
    e->repl = NULL;
    atomic_store(&e->m->events_streaming, 0);
}

/* Streams until a stop or an error. @returns 0 at a stop, -1 with e->err. */
static int stream_pump(consumer_events *e)
{
    while (!atomic_load(&e->stopping)) {
        rd_kafka_poll(e->rk, 0);
        advance(e);
        if (e->failed)
            return -1;
        if (report(e, 0) != 0)
            return -1;
        lag_check(e);
        char *buf = NULL;
        int n = PQgetCopyData(e->repl, &buf, 1);
        if (n > 0) {
            int rc = handle(e, buf, (size_t)n);
            PQfreemem(buf);
            if (rc != 0)
                return -1;
            continue;
        }
        if (n == 0) {
            if (wait_readable(e->repl, e->head ? 10 : 100) != 0 || !PQconsumeInput(e->repl)) {
                snprintf(e->err, sizeof(e->err), "stream: %s", PQerrorMessage(e->repl));
                e->err[strcspn(e->err, "\n")] = '\0';
                return -1;
            }
            continue;
        }
        PGresult *r = PQgetResult(e->repl); /* the stream ended: why */
        snprintf(e->err, sizeof(e->err), "stream ended: %s",
                 r ? PQresultErrorMessage(r) : PQerrorMessage(e->repl));
        e->err[strcspn(e->err, "\n")] = '\0';
        PQclear(r);
        return -1;
    }
    return 0;
}

static long events_tick(void *arg)
{
    consumer_events *e = arg;
    e->err[0] = '\0';
    int rc = stream_open(e);
    if (rc != 0) {
        if (rc == 1 && !e->waiting) /* the slot is another publisher's: wait our turn */
            sk_log(SK_LOG_INFO, "events_standby", "slot=%s", e->slot);
        else if (rc != 1)
            sk_log(SK_LOG_WARN, "events_failed", "err=\"%s\"", e->err);
        e->waiting = rc == 1;
        PQfinish(e->repl);
        e->repl = NULL;
        if (rc == 1) /* PostgreSQL answers: watch the slot the other process streams */
            lag_check(e);
        return -1;
    }
    e->waiting = 0;
    atomic_store(&e->m->events_streaming, 1);
    sk_log(SK_LOG_INFO, "events_streaming", "slot=%s", e->slot);
    rc = stream_pump(e);
    if (rc != 0)
        sk_log(SK_LOG_WARN, "events_failed", "err=\"%s\"", e->err);
    stream_close(e, rc == 0);
    return -1; /* never "more waiting": a new stream starts after interval_ms */
}

/* conninfo (a URL or key=value) as key=value with replication=database added. */
static char *repl_conninfo(const char *conninfo, char *err, size_t errsz)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo ? conninfo : "", &perr);
    if (!opts) {
        snprintf(err, errsz, "events: the PostgreSQL conninfo does not parse");
        PQfreemem(perr);
        return NULL;
    }
    size_t cap = 64;
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (o->val)
            cap += strlen(o->keyword) + 2 * strlen(o->val) + 5;
    char *s = malloc(cap);
    size_t len = 0;
    for (PQconninfoOption *o = opts; s && o->keyword; o++) {
        if (!o->val || strcmp(o->keyword, "replication") == 0)
            continue;
        len += (size_t)snprintf(s + len, cap - len, "%s='", o->keyword);
        for (const char *c = o->val; *c; c++) { /* libpq's quoting: \' and \\ */
            if (*c == '\'' || *c == '\\')
                s[len++] = '\\';
            s[len++] = *c;
        }
        len += (size_t)snprintf(s + len, cap - len, "' ");
    }
    if (s)
        snprintf(s + len, cap - len, "replication=database");
    else
        snprintf(err, errsz, "events: out of memory");
    PQconninfoFree(opts);
    return s;
}

consumer_events *consumer_events_start(const struct consumer_cfg *cfg, const sk_cfg_kv *kafka,
                                       consumer_metrics *m, char *err, size_t errsz)
{
    consumer_events *e = calloc(1, sizeof(*e));
    if (!e || !(e->pg = strdup(cfg->pg ? cfg->pg : "")) ||
        !(e->topic = strdup(cfg->events_topic))) {
        snprintf(err, errsz, "events: out of memory");
        consumer_events_free(e);
        return NULL;
    }
    const char *slot = cfg->events_slot ? cfg->events_slot : "";
    if (strlen(slot) > CONSUMER_EVENTS_SLOT_MAX ||
        strspn(slot, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(slot)) {
        snprintf(err, errsz, "events.slot: up to %d of a-z, 0-9, _", CONSUMER_EVENTS_SLOT_MAX);
        consumer_events_free(e);
        return NULL;
    }
    if (!(e->slot_cfg = strdup(slot))) {
        snprintf(err, errsz, "events: out of memory");
        consumer_events_free(e);
        return NULL;
    }
    if (!(e->pg_repl = repl_conninfo(e->pg, err, errsz))) {
        consumer_events_free(e);
        return NULL;
    }
    e->m = m;
    e->interval_ms = cfg->events_interval_ms;
    e->lag_alarm = cfg->events_lag_alarm_bytes;
    /* A message waits 30 s for its acknowledgement, not librdkafka's 300, before the
     * stream restarts from the slot (a missing topic, a broker away longer).
     * linger.ms 50, not 5: a transition may wait 50 ms for its batch (nothing against the
     * publisher's lag, which the slot's position and the alarm watch in seconds), and in
     * a drain the batches are ten times larger, so the broker handles a tenth of the
     * produce requests: on Apache Kafka on the bench machine, the broker's CPU during a
     * 500,000-order drain with the events went from 7.4-7.9 s to 5.0-6.1 s (A/B, 2 pairs,
     * docs/benchmarks.md round 13). kafka.linger.ms overrides it. */
    const char *defaults[] = {"client.id", "seckill-consumer-events", "linger.ms", "50",
                              "message.timeout.ms", "30000", NULL};
    const char *forced[] = {"enable.idempotence", "true", "acks", "all", NULL};
    rd_kafka_conf_t *conf = sk_kafka_conf_new(SK_KAFKA_PRODUCER, defaults, kafka, forced, err, errsz);
    if (!conf) {
        consumer_events_free(e);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, e);
    if (!(e->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, errsz))) {
        rd_kafka_conf_destroy(conf);
        consumer_events_free(e);
        return NULL;
    }
    if (!(e->thread = consumer_every_start(events_tick, e, e->interval_ms, 1, err, errsz))) {
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
        if (e->repl)
            stream_close(e, 0);
        rd_kafka_destroy(e->rk);
    }
    PQfinish(e->repl);
    PQfinish(e->sql);
    free(e->pg);
    free(e->pg_repl);
    free(e->slot_cfg);
    free(e->topic);
    free(e);
}
