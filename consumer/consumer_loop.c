/* consumer_loop: Kafka consumer group -> batches -> PostgreSQL -> DLQ -> commit.
 * See consumer_loop.h for the design.
 *
 * Threads: the caller's thread (the "main" thread) runs Kafka (poll, rebalance
 * callback, DLQ, commits) and builds batches. PostgreSQL writes run on `db.writers`
 * writer threads ("lanes"), one connection each, so parsing the next batch overlaps
 * the current transaction and two transactions can run at once. Partition p always
 * goes to lane p % writers: a partition's batches are written and committed in order
 * by one lane, so committing "highest offset + 1" of a finished batch never skips an
 * unwritten message. A lane's batch is handed over under the lane mutex and is not
 * touched by the main thread until the lane reports it done. */
#include "consumer_loop.h"
#include "consumer_oidx.h"
#include "sk_kafka_conf.h"

#include "consumer_batch.h"
#include "consumer_db.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <sk_log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LANES 16

typedef enum { LANE_IDLE, LANE_BUSY, LANE_DONE } lane_state;

typedef struct lane {
    int idx;
    struct consumer_loop *l;
    consumer_db *db;             /* used by the lane thread, or by main while IDLE */
    consumer_oidx *oidx;         /* with db; NULL when no redis.url is set */
    consumer_batch *filling;     /* main thread: messages arriving */
    int64_t filling_deadline_ms; /* when `filling` is old enough to write */
    consumer_batch *writing;     /* handed to the thread while BUSY; kept on failure */
    int deduped, db_done;        /* progress of `writing` (main thread) */
    int failing;                 /* `writing` failed: retry at next_retry_ms */
    int64_t next_retry_ms, backoff_ms;
    int64_t failing_since_ms; /* first failure of `writing`, while failing */
    int paused;
    /* Shared with the lane thread, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lane_state state;
    int quit;
    int rc;
    consumer_db_result res;
    double secs;
    pthread_t thread;
    int started;
} lane;

struct consumer_loop {
    const consumer_cfg *cfg;
    consumer_metrics *m;
    rd_kafka_t *rk;  /* the group consumer */
    rd_kafka_t *dlq; /* the dead-letter producer */
    rd_kafka_queue_t *cq; /* the consumer queue: lanes wake the main thread through it */
    lane lanes[MAX_LANES];
    int nlanes;
    int dlq_failed; /* delivery reports with an error that may pass, since the last flush */
    size_t dlq_max_bytes; /* the DLQ producer's message.max.bytes */
    int fatal;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- librdkafka callbacks (all served from our thread, inside poll/flush calls) ---- */

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

static int dlq_err_permanent(rd_kafka_resp_err_t err);
static void dlq_give_up(consumer_loop *l, consumer_batch_msg *m, rd_kafka_resp_err_t err);

/* Marks the batch message (msg_opaque) acknowledged, to be sent short, given up, or
 * counts a failure that may pass (the batch is retried). Served inside rd_kafka_flush. */
static void on_dlq_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    consumer_loop *l = opaque;
    consumer_batch_msg *m = msg->_private;
    if (!msg->err) {
        if (m) {
            m->dlq_state = 1; /* DLQ_ACKED */
            atomic_fetch_add(&l->m->dead_lettered[m->err], 1);
            if (m->dlq_small || msg->len < m->val_len)
                atomic_fetch_add(&l->m->dlq_truncated, 1);
            sk_log(SK_LOG_INFO, "dead_letter",
                   "error=%s partition=%" PRId32 " offset=%" PRId64 " size=%zu sent=%zu",
                   consumer_msg_strerror(m->err), m->partition, m->offset, m->val_len, msg->len);
        }
        return;
    }
    if (m && dlq_err_permanent(msg->err)) {
        if (!m->dlq_small) {
            m->dlq_small = 1;
            m->dlq_why = msg->err;
            sk_log(SK_LOG_WARN, "dlq_refused", "err=%s partition=%" PRId32 " offset=%" PRId64
                   " size=%zu next=short_copy", rd_kafka_err2name(msg->err), m->partition,
                   m->offset, m->val_len);
        } else {
            dlq_give_up(l, m, msg->err);
        }
        return;
    }
    l->dlq_failed++;
    sk_log(SK_LOG_WARN, "dlq_delivery_failed", "err=%s", rd_kafka_err2name(msg->err));
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    /* A lost commit only means a replay after a restart, which the writes absorb. */
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
        sk_log(SK_LOG_WARN, "commit_failed", "err=%s", rd_kafka_err2name(err));
}

/* ---- lanes: the writer threads ---- */

/* One database step of the lane's `writing` batch: the transaction, then (best effort,
 * after the commit) the orders' outcomes into the order index for the front's GET. */
