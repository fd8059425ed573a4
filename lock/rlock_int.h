/* rlock_int.h: librlock's insides, shared by its files; not installed.
 *
 * Design note (threads and ordering):
 * - The command connection is shared by every thread of the client and pipelined: a
 *   caller queues its command (rlock_req) under q_mu; the first caller that finds no
 *   leader sends every queued command in one write per node and reads their replies,
 *   holding mu (which guards cmd) for that batch only, then posts each caller's
 *   semaphore, and the first caller queued meanwhile is posted to lead the next batch.
 *   One thread alone pays one round trip per call, as before; N threads share the
 *   system calls of one (rlock_client.c).
 * - Waiters of one exclusive lock name in one client queue locally (rlock_gate.c): one
 *   of them at a time waits in Redis (subscribed, one retry per unlock message), so an
 *   unlock wakes one waiter per process, not all of them.
 * - The watchdog thread renews every registered hold once per pass, holding its mu for
 *   the whole pass (renewals are pipelined on its own connection). A hold is registered
 *   under that mu when taken and deregistered under it *before* its unlock is sent, so
 *   no renewal is in flight or can start after the unlock: renewal and unlock are
 *   ordered without a per-lock lock.
 * - Lost-lock callbacks run on the watchdog thread under its cb_mu (taken before mu is
 *   dropped); rlock_free passes through cb_mu after deregistering, so a handle is never
 *   freed under a running callback.
 * - Calls go one way: lock handles -> client, gate, watchdog, script; the client owns
 *   the gate table and the watchdog but the watchdog and the gates never call the
 *   client (the watchdog connects through the function it was given). */
#ifndef RLOCK_INT_H
#define RLOCK_INT_H

#include "rcluster.h"
#include "rlock.h"
#include "sk_redis_url.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/time.h>

#define RLOCK_ERRSTR_SIZE 256
#define RLOCK_OWNER_SIZE 72  /* client id (32 hex or UUID) ':' thread id [":write"] */
#define RLOCK_KEY_SIZE_RS 1024 /* Redisson read-hold timeout prefix: the lock's name + owner */
#define RLOCK_TOKEN_SIZE 112 /* 32 hex random ':' owner */

/* ---- scripts (rlock_script.c) ---- */
enum rlock_script_id {
    RLOCK_S_SIMPLE_LOCK,
    RLOCK_S_SIMPLE_UNLOCK,
    RLOCK_S_SIMPLE_RENEW,
    RLOCK_S_REENTRANT_LOCK,
    RLOCK_S_REENTRANT_UNLOCK,
    RLOCK_S_REENTRANT_RENEW,
    RLOCK_S_FAIR_LOCK,
    RLOCK_S_FAIR_CANCEL,
    RLOCK_S_FAIR_UNLOCK,
    RLOCK_S_RW_READ_LOCK,
    RLOCK_S_RW_WRITE_LOCK,
    RLOCK_S_RW_UNLOCK,
    RLOCK_S_RW_RENEW,
    RLOCK_S_SEM_ACQUIRE,
    RLOCK_S_SEM_RELEASE,
    RLOCK_S_LATCH_SET,
    RLOCK_S_LATCH_COUNT_DOWN,
    /* Redisson mode (lua/rlock_rs_*.lua): Redisson's data layout and messages */
    RLOCK_S_RS_UNLOCK,
    RLOCK_S_RS_WRITE_LOCK,
    RLOCK_S_RS_WRITE_UNLOCK,
    RLOCK_S_RS_READ_LOCK,
    RLOCK_S_RS_READ_UNLOCK,
    RLOCK_S_RS_READ_RENEW,
    RLOCK_S_RS_SEM_SET,
    RLOCK_S_RS_SEM_RELEASE,
    RLOCK_S_RS_LATCH_SET,
    RLOCK_S_RS_LATCH_COUNT_DOWN,
    RLOCK_S_RS_FAIR_LOCK,
    RLOCK_S_RS_FAIR_CANCEL,
    RLOCK_S_RS_FAIR_UNLOCK,
    RLOCK_S_RS_FENCED_LOCK,
    /* both modes: the expirable-permit semaphore (rlock_psem.c) */
    RLOCK_S_PSEM_ACQUIRE,
    RLOCK_S_PSEM_RELEASE,
    RLOCK_S_PSEM_AVAILABLE,
    /* both modes: the rate limiter (rlock_rate.c) */
    RLOCK_S_RATE_SET,
    RLOCK_S_RATE_ACQUIRE,
    RLOCK_S__COUNT
};

