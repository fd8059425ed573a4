/* consumer_loop: Kafka consumer group -> batch -> PostgreSQL -> DLQ -> commit.
 * See consumer_loop.h for the design. */
#include "consumer_loop.h"

#include "consumer_batch.h"
#include "consumer_db.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <sk_log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct consumer_loop {
    const consumer_cfg *cfg;
    consumer_metrics *m;
    rd_kafka_t *rk;  /* the group consumer */
    rd_kafka_t *dlq; /* the dead-letter producer */
    consumer_batch *batch;
    consumer_db *db;
    int64_t batch_deadline_ms; /* when the current batch is old enough to flush */
    int deduped;               /* consumer_batch_dedup ran on the current batch */
    int db_done;               /* the current batch is committed in PostgreSQL */
    int failing;               /* the last attempt failed: retry at next_retry_ms */
    int64_t next_retry_ms;
    int64_t backoff_ms;
    int paused;
    int dlq_failed; /* delivery reports with an error since the last flush */
    int fatal;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- librdkafka callbacks (all served from our thread, inside poll/flush calls) ---- */

static void on_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    sk_log_level l = level <= 3 ? SK_LOG_ERROR : level <= 5 ? SK_LOG_WARN : level == 6 ? SK_LOG_INFO
                                                                                         : SK_LOG_DEBUG;
    sk_log(l, "kafka_log", "client=%s facility=%s msg=\"%s\"", rd_kafka_name(rk), fac, buf);
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    consumer_loop *l = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof(why));
        sk_log(SK_LOG_ERROR, "kafka_fatal", "client=%s err=%s reason=\"%s\"", rd_kafka_name(rk),
               rd_kafka_err2name(orig), why);
        l->fatal = 1;
        return;
    }
    /* Transport errors while a broker is away are routine: librdkafka reconnects. */
    sk_log(SK_LOG_WARN, "kafka_error", "client=%s err=%s reason=\"%s\"", rd_kafka_name(rk),
           rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static void on_dlq_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    consumer_loop *l = opaque;
    if (msg->err) {
        l->dlq_failed++;
        sk_log(SK_LOG_WARN, "dlq_delivery_failed", "err=%s", rd_kafka_err2name(msg->err));
    }
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    /* A lost commit only means a replay after a restart, which the writes absorb. */
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
        sk_log(SK_LOG_WARN, "commit_failed", "err=%s", rd_kafka_err2name(err));
}

/* ---- the batch ---- */

static void batch_reset(consumer_loop *l)
{
    consumer_batch_clear(l->batch);
    l->deduped = 0;
    l->db_done = 0;
}

static void set_paused(consumer_loop *l, int pause)
{
    if (l->paused == pause)
        return;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(l->rk, &parts) == RD_KAFKA_RESP_ERR_NO_ERROR && parts) {
        if (pause)
            rd_kafka_pause_partitions(l->rk, parts);
        else
            rd_kafka_resume_partitions(l->rk, parts);
        sk_log(SK_LOG_INFO, pause ? "consumption_paused" : "consumption_resumed", "partitions=%d",
               parts->cnt);
        rd_kafka_topic_partition_list_destroy(parts);
    }
    l->paused = pause;
    atomic_store(&l->m->paused, pause);
}

/* Produces every poison message of the batch to the DLQ and waits for the reports.
 * @returns 0 when all were acknowledged. */