static int lane_write(lane *ln, consumer_db_result *res)
{
    int rc = consumer_db_write(ln->db, ln->writing, res);
    if (rc == 0 && ln->oidx && consumer_oidx_record(ln->oidx, ln->writing) < 0) {
        atomic_fetch_add(&ln->l->m->oidx_failures, 1);
        sk_log(SK_LOG_WARN, "order_index_failed", "writer=%d err=\"%s\"", ln->idx,
               consumer_oidx_errstr(ln->oidx));
    }
    return rc;
}

static void *lane_thread(void *arg)
{
    lane *ln = arg;
    pthread_mutex_lock(&ln->mu);
    for (;;) {
        while (ln->state != LANE_BUSY && !ln->quit)
            pthread_cond_wait(&ln->cv, &ln->mu);
        if (ln->quit)
            break;
        pthread_mutex_unlock(&ln->mu);
        /* `writing` and `db` are ours until we report DONE. */
        struct timespec t0, t1;
        consumer_db_result res;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = lane_write(ln, &res);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        pthread_mutex_lock(&ln->mu);
        ln->rc = rc;
        ln->res = res;
        ln->secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        ln->state = LANE_DONE;
        pthread_cond_broadcast(&ln->cv);
        pthread_mutex_unlock(&ln->mu);
        /* Wake the main thread out of rd_kafka_consumer_poll to collect the result. */
        rd_kafka_queue_yield(ln->l->cq);
        pthread_mutex_lock(&ln->mu);
    }
    pthread_mutex_unlock(&ln->mu);
    return NULL;
}

static lane_state lane_get_state(lane *ln)
{
    pthread_mutex_lock(&ln->mu);
    lane_state s = ln->state;
    pthread_mutex_unlock(&ln->mu);
    return s;
}

/* Waits until the lane's thread is not writing. */
static void lane_wait(lane *ln)
{
    pthread_mutex_lock(&ln->mu);
    while (ln->state == LANE_BUSY)
        pthread_cond_wait(&ln->cv, &ln->mu);
    pthread_mutex_unlock(&ln->mu);
}

/* Waits up to ms for the lane's thread to finish its write. */
static void lane_wait_ms(lane *ln, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&ln->mu);
    while (ln->state == LANE_BUSY)
        if (pthread_cond_timedwait(&ln->cv, &ln->mu, &until) != 0)
            break;
    pthread_mutex_unlock(&ln->mu);
}

static void lane_submit(lane *ln)
{
    pthread_mutex_lock(&ln->mu);
    ln->state = LANE_BUSY;
    pthread_cond_broadcast(&ln->cv);
    pthread_mutex_unlock(&ln->mu);
}

/* Pauses or resumes the assigned partitions of one lane (p % nlanes == idx). */
static void lane_set_paused(consumer_loop *l, lane *ln, int pause)
{
    if (ln->paused == pause)
        return;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(l->rk, &parts) == RD_KAFKA_RESP_ERR_NO_ERROR && parts) {
        rd_kafka_topic_partition_list_t *mine = rd_kafka_topic_partition_list_new(parts->cnt);
        for (int i = 0; i < parts->cnt; i++)
            if (parts->elems[i].partition % l->nlanes == ln->idx)
                rd_kafka_topic_partition_list_add(mine, parts->elems[i].topic,
                                                  parts->elems[i].partition);
        if (mine->cnt > 0) {
            if (pause)
                rd_kafka_pause_partitions(l->rk, mine);
            else
                rd_kafka_resume_partitions(l->rk, mine);
        }
        sk_log(SK_LOG_INFO, pause ? "consumption_paused" : "consumption_resumed",
               "writer=%d partitions=%d", ln->idx, mine->cnt);
        rd_kafka_topic_partition_list_destroy(mine);
        rd_kafka_topic_partition_list_destroy(parts);
    }
    ln->paused = pause;
    int any = 0;
    for (int i = 0; i < l->nlanes; i++)
        any |= l->lanes[i].paused;
    atomic_store(&l->m->paused, any);
}

/* Dead letters must never stop a partition. A copy that cannot fit (the producer's
 * message.max.bytes counts key, value and headers) is truncated to fit, and a copy
 * the DLQ refuses with an error that no retry can change (size, format) is sent
 * again as a short copy; if even that is refused, the message is given up (logged
 * with its position, counted: it is still in the source topic). Only errors that
 * may pass (broker away, timeouts) keep the batch, and thus the lane, retrying. */
#define DLQ_HEADROOM 4096    /* bytes kept under message.max.bytes for headers and framing */
#define DLQ_SHORT_VALUE 1024 /* value bytes of the short copy sent after a refusal */
#define DLQ_SHORT_KEY 256    /* key bytes of the short copy */

enum { DLQ_PENDING = 0, DLQ_ACKED = 1, DLQ_GIVEN_UP = 2 };

