/* order_config: seckill-order's configuration table (sk_config) and its struct.
 * --help, the parser, the environment names and order/README.md's table all come
 * from order_config_table. */
#ifndef ORDER_CONFIG_H
#define ORDER_CONFIG_H

#include "sk_config.h"

typedef enum {
    ORDER_RL_OFF = 0,   /* no per-user limit */
    ORDER_RL_LOCAL = 1, /* token buckets in this process (default) */
    ORDER_RL_REDIS = 2, /* ratelimit.lua: one bucket per user across every instance */
} order_rl_mode;

typedef struct order_config {
    char *redis_url;
    char *pg;          /* libpq conninfo or URI: may hold a password */
    char *jwt_secret;
    char *msg_keys; /* order.msg_keys (secret): "signing[,previous]"; "" : unsigned */
    long long jwt_leeway_s; /* nbf/iat may be this far ahead of our clock */
    char *http_bind;        /* numeric address, checked by order_config_check */
    char *metrics_token;    /* "" : /metrics by metrics_open's rule; else the bearer it needs */
    long long metrics_open; /* 1: /metrics open to all; 0: this host's peers only */
    long long http_port;
    long long workers; /* 0: one per online core */
    char *topic;
    char *idgen_order_prefix, *idgen_event_prefix;
    char *ratelimit_mode; /* off | local | redis, checked by order_config_check */
    long long ratelimit_rate, ratelimit_burst, ratelimit_users;
    long long ratelimit_ip_rate, ratelimit_ip_burst, ratelimit_ips; /* ip_rate 0: off */
    char *http_trusted_proxies; /* checked by order_limit_proxies_parse */
    long long event_rate, event_burst, event_batch; /* event_rate 0: off */
    long long admit_gate_p99_ms, admit_window_ms, admit_min_samples; /* p99 0: off */
    long long max_inflight, max_kafka_inflight, max_connections;
    long long http_max_header_bytes, http_max_body_bytes, http_read_timeout_ms, http_idle_timeout_s;
    char *http_event_method; /* epoll | poll, checked by order_config_check */
    long long soldout_ttl_ms;
    long long redis_timeout_ms;
    long long redis_wait_replicas, redis_wait_timeout_ms; /* wait_replicas 0: off */
    long long pg_pool;
    long long index_ttl_s;
    long long events_retention_s; /* an event's Redis keys outlive its end + window by it */
    long long order_status_cache_size, order_status_cache_ms, order_queued_pg_after_s,
        order_pg_lookup_every_ms, order_pg_lookups_per_s;
    long long events_cache_size, events_stock_refresh_ms, events_negative_ttl_ms,
        events_pause_refresh_ms;
    long long events_miss_per_s, events_max_age_s, events_list_refresh_ms, events_list_max;
    long long shutdown_timeout_ms;
    char *log_level;
    long long reconcile_interval_ms; /* 0: this instance never reconciles */
    long long reconcile_margin_ms, reconcile_lock_timeout_ms, reconcile_horizon_s;
    char *group_id; /* the writers' consumer group (sk_group.h): the reconciler reads its offsets */
    char *reconcile_lock;
    char *challenge_key, *challenge_key_previous; /* "" : derived from jwt.secret / none */
    long long challenge_ttl_s;
    /* derived by order_config_check */
    order_rl_mode rl_mode;
} order_config;

extern const sk_cfg_entry order_config_table[];

/* HS256 keys shorter than the hash output are refused (RFC 7518 section 3.2). */
#define ORDER_JWT_SECRET_MIN 32

/** @brief 0 if `addr` is a numeric IPv4 address, else -1 with "key: ..." in err. */
int order_config_bind_check(const char *key, const char *addr, char *err, size_t errsz);

/** @brief Checks what the table cannot (enumerations, cross-field rules) and fills the
 *  derived fields. @returns 0, or -1 with a message in err. */
int order_config_check(order_config *cfg, char *err, size_t errsz);

#endif
