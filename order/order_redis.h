/* order_redis: one worker's Redis connection (async, on the worker's libevent loop) and
 * the Lua scripts it runs.
 *
 * The connection is an rcluster context (rcluster/rcluster.h), so one code path serves
 * both a plain server (redis://, unix://: a pass-through, every request of a worker on
 * one connection, pipelined, answered in order) and a Redis Cluster (redis-cluster://:
 * each command goes to the master of its keys' slot, MOVED/ASK/TRYAGAIN/CLUSTERDOWN and
 * lost nodes handled there). Every script's keys share one hash tag ({e<ID>} or
 * {u<ID>}), so a script never spans two slots. Scripts run with EVALSHA of the SHA1
 * computed here; a node that answers NOSCRIPT (restarted, flushed, a new master after a
 * failover: the script cache is per node) gets SCRIPT LOAD and the call once more,
 * inside rcluster.
 *
 * Failures are answered, never waited on: while no node can be reached, calls fail at
 * once (the caller answers 503) and rcluster reconnects by itself; a node that leaves
 * commands unanswered for timeout_ms is dropped, which fails its commands (callbacks
 * get a NULL reply).
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
    ORDER_SCRIPT_EVENT_RELOAD, /* the reconciler's, after an event's keys were lost */
    ORDER_SCRIPT_RELEASE,      /* a cancelled or expired order's unit back (issue 22) */
    ORDER_SCRIPT_BORROW,       /* a segmented event's unit from another segment (issue 19) */
    ORDER_SCRIPT_EVENT_RESTOCK, /* an admin's restock of one segment (issue 32) */
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

/** @brief Checks redis.url. A plain URL is parsed into *plain; a cluster URL
 *  (redis-cluster://) is checked by rcluster's parser and *plain is zeroed (nothing
 *  but rcluster reads a cluster's addresses). @returns 0, or -1 with a message in err. */
int order_redis_url_check(const char *url, sk_redis_url *plain, char *err, size_t errsz);

/** @brief Writes `url` without its password (for logs) into buf; returns buf. */
const char *order_redis_url_redacted(const char *url, char *buf, size_t bufsz);

/** @brief SCRIPT LOAD of every script on every master, over a blocking connection (at
 *  start; a node that lost them later is handled by the NOSCRIPT fallback).
 *  @returns 0 or -1 with err. */
int order_scripts_load(const order_scripts *s, const char *url, int timeout_ms, char *err,
                       size_t errsz);

typedef struct order_redis order_redis;

/* A reply callback. `reply` is NULL when the command failed without an answer
 * (disconnect, timeout, shutdown); an error reply is REDIS_REPLY_ERROR. The reply is
 * freed after the callback returns. */
typedef void order_redis_cb(redisReply *reply, void *arg);

/** @brief Creates the worker's context and starts connecting (AUTH and SELECT from the
 *  URL are sent first). `url` (a checked redis.url) and `scripts` must outlive it.
 *  @returns NULL on OOM or a bad URL. */
order_redis *order_redis_new(struct event_base *base, const char *url,
                             const order_scripts *scripts, int timeout_ms);

/** @brief 1 when commands can be routed (connected; on a cluster, a slot map is loaded). */
int order_redis_connected(const order_redis *r);

/* The most keys + arguments one script call takes (a batched confirm.lua's order ids). */
#define ORDER_REDIS_SCRIPT_MAX_ARGS 258

/** @brief EVALSHA of a script with keys args[0..nkeys-1] and arguments args[nkeys..n-1]
 *  (n <= ORDER_REDIS_SCRIPT_MAX_ARGS). The keys must share one slot. @returns 0 (cb will be called exactly once) or -1 (not
 *  connected, keys in two slots, or OOM: cb is not called). */
int order_redis_script(order_redis *r, order_script_id id, int nkeys, int n, const char **args,
                       const size_t *lens, order_redis_cb *cb, void *arg);

/** @brief Any command of up to ORDER_REDIS_SCRIPT_MAX_ARGS + 3 words. cb may be NULL (fire and forget; errors are still counted).
 *  @returns 0 (cb will be called exactly once) or -1 (cb not called). */
int order_redis_command(order_redis *r, int argc, const char **argv, const size_t *lens,
                        order_redis_cb *cb, void *arg);

/** @brief Commands that failed (error replies, disconnects, timeouts) since start. */
unsigned long order_redis_errors(const order_redis *r);

/** @brief Closes the connections (pending callbacks get NULL replies) and frees. NULL is fine. */
void order_redis_free(order_redis *r);

#endif
