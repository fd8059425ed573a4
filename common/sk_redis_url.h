/* sk_redis_url: Redis addresses as URLs, and a blocking connect that applies them.
 *
 *   redis://[[user]:password@]host[:port][/db]     (port 6379, db 0 by default)
 *   unix:///path/to/redis.sock[?db=N]  or  unix://[[user]:password@]/path[?db=N]
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master_name[?db=N]
 *       the sentinels (port 26379 by default) and the name of the master they watch;
 *       the password is the data nodes' (master and replicas), never the sentinels'.
 *
 * A sentinel URL has no host of its own: sk_redis_url_connect asks the sentinels for
 * the master at every connect (sk_redis_sentinel.c), so a reconnect follows a failover.
 *
 * Pure parsing apart from sk_redis_url_connect, which is the one place that opens a
 * blocking hiredis connection, sends AUTH (user + password: an ACL user) and SELECT.
 * Compiled into libidgen and librlock as a private object, so neither depends on
 * anything else of ours. */
#ifndef SK_REDIS_URL_H
#define SK_REDIS_URL_H

#include <stddef.h>
#include <sys/time.h>

struct redisContext;

#define SK_REDIS_SENTINELS_MAX 8

typedef struct sk_redis_url {
    int is_unix;
    char host[256]; /* tcp host, or the socket path when is_unix */
    int port;
    char user[128]; /* ACL user; empty: the default user */
    char pass[256]; /* empty: no AUTH. Never log it: use sk_redis_url_redacted. */
    int db;
    /* redis-sentinel:// only (is_sentinel 1): host and port stay empty; the master is
     * found at connect time from these. */
    int is_sentinel;
    int nsentinels;
    struct {
        char host[256];
        int port;
    } sentinels[SK_REDIS_SENTINELS_MAX];
    char master_name[128];
} sk_redis_url;

/** @brief Parses `url` into *out. @returns 0, or -1 with a message in errstr. */
int sk_redis_url_parse(const char *url, sk_redis_url *out, char *errstr, size_t errstr_size);

/** @brief Writes the URL without its password (for logs) into buf; returns buf. */
const char *sk_redis_url_redacted(const sk_redis_url *u, char *buf, size_t bufsize);

/** @brief Connects with `timeout` for connect and for every later command, then AUTH
 *  and SELECT. A sentinel URL connects to the master its sentinels name now, checked
 *  with ROLE (never a replica; see sk_redis_sentinel_connect).
 *  @returns a connected context the caller frees with redisFree, or NULL
 *  with a message in errstr. */
struct redisContext *sk_redis_url_connect(const sk_redis_url *u, struct timeval timeout,
                                          char *errstr, size_t errstr_size);

/** @brief sk_redis_url_connect for a sentinel URL: for each sentinel in turn, the master
 *  it names, connected, AUTH, then ROLE must say master (a sentinel that has not seen a
 *  failover yet names the old master, now a replica: the next sentinel is asked), then
 *  SELECT. Costs one round trip to a sentinel and one ROLE per connect.
 *  @returns as sk_redis_url_connect. */
struct redisContext *sk_redis_sentinel_connect(const sk_redis_url *u, struct timeval timeout,
                                               char *errstr, size_t errstr_size);

/** @brief 1 when `url` starts with redis-sentinel://, else 0. */
int sk_redis_url_is_sentinel(const char *url);

/** @brief The master of a sentinel URL now: asks u's sentinels in turn, each within
 *  `timeout` (connect and reply), SENTINEL get-master-addr-by-name; the first answer
 *  wins. Does not check the address (sk_redis_url_connect does, with ROLE).
 *  @returns 0 with host (NUL ended, hostsize bytes at most) and *port set, or -1 with a
 *  message in errstr (no sentinel answered, or none knows the name). */
int sk_redis_sentinel_master(const sk_redis_url *u, struct timeval timeout, char *host,
                             size_t hostsize, int *port, char *errstr, size_t errstr_size);

struct redisReply;

/** @brief 1 when `r` is an error reply that says the server is a replica (-READONLY,
 *  also inside a script's error): the client must find the master again. */
int sk_redis_reply_is_readonly(const struct redisReply *r);

/** @brief 1 when the ROLE reply `r` says "master", else 0. */
int sk_redis_role_is_master(const struct redisReply *r);

#endif
