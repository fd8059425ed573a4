/* sk_config: table-driven configuration. See sk_config.h for the rules. */
#include "sk_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

#define KAFKA_PREFIX "kafka."

static void *field(void *cfg, const sk_cfg_entry *e)
{
    return (char *)cfg + e->offset;
}

const char *sk_config_env_name(const char *key, char *buf, size_t bufsize)
{
    size_t n = (size_t)snprintf(buf, bufsize, "SECKILL_");
    for (const char *p = key; *p && n + 1 < bufsize; p++)
        buf[n++] = (*p == '.' || *p == '-') ? '_' : (char)toupper((unsigned char)*p);
    buf[n < bufsize ? n : bufsize - 1] = '\0';
    return buf;
}

static int kafka_put(sk_cfg_kv **list, const char *key, const char *value)
{
    for (sk_cfg_kv *kv = *list; kv; kv = kv->next) {
        if (strcmp(kv->key, key) == 0) {
            char *v = strdup(value);
            if (!v)
                return -1;
            free(kv->value);
            kv->value = v;
            return 0;
        }
    }
    sk_cfg_kv *kv = calloc(1, sizeof(*kv));
    if (!kv || !(kv->key = strdup(key)) || !(kv->value = strdup(value))) {
        if (kv)
            free(kv->key);
        free(kv);
        return -1;
    }
    /* Append, so librdkafka sees properties in the order they were written. */
    sk_cfg_kv **tail = list;
    while (*tail)
        tail = &(*tail)->next;
    *tail = kv;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static int entry_set(const sk_cfg_entry *e, void *cfg, const char *value, char *err, size_t errsz)
{
    switch (e->type) {
    case SK_CFG_STRING:
    case SK_CFG_SECRET: {
        char **slot = field(cfg, e);
        char *v = strdup(value);
        if (!v) {
            snprintf(err, errsz, "out of memory");
            return -1;
        }
        free(*slot);
        *slot = v;
        return 0;
    }
    case SK_CFG_INT: {
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end != '\0') {
            snprintf(err, errsz, "%s: not an integer: \"%s\"", e->key, value);
            return -1;
        }
        if (v < e->min || v > e->max) {
            snprintf(err, errsz, "%s: %lld is out of range [%lld, %lld]", e->key, v, e->min,
                     e->max);
            return -1;
        }
        *(long long *)field(cfg, e) = v;
        return 0;
    }
    case SK_CFG_BOOL:
        if (parse_bool(value, (int *)field(cfg, e)) != 0) {
            snprintf(err, errsz, "%s: not a boolean: \"%s\"", e->key, value);
            return -1;
        }
        return 0;
    }
    return -1;
}