const char *rlock_script_text(int id);
/* 40 hex chars + NUL, computed locally (SHA-1 of the text) once per process. */
const char *rlock_script_sha(int id);
/* SHA-1 of data as 40 lowercase hex chars into out[41] (pure; unit-tested). */
void rlock_sha1_hex(const void *data, size_t len, char out[41]);

/* EVALSHA script `id` on `c` with nkeys keys then args (argv holds keys then args),
 * loading it with SCRIPT LOAD and retrying once on NOSCRIPT.
 * @returns 0 with *out set (caller frees), RLOCK_ERR_IO (context now unusable) or
 * RLOCK_ERR_REDIS with the message in err. */
int rlock_script_eval(redisContext *c, int id, int nkeys, int argc, const char **argv,
                      redisReply **out, char *err, size_t errsz);
/* One EVALSHA command in argv form: "EVALSHA" sha numkeys keys... args... */
#define RLOCK_SCRIPT_MAX_ARGS 16
typedef struct rlock_script_cmd {
    const char *v[RLOCK_SCRIPT_MAX_ARGS + 3];
    size_t vl[RLOCK_SCRIPT_MAX_ARGS + 3];
    char nk[16];
    int n;
} rlock_script_cmd;
/* Fills s (pointing into argv, which must outlive it). @returns 0 or RLOCK_ERR_ARG (too
 * many arguments, message in err when err != NULL). */
int rlock_script_cmd_fill(rlock_script_cmd *s, int id, int nkeys, int argc, const char **argv, char *err,
                          size_t errsz);
/* Appends EVALSHA (no NOSCRIPT handling: for pipelines whose caller retries). */
int rlock_script_append(redisContext *c, int id, int nkeys, int argc, const char **argv);

/* Appending on an rcluster context (one Redis or a cluster): NOSCRIPT is handled by
 * rcluster, on the node that lacks the script (rlock_rcl_connect registers them all). */
int rlock_script_append_rcl(rcl_ctx *c, int id, int nkeys, int argc, const char **argv);
/* rcl_connect + every script registered. NULL with err on failure. */
rcl_ctx *rlock_rcl_connect(const char *url, struct timeval tv, char *err, size_t errsz);

/* ---- pure helpers (rlock_keys.c) ---- */
/* Key of `suffix` ("" for the lock itself) for lock `name`: `rlock:{name}suffix`, or
 * `name suffix` when name carries its own '{...}' hash tag. Returns bytes written
 * (snprintf), or -1 on a bad name. */
int rlock_key_build(char *out, size_t outsz, const char *name, const char *suffix);
/* The same key, malloc'd (the caller frees it); NULL on a bad name or out of memory. */
char *rlock_key_dup(const char *name, const char *suffix);
/* Redisson's names (RedissonObject.prefixName / suffixName): `prefix:{name}` and
 * `{name}:suffix`, or `prefix:name` / `name:suffix` when name has its own '{'.
 * Return bytes written (snprintf), or -1 on an empty name. */
int rlock_rs_prefix_name(char *out, size_t outsz, const char *prefix, const char *name);
int rlock_rs_suffix_name(char *out, size_t outsz, const char *name, const char *suffix);
/* The same, malloc'd: prefix != NULL: prefixName(prefix, name), else suffixName(name, suffix).
 * NULL when out of memory or the name is empty. */
char *rlock_rs_name_dup(const char *prefix, const char *name, const char *suffix);
/* A random (version 4) UUID as 36 chars + NUL, the form of Redisson's client id. */
int rlock_uuid4(char out[37]);
/* Redlock validity: ttl - elapsed - drift, drift = ttl/100 + 2. */
int64_t rlock_redlock_validity(int64_t ttl_ms, int64_t elapsed_ms);
/* Uniform jitter: base * [0.5, 1.5), never below 1, from the seed (thread-local ok). */
int64_t rlock_jitter_ms(int64_t base_ms, unsigned int *seed);
/* 16 random bytes from the OS as 32 hex chars. @returns 0 or -1. */
int rlock_random_hex32(char out[33]);
int64_t rlock_now_ms(void); /* CLOCK_MONOTONIC */
long rlock_thread_id(void); /* the OS thread id (gettid), cached per thread */
int64_t rlock_wall_ms(void); /* CLOCK_REALTIME: Redisson's fair lock keeps client wall times */
void rlock_sleep_ms(int64_t ms);

