/* rcl_int.h: rcluster's insides shared by the sync (rcl_sync.c) and async (rcl_async.c)
 * halves: the parsed URL, the slot map, reply classification and the script registry
 * (SHA-1 is public: rcl_sha1_hex in rcluster.h). Pure code (rcl_map.c, rcl_slot.c)
 * apart from rcl_node_connect. Not installed; nothing outside rcluster/ includes it but
 * its white-box unit test. */
#ifndef RCL_INT_H
#define RCL_INT_H

#include "rcluster.h"
#include "sk_redis_url.h"

#include <stdint.h>

#define RCL_MAX_SEEDS 16
#define RCL_ERR_SIZE 256
#define RCL_BACKOFF_MS 20
#define RCL_BACKOFF_MAX_MS 500
#define RCL_REFRESH_MIN_MS 200 /* MOVED-triggered map refreshes are at most this often */

typedef struct rcl_url {
    int cluster;
    sk_redis_url plain; /* pass-through: the whole URL; cluster: user and pass only */
    int nseeds;
    struct {
        char host[256];
        int port;
    } seeds[RCL_MAX_SEEDS];
} rcl_url;

/* Parses a cluster or plain URL. @returns 0 or -1 with err (never the password). */
int rcl_url_parse(const char *url, rcl_url *out, char *err, size_t errsz);

/* A blocking connection to host:port with the URL's credentials (AUTH, no SELECT). */
redisContext *rcl_node_connect(const rcl_url *u, const char *host, int port,
                               struct timeval tv, char *err, size_t errsz);

/* ---- nodes and the slot map ---- */
typedef struct rcl_addr {
    char host[256];
    int port;
} rcl_addr;

/* The result of CLUSTER SLOTS: masters (addresses) and which one serves each slot. */
typedef struct rcl_slotmap {
    int nmasters;
    rcl_addr *masters;       /* nmasters entries, owned */
    int16_t owner[RCL_SLOTS]; /* index into masters, -1 unassigned */
} rcl_slotmap;

/* Fills m from a CLUSTER SLOTS reply (`from_host` replaces an empty host).
 * @returns 0, or -1 with err (m untouched). */
int rcl_slotmap_parse(const redisReply *r, const char *from_host, rcl_slotmap *m, char *err,
                      size_t errsz);
void rcl_slotmap_clear(rcl_slotmap *m);
/* After MOVED: `slot` is served by `to`, node index `ni` of the caller's node table;
 * adds it as a master (m->masters and *master_node, parallel arrays) when it is new.
 * @returns 0, or -1 on OOM (map unchanged). */
int rcl_slotmap_move(rcl_slotmap *m, int **master_node, int slot, const rcl_addr *to, int ni);

/* ---- reply classification ---- */
enum rcl_redirect { RCL_R_NONE, RCL_R_MOVED, RCL_R_ASK, RCL_R_TRYAGAIN, RCL_R_CLUSTERDOWN, RCL_R_NOSCRIPT };
/* Classifies an error reply; for MOVED/ASK fills *slot and *to. */
int rcl_classify(const redisReply *r, int *slot, rcl_addr *to);

/* The slot of a command's keys: -1 keyless, -2 CROSSSLOT, -3 malformed (err set). */
int rcl_command_slot(int argc, const char **argv, const size_t *lens, char *err, size_t errsz);

/* Backoff before retry `attempt` (0-based): 20 ms doubling, capped. */
int rcl_backoff_ms(int attempt);
int64_t rcl_now_ms(void);

/* ---- scripts ---- */
typedef struct rcl_scripts {
    int n, cap;
    struct {
        char sha[41];
        char *body;
    } *s;
} rcl_scripts;

int rcl_scripts_add(rcl_scripts *s, const char *body, char sha[41]);
/* The body for an EVALSHA command (argv[0] EVALSHA, argv[1] a registered digest), else NULL. */
const char *rcl_scripts_body_for(const rcl_scripts *s, int argc, const char **argv,
                                 const size_t *lens);
void rcl_scripts_free(rcl_scripts *s);

/* The command in RESP ("*<argc>\r\n" then "$<len>\r\n<arg>\r\n" per argument), as
 * redisFormatCommandArgv makes it, in one malloc'd buffer of *len bytes: hiredis builds
 * it through sdscatfmt, a few reallocations and a printf-like pass per argument, which
 * was 3.3k instructions per placed order on seckill-order's batched calls (issue 16).
 * NULL on OOM. */
char *rcl_resp_format(int argc, const char **argv, const size_t *lens, size_t *len);

/* Copies argv into one allocation: *out_argv / *out_lens point into it. NULL on OOM. */
void *rcl_argv_copy(int argc, const char **argv, const size_t *lens, const char ***out_argv,
                    size_t **out_lens);

/* ---- the sentinels' +switch-master (rcl_swatch.c; async, sentinel URLs) ---- */
typedef struct rcl_swatch rcl_swatch;
/* Called on the loop's thread with the new master's address after a failover. */
typedef void rcl_swatch_fn(void *arg, const char *host, int port);
struct event_base;
/* Subscribes to +switch-master on url's sentinels (one at a time, each connect within
 * tv; url must outlive it). NULL on OOM. */
rcl_swatch *rcl_swatch_new(struct event_base *base, const sk_redis_url *url, struct timeval tv,
                           rcl_swatch_fn *moved, void *arg);
void rcl_swatch_free(rcl_swatch *w);

#endif
