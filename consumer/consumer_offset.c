/* consumer_offset: where each assigned partition stands. A finished batch's offsets
 * ("highest offset + 1" per partition) are committed here, only after its writes and
 * dead letters are durable; the lag metrics compare the high watermark with the first
 * offset not yet committed. Main thread only (the commit callback is served inside
 * rd_kafka_consumer_poll); lanes' batches are only read. */
#include "consumer_loop_int.h"

#include <sk_log.h>

void consumer_offset_on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    /* A lost commit only means a replay after a restart, which the writes absorb. */
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
        sk_log(SK_LOG_WARN, "commit_failed", "err=%s", rd_kafka_err2name(err));
}

void consumer_offset_commit(consumer_loop *l, consumer_batch *b, int sync)
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
void consumer_offset_lag_update(consumer_loop *l)
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
    int n = parts->cnt < CONSUMER_METRICS_MAX_PARTITIONS ? parts->cnt
                                                         : CONSUMER_METRICS_MAX_PARTITIONS;
    int32_t ids[CONSUMER_METRICS_MAX_PARTITIONS];
    int64_t lags[CONSUMER_METRICS_MAX_PARTITIONS];
    for (int i = 0; i < n; i++) {
        int64_t lo = -1, hi = -1;
        rd_kafka_topic_partition_t *p = &parts->elems[i];
        ids[i] = p->partition;
        lags[i] = -1;
        int64_t from = p->offset;
        lane *ln = &l->lanes[(p->partition < 0 ? 0 : p->partition) % l->nlanes];
        consumer_batch *held[LANE_READY_MAX + 2];
        int nheld = consumer_lane_held(ln, held);
        for (int k = 0; k < nheld; k++) {
            int64_t h = batch_lowest_offset(held[k], p->partition);
            if (h >= 0 && (from < 0 || h < from))
                from = h;
        }
        if (rd_kafka_get_watermark_offsets(l->rk, p->topic, p->partition, &lo, &hi) == 0 &&
            hi >= 0)
            lags[i] = from >= 0 ? (hi > from ? hi - from : 0) : hi - (lo > 0 ? lo : 0);
    }
    consumer_metrics_set_lag(l->m, ids, lags, n);
    rd_kafka_topic_partition_list_destroy(parts);
}
