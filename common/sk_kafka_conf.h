/* sk_kafka_conf: the one way a librdkafka configuration is built from ours.
 *
 * Order of application (each later step wins): our defaults for the client, then the
 * configuration's kafka.* settings (file and SECKILL_KAFKA_*, sk_config.h), then the
 * forced settings that carry a guarantee (group.id, auto commit off, idempotence...).
 * One rule for keys: a key librdkafka does not know is refused, the error naming it
 * ("kafka.<key>: ..."), as rd_kafka_conf_set answers RD_KAFKA_CONF_UNKNOWN; a bad value
 * likewise. A consumer handle leaves out the producer-only properties among kafka.*
 * (one kafka.* list serves every client; librdkafka would only warn about each).
 * One log callback: librdkafka's lines through sk_log, syslog levels mapped once.
 * Its own archive (seckill_kafka_conf): only what talks to Kafka links librdkafka. */
#ifndef SK_KAFKA_CONF_H
#define SK_KAFKA_CONF_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "sk_config.h"
#include "sk_log.h"

typedef enum { SK_KAFKA_PRODUCER = 0, SK_KAFKA_CONSUMER } sk_kafka_role;

/** @brief A new configuration: defaults, then props, then forced (defaults and forced
 *  are {key, value, ..., NULL} arrays, either may be NULL), with sk_kafka_log as its log
 *  callback.
 *  @returns the configuration (the caller owns it: rd_kafka_new or rd_kafka_conf_destroy),
 *  or NULL with "kafka.<key>: <why>" in err. */
rd_kafka_conf_t *sk_kafka_conf_new(sk_kafka_role role, const char *const *defaults,
                                   const sk_cfg_kv *props, const char *const *forced, char *err,
                                   size_t errsz);

/** @brief 1 if key is a producer-only librdkafka property (left out of consumer handles). */
int sk_kafka_producer_only(const char *key);

/** @brief librdkafka's syslog level (0 emerg .. 7 debug) as ours: 0-3 error, 4 warn,
 *  5-6 info (notice is not a warning), 7 debug. */
sk_log_level sk_kafka_log_level(int syslog_level);

/** @brief buf as one logfmt quoted value: '"', '\\' and line breaks become '\'', cut to
 *  fit outsz (NUL-terminated). @returns the length written. */
size_t sk_kafka_log_text(const char *buf, char *out, size_t outsz);

/** @brief The log callback (set by sk_kafka_conf_new): event "kafka" with the client's
 *  name, the facility and the text. Runs on librdkafka's threads (sk_log is thread-safe). */
void sk_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

#endif
