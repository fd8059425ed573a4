/* fuzz_config: the configuration parser of common/ (sk_config_load's file parser,
 * sk_config_set, sk_config_env_name), driven through seckill-order's real table.
 *
 * Byte 0 picks the mode:
 *   even  the rest is a config file: written to a memfd and loaded by path
 *         (/proc/self/fd/N), then order_config_check, as at the service's start;
 *   odd   the rest is "key=value" lines handed to sk_config_set one by one (keys and
 *         values as they come: no trimming, odd characters included), and each key's
 *         environment name is built into buffers of every small size.
 * SECKILL_* variables are removed at start so that the environment of the run (for
 * instance .run/env) cannot change the results. Besides memory errors and leaks, the
 * checks: after a load that succeeded every INT is within its bounds and every string
 * is set; a failure leaves a "file:line: ..." message. */
#include "fuzz_util.h"
#include "order_config.h"
#include "sk_config.h"

#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

static int memfd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* Unset every SECKILL_* variable; restart the scan after each unsetenv (it edits environ). */
    for (int again = 1; again;) {
        again = 0;
        for (char **ep = environ; *ep; ep++) {
            if (strncmp(*ep, "SECKILL_", 8) == 0) {
                char name[256];
                size_t n = strcspn(*ep, "=");
                snprintf(name, sizeof(name), "%.*s", (int)n, *ep);
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
    memfd = memfd_create("fuzz_config", 0);
    if (memfd < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
    return 0;
}

static void check_loaded(const order_config *cfg)
{
    for (const sk_cfg_entry *e = order_config_table; e->key; e++) {
        const char *f = (const char *)cfg + e->offset;
        if (e->type == SK_CFG_INT) {
            long long v = *(const long long *)f;
            FUZZ_CHECK(v >= e->min && v <= e->max);
        } else if (e->type == SK_CFG_STRING || e->type == SK_CFG_SECRET) {
            FUZZ_CHECK(*(char *const *)f != NULL);
        }
    }
}

static void check_kafka(const sk_cfg_kv *kv)
{
    for (; kv; kv = kv->next) {
        FUZZ_CHECK(kv->key && kv->value && kv->key[0] != '\0');
        for (const sk_cfg_kv *o = kv->next; o; o = o->next) /* one entry per property */
            FUZZ_CHECK(strcmp(o->key, kv->key) != 0);
    }
}

static void mode_file(const uint8_t *p, size_t n)
{
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, p, n, 0) != (ssize_t)n)
        abort();
    order_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    sk_cfg_kv *kafka = NULL;
    char err[512] = "";
    int rc = sk_config_load(order_config_table, &cfg, path, &kafka, err, sizeof(err));
    if (rc == 0) {
        check_loaded(&cfg);
        check_kafka(kafka);
        char cerr[256];
        (void)order_config_check(&cfg, cerr, sizeof(cerr));
    } else {
        FUZZ_CHECK(rc == -1);
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':');
    }
    sk_config_free(order_config_table, &cfg, kafka);
}

static void check_env_name(const char *key)
{
    size_t klen = strlen(key);
    for (size_t bufsize = 1; bufsize <= 24; bufsize++) {
        char *buf = malloc(bufsize); /* exact size: ASan sees a write past it */
        if (!buf)
            abort();
        const char *r = sk_config_env_name(key, buf, bufsize);
        FUZZ_CHECK(r == buf);
        size_t want = 8 + klen < bufsize - 1 ? 8 + klen : bufsize - 1;
        FUZZ_CHECK(strnlen(buf, bufsize) == want);
        free(buf);
    }
}

static void mode_set(const uint8_t *p, size_t n)
{
    order_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    sk_cfg_kv *kafka = NULL;
    char err[512];
    FUZZ_CHECK(sk_config_load(order_config_table, &cfg, NULL, &kafka, err, sizeof(err)) == 0);
    char *text = fuzz_strndup(p, n);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        const char *value = "";
        if (eq) {
            *eq = '\0';
            value = eq + 1;
        }
        err[0] = '\0';
        if (sk_config_set(order_config_table, &cfg, &kafka, line, value, err, sizeof(err)) != 0)
            FUZZ_CHECK(err[0] != '\0');
        check_env_name(line);
    }
    check_loaded(&cfg); /* a refused value must leave the previous one in place */
    check_kafka(kafka);
    free(text);
    sk_config_free(order_config_table, &cfg, kafka);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] % 2 == 0)
        mode_file(data + 1, size - 1);
    else
        mode_set(data + 1, size - 1);
    return 0;
}