int sk_config_set(const sk_cfg_entry *table, void *cfg, sk_cfg_kv **kafka, const char *key,
                  const char *value, char *errstr, size_t errstr_size)
{
    if (strncmp(key, KAFKA_PREFIX, strlen(KAFKA_PREFIX)) == 0) {
        const char *k = key + strlen(KAFKA_PREFIX);
        if (!*k) {
            snprintf(errstr, errstr_size, "empty kafka property name");
            return -1;
        }
        if (kafka_put(kafka, k, value) != 0) {
            snprintf(errstr, errstr_size, "out of memory");
            return -1;
        }
        return 0;
    }
    for (const sk_cfg_entry *e = table; e->key; e++)
        if (strcmp(e->key, key) == 0)
            return entry_set(e, cfg, value, errstr, errstr_size);
    snprintf(errstr, errstr_size, "unknown setting \"%s\"", key);
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static int load_file(const sk_cfg_entry *table, void *cfg, const char *path, sk_cfg_kv **kafka,
                     char *err, size_t errsz)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errsz, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL, msg[512];
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (n > 4096) {
            snprintf(err, errsz, "%s:%d: line too long", path, lineno);
            rc = -1;
            break;
        }
        /* getline counts what it read: a NUL inside would silently cut the line. */
        if (strlen(line) != (size_t)n) {
            snprintf(err, errsz, "%s:%d: NUL byte in line", path, lineno);
            rc = -1;
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errsz, "%s:%d: expected \"key = value\"", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        if (*key == '\0') {
            snprintf(err, errsz, "%s:%d: empty key", path, lineno);
            rc = -1;
            break;
        }
        if (sk_config_set(table, cfg, kafka, key, value, msg, sizeof(msg)) != 0) {
            snprintf(err, errsz, "%s:%d: %s", path, lineno, msg);
            rc = -1;
            break;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

static int load_env(const sk_cfg_entry *table, void *cfg, sk_cfg_kv **kafka, char *err,
                    size_t errsz)
{
    char name[256], msg[512];
    for (const sk_cfg_entry *e = table; e->key; e++) {
        const char *v = getenv(sk_config_env_name(e->key, name, sizeof(name)));
        if (v && entry_set(e, cfg, v, msg, sizeof(msg)) != 0) {
            snprintf(err, errsz, "environment %s: %s", name, msg);
            return -1;
        }
    }
    /* SECKILL_KAFKA_* -> kafka.* (librdkafka property names use '.', never '_'). */
    for (char **ep = environ; *ep; ep++) {
        if (strncmp(*ep, "SECKILL_KAFKA_", 14) != 0)
            continue;
        const char *eq = strchr(*ep, '=');
        if (!eq)
            continue;
        char key[256];
        size_t n = 0;
        for (const char *p = *ep + 14; p < eq && n + 1 < sizeof(key); p++)
            key[n++] = (*p == '_') ? '.' : (char)tolower((unsigned char)*p);
        key[n] = '\0';
        if (strcmp(key, "brokers") == 0)
            strcpy(key, "bootstrap.servers");
        if (n == 0 || kafka_put(kafka, key, eq + 1) != 0) {
            snprintf(err, errsz, "environment: bad kafka setting %.*s", (int)(eq - *ep), *ep);
            return -1;
        }
    }
    return 0;
}

int sk_config_load(const sk_cfg_entry *table, void *cfg, const char *path, sk_cfg_kv **kafka,
                   char *errstr, size_t errstr_size)
{
    char msg[512];
    for (const sk_cfg_entry *e = table; e->key; e++) {
        const char *def = e->def;
        if (!def)
            def = (e->type == SK_CFG_INT || e->type == SK_CFG_BOOL) ? "0" : "";
        if (entry_set(e, cfg, def, msg, sizeof(msg)) != 0) {
            snprintf(errstr, errstr_size, "default of %s", msg);
            return -1;
        }
    }
    if (path && load_file(table, cfg, path, kafka, errstr, errstr_size) != 0)
        return -1;
    return load_env(table, cfg, kafka, errstr, errstr_size);
}

const char *sk_config_args_path(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            path = argv[i] + 9;
    }
    return path;
}

int sk_config_args(const sk_cfg_entry *table, void *cfg, sk_cfg_kv **kafka, int allow_kafka,
                   int argc, char **argv, const char **pos, int max_pos, int *npos,
                   char *errstr, size_t errstr_size)
{
    char msg[512];
    *npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(a, "--config=", 9) == 0)
            continue;
        if (strncmp(a, "--", 2) != 0) {
            if (*npos >= max_pos) {
                snprintf(errstr, errstr_size, "unexpected argument \"%s\" (see --help)", a);
                return -1;
            }
            pos[(*npos)++] = a;
            continue;
        }
        char key[128];
        const char *eq = strchr(a + 2, '='), *value;
        size_t kl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (kl == 0 || kl >= sizeof(key)) {
            snprintf(errstr, errstr_size, "bad argument \"%s\"", a);
            return -1;
        }
        memcpy(key, a + 2, kl);
        key[kl] = '\0';
        if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            snprintf(errstr, errstr_size, "--%s needs a value", key);
            return -1;
        }
        if (!allow_kafka && strncmp(key, KAFKA_PREFIX, strlen(KAFKA_PREFIX)) == 0) {
            snprintf(errstr, errstr_size, "--%s: not a setting of this program", key);
            return -1;
        }
        if (sk_config_set(table, cfg, kafka, key, value, msg, sizeof(msg)) != 0) {
            snprintf(errstr, errstr_size, "--%s: %s", key, msg);
            return -1;
        }
    }
    return 0;
}

void sk_config_free(const sk_cfg_entry *table, void *cfg, sk_cfg_kv *kafka)
{
    if (cfg) {
        for (const sk_cfg_entry *e = table; e->key; e++) {
            if (e->type == SK_CFG_STRING || e->type == SK_CFG_SECRET) {
                char **slot = field(cfg, e);
                free(*slot);
                *slot = NULL;
            }
        }
    }
    while (kafka) {
        sk_cfg_kv *next = kafka->next;
        free(kafka->key);
        free(kafka->value);
        free(kafka);
        kafka = next;
    }
}

void sk_config_print_help(FILE *out, const sk_cfg_entry *table, int markdown)
{
    static const char *types[] = {"string", "secret", "int", "bool"};
    char env[256];
    if (markdown)
        fprintf(out, "| key | environment | type | default | meaning |\n| --- | --- | --- | --- | --- |\n");
    for (const sk_cfg_entry *e = table; e->key; e++) {
        char range[64] = "";
        if (e->type == SK_CFG_INT)
            snprintf(range, sizeof(range), " [%lld..%lld]", e->min, e->max);
        const char *def = e->type == SK_CFG_SECRET ? "(secret)" : (e->def ? e->def : "");
        sk_config_env_name(e->key, env, sizeof(env));
        if (markdown)
            fprintf(out, "| `%s` | `%s` | %s%s | `%s` | %s |\n", e->key, env, types[e->type],
                    range, def, e->help);
        else
            fprintf(out, "  %-28s %s%s, default \"%s\" (env %s)\n      %s\n", e->key,
                    types[e->type], range, def, env, e->help);
    }
    if (markdown)
        fprintf(out, "| `kafka.*` | `SECKILL_KAFKA_*` | string | | passed to librdkafka unchanged |\n");
    else
        fprintf(out, "  %-28s passed to librdkafka unchanged (env SECKILL_KAFKA_*)\n", "kafka.*");
}
