/* order_pay_pg: pay and cancel transactions. See order_pay_pg.h. */
#include "order_pay_pg.h"
#include "order_pg_exec.h"
#include "order_pay.h"
#include "order_recon_rule.h"

#include "sk_pg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The transition decided under the row lock: the order's UPDATE (conditional on
 * 'created', which the lock makes certain, and which keeps it safe on its own), and for
 * a release the event's stock_left + the order's quantity, in the caller's transaction. */
static int apply(PGconn *c, order_pg_job *job, const char *id, const char *new_status)
{
    int pay = strcmp(new_status, "paid") == 0;
    const char *params[2] = {id, pay ? job->payment_ref : new_status};
    /* $1 order id; $2 the payment reference (pay) or the closing status */
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "update order",
            pay ? "UPDATE seckill_order SET status = 'paid', paid_at = now(), payment_ref = $2 "
                  "WHERE order_id = $1::bigint AND status = 'created' RETURNING event_id"
                : "UPDATE seckill_order SET status = $2, closed_at = now() "
                  "WHERE order_id = $1::bigint AND status = 'created' RETURNING event_id",
            2, params, PGRES_TUPLES_OK, &res) != 0)
        return -1;
    int updated = PQntuples(res);
    PQclear(res);
    if (updated != 1) { /* the row lock makes this impossible: say so rather than commit */
        job->status = ORDER_PG_ERROR;
        snprintf(job->err, sizeof(job->err), "update order: %d rows", updated);
        return -1;
    }
    if (!order_pay_releases(new_status))
        return 0;
    char ev[24], q[12];
    snprintf(ev, sizeof(ev), "%" PRIu64, job->event_id);
    snprintf(q, sizeof(q), "%" PRIu32, job->quantity);
    const char *p_ev[2] = {ev /* $1 event id */, q /* $2 the order's units */};
    return order_pg_job_exec(
        c, job, "update event stock",
        "UPDATE seckill_event SET stock_left = stock_left + $2::int WHERE id = $1::bigint", 2,
        p_ev, PGRES_COMMAND_OK, NULL);
}

void order_pay_pg_run(void *pgconn, order_pg_job *job)
{
    PGconn *c = pgconn;
    job->changed = 0;
    if (order_pg_job_exec(c, job, "begin", "BEGIN", 0, NULL, PGRES_COMMAND_OK, NULL) != 0)
        return;
    char id[24];
    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    const char *params[1] = {id /* $1 order id */};
    PGresult *res;
    if (order_pg_job_exec(
            c, job, "select order",
            "SELECT o.event_id, o.user_id, o.status, o.payment_ref, "
            "coalesce(o.pay_by <= now(), false), "
            "coalesce((extract(epoch from o.pay_by) * 1000)::bigint, 0), e.rebuy_after_release, "
            "e.segments, o.quantity "
            "FROM seckill_order o JOIN seckill_event e ON e.id = o.event_id "
            "WHERE o.order_id = $1::bigint FOR UPDATE OF o",
            1, params, PGRES_TUPLES_OK, &res) != 0)
        goto rollback;
    if (PQntuples(res) == 0) {
        PQclear(res);
        job->status = ORDER_PG_NOT_FOUND;
        goto rollback;
    }
    job->event_id = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    job->user_id = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
    job->pay_by_ms = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
    job->rebuy = PQgetvalue(res, 0, 6)[0] == 't';
    job->segments = order_recon_segments_k(PQgetvalue(res, 0, 7));
    job->quantity = (uint32_t)strtoul(PQgetvalue(res, 0, 8), NULL, 10);
    order_pay_in in = {
        .op = job->kind == ORDER_PG_PAY_ORDER ? ORDER_PAY_OP_PAY : ORDER_PAY_OP_CANCEL,
        .status = PQgetvalue(res, 0, 2),
        .payment_ref = PQgetisnull(res, 0, 3) ? NULL : PQgetvalue(res, 0, 3),
        .overdue = PQgetvalue(res, 0, 4)[0] == 't',
        .owner = job->user_id,
        .actor = job->actor,
        .actor_admin = job->actor_admin,
        .ref = job->payment_ref,
    };
    order_pay_out out;
    order_pay_decide(&in, &out);
    PQclear(res);
    job->pay_answer = out.answer;
    snprintf(job->order_status, sizeof(job->order_status), "%s", out.status);
    if (!out.new_status) {
        job->status = ORDER_PG_OK;
        goto rollback; /* nothing to write: end the read-only transaction */
    }
    if (apply(c, job, id, out.new_status) != 0)
        goto rollback;
    if (order_pg_job_exec(c, job, "commit", "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL) != 0)
        return;
    job->changed = 1;
    job->status = ORDER_PG_OK;
    return;
rollback:
    if (PQstatus(c) == CONNECTION_OK) { /* its own failure changes nothing: the job's stands */
        char ignored[8];
        sk_pg_exec(c, "rollback", "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL, ignored,
                   sizeof(ignored));
    }
}

void order_pay_pg_mark_released(void *pgconn, order_pg_job *job)
{
    PGconn *c = pgconn;
    char id[24];
    snprintf(id, sizeof(id), "%" PRIu64, job->id);
    const char *params[1] = {id /* $1 order id */};
    if (order_pg_job_exec(c, job, "mark released",
                          "UPDATE seckill_order SET released_at = now() "
                          "WHERE order_id = $1::bigint AND status IN ('cancelled', 'expired') "
                          "AND released_at IS NULL",
                          1, params, PGRES_COMMAND_OK, NULL) == 0)
        job->status = ORDER_PG_OK;
}
