/* sk_listen: what a listening HTTP service does about file descriptors.
 *
 * Three jobs, shared by seckill-order and seckill-consumer:
 *  - open the listening socket (IPv4 address and port, SO_REUSEADDR; with
 *    SO_REUSEPORT when every worker listens on the port with a socket of its own, after
 *    a plain bind has proved that nobody else holds the port);
 *  - at start, fit the connection cap to RLIMIT_NOFILE: raise the soft limit as far as
 *    the hard one allows, else lower the cap, and say which (a cap above the limit only
 *    means accept() failing later, at the worst moment);
 *  - when accept() fails for want of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM), stop
 *    accepting for a short interval instead of retrying at once (libevent would call
 *    accept again on every loop turn: 100% CPU and a log line per failure), and log once
 *    per interval with the number of failures.
 * Runs on the listener's event loop; one sk_listen_backoff per listener. */
#ifndef SK_LISTEN_H
#define SK_LISTEN_H

#include <stddef.h>

struct evconnlistener;
struct event_base;

/** @brief Fits *cap connections (plus `reserve` other descriptors: files, Redis, Kafka,
 *  ...) under RLIMIT_NOFILE, raising the soft limit if it can, else lowering *cap
 *  (to at least 1). Logs one line (event=nofile_raised / connection_cap_lowered) when
 *  it changed something; `who` names the setting ("limits.connections").
 *  @returns 0 if nothing needed changing, 1 if it changed the limit or the cap. */
int sk_listen_fit_nofile(long long *cap, long long reserve, const char *who);

#define SK_LISTEN_REUSEPORT 1  /* SO_REUSEPORT: several sockets share the port */
#define SK_LISTEN_CHECK_FREE 2 /* a plain bind first: fail if another process holds it */

/** @brief A non-blocking, close-on-exec TCP socket listening on bind_addr:port (an IPv4
 *  address; port 0: any) with `backlog`. `flags`: SK_LISTEN_*; SO_REUSEADDR always (a
 *  restart must not wait for TIME_WAIT). *bound_port (may be NULL) gets the port.
 *  @returns the descriptor (the caller's), or -1 with err set ("not an IPv4 address",
 *  the port held elsewhere, or the system call's error). */
int sk_listen_tcp(const char *bind_addr, int port, int flags, int backlog, int *bound_port,
                  char *err, size_t errsz);

typedef struct sk_listen_backoff sk_listen_backoff;

/** @brief Installs the accept-error policy on `lev` (an evhttp bound socket's
 *  listener): on an error, disable it for pause_ms, then enable it again.
 *  @returns the handle (free with sk_listen_backoff_free after the listener) or NULL. */
sk_listen_backoff *sk_listen_backoff_install(struct evconnlistener *lev, struct event_base *base,
                                             int pause_ms);

/** @brief Accept failures seen so far (for tests and metrics). */
unsigned long sk_listen_backoff_failures(const sk_listen_backoff *b);

/** @brief NULL is fine. */
void sk_listen_backoff_free(sk_listen_backoff *b);

#endif
