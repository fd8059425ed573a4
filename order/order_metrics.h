/* order_metrics: the service's counters and their Prometheus text form.
 *
 * Plain relaxed atomics, updated by every worker thread; /metrics reads them without a
 * lock (each number is exact, the set of numbers is not one snapshot). */
#ifndef ORDER_METRICS_H
#define ORDER_METRICS_H

#include "order_route.h"
#include "sk_prom.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The statuses the API answers; anything else lands in the last slot. */
#define ORDER_METRICS_STATUSES 14
#define ORDER_METRICS_RESERVE_CODES 7 /* reserve.lua 0..5, and "other" */
#define ORDER_METRICS_GATE_OPS 4      /* order_gate_op */
#define ORDER_METRICS_LIMIT_LEVELS 3  /* order_limit_level */

/* Stages of the accept path, timed separately so that a slow answer can be placed. */
typedef enum {
    ORDER_STAGE_RESERVE = 0, /* EVALSHA reserve.lua sent -> reply */
    ORDER_STAGE_KAFKA,       /* produced -> delivery report back on the worker */
    ORDER_STAGE_CONFIRM,     /* EVALSHA confirm.lua sent -> reply */
    ORDER_STAGE_COUNT
} order_stage;

typedef struct order_metrics {
    sk_prom_hist stage[ORDER_STAGE_COUNT]; /* seconds, the bounds of order_metrics.c */
    _Atomic uint64_t requests[ORDER_ROUTE_COUNT][ORDER_METRICS_STATUSES];
    sk_prom_hist latency[ORDER_ROUTE_COUNT];
    _Atomic uint64_t reserve[ORDER_METRICS_RESERVE_CODES];
    /* The gate's script calls (order_gate_op: reserve, cancel, confirm) and the orders
     * they carried: orders / calls is the mean batch of a loop turn. */
    _Atomic uint64_t gate_calls[ORDER_METRICS_GATE_OPS], gate_orders[ORDER_METRICS_GATE_OPS];
    _Atomic uint64_t redis_errors;
    _Atomic uint64_t kafka_delivery_failures;
    _Atomic uint64_t kafka_produce_failures;
    _Atomic uint64_t soldout_flag_hits;
    _Atomic uint64_t rate_limited;
    _Atomic uint64_t overload_rejections;
    /* 429s by level (order_limit_level: ip, user, event) and orders shed on the gate's p99. */
    _Atomic uint64_t limited[ORDER_METRICS_LIMIT_LEVELS];
    _Atomic uint64_t shed_gate_p99;
    _Atomic uint64_t window_hits; /* 403 not_started / ended answered from memory */
    _Atomic uint64_t reconcile_confirmed, reconcile_cancelled, reconcile_reloaded;
    _Atomic int64_t reconcile_leader; /* 1 while this instance holds the reconciler lock */
    _Atomic int64_t requests_inflight;
    _Atomic int64_t kafka_inflight;
} order_metrics;

/** @brief Counts one answered request of `route` with `status` that took `us`. */
void order_metrics_request(order_metrics *m, order_route_id route, int status, int64_t us);

/** @brief Counts one accept-path stage that took `us`. */
void order_metrics_stage(order_metrics *m, order_stage stage, int64_t us);

/** @brief Counts one reserve.lua result code. */
void order_metrics_reserve(order_metrics *m, long long code);

/** @brief Counts one gate script call (op: an order_gate_op) that carried n orders. */
void order_metrics_gate(order_metrics *m, int op, size_t n);

/** @brief Writes the Prometheus text exposition. @returns a malloc'd string (caller frees)
 *  and its length in *len, or NULL. */
char *order_metrics_render(order_metrics *m, size_t *len);

#endif
