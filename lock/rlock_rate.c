/* rlock_rate: the rate limiter (Redisson's RRateLimiter): a sliding-window budget kept
 * by lua/rlock_rate_*.lua on Redisson's layout in both modes (only the names differ), so
 * a Redisson-mode limiter is one budget with Java's. No pub/sub, as in Redisson: a waiter
 * sleeps until the oldest grant of the window leaves it. */
#include "rlock_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rlock_rate {
    rlock_client_t *c;
    char *name, *key, *value, *client_value, *permits, *client_permits;
    char errstr[RLOCK_ERRSTR_SIZE];
};

/* `base` + ":" + suffix, malloc'd (NULL when out of memory). */
static char *suffixed(const char *base, const char *suffix)
{
    size_t n = strlen(base) + 1 + strlen(suffix) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s:%s", base, suffix);
    return s;
}

rlock_rate_t *rlock_rate_new(rlock_client_t *c, const char *name)
{
    if (c == NULL || name == NULL || rlock_key_build(NULL, 0, name, "") < 0)
        return NULL;
    rlock_rate_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->c = c;
    r->name = strdup(name);
    if (c->opts.redisson) {
        /* RedissonRateLimiter: name, suffixName(name, "value"/"permits"), each + ":<id>" */
        r->key = strdup(name);
        r->value = rlock_rs_name_dup(NULL, name, "value");
        r->permits = rlock_rs_name_dup(NULL, name, "permits");
    } else {
        r->key = rlock_key_dup(name, ":rate");
        r->value = rlock_key_dup(name, ":rate:value");
        r->permits = rlock_key_dup(name, ":rate:permits");
    }
    if (r->value && r->permits) {
        r->client_value = suffixed(r->value, c->id);
        r->client_permits = suffixed(r->permits, c->id);
    }
    if (!r->name || !r->key || !r->value || !r->permits || !r->client_value || !r->client_permits) {
        rlock_rate_free(r);
        return NULL;
    }
    return r;
}

void rlock_rate_free(rlock_rate_t *r)
{
    if (r == NULL)
        return;
    free(r->name);
    free(r->key);
    free(r->value);
    free(r->client_value);
    free(r->permits);
    free(r->client_permits);
    free(r);
}

const char *rlock_rate_errstr(const rlock_rate_t *r) { return r->errstr; }

int rlock_rate_try_set(rlock_rate_t *r, rlock_rate_type_t type, int64_t rate, int64_t interval_ms,
                       int64_t keep_alive_ms)
{
    if (rate <= 0 || interval_ms <= 0 || keep_alive_ms < 0 ||
        (keep_alive_ms > 0 && keep_alive_ms < interval_ms) ||
        (type != RLOCK_RATE_OVERALL && type != RLOCK_RATE_PER_CLIENT)) {
        snprintf(r->errstr, sizeof(r->errstr),
                 "rate and interval must be > 0, keep-alive 0 or >= the interval, type overall or per client");
        return RLOCK_ERR_ARG;
    }
    char a[4][24];
    snprintf(a[0], sizeof(a[0]), "%" PRId64, rate);
    snprintf(a[1], sizeof(a[1]), "%" PRId64, interval_ms);
    snprintf(a[2], sizeof(a[2]), "%d", (int)type);
    snprintf(a[3], sizeof(a[3]), "%" PRId64, keep_alive_ms);
    const char *argv[5] = {r->key, a[0], a[1], a[2], a[3]};
    redisReply *rep;
    int rv = rlock_client_eval(r->c, RLOCK_S_RATE_SET, 1, 5, argv, &rep, r->errstr, sizeof(r->errstr));
    if (rv != 0)
        return rv;
    rv = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    return rv;
}

/* One attempt: 1 granted, 0 not (*wait_ms: when enough may be back), < 0 error. */
static int rate_attempt(rlock_rate_t *r, const char *permits, int64_t *wait_ms)
{
    char now[24], id[33];
    if (rlock_random_hex32(id) != 0) {
        snprintf(r->errstr, sizeof(r->errstr), "no OS randomness for the grant id");
        return RLOCK_ERR_IO;
    }
    snprintf(now, sizeof(now), "%" PRId64, rlock_wall_ms());
    const char *argv[8] = {r->key, r->value, r->client_value, r->permits, r->client_permits, permits, now, id};
    redisReply *rep;
    int rv = rlock_client_eval(r->c, RLOCK_S_RATE_ACQUIRE, 5, 8, argv, &rep, r->errstr, sizeof(r->errstr));
    if (rv != 0)
        return rv;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_INTEGER ||
        rep->element[1]->type != REDIS_REPLY_INTEGER) {
        snprintf(r->errstr, sizeof(r->errstr), "rate script: unexpected reply type %d", rep->type);
        freeReplyObject(rep);
        return RLOCK_ERR_REDIS;
    }
    rv = rep->element[0]->integer == 1;
    *wait_ms = rep->element[1]->integer;
    freeReplyObject(rep);
    return rv;
}

int rlock_rate_try_acquire(rlock_rate_t *r, int64_t permits, int64_t wait_ms)
{
    if (permits <= 0) {
        snprintf(r->errstr, sizeof(r->errstr), "permits must be > 0");
        return RLOCK_ERR_ARG;
    }
    char n[24];
    snprintf(n, sizeof(n), "%" PRId64, permits);
    int64_t deadline = wait_ms < 0 ? INT64_MAX : rlock_now_ms() + wait_ms;
    for (;;) {
        int64_t next = 0;
        int rv = rate_attempt(r, n, &next);
        if (rv != 0)
            return rv > 0 ? 0 : rv;
        int64_t left = deadline - rlock_now_ms();
        if (left <= 0 || (wait_ms >= 0 && next > left)) {
            snprintf(r->errstr, sizeof(r->errstr), "rate limiter %s: %s permits not free in time", r->name, n);
            return RLOCK_ERR_TIMEOUT;
        }
        rlock_sleep_ms(next);
    }
}