/* @returns 1 if a produce or delivery error will not change on retry. */
static int dlq_err_permanent(rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        return 1;
    default:
        return 0;
    }
}

/* A message gives up on the DLQ: logged with its position so it can be found. */
static void dlq_give_up(consumer_loop *l, consumer_batch_msg *m, rd_kafka_resp_err_t err)
{
    m->dlq_state = DLQ_GIVEN_UP;
    atomic_fetch_add(&l->m->dlq_dropped, 1);
    sk_log(SK_LOG_ERROR, "dead_letter_dropped",
           "error=%s dlq_err=%s topic=%s partition=%" PRId32 " offset=%" PRId64 " size=%zu",
           consumer_msg_strerror(m->err), rd_kafka_err2name(err), l->cfg->topic, m->partition,
           m->offset, m->val_len);
}

/* Produces one dead letter: as is if it fits, else truncated (headers say so).
 * @returns librdkafka's produce error (0: queued). */
static rd_kafka_resp_err_t dlq_produce_one(consumer_loop *l, consumer_batch *b, consumer_batch_msg *m)
{
    const void *key = consumer_batch_key(b, m);
    size_t klen = key ? m->key_len : 0, vlen = m->val_len;
    size_t room = l->dlq_max_bytes > DLQ_HEADROOM * 2 ? l->dlq_max_bytes - DLQ_HEADROOM : DLQ_HEADROOM;
    size_t kmax = m->dlq_small ? DLQ_SHORT_KEY : room / 2;
    size_t ksend = klen < kmax ? klen : kmax;
    size_t vmax = m->dlq_small ? DLQ_SHORT_VALUE : room - ksend;
    size_t vsend = vlen < vmax ? vlen : vmax;
    int truncated = ksend < klen || vsend < vlen;
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    char part[16], off[24], size[24], ksize[24];
    snprintf(part, sizeof(part), "%" PRId32, m->partition);
    snprintf(off, sizeof(off), "%" PRId64, m->offset);
    rd_kafka_header_add(h, "error", -1, consumer_msg_strerror(m->err), -1);
    rd_kafka_header_add(h, "source.topic", -1, l->cfg->topic, -1);
    rd_kafka_header_add(h, "source.partition", -1, part, -1);
    rd_kafka_header_add(h, "source.offset", -1, off, -1);
    if (truncated) {
        /* Why it was cut: the DLQ's own refusal, or our producer's size limit. */
        rd_kafka_resp_err_t why =
            m->dlq_why ? (rd_kafka_resp_err_t)m->dlq_why : RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
        snprintf(size, sizeof(size), "%zu", vlen);
        snprintf(ksize, sizeof(ksize), "%zu", klen);
        rd_kafka_header_add(h, "truncated", -1, "true", -1);
        rd_kafka_header_add(h, "original.size", -1, size, -1);
        rd_kafka_header_add(h, "original.key.size", -1, ksize, -1);
        rd_kafka_header_add(h, "dlq.error", -1, rd_kafka_err2name(why), -1);
    }
    rd_kafka_resp_err_t err = rd_kafka_producev(
        l->dlq, RD_KAFKA_V_TOPIC(l->cfg->dlq_topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY((void *)key, key ? ksend : 0),
        RD_KAFKA_V_VALUE((void *)consumer_batch_value(b, m), vsend), RD_KAFKA_V_HEADERS(h),
        RD_KAFKA_V_OPAQUE(m), RD_KAFKA_V_END);
    if (err)
        rd_kafka_headers_destroy(h); /* only freed by librdkafka on success */
    return err;
}

/* Produces every poison message of batch b not yet in the DLQ and waits for the
 * reports (delivery reports mark each message, see on_dlq_delivery). A refused copy
 * gets one more round as a short copy. @returns 0 when every poison message is
 * acknowledged or given up, -1 to retry later (an error that may pass). */
static int batch_dead_letter(consumer_loop *l, consumer_batch *b)
{
    size_t n = consumer_batch_count(b);
    for (int round = 0; round < 3; round++) {
        size_t sent = 0;
        l->dlq_failed = 0;
        for (size_t i = 0; i < n && !l->dlq_failed; i++) {
            consumer_batch_msg *m = consumer_batch_msg_at(b, i);
            if (m->err == CONSUMER_MSG_OK || m->dlq_state != DLQ_PENDING)
                continue;
            rd_kafka_resp_err_t err = dlq_produce_one(l, b, m);
            if (err && dlq_err_permanent(err) && !m->dlq_small) {
                m->dlq_small = 1;
                m->dlq_why = err;
                err = dlq_produce_one(l, b, m);
            }
            if (err && dlq_err_permanent(err)) {
                dlq_give_up(l, m, err);
            } else if (err) {
                sk_log(SK_LOG_WARN, "dlq_produce_failed", "err=%s", rd_kafka_err2name(err));
                l->dlq_failed++;
            } else {
                sent++;
            }
        }
        if (sent == 0 && l->dlq_failed == 0)
            return 0;
        rd_kafka_resp_err_t err = rd_kafka_flush(l->dlq, 10000);
        if (err || l->dlq_failed) {
            sk_log(SK_LOG_WARN, "dlq_failed", "sent=%zu failed=%d flush=%s", sent, l->dlq_failed,
                   rd_kafka_err2name(err));
            if (err) {
                /* Nothing may stay in flight: its report points into this batch, which
                 * a revoke or shutdown may clear before the retry. */
                rd_kafka_purge(l->dlq, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_flush(l->dlq, 1000);
            }
            return -1;
        }
        /* Whatever the DLQ refused for good is PENDING again with dlq_small set. */
    }
    return 0;
}

static void batch_commit_offsets(consumer_loop *l, consumer_batch *b, int sync)
{
    const consumer_batch_pos *pos;
    size_t n = consumer_batch_positions(b, &pos);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(list, l->cfg->topic, pos[i].partition)->offset =
            pos[i].next_offset;
    rd_kafka_resp_err_t err = rd_kafka_commit(l->rk, list, !sync);
    if (err)
        sk_log(SK_LOG_WARN, "commit_failed", "err=%s", rd_kafka_err2name(err));
    rd_kafka_topic_partition_list_destroy(list);
}

/* Records a finished database step of the lane's `writing` batch (rc, res, secs). */
static void lane_db_result(consumer_loop *l, lane *ln, int rc, const consumer_db_result *res,
                           double secs)
{
    if (rc != 0) {
        atomic_fetch_add(&l->m->batch_failures, 1);
        atomic_store(&l->m->db_up, 0);
        sk_log(SK_LOG_WARN, "batch_failed", "writer=%d messages=%zu err=\"%s\"", ln->idx,
               consumer_batch_count(ln->writing), consumer_db_errstr(ln->db));
        return;
    }
    consumer_hist_observe(&l->m->tx_seconds, secs);
    atomic_fetch_add(&l->m->created, (uint_fast64_t)res->created);
    atomic_fetch_add(&l->m->rejected, (uint_fast64_t)res->rejected);
    atomic_fetch_add(&l->m->duplicates, (uint_fast64_t)res->duplicates);
    atomic_store(&l->m->db_up, 1);
    for (size_t i = 0; i < res->nrejects; i++)
        sk_log(SK_LOG_WARN, "stock_inconsistency",
               "event_id=%" PRId64 " rejected=%ld msg=\"orders beyond the database stock\"",
               res->rejects[i].event_id, res->rejects[i].count);
    sk_log(SK_LOG_DEBUG, "batch_written",
           "writer=%d messages=%zu created=%ld rejected=%ld duplicates=%ld unknown_event=%ld tx_ms=%.2f",
           ln->idx, consumer_batch_count(ln->writing), res->created, res->rejected, res->duplicates,
           res->unknown_event, secs * 1e3);
    ln->db_done = 1;
}

/* After the database step: dead letters, then the offsets. @returns 0 when the
 * batch is complete (and cleared), -1 to retry later (the DLQ failed). */
static int lane_finish(consumer_loop *l, lane *ln, int sync_commit)
{
    if (batch_dead_letter(l, ln->writing) != 0)
        return -1;
    batch_commit_offsets(l, ln->writing, sync_commit);
    atomic_fetch_add(&l->m->batches, 1);
    consumer_hist_observe(&l->m->batch_size, (double)consumer_batch_count(ln->writing));
    consumer_batch_clear(ln->writing);
    ln->deduped = ln->db_done = 0;
    return 0;
}

static void lane_succeeded(consumer_loop *l, lane *ln)
{
    if (ln->failing)
        sk_log(SK_LOG_INFO, "database_back", "writer=%d", ln->idx);
    ln->failing = 0;
    ln->backoff_ms = 0;
    lane_set_paused(l, ln, 0);
}

/* Failure policy: pause the lane's partitions (what is already fetched is retried as
 * is; memory stays bounded) and retry the same batch after a capped backoff. */
static void lane_failed(consumer_loop *l, lane *ln)
{
    lane_set_paused(l, ln, 1);
    if (!ln->failing)
        ln->failing_since_ms = now_ms();
    ln->failing = 1;
    ln->backoff_ms = ln->backoff_ms ? ln->backoff_ms * 2 : l->cfg->retry_min_ms;
    if (ln->backoff_ms > l->cfg->retry_max_ms)
        ln->backoff_ms = l->cfg->retry_max_ms;
    ln->next_retry_ms = now_ms() + ln->backoff_ms;
}

/* Hands `writing` to the lane thread (or, when the database step is already done,
 * only retries the dead letters). */
static void lane_start_write(consumer_loop *l, lane *ln)
{
    if (!ln->deduped) {
        if (consumer_batch_dedup(ln->writing) < 0) {
            sk_log(SK_LOG_ERROR, "out_of_memory", "where=dedup");
            lane_failed(l, ln);
            return;
        }
        ln->deduped = 1;
    }
    if (ln->db_done) {
        if (lane_finish(l, ln, 0) == 0)
            lane_succeeded(l, ln);
        else
            lane_failed(l, ln);
        return;
    }
    lane_submit(ln);
}

/* Collects a finished write of the lane thread, if any: dead letters, offsets, or
 * the failure policy. @returns the lane's state after (BUSY or IDLE). */
static lane_state lane_collect(consumer_loop *l, lane *ln, int sync_commit)
{
    lane_state st = lane_get_state(ln);
    if (st != LANE_DONE)
        return st;
    pthread_mutex_lock(&ln->mu);
    int rc = ln->rc;
    consumer_db_result res = ln->res;
    double secs = ln->secs;
    ln->state = LANE_IDLE;
    pthread_mutex_unlock(&ln->mu);
    lane_db_result(l, ln, rc, &res, secs);
    if (rc == 0 && lane_finish(l, ln, sync_commit) == 0)
        lane_succeeded(l, ln);
    else
        lane_failed(l, ln);
    return LANE_IDLE;
}

/* The main thread's turn on one lane: collect a result, start the next write. */
static void lane_service(consumer_loop *l, lane *ln)
{
    if (lane_collect(l, ln, 0) == LANE_BUSY)
        return;
    int64_t now = now_ms();
    if (consumer_batch_count(ln->writing) > 0) {
        if (ln->failing && now >= ln->next_retry_ms)
            lane_start_write(l, ln);
        return;
    }
    size_t count = consumer_batch_count(ln->filling);
    if (count > 0 && (count >= (size_t)l->cfg->batch_max || now >= ln->filling_deadline_ms)) {
        consumer_batch *t = ln->writing; /* empty */
        ln->writing = ln->filling;
        ln->filling = t;
        ln->deduped = ln->db_done = 0;
        lane_start_write(l, ln);
    }
}

/* Writes everything the lane holds, synchronously on the main thread (the lane thread
 * is idle), one attempt each unless `deadline_ms` allows retries; what cannot be
 * written is abandoned: the next owner of the partitions replays it. Used on revoke
 * and at shutdown. */
static void lane_drain_sync(consumer_loop *l, lane *ln, int64_t deadline_ms, const char *why)
{
    lane_wait(ln);
    lane_collect(l, ln, 1); /* a finished result, if any; starts nothing new */
    consumer_batch *order[2] = {ln->writing, ln->filling};
    int abandoned = 0;
    for (int k = 0; k < 2; k++) {
        consumer_batch *b = order[k];
        if (consumer_batch_count(b) == 0)
            continue;
        /* Once a batch is abandoned, so is everything after it: committing a later
         * batch's offsets would skip the abandoned messages for good. */
        if (abandoned) {
            sk_log(SK_LOG_WARN, "batch_abandoned", "writer=%d messages=%zu reason=%s", ln->idx,
                   consumer_batch_count(b), why);
            atomic_fetch_add(&l->m->abandoned, 1);
            consumer_batch_clear(b);
            continue;
        }
        if (b != ln->writing) { /* move `filling` into the writing slot */
            consumer_batch *t = ln->writing;
            ln->writing = ln->filling;
            ln->filling = t;
            ln->deduped = ln->db_done = 0;
        }
        int ok = 0;
        for (int attempt = 0; !ok; attempt++) {
            if (attempt > 0 && now_ms() >= deadline_ms)
                break;
            if (attempt > 0 || ln->failing) {
                if (now_ms() >= deadline_ms)
                    break;
                /* Shutdown retries: a short pause between attempts, within the deadline. */
                int64_t ms = l->cfg->retry_min_ms;
                struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
                nanosleep(&ts, NULL);
            }
            if (!ln->deduped && consumer_batch_dedup(ln->writing) >= 0)
                ln->deduped = 1;
            if (!ln->db_done) {
                consumer_db_result res;
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                int rc = lane_write(ln, &res);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                lane_db_result(l, ln, rc, &res,
                               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
            }
            ok = ln->db_done && lane_finish(l, ln, 1) == 0;
        }
        if (!ok) {
            sk_log(SK_LOG_WARN, "batch_abandoned", "writer=%d messages=%zu reason=%s", ln->idx,
                   consumer_batch_count(ln->writing), why);
            atomic_fetch_add(&l->m->abandoned, 1);
            consumer_batch_clear(ln->writing);
            ln->deduped = ln->db_done = 0;
            abandoned = 1;
        }
    }
    consumer_batch_clear(ln->filling);
    ln->failing = 0;
    ln->backoff_ms = 0;
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
        /* librdkafka keeps a partition's pause flag across an unassign/assign: a
         * partition we paused while the database was down and get back must not stay
         * paused with nobody to resume it. */
        rd_kafka_resume_partitions(rk, parts);
        return;
    }
    /* Revoked: write what is in flight now (one attempt per batch, none if the
     * database is known to be down) so the next owner starts after it; otherwise
     * abandon it: the next owner replays it from the committed offsets, harmlessly. */
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        lane_drain_sync(l, ln, ln->failing ? 0 : now_ms(), "revoke");
        lane_set_paused(l, ln, 0); /* see the assign branch: pause flags outlive assignments */
    }
    atomic_store(&l->m->paused, 0);
    sk_log(SK_LOG_INFO, "partitions_revoked", "count=%d", parts->cnt);
    if (cooperative)
        rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
    else
        rd_kafka_assign(rk, NULL);
}

/* ---- setup ---- */

/* Our defaults, then the operator's kafka.* settings, then `forced` (the delivery
 * guarantee, which cannot be overridden): sk_kafka_conf.h, the rule every client shares
 * (an unknown kafka.* key is refused, naming it). */
static rd_kafka_conf_t *conf_build(consumer_loop *l, sk_kafka_role role, const sk_cfg_kv *kafka,
                                   const char *const *defaults, const char *const *forced,
                                   char *errstr, size_t errstr_size)
{
    rd_kafka_conf_t *conf = sk_kafka_conf_new(role, defaults, kafka, forced, errstr, errstr_size);
    if (!conf)
        return NULL;
    rd_kafka_conf_set_opaque(conf, l);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    return conf;
}

/* Sets up the writer lanes: their batches, PostgreSQL writer and order index.
 * @returns 0 or -1 (errstr set; consumer_loop_free cleans up). */
static int loop_lanes_init(consumer_loop *l, char *errstr, size_t errstr_size)
{
    const consumer_cfg *cfg = l->cfg;
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        ln->idx = i;
        ln->l = l;
        pthread_mutex_init(&ln->mu, NULL);
        pthread_cond_init(&ln->cv, NULL);
        ln->filling = consumer_batch_new();
        ln->writing = consumer_batch_new();
        ln->db = consumer_db_new(cfg->pg);
        if (cfg->redis_url && *cfg->redis_url &&
            !(ln->oidx = consumer_oidx_new(cfg->redis_url, cfg->index_ttl_s, 1000))) {
            snprintf(errstr, errstr_size, "out of memory");
            return -1;
        }
        if (!ln->filling || !ln->writing || !ln->db) {
            snprintf(errstr, errstr_size, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Makes l->rk, the group consumer, and subscribes it to the orders topic.
 * @returns 0 or -1 (errstr set). */
static int loop_consumer_new(consumer_loop *l, const sk_cfg_kv *kafka, char *errstr,
                             size_t errstr_size)
{
    const consumer_cfg *cfg = l->cfg;
    /* max.partition.fetch.bytes 64 KB (librdkafka: 1 MB): the consumer queue hands out
     * a partition's fetched messages in one run, i.e. one writer's share at a time;
     * shorter runs keep both writers fed (drains +7 to +17%, README). */
    const char *cons_defaults[] = {"client.id", "seckill-consumer",
                                   "auto.offset.reset", "earliest",
                                   "partition.assignment.strategy", "range,roundrobin",
                                   "max.partition.fetch.bytes", "65536",
                                   NULL};
    const char *cons_forced[] = {"group.id", cfg->group_id,
                                 /* offsets are committed by us, after the DB commit */
                                 "enable.auto.commit", "false",
                                 "enable.auto.offset.store", "false",
                                 "enable.partition.eof", "false",
                                 NULL};
    rd_kafka_conf_t *conf = conf_build(l, SK_KAFKA_CONSUMER, kafka, cons_defaults, cons_forced,
                                      errstr, errstr_size);
    if (!conf)
        return -1;
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
    l->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
    if (!l->rk) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    /* conf is owned by rk now */
    rd_kafka_poll_set_consumer(l->rk);
    return 0;
}

/* Makes l->dlq, the dead-letter producer, and learns its message size bound.
 * @returns 0 or -1 (errstr set). */
static int loop_dlq_new(consumer_loop *l, const sk_cfg_kv *kafka, char *errstr,
                        size_t errstr_size)
{
    const char *dlq_defaults[] = {"client.id", "seckill-consumer-dlq", "linger.ms", "5", NULL};
    const char *dlq_forced[] = {"enable.idempotence", "true", "acks", "all", NULL};
    /* The operator's kafka.* apply to both clients; consumer-only properties only earn
     * a warning from the producer, so they are passed on (sk_kafka_conf.h leaves out only
     * producer-only ones, from the consumer). */
    rd_kafka_conf_t *conf = conf_build(l, SK_KAFKA_PRODUCER, kafka, dlq_defaults, dlq_forced,
                                       errstr, errstr_size);
    if (!conf)
        return -1;
    char maxb[32];
    size_t maxb_len = sizeof(maxb);
    l->dlq_max_bytes = rd_kafka_conf_get(conf, "message.max.bytes", maxb, &maxb_len) == RD_KAFKA_CONF_OK
                           ? (size_t)strtoull(maxb, NULL, 10)
                           : 1000000;
    rd_kafka_conf_set_dr_msg_cb(conf, on_dlq_delivery);
    l->dlq = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errstr_size);
    if (!l->dlq) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    return 0;
}

/* Subscribes to the orders topic and starts the writer threads.
 * @returns 0 or -1 (errstr set). */
static int loop_subscribe_start(consumer_loop *l, char *errstr, size_t errstr_size)
{
    const consumer_cfg *cfg = l->cfg;
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, cfg->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(l->rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err) {
        snprintf(errstr, errstr_size, "subscribe %s: %s", cfg->topic, rd_kafka_err2str(err));
        return -1;
    }
    l->cq = rd_kafka_queue_get_consumer(l->rk);
    for (int i = 0; i < l->nlanes; i++) {
        if (pthread_create(&l->lanes[i].thread, NULL, lane_thread, &l->lanes[i]) != 0) {
            snprintf(errstr, errstr_size, "cannot start a writer thread");
            return -1;
        }
        l->lanes[i].started = 1;
    }
    return 0;
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
    l->nlanes = (int)(cfg->writers < 1 ? 1 : cfg->writers > MAX_LANES ? MAX_LANES : cfg->writers);
    if (loop_lanes_init(l, errstr, errstr_size) != 0 ||
        loop_consumer_new(l, kafka, errstr, errstr_size) != 0 ||
        loop_dlq_new(l, kafka, errstr, errstr_size) != 0 ||
        loop_subscribe_start(l, errstr, errstr_size) != 0) {
        consumer_loop_free(l);
        return NULL;
    }
    return l;
}

/* The lowest offset of partition p held in batch b (not yet committed), or -1. */
static int64_t batch_lowest_offset(consumer_batch *b, int32_t p)
{
    int64_t lo = -1;
    size_t n = consumer_batch_count(b);
    for (size_t i = 0; i < n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(b, i);
        if (m->partition == p && (lo < 0 || m->offset < lo))
            lo = m->offset;
    }
    return lo;
}

/* Publishes the lag of each assigned partition: cached high watermark (from fetch
 * responses, no network call) minus the first offset not yet committed, i.e. our
 * position or the lowest offset still held in a batch (a lane stuck on a batch keeps
 * its lag growing rather than reading 0 once everything is fetched). Also the
 * writers retrying a batch and for how long. Main thread; `writing` of a busy lane
 * is only read (partition and offset, which the lane thread does not write). */
static void lag_update(consumer_loop *l)
{
    int64_t now = now_ms(), longest = 0;
    int retrying = 0;
    for (int i = 0; i < l->nlanes; i++)
        if (l->lanes[i].failing && consumer_batch_count(l->lanes[i].writing) > 0) {
            retrying++;
            if (now - l->lanes[i].failing_since_ms > longest)
                longest = now - l->lanes[i].failing_since_ms;
        }
    atomic_store(&l->m->writers_retrying, retrying);
    atomic_store(&l->m->retrying_ms, longest);
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
        int64_t from = p->offset;
        lane *ln = &l->lanes[(p->partition < 0 ? 0 : p->partition) % l->nlanes];
        consumer_batch *held[2] = {ln->writing, ln->filling};
        for (int k = 0; k < 2; k++) {
            int64_t h = batch_lowest_offset(held[k], p->partition);
            if (h >= 0 && (from < 0 || h < from))
                from = h;
        }
        if (rd_kafka_get_watermark_offsets(l->rk, p->topic, p->partition, &lo, &hi) == 0 && hi >= 0)
            lags[i] = from >= 0 ? (hi > from ? hi - from : 0) : hi - (lo > 0 ? lo : 0);
    }
    consumer_metrics_set_lag(l->m, ids, lags, n);
    rd_kafka_topic_partition_list_destroy(parts);
}

/* When the main loop must look again at the latest: a retry or a batch.ms deadline
 * of some lane, and at most 100 ms from `now` (the stop flag is checked this often). */
static int64_t loop_next_wake(consumer_loop *l, int64_t now)
{
    int64_t wake = now + 100;
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        if (ln->failing && consumer_batch_count(ln->writing) > 0 && ln->next_retry_ms < wake)
            wake = ln->next_retry_ms;
        if (consumer_batch_count(ln->filling) > 0 && ln->filling_deadline_ms < wake)
            wake = ln->filling_deadline_ms;
    }
    return wake;
}

/* Backpressure: a writer still busy with the previous batch and a full next one means
 * the database is the bottleneck: take nothing more in until it is done (a write takes
 * far less than max.poll.interval.ms). A failing writer is not busy (its partitions
 * are paused instead), so polling goes on. @returns 1 when intake was held (waited up
 * to 100 ms), 0 when no lane is full. */
static int loop_hold_intake(consumer_loop *l, int64_t now)
{
    lane *full = NULL;
    for (int i = 0; i < l->nlanes && !full; i++)
        if (consumer_batch_count(l->lanes[i].filling) >= (size_t)l->cfg->batch_max &&
            lane_get_state(&l->lanes[i]) == LANE_BUSY)
            full = &l->lanes[i];
    if (!full)
        return 0;
    /* Intake is stopped for every lane: the others get nothing more until the full one
     * is done, so an idle lane writes what it holds now rather than idling until its
     * batch.ms deadline (Kafka hands out partitions in long runs: one lane's partitions
     * at a time). */
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        if (ln != full && consumer_batch_count(ln->filling) > 0) {
            ln->filling_deadline_ms = now;
            lane_service(l, ln);
        }
    }
    lane_wait_ms(full, 100);
    for (int i = 0; i < l->nlanes; i++)
        lane_service(l, &l->lanes[i]);
    return 1;
}

