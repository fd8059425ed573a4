/* rcl_slot: which slot a command goes to (CRC16 with hash tags, key positions by
 * command), and what an error reply asks of us (MOVED, ASK, TRYAGAIN, ...). Pure. */
#include "rcl_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int rcl_url_is_cluster(const char *url)
{
    return url != NULL && strncmp(url, "redis-cluster://", 16) == 0;
}

/* CRC16-CCITT (XMODEM: poly 0x1021, init 0), the one the cluster spec names. Bitwise:
 * keys are short, and this is far below one round trip. */
static uint16_t crc16(const unsigned char *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

int rcl_keyslot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return crc16((const unsigned char *)open + 1, (size_t)(close - open - 1)) & (RCL_SLOTS - 1);
    }
    return crc16((const unsigned char *)key, len) & (RCL_SLOTS - 1);
}

static size_t arglen(const char **argv, const size_t *lens, int i)
{
    return lens ? lens[i] : strlen(argv[i]);
}

static int is_cmd(const char **argv, const size_t *lens, const char *name)
{
    size_t n = strlen(name);
    return arglen(argv, lens, 0) == n && strncasecmp(argv[0], name, n) == 0;
}

static int in_list(const char **argv, const size_t *lens, const char *const *list)
{
    for (; *list; list++)
        if (is_cmd(argv, lens, *list))
            return 1;
    return 0;
}

/* Commands without keys: they go to any master. MULTI/EXEC are not routed (a cluster
 * transaction must stay on one node: not supported here). */
static const char *const keyless[] = {
    "PING", "ECHO", "PUBLISH", "SPUBLISH", "SCRIPT", "INFO", "WAIT", "CLUSTER", "DBSIZE",
    "FLUSHALL", "FLUSHDB", "TIME", "ASKING", "AUTH", "SELECT", "CONFIG", "CLIENT",
    "READONLY", "READWRITE", "KEYS", "SCAN", "RANDOMKEY", "FUNCTION", "COMMAND", "HELLO",
    "MEMORY", "LATENCY", "SLOWLOG", "LASTSAVE", "SAVE", "BGSAVE", "BGREWRITEAOF", "ROLE",
    "SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "DEBUG", "SHUTDOWN", NULL};
/* Every argument is a key. */
static const char *const allkeys[] = {"DEL", "UNLINK", "EXISTS", "MGET", "TOUCH", "WATCH",
                                      "SINTER", "SUNION", "SDIFF", "PFCOUNT", NULL};
/* Two keys at argv[1] and argv[2]. */
static const char *const twokeys[] = {"RENAME", "RENAMENX", "SMOVE", "RPOPLPUSH", "LMOVE",
                                      "COPY", "BRPOPLPUSH", "BLMOVE", "SINTERSTORE",
                                      "SUNIONSTORE", "SDIFFSTORE", NULL};

int rcl_command_keys(int argc, const char **argv, const size_t *lens, int *first, int *n,
                     int *step)
{
    *first = 1, *n = 0, *step = 1;
    if (argc < 1)
        return -1;
    if (in_list(argv, lens, keyless))
        return 0;
    if (is_cmd(argv, lens, "EVAL") || is_cmd(argv, lens, "EVALSHA") ||
        is_cmd(argv, lens, "EVAL_RO") || is_cmd(argv, lens, "EVALSHA_RO") ||
        is_cmd(argv, lens, "FCALL") || is_cmd(argv, lens, "FCALL_RO")) {
        if (argc < 3)
            return -1;
        char nb[16];
        size_t l = arglen(argv, lens, 2);
        if (l == 0 || l >= sizeof(nb))
            return -1;
        memcpy(nb, argv[2], l);
        nb[l] = '\0';
        char *end;
        long k = strtol(nb, &end, 10);
        if (*end || k < 0 || k > argc - 3)
            return -1;
        *first = 3, *n = (int)k;
        return 0;
    }
    if (argc < 2)
        return 0;
    if (in_list(argv, lens, allkeys)) {
        *n = argc - 1;
    } else if (is_cmd(argv, lens, "MSET") || is_cmd(argv, lens, "MSETNX")) {
        if ((argc - 1) % 2)
            return -1;
        *n = (argc - 1) / 2, *step = 2;
    } else if (is_cmd(argv, lens, "BLPOP") || is_cmd(argv, lens, "BRPOP")) {
        *n = argc - 2; /* the last argument is the timeout */
    } else if (in_list(argv, lens, twokeys)) {
        *n = argc >= 3 ? 2 : 1;
    } else {
        *n = 1;
    }
    return 0;
}

int rcl_command_slot(int argc, const char **argv, const size_t *lens, char *err, size_t errsz)
{
    int first, n, step;
    if (rcl_command_keys(argc, argv, lens, &first, &n, &step) != 0) {
        snprintf(err, errsz, "malformed command %.*s", argc > 0 ? (int)arglen(argv, lens, 0) : 0,
                 argc > 0 ? argv[0] : "");
        return -3;
    }
    int slot = -1;
    for (int i = 0; i < n; i++) {
        int k = first + i * step;
        int s = rcl_keyslot(argv[k], arglen(argv, lens, k));
        if (slot >= 0 && s != slot) {
            snprintf(err, errsz, "CROSSSLOT keys of %.*s in slots %d and %d (give them one {hash tag})",
                     (int)arglen(argv, lens, 0), argv[0], slot, s);
            return -2;
        }
        slot = s;
    }
    return slot;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" */
static int parse_target(const char *s, int *slot, rcl_addr *to)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != ' ' || v < 0 || v >= RCL_SLOTS)
        return -1;
    const char *hp = end + 1;
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof(to->host))
        return -1;
    memcpy(to->host, hp, (size_t)(colon - hp));
    to->host[colon - hp] = '\0';
    long p = strtol(colon + 1, &end, 10);
    if (p <= 0 || p > 65535)
        return -1;
    to->port = (int)p;
    *slot = (int)v;
    return 0;
}

int rcl_classify(const redisReply *r, int *slot, rcl_addr *to)
{
    if (r == NULL || r->type != REDIS_REPLY_ERROR || r->str == NULL)
        return RCL_R_NONE;
    if (strncmp(r->str, "MOVED ", 6) == 0)
        return parse_target(r->str + 6, slot, to) == 0 ? RCL_R_MOVED : RCL_R_NONE;
    if (strncmp(r->str, "ASK ", 4) == 0)
        return parse_target(r->str + 4, slot, to) == 0 ? RCL_R_ASK : RCL_R_NONE;
    if (strncmp(r->str, "TRYAGAIN", 8) == 0)
        return RCL_R_TRYAGAIN;
    if (strncmp(r->str, "CLUSTERDOWN", 11) == 0)
        return RCL_R_CLUSTERDOWN;
    if (strncmp(r->str, "NOSCRIPT", 8) == 0)
        return RCL_R_NOSCRIPT;
    return RCL_R_NONE;
}

int rcl_backoff_ms(int attempt)
{
    int ms = RCL_BACKOFF_MS;
    for (int i = 0; i < attempt && ms < RCL_BACKOFF_MAX_MS; i++)
        ms *= 2;
    return ms < RCL_BACKOFF_MAX_MS ? ms : RCL_BACKOFF_MAX_MS;
}

int64_t rcl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
