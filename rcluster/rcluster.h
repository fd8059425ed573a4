/* rcluster: Redis Cluster routing on plain hiredis (Debian ships no hiredis-cluster),
 * blocking (rcl_ctx) and async on libevent (rcl_async).
 *
 * URLs:
 *   redis-cluster://[[user]:password@]host:port[,host:port...]   seed nodes of a cluster
 *   redis://... and unix://...  (every sk_redis_url form)          one plain server
 *   redis-sentinel://[[user]:password@]host:port[,...]/name[?db=N] one server: the master
 *                                                                   its sentinels name
 * With a plain URL a context is a thin pass-through to that one server (AUTH, SELECT, no
 * slot map, no redirections), so callers have one code path for both. With a cluster URL:
 * - the slot map comes from CLUSTER SLOTS (any seed), one connection per master, opened
 *   lazily (AUTH on each; never SELECT: a cluster has database 0 only);
 * - a command's keys are found from its argv (see rcl_command_keys); keys in two slots
 *   are refused before anything is sent (error "CROSSSLOT ...": a programming error);
 *   keyless commands go to any master;
 * - MOVED updates the map (and refreshes it, rate-limited) and retries on the new owner;
 *   ASK sends ASKING + the command to the target once, without touching the map;
 *   TRYAGAIN / CLUSTERDOWN are retried with backoff (RCL_RETRIES times, waiting 20 ms
 *   doubling up to 500 ms: about 2 s in all), then the error reply goes to the caller;
 *   a lost or refused connection refreshes the map from any reachable node (after a
 *   failover the replica is master) and retries likewise. A timeout is not retried.
 * Pass-through: the blocking API retries once on a connection that had answered before
 * and was closed (a restarted server); the async API answers NULL and reconnects.
 * In both modes EVALSHA of a script registered with rcl_script_add / rcl_async_script_add
 * that is answered NOSCRIPT (the script cache is per node) is answered by SCRIPT LOAD on
 * that node and one retry, transparently.
 *
 * Sentinel URLs are pass-through contexts whose every (re)connect asks the sentinels for
 * the master and checks ROLE (sk_redis_url.h); a -READONLY reply (the master was demoted
 * under us) drops the connection, so the next command goes to the new master: the
 * blocking API re-runs that command once there (it did not run), the async API answers
 * it with the error. The async API also subscribes to +switch-master on one sentinel at
 * a time and leaves the old master as soon as the sentinels announce the failover (an
 * old master cut off from its replicas but not from us would take writes until it is
 * demoted); it asks the sentinels on its loop's thread, blocking, at most `timeout` per
 * sentinel, only when it (re)connects.
 *
 * Retries after a lost connection may run a command twice (the first copy may have been
 * executed before the connection broke): use it with idempotent or fenced commands, as
 * with any Redis client that reconnects.
 *
 * Threads: a context (rcl_ctx or rcl_async) has one owner; nothing here is thread-safe.
 * rcl_async runs on its event_base's thread, callbacks included.
 * The library never prints and never shows a password in an error string. */
#ifndef RCLUSTER_H
#define RCLUSTER_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <sys/time.h>

struct event_base;

#define RCL_SLOTS 16384
#define RCL_RETRIES 8 /* bounded retries of TRYAGAIN, CLUSTERDOWN and lost connections */

/* ---- pure helpers ---- */

/** @brief 1 when `url` starts with redis-cluster://, else 0. */
int rcl_url_is_cluster(const char *url);

/** @brief Checks a cluster or plain URL without connecting. @returns 0, or -1 with a
 *  message in err (never the password). */
int rcl_url_check(const char *url, char *err, size_t errsz);

/** @brief The SHA-1 of len bytes of data as 40 lowercase hex digits and a NUL: the name
 *  Redis gives a script (EVALSHA), known without a SCRIPT LOAD round trip. The one SHA-1
 *  of the tree (librlock names its scripts with it); not for anything secret. */
