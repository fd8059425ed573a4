/* sk_redis_sentinel: the master of a redis-sentinel:// URL, found at every connect.
 *
 * Design note: no state is kept between connects. Each (re)connect asks the sentinels in
 * the URL's order SENTINEL get-master-addr-by-name, each within the caller's timeout,
 * connects to the address named and checks ROLE: a sentinel may still name a master it
 * has not yet seen demoted, and a write must never reach a replica. The clients built on
 * this (rcluster's pass-through contexts, librlock's waits) reconnect on a lost
 * connection, and drop the connection on a -READONLY reply (sk_redis_reply_is_readonly),
 * so both a crashed master and one demoted under them lead back here. The sentinels are
 * reached without AUTH (the URL's password is the data nodes'). Never prints; errors
 * never carry the password. */
#include "sk_redis_url.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int sk_redis_reply_is_readonly(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str)
        return 0;
    /* A script that writes on a replica fails with the command's error inside its own
     * ("ERR ... -READONLY ..." before Redis 7, "READONLY ..." since). */
    return strncmp(r->str, "READONLY", 8) == 0 || strstr(r->str, "-READONLY") != NULL;
}

int sk_redis_role_is_master(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
           (r->element[0]->type == REDIS_REPLY_STRING || r->element[0]->type == REDIS_REPLY_STATUS) &&
           strcasecmp(r->element[0]->str, "master") == 0;
}

/* One sentinel's answer: 0 with host/port, -1 with err. */
static int ask_one(const sk_redis_url *u, int i, struct timeval tv, char *host, size_t hostsize,
                   int *port, char *err, size_t errsz)
{
    const char *sh = u->sentinels[i].host;
    int sp = u->sentinels[i].port;
    redisContext *c = redisConnectWithTimeout(sh, sp, tv);
    if (!c || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, errsz, "sentinel %s:%d: %s", sh, sp, c ? c->errstr : "out of memory");
        redisFree(c);
        return -1;
    }
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", u->master_name};
    redisReply *r = redisCommandArgv(c, 3, argv, NULL);
    int rc = -1;
    if (!r)
        snprintf(err, errsz, "sentinel %s:%d: %s", sh, sp, c->errstr);
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errsz, "sentinel %s:%d: %s", sh, sp, r->str);
    else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
             r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        snprintf(err, errsz, "sentinel %s:%d: no master named %s", sh, sp, u->master_name);
    else if (snprintf(host, hostsize, "%s", r->element[0]->str) >= (int)hostsize ||
             (*port = atoi(r->element[1]->str)) <= 0 || *port > 65535)
        snprintf(err, errsz, "sentinel %s:%d: bad address for %s", sh, sp, u->master_name);
    else
        rc = 0;
    freeReplyObject(r);
    redisFree(c);
    return rc;
}

int sk_redis_sentinel_master(const sk_redis_url *u, struct timeval tv, char *host,
                             size_t hostsize, int *port, char *err, size_t errsz)
{
    snprintf(err, errsz, "no sentinel in the URL");
    for (int i = 0; i < u->nsentinels; i++)
        if (ask_one(u, i, tv, host, hostsize, port, err, errsz) == 0)
            return 0;
    return -1;
}

redisContext *sk_redis_sentinel_connect(const sk_redis_url *u, struct timeval tv, char *err,
                                        size_t errsz)
{
    snprintf(err, errsz, "no sentinel in the URL");
    for (int i = 0; i < u->nsentinels; i++) {
        sk_redis_url one = *u;
        one.is_sentinel = 0;
        if (ask_one(u, i, tv, one.host, sizeof(one.host), &one.port, err, errsz) != 0)
            continue;
        /* AUTH and SELECT as for a plain URL; ROLE before the caller's first command. */
        redisContext *c = sk_redis_url_connect(&one, tv, err, errsz);
        if (!c)
            continue;
        redisReply *r = redisCommand(c, "ROLE");
        if (sk_redis_role_is_master(r)) {
            freeReplyObject(r);
            return c;
        }
        snprintf(err, errsz, "%s:%d, named master of %s by sentinel %s:%d, is %s", one.host,
                 one.port, u->master_name, u->sentinels[i].host, u->sentinels[i].port,
                 r ? "not a master (yet)" : c->errstr);
        freeReplyObject(r);
        redisFree(c);
    }
    return NULL;
}
