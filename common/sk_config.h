/* sk_config: one declarative configuration table per program.
 *
 * A program declares its settings once (key, type, bounds, default, help) with the
 * offset of each field in its own config struct. From that table come the file parser
 * (`key = value` lines, librdkafka-properties style, `#` comments), the SECKILL_*
 * environment overrides, --help, and the README's configuration table.
 *
 * Precedence: default < file < environment (< command-line arguments, for programs that
 * take them through sk_config_args). The environment name of a key is
 * SECKILL_ + the key upper-cased with '.' and '-' turned into '_' (redis.url ->
 * SECKILL_REDIS_URL). Keys starting with "kafka." are not in the table: they are
 * collected, prefix stripped, into a list handed to librdkafka unchanged
 * (SECKILL_KAFKA_X_Y -> kafka.x.y; SECKILL_KAFKA_BROKERS -> kafka.bootstrap.servers). */
#ifndef SK_CONFIG_H
#define SK_CONFIG_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    SK_CFG_STRING, /* char * in the struct, owned by it (freed by sk_config_free) */
    SK_CFG_SECRET, /* like STRING, but never printed: --help and dumps show "(secret)" */
    SK_CFG_INT,    /* long long in the struct, checked against [min, max] */
    SK_CFG_BOOL,   /* int in the struct: true/false, yes/no, on/off, 1/0 */
} sk_cfg_type;

typedef struct sk_cfg_entry {
    const char *key;
    sk_cfg_type type;
    long long min, max; /* INT only */
    const char *def;    /* default as text; NULL: no default (empty string / 0) */
    const char *help;
    size_t offset; /* offsetof(the program's struct, field) */
} sk_cfg_entry;

/* A librdkafka property: key without "kafka.", value as written. */
typedef struct sk_cfg_kv {
    char *key;
    char *value;
    struct sk_cfg_kv *next;
} sk_cfg_kv;

/** @brief Fills `cfg` from defaults, then `path` (may be NULL), then the environment.
 *  `table` ends with an entry whose key is NULL. `*kafka` receives the kafka.* list
 *  (caller frees with sk_config_free). On error writes "file:line: message" to errstr.
 *  @returns 0 ok, -1 error (cfg is left partly filled: still call sk_config_free). */
int sk_config_load(const sk_cfg_entry *table, void *cfg, const char *path, sk_cfg_kv **kafka,
                   char *errstr, size_t errstr_size);

/** @brief Sets one key from text, checked against the table. @returns 0 or -1 with errstr. */
int sk_config_set(const sk_cfg_entry *table, void *cfg, sk_cfg_kv **kafka, const char *key,
                  const char *value, char *errstr, size_t errstr_size);

/** @brief The FILE of a `--config FILE` or `--config=FILE` argument in argv, or NULL. */
const char *sk_config_args_path(int argc, char **argv);

/** @brief Applies command-line settings, `--key=value` or `--key value`, checked against the
 *  table; call it after sk_config_load so that arguments win over the file and the
 *  environment. `--config` and its file are skipped. kafka.* keys are taken only if
 *  allow_kafka. Arguments that do not start with "--" are stored in pos[] (at most max_pos;
 *  pos may be NULL when max_pos is 0) and counted in *npos.
 *  @returns 0, or -1 with a message in errstr. */
int sk_config_args(const sk_cfg_entry *table, void *cfg, sk_cfg_kv **kafka, int allow_kafka,
                   int argc, char **argv, const char **pos, int max_pos, int *npos,
                   char *errstr, size_t errstr_size);

/** @brief Frees the strings `cfg` owns and the kafka list. Both may be NULL/empty. */
void sk_config_free(const sk_cfg_entry *table, void *cfg, sk_cfg_kv *kafka);

/** @brief Prints the table as --help text (or, markdown != 0, as a README table). */
void sk_config_print_help(FILE *out, const sk_cfg_entry *table, int markdown);

/** @brief Returns the environment variable name for `key` in buf. */
const char *sk_config_env_name(const char *key, char *buf, size_t bufsize);

#endif
