/* order_recon_kafka: offsets of the writers' group and watermarks, per partition. See
 * order_recon_kafka.h. */
#include "order_recon_kafka.h"
#include "order_recon_rule.h"
#include "order_time.h"
#include "sk_kafka_conf.h"
#include "sk_log.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KAFKA_TIMEOUT_MS 3000

typedef int32_t partitioner_fn(const rd_kafka_topic_t *rkt, const void *key, size_t keylen,
                               int32_t partition_cnt, void *rkt_opaque, void *msg_opaque);

struct order_recon_kafka {
    const char *topic, *group;
    const sk_cfg_kv *props;
    partitioner_fn *part; /* NULL: a partitioner we cannot reproduce (every partition counts) */
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    int32_t nparts;
    order_recon_mark *marks; /* nparts */
    int64_t *cutoff;         /* nparts: entries with ts + timeout + margin <= cutoff may go */
};

static const char *prop(const sk_cfg_kv *props, const char *key)
{
    const char *v = NULL;
    for (const sk_cfg_kv *kv = props; kv; kv = kv->next) /* the last one wins */
        if (strcmp(kv->key, key) == 0)
            v = kv->value;
    return v;
}

/* librdkafka's partitioner named by kafka.partitioner, the one the producer uses. */
static partitioner_fn *partitioner_by_name(const char *name)
{
    static const struct {
        const char *name;
        partitioner_fn *fn;
    } tab[] = {
        {"consistent_random", rd_kafka_msg_partitioner_consistent_random},
        {"consistent", rd_kafka_msg_partitioner_consistent},
        {"murmur2_random", rd_kafka_msg_partitioner_murmur2_random},
        {"murmur2", rd_kafka_msg_partitioner_murmur2},
        {"fnv1a_random", rd_kafka_msg_partitioner_fnv1a_random},
        {"fnv1a", rd_kafka_msg_partitioner_fnv1a},
    };
    if (!name)
        return rd_kafka_msg_partitioner_consistent_random; /* librdkafka's default */
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcmp(tab[i].name, name) == 0)
            return tab[i].fn;
    return NULL; /* random: an event's orders spread over every partition */
}

order_recon_kafka *order_recon_kafka_new(const char *topic, const char *group,
                                         const sk_cfg_kv *props)
{
    order_recon_kafka *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->topic = topic;
    k->group = group;
    k->props = props;
    k->part = partitioner_by_name(prop(props, "partitioner"));
    return k;
}

int64_t order_recon_kafka_msg_timeout_ms(const sk_cfg_kv *props)
{
    return order_recon_msg_timeout_ms(prop(props, "message.timeout.ms"),
                                      prop(props, "delivery.timeout.ms"));
}

int order_recon_kafka_connect(order_recon_kafka *k)
{
    if (k->rk)
        return 0;
    char why[512];
    /* Only to read the writer group's committed offsets and the watermarks: it never
     * subscribes, never joins the group, never commits. */
    const char *const defaults[] = {"client.id", "seckill-order-reconciler", NULL};
    const char *const forced[] = {"group.id", k->group, "enable.auto.commit", "false", NULL};
    rd_kafka_conf_t *conf =
        sk_kafka_conf_new(SK_KAFKA_CONSUMER, defaults, k->props, forced, why, sizeof(why));
    if (!conf)
        goto bad;
    k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof(why));
    if (!k->rk)
        goto bad;
    conf = NULL;
    k->rkt = rd_kafka_topic_new(k->rk, k->topic, NULL);
    if (!k->rkt) {
        rd_kafka_destroy(k->rk);
        k->rk = NULL;
        snprintf(why, sizeof(why), "topic handle");
        goto bad;
    }
    return 0;
bad:
    if (conf)
        rd_kafka_conf_destroy(conf);
    sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "err=\"%s\"", why);
    return -1;
}

/* Reads the topic's partition count (it may grow). @returns 0 or -1. */
static int refresh_partitions(order_recon_kafka *k)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(k->rk, 0, k->rkt, &md, KAFKA_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=metadata err=\"%s\"", rd_kafka_err2str(e));
        return -1;
    }
    int32_t n = (md->topic_cnt == 1 && !md->topics[0].err) ? md->topics[0].partition_cnt : 0;
    rd_kafka_metadata_destroy(md);
    if (n <= 0) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=metadata err=\"no such topic\"");
        return -1;
    }
    if (n != k->nparts) {
        order_recon_mark *m = calloc((size_t)n, sizeof(*m));
        int64_t *c = calloc((size_t)n, sizeof(*c));
        if (!m || !c) {
            free(m);
            free(c);
            return -1;
        }
        free(k->marks);
        free(k->cutoff);
        k->marks = m;
        k->cutoff = c;
        k->nparts = n;
    }
    return 0;
}