void rcl_sha1_hex(const void *data, size_t len, char out[41]);

/** @brief The cluster slot of a key: CRC16 (XMODEM) mod 16384 of the key, or of the part
 *  between the first '{' and the next '}' when that part is not empty (Redis's rules). */
int rcl_keyslot(const char *key, size_t len);

/** @brief Which argv entries of a command are keys: the first key's index into *first,
 *  the key count into *n, and the stride into *step (1 for consecutive keys, 2 for MSET).
 *  Knows the commands seckill uses; an unknown command is taken as "one key at argv[1]"
 *  when argc >= 2. EVAL/EVALSHA/FCALL: numkeys at argv[2]. Keyless commands (PING,
 *  PUBLISH, SCRIPT, INFO, WAIT, ...): *n = 0. @returns 0, or -1 on a malformed command
 *  (e.g. numkeys larger than the argument list). */
int rcl_command_keys(int argc, const char **argv, const size_t *lens, int *first, int *n,
                     int *step);

/* ---- blocking API ---- */

typedef struct rcl_ctx rcl_ctx;

/** @brief Connects: to the one server of a plain URL, or to a seed of a cluster URL to
 *  load the slot map. `timeout` bounds every connect and every command.
 *  @returns the context (free with rcl_free) or NULL with a message in err. */
rcl_ctx *rcl_connect(const char *url, struct timeval timeout, char *err, size_t errsz);

/** @brief Closes every connection and frees. NULL is fine. */
void rcl_free(rcl_ctx *c);

/** @brief 1 for a cluster URL, 0 for a pass-through context. */
int rcl_is_cluster(const rcl_ctx *c);

/** @brief The last error (I/O, CROSSSLOT, retries exhausted ...); "" if none. */
const char *rcl_errstr(const rcl_ctx *c);

/** @brief Runs one command (lens may be NULL: strlen) with routing and retries.
 *  @returns the reply, which the caller frees with freeReplyObject (an error reply is a
 *  REDIS_REPLY_ERROR reply), or NULL on I/O error, timeout, CROSSSLOT or retries
 *  exhausted without a reply: see rcl_errstr. */
redisReply *rcl_command_argv(rcl_ctx *c, int argc, const char **argv, const size_t *lens);

/** @brief Queues one command of a pipeline (arguments are copied). Commands to one node
 *  go out together on the next rcl_get_reply. A keyless command queued after another
 *  goes to that command's node, so that WAIT follows the writes it waits for. @returns 0, or -1 (CROSSSLOT, malformed,
 *  OOM: nothing queued; see rcl_errstr). */
int rcl_append_argv(rcl_ctx *c, int argc, const char **argv, const size_t *lens);

/** @brief The next reply of the pipeline, in append order even across nodes. A reply
 *  that was a redirection or NOSCRIPT is retried as rcl_command_argv does, after the
 *  rest of its batch was read: do not pipeline commands whose order matters across a
 *  slot migration. @returns 0 with *reply set (caller frees), or -1 (I/O error for this
 *  command, or no command pending) with *reply NULL: see rcl_errstr. After -1, later
 *  replies of the same batch are still returned (each 0 or -1). */
int rcl_get_reply(rcl_ctx *c, redisReply **reply);

/** @brief Registers a Lua script: computes its SHA-1 locally into sha[41] (hex, NUL
 *  ended) and keeps the body (copied) for the NOSCRIPT fallback. @returns 0 or -1 (OOM). */
int rcl_script_add(rcl_ctx *c, const char *body, char sha[41]);

/** @brief Runs a keyless command on every master (pass-through: the one server), e.g.
 *  SCRIPT LOAD or FLUSHALL. @returns 0 when every master answered a non-error reply,
 *  else -1 with the first error in rcl_errstr. */
int rcl_command_all_masters(rcl_ctx *c, int argc, const char **argv, const size_t *lens);

