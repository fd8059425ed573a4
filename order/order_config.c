/* order_config: the configuration table of seckill-order. See order_config.h. */
#include "order_config.h"
#include "sk_group.h"
#include "order_limit.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(field) offsetof(order_config, field)

const sk_cfg_entry order_config_table[] = {
    {"redis.url", SK_CFG_STRING, 0, 0, "redis://127.0.0.1:6379",
     "Redis URL: redis://[user:pass@]host:port/db, unix:///path?db=N, redis-cluster://[user:pass@]host:port[,host:port...], or redis-sentinel://[user:pass@]host:port[,host:port...]/master_name[?db=N]", F(redis_url)},
    {"pg", SK_CFG_STRING, 0, 0, "", "PostgreSQL conninfo or URI (events, order lookup)", F(pg)},
    {"jwt.secret", SK_CFG_SECRET, 0, 0, "",
     "HS256 secret of the bearer tokens (required, at least 32 bytes: RFC 7518 3.2)", F(jwt_secret)},
    {"jwt.leeway_s", SK_CFG_INT, 0, 3600, "60",
     "clock leeway for a token's nbf and iat: later than now plus this is refused (401)",
     F(jwt_leeway_s)},
    {"http.bind", SK_CFG_STRING, 0, 0, "127.0.0.1",
     "address the HTTP API listens on: a numeric IPv4 address (0.0.0.0: every interface)",
     F(http_bind)},
    {"order.msg_keys", SK_CFG_SECRET, 0, 0, "",
     "keys of the order messages' MAC, shared with seckill-consumer: \"key[,previous]\" "
     "(16+ bytes each; the first signs). Empty: messages go unsigned (a warning at start)",
     F(msg_keys)},
    {"metrics.token", SK_CFG_SECRET, 0, 0, "",
     "if set, GET /metrics needs `Authorization: Bearer <this>` (else 401)",
     F(metrics_token)},
    {"metrics.open", SK_CFG_INT, 0, 1, "0",
     "without metrics.token: 1 answers /metrics to anyone, 0 only to peers on this host "
     "(127.0.0.0/8; others 401)",
     F(metrics_open)},
    {"http.port", SK_CFG_INT, 0, 65535, "8080", "HTTP port (0: any free port, logged)",
     F(http_port)},
    {"workers", SK_CFG_INT, 0, 64, "0", "event-loop threads (0: one per online core)",
     F(workers)},
    {"topic", SK_CFG_STRING, 0, 0, "seckill.orders", "Kafka topic of accepted orders", F(topic)},
    {"idgen.order_prefix", SK_CFG_STRING, 0, 0, "order", "libidgen prefix of order ids",
     F(idgen_order_prefix)},
    {"idgen.event_prefix", SK_CFG_STRING, 0, 0, "event", "libidgen prefix of event ids",
     F(idgen_event_prefix)},
    {"ratelimit.mode", SK_CFG_STRING, 0, 0, "local",
     "per-user rate limit: off, local (in process) or redis (global, ratelimit.lua)",
     F(ratelimit_mode)},
    {"ratelimit.rate", SK_CFG_INT, 1, 1000000, "5", "per-user tokens per second",
     F(ratelimit_rate)},
    {"ratelimit.burst", SK_CFG_INT, 1, 1000000, "10", "per-user bucket size", F(ratelimit_burst)},
    {"ratelimit.users", SK_CFG_INT, 64, 100000000, "262144",
     "users tracked in process (bounded memory, about 34 bytes each)", F(ratelimit_users)},
    {"ratelimit.ip_rate", SK_CFG_INT, 0, 1000000, "0",
     "per client address tokens per second on order creation (0: no per-address limit)",
     F(ratelimit_ip_rate)},
    {"ratelimit.ip_burst", SK_CFG_INT, 1, 1000000, "100", "per client address bucket size",
     F(ratelimit_ip_burst)},
    {"ratelimit.ips", SK_CFG_INT, 64, 100000000, "262144",
     "client addresses tracked in process (bounded memory, as ratelimit.users)", F(ratelimit_ips)},
    {"http.trusted_proxies", SK_CFG_STRING, 0, 0, "",
     "comma-separated IPv4 addresses or a.b.c.d/len networks of our proxies: from them, the "
     "client is the first address of X-Forwarded-For (right to left) that is not one of them",
     F(http_trusted_proxies)},
    {"limits.event_rate", SK_CFG_INT, 0, 10000000, "0",
     "orders per second admitted to one event across every front (one Redis token bucket per "
     "event, taken in batches; 0: no per-event level)", F(event_rate)},
    {"limits.event_burst", SK_CFG_INT, 1, 10000000, "100",
     "the per-event bucket's size", F(event_burst)},
    {"limits.event_batch", SK_CFG_INT, 1, 10000, "10",
     "tokens a front takes from the per-event bucket per Redis call (spent within the time "
     "the bucket makes them, at least 100 ms, or dropped)", F(event_batch)},
    {"limits.gate_p99_ms", SK_CFG_INT, 0, 600000, "0",
     "new orders get 503 at once while the p99 of the gate's answers over limits.window_ms "
     "is past this (0: off)", F(admit_gate_p99_ms)},
    {"limits.window_ms", SK_CFG_INT, 100, 600000, "2000",
     "the sliding window of limits.gate_p99_ms (also the Retry-After of its 503)",
     F(admit_window_ms)},
    {"limits.min_samples", SK_CFG_INT, 1, 1000000, "20",
     "gate answers the window needs before limits.gate_p99_ms can shed", F(admit_min_samples)},
    {"limits.inflight", SK_CFG_INT, 1, 10000000, "20000",
     "requests in flight past which the service answers 503 at once", F(max_inflight)},
    {"limits.kafka_inflight", SK_CFG_INT, 1, 10000000, "20000",
     "messages waiting for Kafka past which orders get 503 at once", F(max_kafka_inflight)},
    {"limits.connections", SK_CFG_INT, 1, 1000000, "10000",
     "connections held at once (split over the workers); one more is closed at once",
     F(max_connections)},
    {"http.max_header_bytes", SK_CFG_INT, 1024, 1048576, "8192",
     "request line + headers past this: 400/413 and the connection closed", F(http_max_header_bytes)},
    {"http.max_body_bytes", SK_CFG_INT, 4096, 16777216, "65536",
     "bodies past this are refused (413) before they are buffered (over 4 KiB: 413 anyway)",
     F(http_max_body_bytes)},
    {"http.read_timeout_ms", SK_CFG_INT, 0, 600000, "10000",
     "a request's headers and body must arrive within this from its first byte, or the "
     "connection is closed (0: no deadline)",
     F(http_read_timeout_ms)},
    {"http.event_method", SK_CFG_STRING, 0, 0, "epoll",
     "the event loops' I/O method: epoll, or poll (one scan of every connection per "
     "loop turn: measured 2-4 us more CPU per accepted order with 64 connections)",
     F(http_event_method)},
    {"http.idle_timeout_s", SK_CFG_INT, 1, 3600, "60",
     "a connection silent this long (no byte read or written) is closed", F(http_idle_timeout_s)},
    {"soldout.ttl_ms", SK_CFG_INT, 1, 1000, "500",
     "how long a sold-out flag answers without Redis (stock given back sells again after it)",
     F(soldout_ttl_ms)},
    {"redis.timeout_ms", SK_CFG_INT, 10, 60000, "1000",
     "Redis connect timeout; a command unanswered this long fails its request", F(redis_timeout_ms)},
    {"redis.wait_replicas", SK_CFG_INT, 0, 16, "0",
     "after reserve.lua, WAIT until this many replicas hold the reservation before the "
     "produce to Kafka; fewer within redis.wait_timeout_ms: cancelled, 503 (0: off; not "
     "with redis-cluster://)", F(redis_wait_replicas)},
    {"redis.wait_timeout_ms", SK_CFG_INT, 1, 60000, "100",
     "the WAIT's timeout (below redis.timeout_ms)", F(redis_wait_timeout_ms)},
    {"pg.pool", SK_CFG_INT, 1, 64, "2", "PostgreSQL connections (one blocking thread each)",
     F(pg_pool)},
    {"order.index_ttl_s", SK_CFG_INT, 1, 31536000, "604800",
     "how long Redis remembers an order's event for GET /api/v1/orders/{id}", F(index_ttl_s)},
    {"order.status_cache_size", SK_CFG_INT, 0, 100000000, "65536",
     "orders whose outcome (created, rejected) is kept in memory for GET /api/v1/orders/{id} "
     "(0: none)", F(order_status_cache_size)},
    {"order.status_cache_ms", SK_CFG_INT, 1, 60000, "1000",
     "how long a kept outcome answers without Redis", F(order_status_cache_ms)},
    {"order.queued_pg_after_s", SK_CFG_INT, 1, 31536000, "60",
     "an order the index still calls queued this long after its id was issued is looked "
     "up in PostgreSQL (an outcome the consumer could not record)", F(order_queued_pg_after_s)},
    {"order.pg_lookup_every_ms", SK_CFG_INT, 100, 3600000, "5000",
     "a young order (still queued past order.queued_pg_after_s, or unknown to the index) is "
     "looked up in PostgreSQL at most once per this interval per instance",
     F(order_pg_lookup_every_ms)},
    {"order.pg_lookups_per_s", SK_CFG_INT, 1, 1000000, "50",
     "PostgreSQL lookups of young orders per second per instance, all orders together; past "
     "it they answer queued (an order the index knows) or 404 (one it does not)",
     F(order_pg_lookups_per_s)},
    {"events.cache_size", SK_CFG_INT, 16, 1000000, "4096",
     "events kept in memory for GET /api/v1/events/{id} (least recently used evicted)",
     F(events_cache_size)},
    {"events.stock_refresh_ms", SK_CFG_INT, 1, 60000, "100",
     "an event page's stock_left is read from the Redis gate at most this often per event",
     F(events_stock_refresh_ms)},
    {"events.pause_refresh_ms", SK_CFG_INT, 10, 60000, "250",
     "the paused events (POST /api/v1/events/{id}/pause on any front) are read from Redis this "
     "often: a pause or resume holds on every front within it plus a round trip",
     F(events_pause_refresh_ms)},
    {"events.negative_ttl_ms", SK_CFG_INT, 0, 600000, "1000",
     "how long an unknown event id is answered 404 from memory", F(events_negative_ttl_ms)},
    {"events.miss_per_s", SK_CFG_INT, 1, 1000000, "50",
     "PostgreSQL loads of events not in memory per second at most (past it: 503)",
     F(events_miss_per_s)},
    {"events.max_age_s", SK_CFG_INT, 0, 3600, "1",
     "Cache-Control max-age of the event pages", F(events_max_age_s)},
    {"events.list_refresh_ms", SK_CFG_INT, 1, 3600000, "1000",
     "GET /api/v1/events is read from PostgreSQL at most this often per instance (an event "
     "created on another front shows up within it)", F(events_list_refresh_ms)},
    {"events.list_max", SK_CFG_INT, 1, 100000, "1000",
     "events kept in the list (the first by starts_at)", F(events_list_max)},
    {"shutdown.timeout_ms", SK_CFG_INT, 0, 600000, "5000",
     "on SIGTERM, how long to wait for requests in flight and the Kafka flush",
     F(shutdown_timeout_ms)},
    {"log.level", SK_CFG_STRING, 0, 0, "info", "debug, info, warn or error", F(log_level)},
    {"reconcile.interval_ms", SK_CFG_INT, 0, 3600000, "5000",
     "reconciler scan interval (0: this instance never reconciles; needs pg)",
     F(reconcile_interval_ms)},
    {"reconcile.margin_ms", SK_CFG_INT, 0, 3600000, "5000",
     "a pending entry is cancelled only when older than kafka message.timeout.ms plus this",
     F(reconcile_margin_ms)},
    {"reconcile.lock_timeout_ms", SK_CFG_INT, 1000, 600000, "30000",
     "watchdog timeout of the reconciler lock: a dead holder is replaced within it",
     F(reconcile_lock_timeout_ms)},
    {"events.retention_s", SK_CFG_INT, 0, 31536000, "86400",
     "an event's Redis keys expire this long after its end and payment window (then its "
     "reads answer from PostgreSQL; the leading reconciler sets the expiry)",
     F(events_retention_s)},
    {"reconcile.horizon_s", SK_CFG_INT, 60, 31536000, "86400",
     "events whose sale ended less than this ago are still reconciled", F(reconcile_horizon_s)},
    SK_GROUP_CFG_ENTRY(F(group_id)), /* the consumer's group: sk_group.h */
    {"reconcile.lock", SK_CFG_STRING, 0, 0, "seckill:reconciler",
     "name of the librlock lock that elects the one reconciling instance (one per deployment)",
     F(reconcile_lock)},
    {"challenge.key", SK_CFG_SECRET, 0, 0, "",
     "HMAC-SHA256 key that signs the proof-of-work challenges of events created with one "
     "(every front of a deployment holds the same; empty: derived from jwt.secret)",
     F(challenge_key)},
    {"challenge.key_previous", SK_CFG_SECRET, 0, 0, "",
     "the key challenge.key replaced: its challenges are still accepted (a rotation without "
     "refusals: drop it after challenge.ttl_s); empty: none", F(challenge_key_previous)},
    {"challenge.ttl_s", SK_CFG_INT, 5, 3600, "120",
     "how long a challenge may be solved and used (its solution is then refused, 403)",
     F(challenge_ttl_s)},
    {NULL, 0, 0, 0, NULL, NULL, 0},
};

