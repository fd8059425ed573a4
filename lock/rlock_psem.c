/* rlock_psem: the expirable-permit semaphore (Redisson's RPermitExpirableSemaphore): free
 * permits in a counter, permits out in a zset id -> deadline, so a permit whose holder
 * died comes back at its deadline (given back by the next script that looks). The
 * scripts (lua/rlock_psem_*.lua) are the same in both modes; only the names differ. */
#include "rlock_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redisson's deadline of a permit without a lease (RPermitExpirableSemaphore's
 * nonExpirableTimeout): far, yet exact in a double. */
#define PSEM_NEVER "922337203685477"

struct rlock_psem {
    rlock_client_t *c;
    const char *pub; /* publish command: the client's in Redisson mode, else PUBLISH */
    char *name, *key, *tmo_key, *channel;
    rlock_waiter w;
    char errstr[RLOCK_ERRSTR_SIZE];
};

rlock_psem_t *rlock_psem_new(rlock_client_t *c, const char *name)
{
    if (c == NULL || name == NULL || rlock_key_build(NULL, 0, name, "") < 0)
        return NULL;
    rlock_psem_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    int rs = c->opts.redisson;
    s->c = c;
    s->pub = rs ? c->pub_cmd : "publish";
    s->name = strdup(name);
    s->key = rs ? strdup(name) : rlock_key_dup(name, ":psem");
    s->tmo_key = rs ? rlock_rs_name_dup(NULL, name, "timeout") : rlock_key_dup(name, ":psem:timeout");
    s->channel = rs ? rlock_rs_name_dup("redisson_sc", name, NULL) : rlock_key_dup(name, ":psem:ch");
    if (!s->name || !s->key || !s->tmo_key || !s->channel) {
        rlock_psem_free(s);
        return NULL;
    }
    return s;
}

void rlock_psem_free(rlock_psem_t *s)
{
    if (s == NULL)
        return;
    rlock_waiter_close(&s->w);
    free(s->name);
    free(s->key);
    free(s->tmo_key);
    free(s->channel);
    free(s);
}

const char *rlock_psem_errstr(const rlock_psem_t *s) { return s->errstr; }

int rlock_psem_try_set_permits(rlock_psem_t *s, int64_t permits)
{
    if (permits < 0) {
        snprintf(s->errstr, sizeof(s->errstr), "permits must be >= 0");
        return RLOCK_ERR_ARG;
    }
    char n[24];
    snprintf(n, sizeof(n), "%" PRId64, permits);
    const char *argv[4] = {s->key, s->channel, n, s->pub};
    redisReply *r;
    int rv = rlock_client_eval(s->c, RLOCK_S_RS_SEM_SET, 2, 4, argv, &r, s->errstr, sizeof(s->errstr));
    if (rv != 0)
        return rv;
    rv = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return rv;
}

struct psem_acq {
    rlock_psem_t *s;
    const char *id;
    int64_t lease_ms;
};

static int psem_attempt(void *p, int64_t *hint)
{
    struct psem_acq *a = p;
    rlock_psem_t *s = a->s;
    char now[24], deadline[24];
    int64_t wall = rlock_wall_ms();
    snprintf(now, sizeof(now), "%" PRId64, wall);
    if (a->lease_ms > 0)
        snprintf(deadline, sizeof(deadline), "%" PRId64, wall + a->lease_ms);
    else
        snprintf(deadline, sizeof(deadline), "%s", PSEM_NEVER);
    const char *argv[7] = {s->key, s->tmo_key, s->channel, a->id, deadline, now, s->pub};
    redisReply *r;
    int rv = rlock_client_eval(s->c, RLOCK_S_PSEM_ACQUIRE, 3, 7, argv, &r, s->errstr, sizeof(s->errstr));
    if (rv != 0)
        return rv;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER) {
        snprintf(s->errstr, sizeof(s->errstr), "permit script: unexpected reply type %d", r->type);
        freeReplyObject(r);
        return RLOCK_ERR_REDIS;
    }
    rv = r->element[0]->integer == 1;
    *hint = r->element[1]->integer; /* the nearest deadline: a permit comes back then */
    freeReplyObject(r);
    return rv;
}

int rlock_psem_try_acquire(rlock_psem_t *s, int64_t wait_ms, int64_t lease_ms, char id[RLOCK_PERMIT_ID_SIZE])
{
    if (lease_ms < 0 || id == NULL) {
        snprintf(s->errstr, sizeof(s->errstr), "lease must be >= 0 (0: never expires) and id not NULL");
        return RLOCK_ERR_ARG;
    }
    char mine[RLOCK_PERMIT_ID_SIZE];
    if (rlock_random_hex32(mine) != 0) {
        snprintf(s->errstr, sizeof(s->errstr), "no OS randomness for the permit id");
        return RLOCK_ERR_IO;
    }
    struct psem_acq a = {.s = s, .id = mine, .lease_ms = lease_ms};
    int rv = rlock_wait_until(s->c, NULL, s->c->tv, &s->w, s->channel, wait_ms, s->c->opts.wait_poll_ms,
                              psem_attempt, &a);
    if (rv == 0)
        memcpy(id, mine, RLOCK_PERMIT_ID_SIZE);
    else if (rv == RLOCK_ERR_TIMEOUT)
        snprintf(s->errstr, sizeof(s->errstr), "semaphore %s: no permit free in time", s->name);
    return rv;
}

int rlock_psem_release(rlock_psem_t *s, const char *id)
{
    if (id == NULL || strlen(id) != RLOCK_PERMIT_ID_SIZE - 1 || strspn(id, "0123456789abcdefABCDEF") != strlen(id)) {
        snprintf(s->errstr, sizeof(s->errstr), "permit id must be 32 hex chars");
        return RLOCK_ERR_ARG;
    }
    char now[24];
    snprintf(now, sizeof(now), "%" PRId64, rlock_wall_ms());
    const char *argv[6] = {s->key, s->tmo_key, s->channel, id, now, s->pub};
    redisReply *r;
    int rv = rlock_client_eval(s->c, RLOCK_S_PSEM_RELEASE, 3, 6, argv, &r, s->errstr, sizeof(s->errstr));
    if (rv != 0)
        return rv;
    rv = r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? 0 : RLOCK_ERR_NOT_HELD;
    freeReplyObject(r);
    if (rv != 0)
        snprintf(s->errstr, sizeof(s->errstr), "permit %s of %s: not held (unknown or expired)", id, s->name);
    return rv;
}

int64_t rlock_psem_available(rlock_psem_t *s)
{
    char now[24];
    snprintf(now, sizeof(now), "%" PRId64, rlock_wall_ms());
    const char *argv[5] = {s->key, s->tmo_key, s->channel, now, s->pub};
    redisReply *r;
    int rv = rlock_client_eval(s->c, RLOCK_S_PSEM_AVAILABLE, 3, 5, argv, &r, s->errstr, sizeof(s->errstr));
    if (rv != 0)
        return rv;
    int64_t n = r->type == REDIS_REPLY_INTEGER ? r->integer : RLOCK_ERR_REDIS;
    freeReplyObject(r);
    return n;
}