static int batch_dead_letter(consumer_loop *l)
{
    size_t n = consumer_batch_count(l->batch);
    size_t sent = 0;
    l->dlq_failed = 0;
    for (size_t i = 0; i < n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(l->batch, i);
        if (m->err == CONSUMER_MSG_OK)
            continue;
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        char part[16], off[24];
        snprintf(part, sizeof(part), "%" PRId32, m->partition);
        snprintf(off, sizeof(off), "%" PRId64, m->offset);
        rd_kafka_header_add(h, "error", -1, consumer_msg_strerror(m->err), -1);
        rd_kafka_header_add(h, "source.topic", -1, l->cfg->topic, -1);
        rd_kafka_header_add(h, "source.partition", -1, part, -1);
        rd_kafka_header_add(h, "source.offset", -1, off, -1);
        const void *key = consumer_batch_key(l->batch, m);
        rd_kafka_resp_err_t err = rd_kafka_producev(
            l->dlq, RD_KAFKA_V_TOPIC(l->cfg->dlq_topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY((void *)key, key ? m->key_len : 0),
            RD_KAFKA_V_VALUE((void *)consumer_batch_value(l->batch, m), m->val_len),
            RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (err) {
            rd_kafka_headers_destroy(h); /* only freed by librdkafka on success */
            sk_log(SK_LOG_WARN, "dlq_produce_failed", "err=%s", rd_kafka_err2name(err));
            l->dlq_failed++;
            break;
        }
        sent++;
    }
    if (sent == 0 && l->dlq_failed == 0)
        return 0;
    rd_kafka_resp_err_t err = rd_kafka_flush(l->dlq, 10000);
    if (err || l->dlq_failed) {
        sk_log(SK_LOG_WARN, "dlq_failed", "sent=%zu failed=%d flush=%s", sent, l->dlq_failed,
               rd_kafka_err2name(err));
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(l->batch, i);
        if (m->err != CONSUMER_MSG_OK) {
            atomic_fetch_add(&l->m->dead_lettered[m->err], 1);
            sk_log(SK_LOG_INFO, "dead_letter", "error=%s partition=%" PRId32 " offset=%" PRId64,
                   consumer_msg_strerror(m->err), m->partition, m->offset);
        }
    }
    return 0;
}

static void batch_commit_offsets(consumer_loop *l, int sync)
{
    const consumer_batch_pos *pos;
    size_t n = consumer_batch_positions(l->batch, &pos);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(list, l->cfg->topic, pos[i].partition)->offset =
            pos[i].next_offset;
    rd_kafka_resp_err_t err = rd_kafka_commit(l->rk, list, !sync);
    if (err)
        sk_log(SK_LOG_WARN, "commit_failed", "err=%s", rd_kafka_err2name(err));
    rd_kafka_topic_partition_list_destroy(list);
}

/* One attempt to make the batch durable. @returns 0 (batch done and cleared) or -1. */
static int batch_flush(consumer_loop *l, int sync_commit)
{
    size_t n = consumer_batch_count(l->batch);
    if (n == 0)
        return 0;
    if (!l->deduped) {
        if (consumer_batch_dedup(l->batch) < 0) {
            sk_log(SK_LOG_ERROR, "batch_failed", "reason=\"out of memory\"");
            return -1;
        }
        l->deduped = 1;
    }
    if (!l->db_done) {
        consumer_db_result res;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (consumer_db_write(l->db, l->batch, &res) != 0) {
            atomic_fetch_add(&l->m->batch_failures, 1);
            atomic_store(&l->m->db_up, 0);
            sk_log(SK_LOG_WARN, "batch_failed", "messages=%zu backoff_ms=%" PRId64 " err=\"%s\"", n,
                   l->backoff_ms, consumer_db_errstr(l->db));
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        consumer_hist_observe(&l->m->tx_seconds, secs);
        atomic_fetch_add(&l->m->created, (uint_fast64_t)res.created);
        atomic_fetch_add(&l->m->rejected, (uint_fast64_t)res.rejected);
        atomic_fetch_add(&l->m->duplicates, (uint_fast64_t)res.duplicates);
        atomic_store(&l->m->db_up, 1);
        for (size_t i = 0; i < res.nrejects; i++)
            sk_log(SK_LOG_WARN, "stock_inconsistency",
                   "event_id=%" PRId64 " rejected=%ld msg=\"orders beyond the database stock\"",
                   res.rejects[i].event_id, res.rejects[i].count);
        sk_log(SK_LOG_DEBUG, "batch_written",
               "messages=%zu created=%ld rejected=%ld duplicates=%ld unknown_event=%ld tx_ms=%.2f", n,
               res.created, res.rejected, res.duplicates, res.unknown_event, secs * 1e3);
        l->db_done = 1;
    }
    if (batch_dead_letter(l) != 0)
        return -1;
    batch_commit_offsets(l, sync_commit);
    atomic_fetch_add(&l->m->batches, 1);
    consumer_hist_observe(&l->m->batch_size, (double)n);
    batch_reset(l);
    return 0;
}

/* Flush with the failure policy: on failure pause and schedule a retry with backoff. */
static void batch_flush_or_backoff(consumer_loop *l)
{
    if (batch_flush(l, 0) == 0) {
        if (l->failing)
            sk_log(SK_LOG_INFO, "database_back", "after_backoff_ms=%" PRId64, l->backoff_ms);
        l->failing = 0;
        l->backoff_ms = 0;
        set_paused(l, 0);
        return;
    }
    /* Stop fetching: what is already in the batch is retried as is, memory stays bounded. */
    set_paused(l, 1);
    l->failing = 1;
    l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : l->cfg->retry_min_ms;
    if (l->backoff_ms > l->cfg->retry_max_ms)
        l->backoff_ms = l->cfg->retry_max_ms;
    l->next_retry_ms = now_ms() + l->backoff_ms;
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    consumer_loop *l = opaque;
    int cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        sk_log(SK_LOG_INFO, "partitions_assigned", "count=%d", parts->cnt);
        if (cooperative)
            rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, parts));
        else
            rd_kafka_assign(rk, parts);
        return;
    }
    /* Revoked: write the in-flight batch now (one attempt, unless the database is
     * known to be down) so the next owner starts after it; otherwise abandon it: the
     * next owner replays it from the committed offsets, harmlessly. */
    if (consumer_batch_count(l->batch) > 0) {
        if (l->failing || batch_flush(l, 1) != 0) {
            sk_log(SK_LOG_WARN, "batch_abandoned", "messages=%zu reason=revoke",
                   consumer_batch_count(l->batch));
            atomic_fetch_add(&l->m->abandoned, 1);
            batch_reset(l);
        }
    }
    sk_log(SK_LOG_INFO, "partitions_revoked", "count=%d", parts->cnt);
    l->paused = 0; /* a new assignment starts unpaused */
    atomic_store(&l->m->paused, 0);
    l->failing = 0;
    l->backoff_ms = 0;
    if (cooperative)
        rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
    else
        rd_kafka_assign(rk, NULL);
}

