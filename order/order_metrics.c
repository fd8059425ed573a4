/* order_metrics: counters and Prometheus text. See order_metrics.h. */
#include "order_metrics.h"

#include <stdio.h>
#include <stdlib.h>

static const int statuses[ORDER_METRICS_STATUSES - 1] = {200, 201, 202, 400, 401, 403, 404,
                                                          405, 409, 413, 429, 500, 503};
/* Upper bounds in seconds (whole microseconds, so that sk_prom_hist_observe_micro is
 * exact); the +Inf bucket follows. */
static const double bounds_s[] = {0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075,
                                  0.01,    0.025,  0.05,  0.1,   1};
static const sk_prom_bounds bounds = {bounds_s, (int)(sizeof(bounds_s) / sizeof(bounds_s[0]))};

void order_metrics_request(order_metrics *m, order_route_id route, int status, int64_t us)
{
    if ((unsigned)route >= ORDER_ROUTE_COUNT)
        route = ORDER_ROUTE_NONE;
    int si = ORDER_METRICS_STATUSES - 1;
    for (int i = 0; i < ORDER_METRICS_STATUSES - 1; i++)
        if (statuses[i] == status) {
            si = i;
            break;
        }
    atomic_fetch_add_explicit(&m->requests[route][si], 1, memory_order_relaxed);
    sk_prom_hist_observe_micro(&m->latency[route], &bounds, us);
}

void order_metrics_stage(order_metrics *m, order_stage stage, int64_t us)
{
    if ((unsigned)stage >= ORDER_STAGE_COUNT)
        return;
    sk_prom_hist_observe_micro(&m->stage[stage], &bounds, us);
}

void order_metrics_reserve(order_metrics *m, long long code)
{
    int i = (code >= 0 && code <= 5) ? (int)code : ORDER_METRICS_RESERVE_CODES - 1;
    atomic_fetch_add_explicit(&m->reserve[i], 1, memory_order_relaxed);
}