/* 0 if every partition of hw answered with an offset, else -1 (logged). */
static int watermarks_ok(const rd_kafka_topic_partition_list_t *hw)
{
    for (int i = 0; i < hw->cnt; i++) {
        if (hw->elems[i].err || hw->elems[i].offset < 0) {
            sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=watermarks partition=%d err=\"%s\"",
                   (int)hw->elems[i].partition,
                   hw->elems[i].err ? rd_kafka_err2str(hw->elems[i].err) : "no offset");
            return -1;
        }
    }
    return 0;
}

/* Fills k->cutoff[p] for every partition (ORDER_RECON_NEVER: nothing may be cancelled
 * there). Order matters: the time, then the high watermark, then the committed offset.
 * @returns 0 or -1.
 *
 * The high watermarks come from rd_kafka_offsets_for_times() with the timestamp -1
 * ("latest"), one ListOffsets request per leader, not rd_kafka_query_watermark_offsets():
 * before librdkafka 2.3.0 (Debian 12 ships 2.0.2) the latter never returns while a
 * partition's leader is down (librdkafka #2588, fixed by #4460), which froze the
 * reconciler, and with it SIGTERM, for as long as a dead broker stayed the leader of
 * record. offsets_for_times honours its timeout. */
static int compute_cutoffs(order_recon_kafka *k)
{
    rd_kafka_topic_partition_list_t *hw = rd_kafka_topic_partition_list_new(k->nparts);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(k->nparts);
    int rc = -1;
    if (!hw || !l)
        goto out;
    for (int32_t p = 0; p < k->nparts; p++) {
        rd_kafka_topic_partition_list_add(hw, k->topic, p)->offset = RD_KAFKA_OFFSET_END;
        rd_kafka_topic_partition_list_add(l, k->topic, p);
    }
    int64_t t = order_time_now_ms();
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(k->rk, hw, KAFKA_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=watermarks err=\"%s\"", rd_kafka_err2str(e));
        goto out;
    }
    if (watermarks_ok(hw) != 0)
        goto out;
    e = rd_kafka_committed(k->rk, l, KAFKA_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        sk_log(SK_LOG_WARN, "reconciler_kafka_failed", "what=committed err=\"%s\"", rd_kafka_err2str(e));
        goto out;
    }
    for (int i = 0; i < l->cnt; i++) {
        int32_t p = l->elems[i].partition;
        rd_kafka_topic_partition_t *h = rd_kafka_topic_partition_list_find(hw, k->topic, p);
        if (p < 0 || p >= k->nparts || !h)
            continue;
        int64_t c = l->elems[i].err ? -1 : l->elems[i].offset;
        k->cutoff[p] = order_recon_cutoff(&k->marks[p], t, h->offset, c);
    }
    rc = 0;
out:
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
    if (hw)
        rd_kafka_topic_partition_list_destroy(hw);
    return rc;
}

int order_recon_kafka_cutoffs(order_recon_kafka *k)
{
    if (order_recon_kafka_connect(k) != 0 || refresh_partitions(k) != 0)
        return -1;
    return compute_cutoffs(k);
}

int64_t order_recon_kafka_event_cutoff(const order_recon_kafka *k, uint64_t event_id)
{
    int32_t p = -1;
    if (k->part) {
        char key[24]; /* the producer's message key: the decimal event id */
        size_t klen = (size_t)snprintf(key, sizeof(key), "%" PRIu64, event_id);
        p = k->part(k->rkt, key, klen, k->nparts, NULL, NULL);
    }
    return order_recon_event_cutoff(k->cutoff, k->nparts, p);
}

void order_recon_kafka_free(order_recon_kafka *k)
{
    if (!k)
        return;
    if (k->rkt)
        rd_kafka_topic_destroy(k->rkt);
    if (k->rk)
        rd_kafka_destroy(k->rk);
    free(k->marks);
    free(k->cutoff);
    free(k);
}
