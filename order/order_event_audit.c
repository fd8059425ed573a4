/* order_event_audit: an event's admin record. See order_event_audit.h. */
#include "order_event_audit.h"
#include "order_http_int.h"
#include "sk_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct audit_req {
    order_req_head h;
    order_pg_job job;
} audit_req;

static void after_pg_audit(order_task *t)
{
    audit_req *r = ORDER_CONTAINER_OF(t, audit_req, h.task);
    if (r->job.status != ORDER_PG_OK) {
        sk_log(SK_LOG_WARN, "pg_failed", "op=read_audit err=\"%s\"", r->job.err);
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is unavailable", 0);
        return;
    }
    /* {"event_id":"..","entries":[...],"offset":O,"next_offset":N|null} */
    size_t n = strlen(r->job.audit_json) + 160;
    char *body = malloc(n);
    if (!body) {
        free(r->job.audit_json);
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "out of memory", 0);
        return;
    }
    char next[24] = "null";
    if (r->job.more)
        snprintf(next, sizeof(next), "%" PRId64, r->job.offset + r->job.limit);
    int len = snprintf(body, n,
                       "{\"event_id\":\"%" PRIu64 "\",\"entries\":%s,\"offset\":%" PRId64
                       ",\"next_offset\":%s}",
                       r->job.id, r->job.audit_json, r->job.offset, next);
    free(r->job.audit_json);
    order_req_json_free(&r->h, 200, body, len > 0 ? (size_t)len : 0);
    free(body);
}

void order_event_audit_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us)
{
    sk_jwt_claims claims;
    if (order_http_authorize(w, req, rt->id, start_us, "reading the admin record", &claims) != 0)
        return;
    long long offset, limit;
    if (order_http_page(w, req, rt->id, start_us, 1000000, ORDER_AUDIT_LIMIT_MAX, &offset, &limit) != 0)
        return;
    audit_req *r = order_req_alloc(sizeof(*r), w, req, rt->id, start_us);
    if (!r)
        return;
    r->job.kind = ORDER_PG_READ_AUDIT;
    r->job.id = rt->arg;
    r->job.offset = offset;
    r->job.limit = limit;
    if (order_req_submit_pg(&r->h, &r->job, after_pg_audit, NULL) != 0)
        order_req_error_free(&r->h, ORDER_ERR_UNAVAILABLE, "the database is busy or absent", 0);
}
