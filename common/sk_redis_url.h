/* sk_redis_url: Redis addresses as URLs, and a blocking connect that applies them.
 *
 *   redis://[[user]:password@]host[:port][/db]     (port 6379, db 0 by default)
 *   unix:///path/to/redis.sock[?db=N]  or  unix://[[user]:password@]/path[?db=N]
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

typedef struct sk_redis_url {
    int is_unix;
    char host[256]; /* tcp host, or the socket path when is_unix */
    int port;
    char user[128]; /* ACL user; empty: the default user */
    char pass[256]; /* empty: no AUTH. Never log it: use sk_redis_url_redacted. */
    int db;
} sk_redis_url;

/** @brief Parses `url` into *out. @returns 0, or -1 with a message in errstr. */
int sk_redis_url_parse(const char *url, sk_redis_url *out, char *errstr, size_t errstr_size);

/** @brief Writes the URL without its password (for logs) into buf; returns buf. */
const char *sk_redis_url_redacted(const sk_redis_url *u, char *buf, size_t bufsize);

/** @brief Connects with `timeout` for connect and for every later command, then AUTH
 *  and SELECT. @returns a connected context the caller frees with redisFree, or NULL
 *  with a message in errstr. */
struct redisContext *sk_redis_url_connect(const sk_redis_url *u, struct timeval timeout,
                                          char *errstr, size_t errstr_size);

#endif
