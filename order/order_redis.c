/* order_redis: a worker's async Redis connection and script calls. See order_redis.h. */
#include "order_redis.h"
#include "rcluster.h"
#include "seckill_lua.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS (ORDER_REDIS_SCRIPT_MAX_ARGS + 3) /* a batched index HSET */

static const char *script_names[ORDER_SCRIPT_COUNT] = {
    "reserve", "cancel", "confirm", "ratelimit", "event_load", "event_reload",
    "release", "borrow", "event_restock"};

int order_scripts_init(order_scripts *s)
{
    for (int i = 0; i < ORDER_SCRIPT_COUNT; i++) {
        s->body[i] = seckill_lua_find(script_names[i]);
        if (!s->body[i])
            return -1;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (!EVP_Digest(s->body[i], strlen(s->body[i]), md, &mdlen, EVP_sha1(), NULL) ||
            mdlen != 20)
            return -1;
        for (unsigned j = 0; j < 20; j++)
            snprintf(s->sha[i] + 2 * j, 3, "%02x", md[j]);
    }
    return 0;
}

int order_redis_url_check(const char *url, sk_redis_url *plain, char *err, size_t errsz)
{
    memset(plain, 0, sizeof(*plain));
    if (!rcl_url_is_cluster(url))
        return sk_redis_url_parse(url, plain, err, errsz);
    return rcl_url_check(url, err, errsz);
}

const char *order_redis_url_redacted(const char *url, char *buf, size_t bufsz)
{
    if (!rcl_url_is_cluster(url)) {
        sk_redis_url u;
        char err[8];
        if (sk_redis_url_parse(url, &u, err, sizeof(err)) == 0)
            return sk_redis_url_redacted(&u, buf, bufsz);
        snprintf(buf, bufsz, "(unparsable)");
        return buf;
    }
    /* redis-cluster://[[user]:password@]host:port,...: the user stays, the password goes. */
    const char *rest = url + strlen("redis-cluster://");
    const char *at = strrchr(rest, '@');
    if (!at) {
        snprintf(buf, bufsz, "%s", url);
        return buf;
    }
    const char *colon = memchr(rest, ':', (size_t)(at - rest));
    int userlen = (int)((colon ? colon : at) - rest);
    snprintf(buf, bufsz, "redis-cluster://%.*s%s@%s", userlen, rest, colon ? ":***" : "", at + 1);
    return buf;
}

int order_scripts_load(const order_scripts *s, const char *url, int timeout_ms, char *err,
                       size_t errsz)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    rcl_ctx *c = rcl_connect(url, tv, err, errsz);
    if (!c)
        return -1;
    int rc = 0;
    for (int i = 0; i < ORDER_SCRIPT_COUNT && rc == 0; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", s->body[i]};
        if (rcl_command_all_masters(c, 3, argv, NULL) != 0) {
            snprintf(err, errsz, "SCRIPT LOAD %s: %s", script_names[i], rcl_errstr(c));
            rc = -1;
        }
    }
    rcl_free(c);
    return rc;
}

struct order_redis {
    rcl_async *ac;
    const order_scripts *scripts;
    unsigned long errors;
};

/* One command in flight: rcluster copies the arguments, so only the callback is kept. */
typedef struct rcall {
    order_redis *r;
    order_redis_cb *cb;
    void *arg;
} rcall;

order_redis *order_redis_new(struct event_base *base, const char *url,
                             const order_scripts *scripts, int timeout_ms)
{
    order_redis *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->scripts = scripts;
    char err[256];
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    r->ac = rcl_async_connect(url, base, tv, err, sizeof(err));
    if (!r->ac) {
        free(r);
        return NULL;
    }
    /* Registered so that rcluster can answer NOSCRIPT itself (SCRIPT LOAD on that node,
     * then the call once more); the digests are the ones computed above. */
    for (int i = 0; i < ORDER_SCRIPT_COUNT; i++) {
        char sha[41];
        if (rcl_async_script_add(r->ac, scripts->body[i], sha) != 0 ||
            strcmp(sha, scripts->sha[i]) != 0) {
            order_redis_free(r);
            return NULL;
        }
    }
    return r;
}

int order_redis_connected(const order_redis *r)
{
    return rcl_async_ready(r->ac);
}

unsigned long order_redis_errors(const order_redis *r)
{
    return r->errors;
}

static void on_reply(rcl_async *ac, redisReply *rep, void *priv)
{
    rcall *c = priv;
    if (!rep || rep->type == REDIS_REPLY_ERROR)
        c->r->errors++;
    if (c->cb)
        c->cb(rep, c->arg);
    free(c);
}

static int call(order_redis *r, int argc, const char **argv, const size_t *lens,
                order_redis_cb *cb, void *arg)
{
    rcall *c = malloc(sizeof(*c));
    if (!c) {
        r->errors++;
        return -1;
    }
    *c = (rcall){r, cb, arg};
    if (rcl_async_command_argv(r->ac, on_reply, c, argc, argv, lens) != 0) {
        free(c);
        r->errors++;
        return -1;
    }
    return 0;
}

int order_redis_script(order_redis *r, order_script_id id, int nkeys, int n, const char **args,
                       const size_t *lens, order_redis_cb *cb, void *arg)
{
    if (n > ORDER_REDIS_SCRIPT_MAX_ARGS || n < 0 || nkeys < 0 || nkeys > n) {
        r->errors++;
        return -1;
    }
    /* On the stack even at the bound: about 4 KiB, as much as a batched confirm's own
     * order ids take in its caller's frame. */
    const char *argv[ORDER_REDIS_SCRIPT_MAX_ARGS + 3];
    size_t alens[ORDER_REDIS_SCRIPT_MAX_ARGS + 3];
    char nk[16];
    argv[0] = "EVALSHA";
    alens[0] = 7;
    argv[1] = r->scripts->sha[id];
    alens[1] = 40;
    alens[2] = (size_t)snprintf(nk, sizeof(nk), "%d", nkeys);
    argv[2] = nk;
    for (int i = 0; i < n; i++) {
        argv[3 + i] = args[i];
        alens[3 + i] = lens[i];
    }
    return call(r, n + 3, argv, alens, cb, arg);
}

int order_redis_command(order_redis *r, int argc, const char **argv, const size_t *lens,
                        order_redis_cb *cb, void *arg)
{
    if (argc > MAX_ARGS || argc < 1) {
        r->errors++;
        return -1;
    }
    return call(r, argc, argv, lens, cb, arg);
}

void order_redis_free(order_redis *r)
{
    if (!r)
        return;
    rcl_async_free(r->ac); /* pending callbacks get NULL replies now */
    free(r);
}