/* ---- watchdog (rlock_watchdog.c) ---- */
/* Opens a new command context (NULL + err on failure): how the watchdog connects. */
typedef rcl_ctx *rlock_connect_fn(void *arg, char *err, size_t errsz);
typedef struct rlock_watchdog {
    pthread_mutex_t mu; /* guards all below; held for a whole renewal pass */
    pthread_cond_t cond;
    pthread_mutex_t cb_mu; /* held while lost-lock callbacks run */
    pthread_t thread;
    int started;
    int stop;
    rlock_t **list;
    size_t n, cap;
    int timeout_ms;
    rlock_connect_fn *connect;
    void *connect_arg;
} rlock_watchdog;
void rlock_watchdog_init(rlock_watchdog *wd, int timeout_ms, rlock_connect_fn *connect, void *arg);
int rlock_watchdog_register(rlock_watchdog *wd, rlock_t *l, char *err, size_t errsz);
/* Returns once no renewal of l is in flight; none starts after. */
void rlock_watchdog_deregister(rlock_watchdog *wd, rlock_t *l);
/* After deregistering: waits for a running lost-lock callback pass to end. */
void rlock_watchdog_barrier(rlock_watchdog *wd);
/* Stops the thread (if started) and frees what init made. */
void rlock_watchdog_stop(rlock_watchdog *wd);

/* ---- waiting on pub/sub (rlock_wait.c) ---- */
typedef struct rlock_waiter {
    redisContext *sub; /* opened on first wait, kept for the handle's (or gate's) life */
    int subscribed;
    unsigned int seed;
    int woken;     /* the last sleep ended on a message (not a timeout) */
    char msg[96];  /* payload of the last message received ("" none) */
} rlock_waiter;

/* ---- local waiter queue per exclusive lock name (rlock_gate.c) ---- */
#define RLOCK_GATE_BUCKETS 1024 /* chains of live handles' names; 8 KB per client */
typedef struct rlock_gate rlock_gate;
typedef struct rlock_gates {
    pthread_mutex_t mu; /* guards the table and every gate's fields */
    rlock_gate *bucket[RLOCK_GATE_BUCKETS];
} rlock_gates;

/* ---- client (rlock_client.c) ---- */
/* A caller's command in the client's pipeline (design note above). */
typedef struct rlock_req {
    int n;
    const char *const *v;
    const size_t *vl;
    const char *what; /* prefix of an error reply's message: "script" or "redis" */
    redisReply *reply;
    int rv;
    char *err;
    size_t errsz;
    int lead;  /* set by the leader before the post: lead the next batch */
    sem_t sem; /* posted once: settled, or lead */
    struct rlock_req *next;
} rlock_req;

struct rlock_client {
    char *url; /* redis://, unix:// or redis-cluster:// (rcluster) */
    struct timeval tv;
    rlock_client_opts opts;
    char id[37];         /* 32 hex, or a UUID in Redisson mode */
    const char *pub_cmd; /* Redisson mode: "publish", or "spublish" on a cluster that has
                          * sharded pub/sub (Redisson's ShardedSubscriptionMode.AUTO) */
    int sharded;         /* waiters SSUBSCRIBE on the channel's slot master */
    pthread_mutex_t mu; /* guards cmd: held by a batch's leader */
    rcl_ctx *cmd;       /* reconnects by itself after an error */
    pthread_mutex_t q_mu; /* guards the queue of commands and q_leading */
    rlock_req *q_head, *q_tail;
    int q_leading; /* a caller is sending a batch */

    rlock_watchdog wd;
    rlock_gates gates;
};

/* Runs script `id` on the command connection (reconnecting when needed).
 * Same contract as rlock_script_eval. */
int rlock_client_eval(rlock_client_t *c, int id, int nkeys, int argc, const char **argv,
                      redisReply **out, char *err, size_t errsz);
/* Runs one plain command (argv form) on the command connection. */
int rlock_client_command(rlock_client_t *c, int argc, const char **argv, redisReply **out,
                         char *err, size_t errsz);
/* Opens a new context with the client's URL and timeouts (NULL + err on failure). */
rcl_ctx *rlock_client_connect(rlock_client_t *c, char *err, size_t errsz);
/* A new plain connection for SUBSCRIBE: the one Redis, or any master of the cluster
 * (PUBLISH reaches every node) when channel is NULL, else the master of the channel's
 * slot (SSUBSCRIBE). NULL + err on failure. */
redisContext *rlock_client_sub_connect(rlock_client_t *c, const char *channel, char *err, size_t errsz);
/* "clientid:tid" of the calling thread. */
void rlock_client_owner(const rlock_client_t *c, char out[RLOCK_OWNER_SIZE]);
/* The lease a watchdog hold gets, or a lease hold's own (lease_ms > 0). */
static inline int64_t rlock_lease_or_watchdog(const rlock_client_t *c, int64_t lease_ms)
{
    return lease_ms > 0 ? lease_ms : (int64_t)c->opts.watchdog_timeout_ms;
}