/* Adds a polled message to its partition's lane batch (and destroys it); errors of
 * the consumer are logged. Sets l->fatal when out of memory. */
static void loop_take(consumer_loop *l, rd_kafka_message_t *msg, int64_t now)
{
    if (msg->err) {
        if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            sk_log(SK_LOG_WARN, "consume_error", "err=%s msg=\"%s\"",
                   rd_kafka_err2name(msg->err), rd_kafka_message_errstr(msg));
    } else {
        lane *ln = &l->lanes[(msg->partition < 0 ? 0 : msg->partition) % l->nlanes];
        if (consumer_batch_count(ln->filling) == 0)
            ln->filling_deadline_ms = now + l->cfg->batch_ms;
        if (consumer_batch_add(ln->filling, msg->partition, msg->offset, msg->key,
                               msg->key_len, msg->payload, msg->len) != 0) {
            sk_log(SK_LOG_ERROR, "out_of_memory", "where=batch_add");
            l->fatal = 1;
        }
        atomic_fetch_add_explicit(&l->m->consumed, 1, memory_order_relaxed);
    }
    rd_kafka_message_destroy(msg);
}

int consumer_loop_run(consumer_loop *l, volatile sig_atomic_t *stop)
{
    int64_t next_lag = 0;
    sk_log(SK_LOG_INFO, "consuming",
           "topic=%s group=%s dlq=%s batch_max=%lld batch_ms=%lld writers=%d", l->cfg->topic,
           l->cfg->group_id, l->cfg->dlq_topic, l->cfg->batch_max, l->cfg->batch_ms, l->nlanes);
    while (!*stop && !l->fatal) {
        int64_t now = now_ms();
        int64_t wake = loop_next_wake(l, now);
        if (loop_hold_intake(l, now))
            continue;
        int timeout = wake > now ? (int)(wake - now) : 0;
        /* Lane threads wake this poll (rd_kafka_queue_yield) when a write finishes. */
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(l->rk, timeout);
        if (msg)
            loop_take(l, msg, now);
        now = now_ms();
        for (int i = 0; i < l->nlanes; i++)
            lane_service(l, &l->lanes[i]);
        if (now >= next_lag) {
            lag_update(l);
            rd_kafka_poll(l->dlq, 0);
            next_lag = now + 1000;
        }
    }

    /* Shutdown: finish every batch within shutdown_ms (retrying if the database is
     * away), then close, which leaves the group (we commit ourselves). */
    int64_t deadline = now_ms() + l->cfg->shutdown_ms;
    for (int i = 0; i < l->nlanes; i++)
        lane_drain_sync(l, &l->lanes[i], deadline, "shutdown");
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
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        if (ln->started) {
            pthread_mutex_lock(&ln->mu);
            ln->quit = 1;
            pthread_cond_broadcast(&ln->cv);
            pthread_mutex_unlock(&ln->mu);
            pthread_join(ln->thread, NULL);
        }
    }
    if (l->cq)
        rd_kafka_queue_destroy(l->cq);
    if (l->rk)
        rd_kafka_destroy(l->rk);
    if (l->dlq)
        rd_kafka_destroy(l->dlq);
    for (int i = 0; i < l->nlanes; i++) {
        lane *ln = &l->lanes[i];
        consumer_batch_free(ln->filling);
        consumer_batch_free(ln->writing);
        consumer_db_free(ln->db);
        consumer_oidx_free(ln->oidx);
        pthread_mutex_destroy(&ln->mu);
        pthread_cond_destroy(&ln->cv);
    }
    free(l);
}
