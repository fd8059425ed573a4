/* consumer_lane: the writer threads ("lanes") and the life of a batch on them.
 *
 * PostgreSQL writes run on `db.writers` lanes, one connection each, so parsing the next
 * batch overlaps the current transaction and two transactions can run at once.
 * Partition p always goes to lane p % writers: a partition's batches are written and
 * committed in order by one lane, so committing "highest offset + 1" of a finished
 * batch never skips an unwritten message. A lane's batch is handed over under the lane
 * mutex and is not touched by the main thread until the lane reports it done. The main
 * thread then sends its dead letters (consumer_dlq.c) and commits its offsets
 * (consumer_offset.c), or applies the failure policy: pause the lane's partitions and
 * retry the same batch after a capped backoff. Only lane_thread (with the lane_write it
 * calls) runs off the main thread. */
#include "consumer_loop_int.h"

#include <inttypes.h>
#include <sk_log.h>
#include <stdio.h>

/* One database step of the lane's `writing` batch: the transaction, then (best effort,
 * after the commit) the orders' outcomes handed to the order index's recorder thread for
 * the front's GET. */
static int lane_write(lane *ln, consumer_db_result *res)
{
    int rc = consumer_db_write(ln->db, ln->writing, res);
    if (rc == 0 && ln->oidx && consumer_oidx_submit(ln->oidx, ln->writing) != 0) {
        atomic_fetch_add(&ln->l->m->oidx_failures, 1);
        sk_log(SK_LOG_WARN, "order_index_failed", "writer=%d err=\"out of memory\"", ln->idx);
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
        pthread_mutex_lock(&ln->l->done_mu);
        ln->l->done_seq++;
        pthread_cond_broadcast(&ln->l->done_cv);
        pthread_mutex_unlock(&ln->l->done_mu);
        /* Wake the main thread out of rd_kafka_consumer_poll to collect the result. */
        rd_kafka_queue_yield(ln->l->cq);
        pthread_mutex_lock(&ln->mu);
    }
    pthread_mutex_unlock(&ln->mu);
    return NULL;
}

lane_state consumer_lane_get_state(lane *ln)
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

unsigned consumer_lane_done_seq(consumer_loop *l)
{
    pthread_mutex_lock(&l->done_mu);
    unsigned seq = l->done_seq;
    pthread_mutex_unlock(&l->done_mu);
    return seq;
}

void consumer_lane_wait_any(consumer_loop *l, unsigned seq, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->done_mu);
    while (l->done_seq == seq)
        if (pthread_cond_timedwait(&l->done_cv, &l->done_mu, &until) != 0)
            break;
    pthread_mutex_unlock(&l->done_mu);
}

static void lane_submit(lane *ln)
{
    pthread_mutex_lock(&ln->mu);
    ln->state = LANE_BUSY;
    pthread_cond_broadcast(&ln->cv);
    pthread_mutex_unlock(&ln->mu);
}

/* Pauses or resumes the assigned partitions of one lane (p % nlanes == idx). */
void consumer_lane_set_paused(consumer_loop *l, lane *ln, int pause)
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
           "writer=%d messages=%zu created=%ld rejected=%ld duplicates=%ld unknown_event=%ld"
           " tx_ms=%.2f",
           ln->idx, consumer_batch_count(ln->writing), res->created, res->rejected,
           res->duplicates, res->unknown_event, secs * 1e3);
    ln->db_done = 1;
}

/* After the database step: dead letters, then the offsets. @returns 0 when the
 * batch is complete (and cleared), -1 to retry later (the DLQ failed). */
static int lane_finish(consumer_loop *l, lane *ln, int sync_commit)
{
    if (consumer_dlq_send_batch(l, ln->writing) != 0)
        return -1;
    consumer_offset_commit(l, ln->writing, sync_commit);
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
    consumer_lane_set_paused(l, ln, 0);
}

/* Failure policy: pause the lane's partitions (what is already fetched is retried as
 * is; memory stays bounded) and retry the same batch after a capped backoff. */
