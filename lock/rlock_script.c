/* rlock_script: our Lua scripts (lua/rlock_*.lua, embedded as rlock_lua.h) by id, their SHA-1 digests, and EVALSHA with the NOSCRIPT
 * fallback (SCRIPT LOAD, then one retry): the script cache of a restarted or flushed
 * server is refilled on demand, while the common path sends only the digest.
 * A script that calls rlock_fence gets lua/rlock_fence.lua (the fencing counter's one
 * definition) prepended: the text sent and digested is prelude + script. */
#include "rlock_int.h"
#include "rlock_lua.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const bodies[RLOCK_S__COUNT] = {
    [RLOCK_S_SIMPLE_LOCK] = rlock_lua_simple_lock,
    [RLOCK_S_SIMPLE_UNLOCK] = rlock_lua_simple_unlock,
    [RLOCK_S_SIMPLE_RENEW] = rlock_lua_simple_renew,
    [RLOCK_S_REENTRANT_LOCK] = rlock_lua_reentrant_lock,
    [RLOCK_S_REENTRANT_UNLOCK] = rlock_lua_reentrant_unlock,
    [RLOCK_S_REENTRANT_RENEW] = rlock_lua_reentrant_renew,
    [RLOCK_S_FAIR_LOCK] = rlock_lua_fair_lock,
    [RLOCK_S_FAIR_CANCEL] = rlock_lua_fair_cancel,
    [RLOCK_S_FAIR_UNLOCK] = rlock_lua_fair_unlock,
    [RLOCK_S_RW_READ_LOCK] = rlock_lua_rw_read_lock,
    [RLOCK_S_RW_WRITE_LOCK] = rlock_lua_rw_write_lock,
    [RLOCK_S_RW_UNLOCK] = rlock_lua_rw_unlock,
    [RLOCK_S_RW_RENEW] = rlock_lua_rw_renew,
    [RLOCK_S_SEM_ACQUIRE] = rlock_lua_sem_acquire,
    [RLOCK_S_SEM_RELEASE] = rlock_lua_sem_release,
    [RLOCK_S_LATCH_SET] = rlock_lua_latch_set,
    [RLOCK_S_LATCH_COUNT_DOWN] = rlock_lua_latch_count_down,
    [RLOCK_S_RS_UNLOCK] = rlock_lua_rs_unlock,
    [RLOCK_S_RS_WRITE_LOCK] = rlock_lua_rs_write_lock,
    [RLOCK_S_RS_WRITE_UNLOCK] = rlock_lua_rs_write_unlock,
    [RLOCK_S_RS_READ_LOCK] = rlock_lua_rs_read_lock,
    [RLOCK_S_RS_READ_UNLOCK] = rlock_lua_rs_read_unlock,
    [RLOCK_S_RS_READ_RENEW] = rlock_lua_rs_read_renew,
    [RLOCK_S_RS_SEM_SET] = rlock_lua_rs_sem_set,
    [RLOCK_S_RS_SEM_RELEASE] = rlock_lua_rs_sem_release,
    [RLOCK_S_RS_LATCH_SET] = rlock_lua_rs_latch_set,
    [RLOCK_S_RS_LATCH_COUNT_DOWN] = rlock_lua_rs_latch_count_down,
    [RLOCK_S_RS_FAIR_LOCK] = rlock_lua_rs_fair_lock,
    [RLOCK_S_RS_FAIR_CANCEL] = rlock_lua_rs_fair_cancel,
    [RLOCK_S_RS_FAIR_UNLOCK] = rlock_lua_rs_fair_unlock,
    [RLOCK_S_RS_FENCED_LOCK] = rlock_lua_rs_fenced_lock,
    [RLOCK_S_PSEM_ACQUIRE] = rlock_lua_psem_acquire,
    [RLOCK_S_PSEM_RELEASE] = rlock_lua_psem_release,
    [RLOCK_S_PSEM_AVAILABLE] = rlock_lua_psem_available,
    [RLOCK_S_RATE_SET] = rlock_lua_rate_set,
    [RLOCK_S_RATE_ACQUIRE] = rlock_lua_rate_acquire,
};

/* The texts as sent: a body, or the fence prelude + a body that calls rlock_fence. The
 * joined ones are allocated once and live as long as the process. */
static const char *texts[RLOCK_S__COUNT];
static char shas[RLOCK_S__COUNT][41];
static pthread_once_t texts_once = PTHREAD_ONCE_INIT;

static void texts_init(void)
{
    size_t pl = strlen(rlock_lua_fence);
    for (int i = 0; i < RLOCK_S__COUNT; i++) {
        texts[i] = bodies[i];
        if (strstr(bodies[i], "rlock_fence(") != NULL) {
            size_t bl = strlen(bodies[i]);
            char *t = malloc(pl + bl + 1);
            if (t == NULL)
                abort(); /* at the first script of the process: nothing to fall back on */
            memcpy(t, rlock_lua_fence, pl);
            memcpy(t + pl, bodies[i], bl + 1);
            texts[i] = t;
        }
        rlock_sha1_hex(texts[i], strlen(texts[i]), shas[i]);
    }
}

