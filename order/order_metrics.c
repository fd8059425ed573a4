/* order_metrics: counters and Prometheus text. See order_metrics.h. */
#include "order_metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const int statuses[ORDER_METRICS_STATUSES - 1] = {200, 201, 202, 400, 401, 403, 404,
                                                          405, 409, 413, 429, 500, 503};
/* Upper bounds in microseconds; the last bucket is +Inf. */
static const int64_t bounds_us[ORDER_METRICS_BUCKETS - 1] = {
    250, 500, 1000, 2000, 3000, 5000, 7500, 10000, 25000, 50000, 100000, 1000000};

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
    int b = ORDER_METRICS_BUCKETS - 1;
    for (int i = 0; i < ORDER_METRICS_BUCKETS - 1; i++)
        if (us <= bounds_us[i]) {
            b = i;
            break;
        }
    atomic_fetch_add_explicit(&m->latency[route][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->latency_sum_us[route], (uint64_t)(us > 0 ? us : 0),
                              memory_order_relaxed);
}

static int bucket_of(int64_t us)
{
    for (int i = 0; i < ORDER_METRICS_BUCKETS - 1; i++)
        if (us <= bounds_us[i])
            return i;
    return ORDER_METRICS_BUCKETS - 1;
}

void order_metrics_stage(order_metrics *m, order_stage stage, int64_t us)
{
    if ((unsigned)stage >= ORDER_STAGE_COUNT)
        return;
    atomic_fetch_add_explicit(&m->stage[stage][bucket_of(us)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->stage_sum_us[stage], (uint64_t)(us > 0 ? us : 0),
                              memory_order_relaxed);
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

char *order_metrics_render(order_metrics *m, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    fprintf(f, "# HELP seckill_order_requests_total HTTP requests answered, by route and status.\n"
               "# TYPE seckill_order_requests_total counter\n");
    for (int r = 0; r < ORDER_ROUTE_COUNT; r++)
        for (int s = 0; s < ORDER_METRICS_STATUSES; s++) {
            uint64_t v = LOAD(m->requests[r][s]);
            if (!v)
                continue;
            if (s < ORDER_METRICS_STATUSES - 1)
                fprintf(f, "seckill_order_requests_total{route=\"%s\",status=\"%d\"} %" PRIu64 "\n",
                        order_route_name((order_route_id)r), statuses[s], v);
            else
                fprintf(f, "seckill_order_requests_total{route=\"%s\",status=\"other\"} %" PRIu64 "\n",
                        order_route_name((order_route_id)r), v);
        }
    fprintf(f, "# HELP seckill_order_request_seconds Time from request to answer, by route.\n"
               "# TYPE seckill_order_request_seconds histogram\n");
    for (int r = 0; r < ORDER_ROUTE_COUNT; r++) {
        uint64_t cum = 0;
        for (int b = 0; b < ORDER_METRICS_BUCKETS; b++) {
            cum += LOAD(m->latency[r][b]);
            if (b < ORDER_METRICS_BUCKETS - 1)
                fprintf(f, "seckill_order_request_seconds_bucket{route=\"%s\",le=\"%g\"} %" PRIu64 "\n",
                        order_route_name((order_route_id)r), (double)bounds_us[b] / 1e6, cum);
            else
                fprintf(f, "seckill_order_request_seconds_bucket{route=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
                        order_route_name((order_route_id)r), cum);
        }
        fprintf(f, "seckill_order_request_seconds_sum{route=\"%s\"} %.6f\n",
                order_route_name((order_route_id)r), (double)LOAD(m->latency_sum_us[r]) / 1e6);
        fprintf(f, "seckill_order_request_seconds_count{route=\"%s\"} %" PRIu64 "\n",
                order_route_name((order_route_id)r), cum);
    }
    static const char *stages[ORDER_STAGE_COUNT] = {"reserve", "kafka", "confirm"};
    fprintf(f, "# HELP seckill_order_stage_seconds Accept-path stages: reserve.lua, Kafka delivery, "
               "confirm.lua.\n# TYPE seckill_order_stage_seconds histogram\n");
    for (int st = 0; st < ORDER_STAGE_COUNT; st++) {
        uint64_t cum = 0;
        for (int b = 0; b < ORDER_METRICS_BUCKETS; b++) {
            cum += LOAD(m->stage[st][b]);
            if (b < ORDER_METRICS_BUCKETS - 1)
                fprintf(f, "seckill_order_stage_seconds_bucket{stage=\"%s\",le=\"%g\"} %" PRIu64 "\n",
                        stages[st], (double)bounds_us[b] / 1e6, cum);
            else
                fprintf(f, "seckill_order_stage_seconds_bucket{stage=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
                        stages[st], cum);
        }
        fprintf(f, "seckill_order_stage_seconds_sum{stage=\"%s\"} %.6f\n", stages[st],
                (double)LOAD(m->stage_sum_us[st]) / 1e6);
        fprintf(f, "seckill_order_stage_seconds_count{stage=\"%s\"} %" PRIu64 "\n", stages[st], cum);
    }
    static const char *codes[ORDER_METRICS_RESERVE_CODES] = {
        "ok", "sold_out", "duplicate", "not_started", "ended", "not_loaded", "other"};
    fprintf(f, "# HELP seckill_order_reserve_total reserve.lua results, by code.\n"
               "# TYPE seckill_order_reserve_total counter\n");
    for (int i = 0; i < ORDER_METRICS_RESERVE_CODES; i++)
        fprintf(f, "seckill_order_reserve_total{result=\"%s\"} %" PRIu64 "\n", codes[i],
                LOAD(m->reserve[i]));
    static const char *gate_ops[ORDER_METRICS_GATE_OPS] = {"reserve", "cancel", "confirm"};
    fprintf(f, "# HELP seckill_order_gate_calls_total Gate script calls (one per event per loop "
               "turn).\n# TYPE seckill_order_gate_calls_total counter\n");
    for (int i = 0; i < ORDER_METRICS_GATE_OPS; i++)
        fprintf(f, "seckill_order_gate_calls_total{script=\"%s\"} %" PRIu64 "\n", gate_ops[i],
                LOAD(m->gate_calls[i]));
    fprintf(f, "# HELP seckill_order_gate_orders_total Orders carried by the gate's script calls.\n"
               "# TYPE seckill_order_gate_orders_total counter\n");
    for (int i = 0; i < ORDER_METRICS_GATE_OPS; i++)
        fprintf(f, "seckill_order_gate_orders_total{script=\"%s\"} %" PRIu64 "\n", gate_ops[i],
                LOAD(m->gate_orders[i]));
    static const char *levels[ORDER_METRICS_LIMIT_LEVELS] = {"ip", "user", "event"};
    fprintf(f, "# HELP seckill_order_limited_total Orders refused 429 by a rate limit, by level.\n"
               "# TYPE seckill_order_limited_total counter\n");
    for (int i = 0; i < ORDER_METRICS_LIMIT_LEVELS; i++)
        fprintf(f, "seckill_order_limited_total{level=\"%s\"} %" PRIu64 "\n", levels[i],
                LOAD(m->limited[i]));
    fprintf(f, "# HELP seckill_order_shed_total New orders answered 503 at once by admission "
               "control, by reason.\n# TYPE seckill_order_shed_total counter\n"
               "seckill_order_shed_total{reason=\"gate_p99\"} %" PRIu64 "\n"
               "# HELP seckill_order_window_hits_total Orders answered 403 not_started or ended "
               "from the sale window known in memory, without Redis.\n"
               "# TYPE seckill_order_window_hits_total counter\n"
               "seckill_order_window_hits_total %" PRIu64 "\n",
            LOAD(m->shed_gate_p99), LOAD(m->window_hits));
    fprintf(f,
            "# HELP seckill_order_redis_errors_total Redis commands that failed (error reply, "
            "disconnect, timeout).\n# TYPE seckill_order_redis_errors_total counter\n"
            "seckill_order_redis_errors_total %" PRIu64 "\n"
            "# HELP seckill_order_kafka_delivery_failures_total Orders whose delivery report "
            "was an error.\n# TYPE seckill_order_kafka_delivery_failures_total counter\n"
            "seckill_order_kafka_delivery_failures_total %" PRIu64 "\n"
            "# HELP seckill_order_kafka_produce_failures_total Orders librdkafka refused to "
            "queue.\n# TYPE seckill_order_kafka_produce_failures_total counter\n"
            "seckill_order_kafka_produce_failures_total %" PRIu64 "\n"
            "# HELP seckill_order_soldout_flag_hits_total Orders answered sold out by the "
            "local flag, without Redis.\n# TYPE seckill_order_soldout_flag_hits_total counter\n"
            "seckill_order_soldout_flag_hits_total %" PRIu64 "\n"
            "# HELP seckill_order_rate_limited_total Orders refused by the per-user rate "
            "limit.\n# TYPE seckill_order_rate_limited_total counter\n"
            "seckill_order_rate_limited_total %" PRIu64 "\n"
            "# HELP seckill_order_overload_rejections_total Requests refused at once by the "
            "in-flight bounds.\n# TYPE seckill_order_overload_rejections_total counter\n"
            "seckill_order_overload_rejections_total %" PRIu64 "\n"
            "# HELP seckill_order_requests_inflight Requests received and not finished (an accepted "
            "order finishes when confirm.lua answers, just after its 202).\n"
            "# TYPE seckill_order_requests_inflight gauge\n"
            "seckill_order_requests_inflight %" PRId64 "\n"
            "# HELP seckill_order_kafka_inflight Messages produced and not yet reported.\n"
            "# TYPE seckill_order_kafka_inflight gauge\n"
            "seckill_order_kafka_inflight %" PRId64 "\n",
            LOAD(m->redis_errors), LOAD(m->kafka_delivery_failures),
            LOAD(m->kafka_produce_failures), LOAD(m->soldout_flag_hits), LOAD(m->rate_limited),
            LOAD(m->overload_rejections), LOAD(m->requests_inflight), LOAD(m->kafka_inflight));
    fprintf(f,
            "# HELP seckill_order_reconcile_leader 1 while this instance is the one reconciling.\n"
            "# TYPE seckill_order_reconcile_leader gauge\n"
            "seckill_order_reconcile_leader %" PRId64 "\n"
            "# HELP seckill_order_reconcile_confirmed_total Pending entries the reconciler found "
            "in PostgreSQL and confirmed.\n# TYPE seckill_order_reconcile_confirmed_total counter\n"
            "seckill_order_reconcile_confirmed_total %" PRIu64 "\n"
            "# HELP seckill_order_reconcile_cancelled_total Reservations the reconciler gave back "
            "(their order can no longer reach PostgreSQL).\n"
            "# TYPE seckill_order_reconcile_cancelled_total counter\n"
            "seckill_order_reconcile_cancelled_total %" PRIu64 "\n"
            "# HELP seckill_order_reconcile_reloaded_total Event gates rebuilt from PostgreSQL "
            "after their Redis keys were lost.\n"
            "# TYPE seckill_order_reconcile_reloaded_total counter\n"
            "seckill_order_reconcile_reloaded_total %" PRIu64 "\n",
            LOAD(m->reconcile_leader), LOAD(m->reconcile_confirmed), LOAD(m->reconcile_cancelled),
            LOAD(m->reconcile_reloaded));
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = size;
    return buf;
}