/** @brief Number of masters in the current slot map (1 in pass-through mode). */
int rcl_master_count(rcl_ctx *c);

/** @brief Runs a command on master i (0 <= i < rcl_master_count), without routing: for
 *  per-node commands such as SCAN, DBSIZE, INFO, CLUSTER ... . Same reply rules as
 *  rcl_command_argv but no redirection handling. */
redisReply *rcl_command_on_master(rcl_ctx *c, int i, int argc, const char **argv,
                                  const size_t *lens);

/** @brief "host:port" of master i (pass-through: the URL's host:port or socket path);
 *  valid until the next call on c. NULL when out of range. */
const char *rcl_master_addr(rcl_ctx *c, int i);

/** @brief Opens a NEW blocking connection, AUTH (and SELECT when pass-through) done, with
 *  the context's timeout: to the master of `key`'s slot, or to any master when key is
 *  NULL. For pub/sub (in a cluster PUBLISH reaches every node, so SUBSCRIBE works on any)
 *  and for blocking commands. @returns a context the caller frees with redisFree, or NULL
 *  with a message in err. */
redisContext *rcl_connect_node(rcl_ctx *c, const char *key, size_t keylen, char *err,
                               size_t errsz);

/* ---- async API (libevent) ---- */

typedef struct rcl_async rcl_async;

/* A command's result: called exactly once per accepted command, on the loop's thread.
 * `reply` is NULL when no answer came (connection lost and retries exhausted, timeout,
 * rcl_async_free); an error reply is REDIS_REPLY_ERROR. The reply belongs to the module
 * and is freed after the callback returns. */
typedef void rcl_async_cb(rcl_async *ac, redisReply *reply, void *privdata);

/* Readiness: called with ready = 1 when commands can be routed (pass-through: the server
 * connection is up; cluster: a slot map is loaded) and 0 when that is lost (pass-through:
 * disconnected; cluster: no node reachable for a map). The module reconnects by itself. */
typedef void rcl_async_state_cb(rcl_async *ac, int ready, void *privdata);

/** @brief Starts connecting without blocking (the map or the connection arrives on the
 *  loop). `timeout` bounds connects, and a node with commands outstanding and no answer
 *  for `timeout` is dropped (its commands' callbacks get NULL). `base` must outlive it.
 *  @returns the context (free with rcl_async_free) or NULL on a bad URL / OOM (err). */
rcl_async *rcl_async_connect(const char *url, struct event_base *base, struct timeval timeout,
                             char *err, size_t errsz);

/** @brief Sets the readiness callback (may be called from inside the loop only). */
void rcl_async_set_state_cb(rcl_async *ac, rcl_async_state_cb *cb, void *privdata);

/** @brief 1 when commands can be routed now (see rcl_async_state_cb). */
int rcl_async_ready(const rcl_async *ac);

/** @brief Sends one command (arguments copied; lens may be NULL: strlen) with routing,
 *  redirections, retries (on event timers) and NOSCRIPT handling.
 *  @returns 0 (cb will be called exactly once; cb may be NULL), or -1 with cb never called:
 *  not ready, CROSSSLOT / malformed (see rcl_async_errstr), or OOM. */
int rcl_async_command_argv(rcl_async *ac, rcl_async_cb *cb, void *privdata, int argc,
                           const char **argv, const size_t *lens);

/** @brief As rcl_script_add, for this async context. */
int rcl_async_script_add(rcl_async *ac, const char *body, char sha[41]);

/** @brief The last error; "" if none. */
const char *rcl_async_errstr(const rcl_async *ac);

/** @brief Commands that ended with a NULL reply or an error reply since start. */
unsigned long rcl_async_errors(const rcl_async *ac);

/** @brief Closes every connection, calls the callbacks of pending commands with NULL
 *  (no state callback), and frees. Not from inside one of its callbacks. NULL is fine. */
void rcl_async_free(rcl_async *ac);

#endif
