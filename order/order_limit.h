/* order_limit: the rate limits in front of the order gate, by level (issue 19 section 2),
 * and who the client is.
 *
 * Levels, checked in this order on POST /api/v1/events/{id}/orders:
 *   ip    per client address, in process (ratelimit.ip_rate; 0: off). The client is the
 *         socket's peer, or, when the peer is one of http.trusted_proxies, the first
 *         address of X-Forwarded-For that is not a trusted proxy, read right to left (the
 *         entries left of it were written by the client and prove nothing);
 *   user  per user (order_bucket.h, or ratelimit.lua in Redis mode: unchanged);
 *   event the event's admission rate across every front (order_evrate.h).
 * Each refusal is 429 with Retry-After and {"error":"rate_limited","level":"<level>"}.
 * An event created with "limits" (order_event_limits, order_body.h) has its own rate at
 * a level, used for its orders in place of the configured one.
 *
 * The parsing and the client choice are pure (unit-tested); the buckets are
 * order_bucket.h's, keyed by address, so memory stays bounded whatever the number of
 * addresses. IPv4 only, like http.bind. Thread-safe once built (read-only, and the
 * buckets lock per set). */
#ifndef ORDER_LIMIT_H
#define ORDER_LIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ORDER_LIMIT_IP = 0,
    ORDER_LIMIT_USER,
    ORDER_LIMIT_EVENT,
    ORDER_LIMIT_LEVELS
} order_limit_level;

/** @brief "ip", "user", "event". */
const char *order_limit_level_name(order_limit_level l);

#define ORDER_LIMIT_PROXIES_MAX 32

/* Trusted proxies: IPv4 networks, host byte order. */
typedef struct order_limit_proxies {
    uint32_t net[ORDER_LIMIT_PROXIES_MAX], mask[ORDER_LIMIT_PROXIES_MAX];
    int n;
} order_limit_proxies;

/** @brief Parses a comma-separated list of IPv4 addresses or a.b.c.d/len networks ("" is
 *  an empty list). @returns 0, or -1 with "http.trusted_proxies: ..." in err. */
int order_limit_proxies_parse(const char *list, order_limit_proxies *out, char *err, size_t errsz);

/** @brief 1 if `addr` (host order) lies in one of the networks. */
int order_limit_proxy_trusted(const order_limit_proxies *p, uint32_t addr);

/** @brief The client address (host order) of a request from `peer` carrying the
 *  X-Forwarded-For value `xff` (NULL: none). An untrusted peer is the client, whatever
 *  it sent. From a trusted peer, the entries are read right to left, skipping trusted
 *  proxies; the first other one is the client. An entry that is not an IPv4 address
 *  stops the walk: the last trusted hop is the client (a proxy of ours wrote nonsense;
 *  nothing further left can be believed). */
uint32_t order_limit_client_ip(const order_limit_proxies *p, uint32_t peer, const char *xff);

/** @brief Seconds a client refused by a bucket of `rate` tokens/s should wait: one
 *  token's time, rounded up, at least 1. */
long long order_limit_retry_after_s(double rate);

typedef struct order_limit order_limit;

/** @brief Limits from the configuration's values: per-address buckets of `ip_rate`
 *  tokens/s and `ip_burst` (ip_rate 0: no per-address level) for `ip_capacity`
 *  addresses; `proxies` as http.trusted_proxies. @returns the object (order_limit_free),
 *  or NULL with err. */
order_limit *order_limit_new(long long ip_rate, long long ip_burst, long long ip_capacity,
                             const char *proxies, char *err, size_t errsz);

/** @brief NULL is fine. */
void order_limit_free(order_limit *l);

/** @brief 1 when the per-address level is on. */
int order_limit_ip_on(const order_limit *l);

/** @brief The configured trusted proxies (for order_limit_client_ip). */
const order_limit_proxies *order_limit_proxies_of(const order_limit *l);

/** @brief Takes one token of client `ip` at monotonic now_us. @returns 1 allowed, 0
 *  limited (then *retry_after_s is set). Allowed when the level is off. */
int order_limit_ip_take(order_limit *l, uint32_t ip, int64_t now_us, long long *retry_after_s);

/** @brief The per-event override of the ip or user level (order_event_limits, given at
 *  the event's creation): takes one token of `who` (a client address, or a user id) in
 *  its own bucket for event_id, of `rate` tokens/s (> 0) and a burst of `rate` (one
 *  second's worth), in place of the configured level. The buckets share one bounded
 *  table (ratelimit.ips entries), keyed by (level, who, event). @returns 1 allowed, 0
 *  limited (then *retry_after_s is set). */
int order_limit_override_take(order_limit *l, order_limit_level level, uint64_t who,
                              uint64_t event_id, int64_t rate, int64_t now_us,
                              long long *retry_after_s);

#endif