/* ---- waiting on pub/sub (rlock_wait.c) ---- */
/* One attempt: 1 acquired/done, 0 not yet (*hint_ms: when to look again at the latest,
 * e.g. the lock's pttl; <= 0 none), < 0 error. */
typedef int(rlock_attempt_fn)(void *ctx, int64_t *hint_ms);

/* Attempts until done or wait_ms passes (< 0: for ever), waking on `channel` messages,
 * retrying at least every poll_ms (jittered). The first attempt runs before any
 * subscription (fast path). The subscription is on a connection kept in w, opened
 * through client `c` when not NULL (lock handles), else to `url` (Redlock's servers).
 * @returns 0, RLOCK_ERR_TIMEOUT or the attempt's error. */
int rlock_wait_until(rlock_client_t *c, const sk_redis_url *url, struct timeval tv, rlock_waiter *w,
                     const char *channel, int64_t wait_ms, int64_t poll_ms, rlock_attempt_fn *attempt,
                     void *ctx);
void rlock_waiter_close(rlock_waiter *w);

/* ---- lock handles (rlock_lock.c) ---- */
struct rlock {
    rlock_client_t *c;
    rlock_kind_t kind;
    char *name;
    int rs; /* Redisson mode (reentrant, fair, read, write): Redisson's keys and scripts */
    char *key, *fence_key, *queue_key, *tmo_key, *rexp_key, *channel;
    char *rs_chan; /* Redisson fair lock: redisson_lock__channel:{name}; a waiter listens
                    * on rs_chan:<owner> (channel, remade when the owner changes) */
    /* Redisson mode: key = the name, fence_key = {name}:rlock_fence, channel =
     * redisson_lock__channel:{name} or redisson_rwlock:{name}, rexp_key = '{name}' (the
     * prefix of the read holds' '{name}:<owner>:rwlock_timeout:<n>' keys). */
    char token[RLOCK_TOKEN_SIZE]; /* simple: this hold's token; others: the owner */
    int holds;                    /* holds taken through this handle */
    int watched;                  /* registered with the watchdog */
    int64_t lease_ms;             /* lease of the current hold (0: watchdog) */
    int64_t lease_end_ms;         /* monotonic end of a lease hold (is_held) */
    int64_t last_renew_ms;        /* watchdog: last renewal answered "held" */
    atomic_int lost;              /* set by the watchdog */
    uint64_t fence;
    rlock_lost_cb *cb;
    void *cb_arg;
    rlock_waiter w;
    rlock_gate *gate; /* exclusive kinds (simple, reentrant, fenced): this process's
                       * waiter queue for the name; NULL otherwise */
    int gate_holds;   /* holds counted on the gate (rlock_gate_held) */
    int gate_waited;  /* has waited in the gate: keeps its subscription */
    char errstr[RLOCK_ERRSTR_SIZE];
};

/* ---- gates (rlock_gate.c) ---- */
void rlock_gates_init(rlock_gates *t);
void rlock_gates_destroy(rlock_gates *t);
/* The gate of `channel` (created on first use, one reference per caller). NULL when out
 * of memory: the caller then waits ungated, as correct but noisier. */
rlock_gate *rlock_gate_get(rlock_gates *t, const char *channel);
/* Drops a reference (waited: the caller's flag from rlock_gate_enter); the last
 * handle that waited closes the gate's subscription, the last of all frees the gate. */
void rlock_gate_put(rlock_gates *t, rlock_gate *g, int waited);
/* Waits (until deadline_ms, monotonic; INT64_MAX for ever) to be this process's one
 * waiter in Redis for the gate. *waited is the handle's flag (0 at first): set, and
 * counted, on its first entry. @returns 0 (caller must rlock_gate_leave) or
 * RLOCK_ERR_TIMEOUT. */
int rlock_gate_enter(rlock_gates *t, rlock_gate *g, int64_t deadline_ms, int *waited);
void rlock_gate_leave(rlock_gates *t, rlock_gate *g);
/* The gate's subscription, for the thread inside it only. */
rlock_waiter *rlock_gate_waiter(rlock_gate *g);
/* Holds of this process on the gate's lock: +n after an acquisition is granted (with
 * its lease's monotonic end, 0 for a watchdog hold), -n before a release is sent, so
 * while the count is above 0 an unlock message is still to come and a woken waiter
 * need not ask Redis. g may be NULL (nothing done). */
void rlock_gate_held(rlock_gates *t, rlock_gate *g, int n, int64_t lease_end_ms);
/* 1 while held by this process (and a lease hold's lease not over; *left_ms: what is
 * left of it, 0 when unknown), else 0. */
int rlock_gate_is_held(rlock_gates *t, rlock_gate *g, int64_t *left_ms);

#endif