/* ---- setup ---- */

static int conf_set(rd_kafka_conf_t *conf, const char *k, const char *v, char *errstr,
                    size_t errstr_size)
{
    if (rd_kafka_conf_set(conf, k, v, errstr, errstr_size) != RD_KAFKA_CONF_OK)
        return -1;
    return 0;
}

/* Applies our defaults, then the operator's kafka.* settings. `forced` settings are
 * applied last: they carry the delivery guarantee and cannot be overridden. */
static rd_kafka_conf_t *conf_build(consumer_loop *l, const sk_cfg_kv *kafka,
                                   const char *const *defaults, const char *const *forced,
                                   char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    for (const char *const *p = defaults; *p; p += 2)
        if (conf_set(conf, p[0], p[1], errstr, errstr_size) != 0)
            goto fail;
    for (const sk_cfg_kv *kv = kafka; kv; kv = kv->next) {
        rd_kafka_conf_res_t r = rd_kafka_conf_set(conf, kv->key, kv->value, errstr, errstr_size);
        if (r == RD_KAFKA_CONF_UNKNOWN) {
            /* Every SECKILL_KAFKA_* variable becomes a kafka.* setting, and the dev stack
             * exports SECKILL_KAFKA_CONTROL (the dev Kafka's control port), which is no
             * librdkafka property: warn and go on rather than refuse to start. */
            sk_log(SK_LOG_WARN, "kafka_setting_ignored", "key=kafka.%s reason=unknown", kv->key);
            continue;
        }
        if (r != RD_KAFKA_CONF_OK) {
            char why[256];
            snprintf(why, sizeof(why), "%s", errstr);
            snprintf(errstr, errstr_size, "kafka.%s: %s", kv->key, why);
            goto fail;
        }
    }
    for (const char *const *p = forced; *p; p += 2)
        if (conf_set(conf, p[0], p[1], errstr, errstr_size) != 0)
            goto fail;
    rd_kafka_conf_set_opaque(conf, l);
    rd_kafka_conf_set_log_cb(conf, on_kafka_log);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

consumer_loop *consumer_loop_new(const consumer_cfg *cfg, const sk_cfg_kv *kafka,
                                 consumer_metrics *m, char *errstr, size_t errstr_size)
{
    consumer_loop *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    l->cfg = cfg;
    l->m = m;
    l->batch = consumer_batch_new();
    l->db = consumer_db_new(cfg->pg);
    if (!l->batch || !l->db) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    const char *cons_defaults[] = {"client.id", "seckill-consumer",
                                   "auto.offset.reset", "earliest",
                                   "partition.assignment.strategy", "range,roundrobin",
                                   NULL};
    const char *cons_forced[] = {"group.id", cfg->group_id,
                                 /* offsets are committed by us, after the DB commit */
                                 "enable.auto.commit", "false",
                                 "enable.auto.offset.store", "false",
                                 "enable.partition.eof", "false",
                                 NULL};
    rd_kafka_conf_t *conf = conf_build(l, kafka, cons_defaults, cons_forced, errstr, errstr_size);
    if (!conf)
        goto fail;
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
    l->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
    if (!l->rk) {
        rd_kafka_conf_destroy(conf);
        goto fail;
    }
    conf = NULL; /* owned by rk now */
    rd_kafka_poll_set_consumer(l->rk);

    const char *dlq_defaults[] = {"client.id", "seckill-consumer-dlq", "linger.ms", "5", NULL};
    const char *dlq_forced[] = {"enable.idempotence", "true", "acks", "all", NULL};
    /* The operator's kafka.* apply to both clients; consumer-only properties only earn
     * a warning from the producer, so pass them on rather than guess which is which. */
    conf = conf_build(l, kafka, dlq_defaults, dlq_forced, errstr, errstr_size);
    if (!conf)
        goto fail;
    rd_kafka_conf_set_dr_msg_cb(conf, on_dlq_delivery);
    l->dlq = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errstr_size);
    if (!l->dlq) {
        rd_kafka_conf_destroy(conf);
        goto fail;
    }
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, cfg->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(l->rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err) {
        snprintf(errstr, errstr_size, "subscribe %s: %s", cfg->topic, rd_kafka_err2str(err));
        goto fail;
    }
    return l;
fail:
    consumer_loop_free(l);
    return NULL;
}

