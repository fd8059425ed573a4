/* sk_kafka_conf: librdkafka configuration. See sk_kafka_conf.h. */
#include "sk_kafka_conf.h"

#include <stdio.h>
#include <string.h>

int sk_kafka_producer_only(const char *key)
{
    static const char *const keys[] = {"partitioner", "message.timeout.ms", "delivery.timeout.ms",
                                       "linger.ms", "queue.buffering.max.ms", "acks",
                                       "request.required.acks", "enable.idempotence",
                                       "compression.type", "compression.codec", "batch.size",
                                       "batch.num.messages", "retries", "message.send.max.retries",
                                       "queue.buffering.max.messages", "queue.buffering.max.kbytes",
                                       "max.in.flight.requests.per.connection", "max.in.flight",
                                       "request.timeout.ms", "retry.backoff.ms"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strcmp(key, keys[i]) == 0)
            return 1;
    return 0;
}

static int set(rd_kafka_conf_t *conf, const char *key, const char *value, char *err, size_t errsz)
{
    char why[256];
    rd_kafka_conf_res_t r = rd_kafka_conf_set(conf, key, value, why, sizeof(why));
    if (r == RD_KAFKA_CONF_OK)
        return 0;
    /* librdkafka's own text names the property too; ours names it as the operator wrote
     * it (kafka.<key>), the same for an unknown key and a bad value. */
    snprintf(err, errsz, "kafka.%s: %s", key, r == RD_KAFKA_CONF_UNKNOWN ? "unknown property" : why);
    return -1;
}

static int set_pairs(rd_kafka_conf_t *conf, const char *const *kv, char *err, size_t errsz)
{
    for (; kv && kv[0]; kv += 2)
        if (set(conf, kv[0], kv[1], err, errsz) != 0)
            return -1;
    return 0;
}

rd_kafka_conf_t *sk_kafka_conf_new(sk_kafka_role role, const char *const *defaults,
                                   const sk_cfg_kv *props, const char *const *forced, char *err,
                                   size_t errsz)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf) {
        snprintf(err, errsz, "kafka: out of memory");
        return NULL;
    }
    if (set_pairs(conf, defaults, err, errsz) != 0)
        goto fail;
    for (const sk_cfg_kv *kv = props; kv; kv = kv->next) {
        if (role == SK_KAFKA_CONSUMER && sk_kafka_producer_only(kv->key))
            continue;
        if (set(conf, kv->key, kv->value, err, errsz) != 0)
            goto fail;
    }
    if (set_pairs(conf, forced, err, errsz) != 0)
        goto fail;
    rd_kafka_conf_set_log_cb(conf, sk_kafka_log);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

sk_log_level sk_kafka_log_level(int level)
{
    return level <= 3 ? SK_LOG_ERROR : level == 4 ? SK_LOG_WARN : level <= 6 ? SK_LOG_INFO : SK_LOG_DEBUG;
}

size_t sk_kafka_log_text(const char *buf, char *out, size_t outsz)
{
    size_t n = 0;
    if (outsz == 0)
        return 0;
    for (const char *p = buf; *p && n + 1 < outsz; p++)
        out[n++] = (*p == '"' || *p == '\\' || *p == '\n' || *p == '\r') ? '\'' : *p;
    out[n] = '\0';
    return n;
}

void sk_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    char msg[512];
    sk_kafka_log_text(buf, msg, sizeof(msg));
    sk_log(sk_kafka_log_level(level), "kafka", "client=%s facility=%s msg=\"%s\"",
           rd_kafka_name(rk), fac, msg);
}