void order_metrics_gate(order_metrics *m, int op, size_t n)
{
    if (op < 0 || op >= ORDER_METRICS_GATE_OPS)
        return;
    atomic_fetch_add_explicit(&m->gate_calls[op], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->gate_orders[op], n, memory_order_relaxed);
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* Requests by route and status: only the pairs seen (a route x status grid is mostly 0). */
static void render_requests(FILE *f, order_metrics *m)
{
    sk_prom_head(f, "seckill_order_requests_total", "counter",
                 "HTTP requests answered, by route and status.");
    for (int r = 0; r < ORDER_ROUTE_COUNT; r++)
        for (int s = 0; s < ORDER_METRICS_STATUSES; s++) {
            uint64_t v = LOAD(m->requests[r][s]);
            if (!v)
                continue;
            char status[16];
            if (s < ORDER_METRICS_STATUSES - 1)
                snprintf(status, sizeof(status), "%d", statuses[s]);
            else
                snprintf(status, sizeof(status), "other");
            sk_prom_label l[2] = {{"route", order_route_name((order_route_id)r)},
                                  {"status", status}};
            sk_prom_sample_u64(f, "seckill_order_requests_total", l, 2, v);
        }
}

static void render_histograms(FILE *f, order_metrics *m)
{
    sk_prom_head(f, "seckill_order_request_seconds", "histogram",
                 "Time from request to answer, by route.");
    for (int r = 0; r < ORDER_ROUTE_COUNT; r++) {
        sk_prom_label l = {"route", order_route_name((order_route_id)r)};
        sk_prom_hist_write(f, "seckill_order_request_seconds", &l, 1, &m->latency[r], &bounds);
    }
    static const char *stages[ORDER_STAGE_COUNT] = {"reserve", "kafka", "confirm"};
    sk_prom_head(f, "seckill_order_stage_seconds", "histogram",
                 "Accept-path stages: reserve.lua, Kafka delivery, confirm.lua.");
    for (int st = 0; st < ORDER_STAGE_COUNT; st++) {
        sk_prom_label l = {"stage", stages[st]};
        sk_prom_hist_write(f, "seckill_order_stage_seconds", &l, 1, &m->stage[st], &bounds);
    }
}

/* One counter family with one label, a sample for each of n values (zeros included). */
static void render_family(FILE *f, const char *name, const char *help, const char *label,
                          const char *const *values, _Atomic uint64_t *counts, int n)
{
    sk_prom_head(f, name, "counter", help);
    for (int i = 0; i < n; i++) {
        sk_prom_label l = {label, values[i]};
        sk_prom_sample_u64(f, name, &l, 1, LOAD(counts[i]));
    }
}

static void render_gate(FILE *f, order_metrics *m)
{
    static const char *const codes[ORDER_METRICS_RESERVE_CODES] = {
        "ok", "sold_out", "duplicate", "not_started", "ended", "not_loaded", "other"};
    static const char *const gate_ops[ORDER_METRICS_GATE_OPS] = {"reserve", "cancel", "confirm",
                                                                  "borrow"};
    render_family(f, "seckill_order_reserve_total", "reserve.lua results, by code.", "result",
                  codes, m->reserve, ORDER_METRICS_RESERVE_CODES);
    render_family(f, "seckill_order_gate_calls_total",
                  "Gate script calls (one per event per loop turn).", "script", gate_ops,
                  m->gate_calls, ORDER_METRICS_GATE_OPS);
    render_family(f, "seckill_order_gate_orders_total",
                  "Orders carried by the gate's script calls.", "script", gate_ops,
                  m->gate_orders, ORDER_METRICS_GATE_OPS);
}

/* Issue 19's levels: 429s by level, 503s shed at once, 403s from the known windows. */
static void render_limits(FILE *f, order_metrics *m)
{
    static const char *const levels[ORDER_METRICS_LIMIT_LEVELS] = {"ip", "user", "event"};
    render_family(f, "seckill_order_limited_total", "Orders refused 429 by a rate limit, by level.",
                  "level", levels, m->limited, ORDER_METRICS_LIMIT_LEVELS);
    sk_prom_head(f, "seckill_order_shed_total", "counter",
                 "New orders answered 503 at once by admission control, by reason.");
    sk_prom_label l = {"reason", "gate_p99"};
    sk_prom_sample_u64(f, "seckill_order_shed_total", &l, 1, LOAD(m->shed_gate_p99));
    sk_prom_counter(f, "seckill_order_window_hits_total",
                    "Orders answered 403 not_started or ended from the sale window known in "
                    "memory, without Redis.",
                    LOAD(m->window_hits));
}

static void render_failures(FILE *f, order_metrics *m)
{
    sk_prom_counter(f, "seckill_order_redis_errors_total",
                    "Redis commands that failed (error reply, disconnect, timeout).",
                    LOAD(m->redis_errors));
    sk_prom_counter(f, "seckill_order_kafka_delivery_failures_total",
                    "Orders whose delivery report was an error.",
                    LOAD(m->kafka_delivery_failures));
    sk_prom_counter(f, "seckill_order_kafka_produce_failures_total",
                    "Orders librdkafka refused to queue.", LOAD(m->kafka_produce_failures));
    sk_prom_counter(f, "seckill_order_soldout_flag_hits_total",
                    "Orders answered sold out by the local flag, without Redis.",
                    LOAD(m->soldout_flag_hits));
    sk_prom_counter(f, "seckill_order_rate_limited_total",
                    "Orders refused by the per-user rate limit.", LOAD(m->rate_limited));
    sk_prom_counter(f, "seckill_order_overload_rejections_total",
                    "Requests refused at once by the in-flight bounds.",
                    LOAD(m->overload_rejections));
    sk_prom_gauge(f, "seckill_order_requests_inflight",
                  "Requests received and not finished (an accepted order finishes when "
                  "confirm.lua answers, up to 10 ms after its 202: confirms are gathered).",
                  LOAD(m->requests_inflight));
    sk_prom_gauge(f, "seckill_order_kafka_inflight", "Messages produced and not yet reported.",
                  LOAD(m->kafka_inflight));
}

static void render_reconcile(FILE *f, order_metrics *m)
{
    sk_prom_gauge(f, "seckill_order_reconcile_leader",
                  "1 while this instance is the one reconciling.", LOAD(m->reconcile_leader));
    sk_prom_counter(f, "seckill_order_reconcile_confirmed_total",
                    "Pending entries the reconciler found in PostgreSQL and confirmed.",
                    LOAD(m->reconcile_confirmed));
    sk_prom_counter(f, "seckill_order_reconcile_cancelled_total",
                    "Reservations the reconciler gave back (their order can no longer reach "
                    "PostgreSQL).",
                    LOAD(m->reconcile_cancelled));
    sk_prom_counter(f, "seckill_order_reconcile_reloaded_total",
                    "Event gates rebuilt from PostgreSQL after their Redis keys were lost.",
                    LOAD(m->reconcile_reloaded));
}

char *order_metrics_render(order_metrics *m, size_t *len)
{
    sk_prom_text t;
    if (sk_prom_text_open(&t) != 0)
        return NULL;
    render_requests(t.f, m);
    render_histograms(t.f, m);
    render_gate(t.f, m);
    render_limits(t.f, m);
    render_failures(t.f, m);
    render_reconcile(t.f, m);
    return sk_prom_text_close(&t, len);
}
