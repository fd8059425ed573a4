/* consumer_group: the consumer group's rebalances. On assign, the partitions are taken
 * (eagerly or incrementally, as the group's protocol says) and resumed; on revoke, each
 * lane writes what it holds before the partitions go, so the next owner starts after
 * it, or abandons it to be replayed from the committed offsets. Served on the main
 * thread inside rd_kafka_consumer_poll and rd_kafka_consumer_close. */
#include "consumer_loop_int.h"

#include <sk_log.h>
#include <string.h>

void consumer_group_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
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
        consumer_lane_drain_sync(l, ln, ln->failing ? 0 : now_ms(), "revoke");
        /* See the assign branch: pause flags outlive assignments. */
        consumer_lane_set_paused(l, ln, 0);
    }
    atomic_store(&l->m->paused, 0);
    sk_log(SK_LOG_INFO, "partitions_revoked", "count=%d", parts->cnt);
    if (cooperative)
        rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
    else
        rd_kafka_assign(rk, NULL);
}