static void lane_failed(consumer_loop *l, lane *ln)
{
    consumer_lane_set_paused(l, ln, 1);
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
    lane_state st = consumer_lane_get_state(ln);
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

int consumer_lane_room(consumer_loop *l, lane *ln)
{
    if (consumer_batch_count(ln->filling) < (size_t)l->cfg->batch_max)
        return 1;
    if (ln->nready == LANE_READY_MAX || ln->nspare == 0)
        return 0;
    ln->ready[ln->nready++] = ln->filling;
    ln->filling = ln->spare[--ln->nspare];
    return 1;
}

/* The main thread's turn on one lane: collect a result, start the next write. */
void consumer_lane_service(consumer_loop *l, lane *ln)
{
    if (lane_collect(l, ln, 0) == LANE_BUSY)
        return;
    int64_t now = now_ms();
    if (consumer_batch_count(ln->writing) > 0) {
        if (ln->failing && now >= ln->next_retry_ms)
            lane_start_write(l, ln);
        return;
    }
    if (ln->nready > 0) { /* the oldest full batch; the empty `writing` becomes a spare */
        ln->spare[ln->nspare++] = ln->writing;
        ln->writing = ln->ready[0];
        for (int i = 1; i < ln->nready; i++)
            ln->ready[i - 1] = ln->ready[i];
        ln->nready--;
        ln->deduped = ln->db_done = 0;
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
void consumer_lane_drain_sync(consumer_loop *l, lane *ln, int64_t deadline_ms, const char *why)
{
    lane_wait(ln);
    lane_collect(l, ln, 1); /* a finished result, if any; starts nothing new */
    consumer_batch *order[LANE_READY_MAX + 2];
    int norder = consumer_lane_held(ln, order);
    /* Each held batch is swapped into `writing` in turn, oldest first; every other one
     * ends up a spare, and a spare fills next. */
    ln->nready = 0;
    ln->filling = NULL;
    int abandoned = 0;
    for (int k = 0; k < norder; k++) {
        consumer_batch *b = order[k];
        if (consumer_batch_count(b) == 0) {
            if (b != ln->writing)
                ln->spare[ln->nspare++] = b;
            continue;
        }
        /* Once a batch is abandoned, so is everything after it: committing a later
         * batch's offsets would skip the abandoned messages for good. */
        if (abandoned) {
            sk_log(SK_LOG_WARN, "batch_abandoned", "writer=%d messages=%zu reason=%s", ln->idx,
                   consumer_batch_count(b), why);
            atomic_fetch_add(&l->m->abandoned, 1);
            consumer_batch_clear(b);
            if (b != ln->writing)
                ln->spare[ln->nspare++] = b;
            continue;
        }
        if (b != ln->writing) { /* into the writing slot; the empty one becomes a spare */
            ln->spare[ln->nspare++] = ln->writing;
            ln->writing = b;
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
                struct timespec ts = {.tv_sec = ms / 1000,
                                      .tv_nsec = (long)(ms % 1000) * 1000000L};
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
                               (double)(t1.tv_sec - t0.tv_sec) +
                                   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
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
    ln->filling = ln->spare[--ln->nspare];
    ln->failing = 0;
    ln->backoff_ms = 0;
}

int consumer_lane_init(consumer_loop *l, int idx, char *errstr, size_t errstr_size)
{
    const consumer_cfg *cfg = l->cfg;
    lane *ln = &l->lanes[idx];
    ln->idx = idx;
    ln->l = l;
    pthread_mutex_init(&ln->mu, NULL);
    pthread_cond_init(&ln->cv, NULL);
    ln->filling = consumer_batch_new();
    ln->writing = consumer_batch_new();
    for (; ln->nspare < LANE_READY_MAX; ln->nspare++)
        if (!(ln->spare[ln->nspare] = consumer_batch_new())) {
            snprintf(errstr, errstr_size, "out of memory");
            return -1;
        }
    ln->db = consumer_db_new(cfg->pg);
    if (cfg->redis_url && *cfg->redis_url &&
        !(ln->oidx = consumer_oidx_new(cfg->redis_url, cfg->index_ttl_s, 1000, idx,
                                       &l->m->oidx_failures))) {
        snprintf(errstr, errstr_size, "out of memory, or no thread for the order index");
        return -1;
    }
    if (!ln->filling || !ln->writing || !ln->db) {
        snprintf(errstr, errstr_size, "out of memory");
        return -1;
    }
    return 0;
}

int consumer_lane_start(lane *ln)
{
    if (pthread_create(&ln->thread, NULL, lane_thread, ln) != 0)
        return -1;
    ln->started = 1;
    return 0;
}

void consumer_lane_stop(lane *ln)
{
    if (!ln->started)
        return;
    pthread_mutex_lock(&ln->mu);
    ln->quit = 1;
    pthread_cond_broadcast(&ln->cv);
    pthread_mutex_unlock(&ln->mu);
    pthread_join(ln->thread, NULL);
}

void consumer_lane_destroy(lane *ln)
{
    consumer_batch_free(ln->filling);
    consumer_batch_free(ln->writing);
    for (int i = 0; i < ln->nready; i++)
        consumer_batch_free(ln->ready[i]);
    for (int i = 0; i < ln->nspare; i++)
        consumer_batch_free(ln->spare[i]);
    consumer_db_free(ln->db);
    consumer_oidx_free(ln->oidx);
    pthread_mutex_destroy(&ln->mu);
    pthread_cond_destroy(&ln->cv);
}