const char *rlock_script_text(int id)
{
    pthread_once(&texts_once, texts_init);
    return id >= 0 && id < RLOCK_S__COUNT ? texts[id] : NULL;
}

const char *rlock_script_sha(int id)
{
    pthread_once(&texts_once, texts_init);
    return id >= 0 && id < RLOCK_S__COUNT ? shas[id] : NULL;
}

int rlock_script_cmd_fill(rlock_script_cmd *s, int id, int nkeys, int argc, const char **argv, char *err,
                          size_t errsz)
{
    if (argc > RLOCK_SCRIPT_MAX_ARGS) {
        if (err)
            snprintf(err, errsz, "too many script arguments");
        return RLOCK_ERR_ARG;
    }
    snprintf(s->nk, sizeof(s->nk), "%d", nkeys);
    s->v[0] = "EVALSHA";
    s->v[1] = rlock_script_sha(id);
    s->v[2] = s->nk;
    for (int i = 0; i < argc; i++)
        s->v[3 + i] = argv[i];
    s->n = argc + 3;
    for (int i = 0; i < s->n; i++)
        s->vl[i] = strlen(s->v[i]);
    return 0;
}

int rlock_script_append(redisContext *c, int id, int nkeys, int argc, const char **argv)
{
    rlock_script_cmd s;
    if (rlock_script_cmd_fill(&s, id, nkeys, argc, argv, NULL, 0) != 0)
        return RLOCK_ERR_ARG;
    return redisAppendCommandArgv(c, s.n, s.v, s.vl) == REDIS_OK ? 0 : RLOCK_ERR_IO;
}

int rlock_script_eval(redisContext *c, int id, int nkeys, int argc, const char **argv,
                      redisReply **out, char *err, size_t errsz)
{
    rlock_script_cmd s;
    *out = NULL;
    if (rlock_script_cmd_fill(&s, id, nkeys, argc, argv, err, errsz) != 0)
        return RLOCK_ERR_ARG;
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r = redisCommandArgv(c, s.n, s.v, s.vl);
        if (r == NULL) {
            snprintf(err, errsz, "redis: %s", c->errstr[0] ? c->errstr : "connection lost");
            return RLOCK_ERR_IO;
        }
        if (r->type == REDIS_REPLY_ERROR && attempt == 0 && strncmp(r->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(r);
            /* The server lost its script cache (restart, SCRIPT FLUSH, failover). */
            const char *lv[3] = {"SCRIPT", "LOAD", rlock_script_text(id)};
            size_t ll[3] = {6, 4, strlen(lv[2])};
            redisReply *lr = redisCommandArgv(c, 3, lv, ll);
            if (lr == NULL) {
                snprintf(err, errsz, "redis: %s", c->errstr[0] ? c->errstr : "connection lost");
                return RLOCK_ERR_IO;
            }
            int bad = lr->type != REDIS_REPLY_STRING;
            if (bad)
                snprintf(err, errsz, "SCRIPT LOAD: %s",
                         lr->type == REDIS_REPLY_ERROR ? lr->str : "unexpected reply");
            freeReplyObject(lr);
            if (bad)
                return RLOCK_ERR_REDIS;
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errsz, "script: %s", r->str);
            freeReplyObject(r);
            return RLOCK_ERR_REDIS;
        }
        *out = r;
        return 0;
    }
    snprintf(err, errsz, "script: NOSCRIPT after SCRIPT LOAD");
    return RLOCK_ERR_REDIS;
}

/* ---- on an rcluster context: NOSCRIPT is rcluster's (per node, from its registry) ---- */

rcl_ctx *rlock_rcl_connect(const char *url, struct timeval tv, char *err, size_t errsz)
{
    rcl_ctx *c = rcl_connect(url, tv, err, errsz);
    char sha[41];
    for (int i = 0; c && i < RLOCK_S__COUNT; i++)
        if (rcl_script_add(c, rlock_script_text(i), sha) != 0) {
            snprintf(err, errsz, "out of memory");
            rcl_free(c);
            c = NULL;
        }
    return c;
}

int rlock_script_append_rcl(rcl_ctx *c, int id, int nkeys, int argc, const char **argv)
{
    rlock_script_cmd s;
    if (rlock_script_cmd_fill(&s, id, nkeys, argc, argv, NULL, 0) != 0)
        return RLOCK_ERR_ARG;
    return rcl_append_argv(c, s.n, s.v, s.vl) == 0 ? 0 : RLOCK_ERR_ARG;
}