/* Publishes the lag of each assigned partition: cached high watermark (from fetch
 * responses, no network call) minus our position. */
static void lag_update(consumer_loop *l)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(l->rk, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR || !parts)
        return;
    rd_kafka_position(l->rk, parts);
    int n = parts->cnt < CONSUMER_METRICS_MAX_PARTITIONS ? parts->cnt : CONSUMER_METRICS_MAX_PARTITIONS;
    int32_t ids[CONSUMER_METRICS_MAX_PARTITIONS];
    int64_t lags[CONSUMER_METRICS_MAX_PARTITIONS];
    for (int i = 0; i < n; i++) {
        int64_t lo = -1, hi = -1;
        rd_kafka_topic_partition_t *p = &parts->elems[i];
        ids[i] = p->partition;
        lags[i] = -1;
        if (rd_kafka_get_watermark_offsets(l->rk, p->topic, p->partition, &lo, &hi) == 0 && hi >= 0)
            lags[i] = p->offset >= 0 ? (hi > p->offset ? hi - p->offset : 0) : hi - (lo > 0 ? lo : 0);
    }
    consumer_metrics_set_lag(l->m, ids, lags, n);
    rd_kafka_topic_partition_list_destroy(parts);
}

int consumer_loop_run(consumer_loop *l, volatile sig_atomic_t *stop)
{
    int64_t next_lag = 0;
    size_t batch_max = (size_t)l->cfg->batch_max;
    sk_log(SK_LOG_INFO, "consuming", "topic=%s group=%s dlq=%s batch_max=%zu batch_ms=%lld",
           l->cfg->topic, l->cfg->group_id, l->cfg->dlq_topic, batch_max, l->cfg->batch_ms);
    while (!*stop && !l->fatal) {
        int64_t now = now_ms();
        int64_t wake = now + 100; /* the stop flag is checked at least this often */
        size_t count = consumer_batch_count(l->batch);
        if (l->failing)
            wake = l->next_retry_ms < wake ? l->next_retry_ms : wake;
        else if (count > 0)
            wake = l->batch_deadline_ms < wake ? l->batch_deadline_ms : wake;
        int timeout = wake > now ? (int)(wake - now) : 0;
        /* While the batch is full (and not failing) nothing more is taken in. */
        rd_kafka_message_t *msg =
            (count >= batch_max && !l->failing) ? NULL : rd_kafka_consumer_poll(l->rk, timeout);
        if (msg) {
            if (msg->err) {
                if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                    sk_log(SK_LOG_WARN, "consume_error", "err=%s msg=\"%s\"",
                           rd_kafka_err2name(msg->err), rd_kafka_message_errstr(msg));
            } else {
                if (count == 0)
                    l->batch_deadline_ms = now + l->cfg->batch_ms;
                if (consumer_batch_add(l->batch, msg->partition, msg->offset, msg->key,
                                       msg->key_len, msg->payload, msg->len) != 0) {
                    sk_log(SK_LOG_ERROR, "out_of_memory", "where=batch_add");
                    l->fatal = 1;
                }
                atomic_fetch_add_explicit(&l->m->consumed, 1, memory_order_relaxed);
                count++;
            }
            rd_kafka_message_destroy(msg);
        }
        now = now_ms();
        if (count > 0) {
            if (l->failing ? now >= l->next_retry_ms
                           : (count >= batch_max || now >= l->batch_deadline_ms))
                batch_flush_or_backoff(l);
        }
        if (now >= next_lag) {
            lag_update(l);
            rd_kafka_poll(l->dlq, 0);
            next_lag = now + 1000;
        }
    }

    /* Shutdown: finish the batch within shutdown_ms (retrying if the database is away),
     * then close, which commits nothing more (we commit ourselves) and leaves the group. */
    int64_t deadline = now_ms() + l->cfg->shutdown_ms;
    while (consumer_batch_count(l->batch) > 0 && now_ms() < deadline) {
        if (batch_flush(l, 1) == 0)
            break;
        int64_t wait = l->cfg->retry_min_ms;
        struct timespec ts = {.tv_sec = wait / 1000, .tv_nsec = (wait % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    if (consumer_batch_count(l->batch) > 0) {
        sk_log(SK_LOG_WARN, "batch_abandoned", "messages=%zu reason=shutdown",
               consumer_batch_count(l->batch));
        batch_reset(l);
    }
    rd_kafka_resp_err_t err = rd_kafka_consumer_close(l->rk);
    if (err)
        sk_log(SK_LOG_WARN, "close_failed", "err=%s", rd_kafka_err2name(err));
    rd_kafka_flush(l->dlq, 5000);
    sk_log(SK_LOG_INFO, "stopped", "fatal=%d", l->fatal);
    return l->fatal ? -1 : 0;
}

void consumer_loop_free(consumer_loop *l)
{
    if (!l)
        return;
    if (l->rk)
        rd_kafka_destroy(l->rk);
    if (l->dlq)
        rd_kafka_destroy(l->dlq);
    consumer_batch_free(l->batch);
    consumer_db_free(l->db);
    free(l);
}
