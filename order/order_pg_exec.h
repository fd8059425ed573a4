/* order_pg_exec: one statement of an order_pg_job through sk_pg's query-or-fail path,
 * shared by the job runners of order_pg.c and order_pay_pg.c (blocking: pool threads). */
#ifndef ORDER_PG_EXEC_H
#define ORDER_PG_EXEC_H

#include "order_pg_job.h"
#include "sk_pg.h"

/** @brief Runs sql with n text parameters on c, answer in *res when want is met (the
 *  caller PQclears it; res NULL: none wanted). On failure job is marked failed
 *  (ORDER_PG_ERROR) with the message in job->err, and the result is freed.
 *  @returns 0 or -1. */
static inline int order_pg_job_exec(PGconn *c, order_pg_job *job, const char *what,
                                    const char *sql, int n, const char *const *params,
                                    ExecStatusType want, PGresult **res)
{
    if (sk_pg_exec(c, what, sql, n, params, want, res, job->err, sizeof(job->err)) == SK_PG_OK)
        return 0;
    job->status = ORDER_PG_ERROR;
    return -1;
}

#endif