int order_config_bind_check(const char *key, const char *addr, char *err, size_t errsz)
{
    struct in_addr a;
    if (inet_pton(AF_INET, addr, &a) == 1)
        return 0;
    snprintf(err, errsz, "%s: \"%s\" is not a numeric IPv4 address", key, addr);
    return -1;
}

int order_config_check(order_config *cfg, char *err, size_t errsz)
{
    /* An empty secret is reported by the caller (it names the environment variable). */
    if (*cfg->jwt_secret && strlen(cfg->jwt_secret) < ORDER_JWT_SECRET_MIN) {
        snprintf(err, errsz, "jwt.secret: %zu bytes; HS256 needs at least %d (RFC 7518 3.2)",
                 strlen(cfg->jwt_secret), ORDER_JWT_SECRET_MIN);
        return -1;
    }
    if (order_config_bind_check("http.bind", cfg->http_bind, err, errsz) != 0)
        return -1;
    if (strcmp(cfg->ratelimit_mode, "off") == 0)
        cfg->rl_mode = ORDER_RL_OFF;
    else if (strcmp(cfg->ratelimit_mode, "local") == 0)
        cfg->rl_mode = ORDER_RL_LOCAL;
    else if (strcmp(cfg->ratelimit_mode, "redis") == 0)
        cfg->rl_mode = ORDER_RL_REDIS;
    else {
        snprintf(err, errsz, "ratelimit.mode: \"%s\" is not off, local or redis",
                 cfg->ratelimit_mode);
        return -1;
    }
    order_limit_proxies proxies;
    if (order_limit_proxies_parse(cfg->http_trusted_proxies, &proxies, err, errsz) != 0)
        return -1;
    if (strcmp(cfg->http_event_method, "epoll") && strcmp(cfg->http_event_method, "poll")) {
        snprintf(err, errsz, "http.event_method: \"%s\" is not epoll or poll",
                 cfg->http_event_method);
        return -1;
    }
    if (strcmp(cfg->log_level, "debug") && strcmp(cfg->log_level, "info") &&
        strcmp(cfg->log_level, "warn") && strcmp(cfg->log_level, "error")) {
        snprintf(err, errsz, "log.level: \"%s\" is not debug, info, warn or error",
                 cfg->log_level);
        return -1;
    }
    if (!*cfg->topic) {
        snprintf(err, errsz, "topic: must not be empty");
        return -1;
    }
    if (!*cfg->idgen_order_prefix || !*cfg->idgen_event_prefix ||
        strcmp(cfg->idgen_order_prefix, cfg->idgen_event_prefix) == 0) {
        snprintf(err, errsz, "idgen.order_prefix and idgen.event_prefix: two different names");
        return -1;
    }
    if (cfg->redis_wait_replicas > 0) {
        /* The WAIT must come back before the connection's own deadline drops it. */
        if (cfg->redis_wait_timeout_ms >= cfg->redis_timeout_ms) {
            snprintf(err, errsz, "redis.wait_timeout_ms (%lld) must be below redis.timeout_ms (%lld)",
                     cfg->redis_wait_timeout_ms, cfg->redis_timeout_ms);
            return -1;
        }
        if (strncmp(cfg->redis_url, "redis-cluster://", 16) == 0) {
            snprintf(err, errsz, "redis.wait_replicas: not with a redis-cluster:// URL (WAIT "
                                 "reaches one node, an event's reservations another)");
            return -1;
        }
    }
    return 0;
}
