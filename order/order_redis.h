/* order_redis: one worker's Redis connection (hiredis async on the worker's libevent
 * loop) and the Lua scripts it runs.
 *
 * Every request of a worker shares this one connection, so commands go out pipelined
 * and Redis answers them in order. Scripts run with EVALSHA of the SHA1 computed here
 * from the embedded text; on NOSCRIPT (a restarted or flushed Redis) the same call is
 * sent once more as EVAL with the body, which also caches the script again.
 *
 * Failures are answered, never waited on: while disconnected, calls fail at once (the
 * caller answers 503) and a timer reconnects; a command unanswered for timeout_ms drops
 * the connection, which fails every command queued on it (hiredis calls each callback
 * with a NULL reply).
 *
 * Threads: not thread-safe; everything runs on the owning worker's event loop. */
#ifndef ORDER_REDIS_H
#define ORDER_REDIS_H

#include "sk_redis_url.h"

#include <hiredis/hiredis.h>
#include <stddef.h>

struct event_base;

typedef enum {
    ORDER_SCRIPT_RESERVE = 0,
    ORDER_SCRIPT_CANCEL,
    ORDER_SCRIPT_CONFIRM,
    ORDER_SCRIPT_RATELIMIT,
    ORDER_SCRIPT_EVENT_LOAD,
    ORDER_SCRIPT_ORDER_STATUS,
    ORDER_SCRIPT_EVENT_RELOAD, /* the reconciler's, after an event's keys were lost */
    ORDER_SCRIPT_COUNT
} order_script_id;

/* The embedded scripts and their SHA1s (hex); filled once, then read-only. */
typedef struct order_scripts {
    const char *body[ORDER_SCRIPT_COUNT];
    char sha[ORDER_SCRIPT_COUNT][41];
} order_scripts;

/** @brief Finds the embedded scripts and computes their SHA1s. @returns 0, or -1 if a
 *  script is missing from the build. */
int order_scripts_init(order_scripts *s);

/** @brief SCRIPT LOAD of every script on a blocking connection (at start; a Redis that
 *  lost them later is handled by the NOSCRIPT fallback). @returns 0 or -1 with err. */
int order_scripts_load(const order_scripts *s, redisContext *c, char *err, size_t errsz);

typedef struct order_redis order_redis;

/* A reply callback. `reply` is NULL when the command failed without an answer
 * (disconnect, timeout, shutdown); an error reply is REDIS_REPLY_ERROR. The reply is
 * freed by hiredis after the callback returns. */
typedef void order_redis_cb(redisReply *reply, void *arg);

/** @brief Creates the worker's connection and starts connecting (AUTH and SELECT from the
 *  URL are sent first). `url` and `scripts` must outlive it. @returns NULL on OOM. */
order_redis *order_redis_new(struct event_base *base, const sk_redis_url *url,
                             const order_scripts *scripts, int timeout_ms);

/** @brief 1 when connected (commands are likely to be answered). */
int order_redis_connected(const order_redis *r);

/** @brief EVALSHA of a script with keys args[0..nkeys-1] and arguments args[nkeys..n-1].
 *  @returns 0 (cb will be called exactly once) or -1 (not connected or OOM: cb is not called). */
int order_redis_script(order_redis *r, order_script_id id, int nkeys, int n, const char **args,
                       const size_t *lens, order_redis_cb *cb, void *arg);

/** @brief Any command. cb may be NULL (fire and forget; errors are still counted).
 *  @returns 0 (cb will be called exactly once) or -1 (cb not called). */
int order_redis_command(order_redis *r, int argc, const char **argv, const size_t *lens,
                        order_redis_cb *cb, void *arg);

/** @brief Commands that failed (error replies, disconnects, timeouts) since start. */
unsigned long order_redis_errors(const order_redis *r);

/** @brief Closes the connection (pending callbacks get NULL replies) and frees. NULL is fine. */
void order_redis_free(order_redis *r);

#endif
