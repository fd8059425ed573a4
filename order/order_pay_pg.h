/* order_pay_pg: a pay or a cancel as one PostgreSQL transaction (issue 22), run by
 * order_pg's pool threads (ORDER_PG_PAY_ORDER, ORDER_PG_CANCEL_ORDER).
 *
 *   BEGIN; SELECT the order (and its event's rebuy_after_release) FOR UPDATE;
 *   order_pay_decide (order_pay.h); UPDATE ... WHERE status = 'created' RETURNING;
 *   for cancelled or expired: UPDATE seckill_event SET stock_left = stock_left + 1; COMMIT.
 *
 * The row lock serialises this with another front's pay or cancel and with the
 * consumer's expiry (which skips locked rows and re-checks status = 'created' in its own
 * conditional UPDATE), so exactly one transition happens per order, and every caller
 * after it reads the winner's status. The Redis half of a release (release.lua) is the
 * caller's, after the commit; ORDER_PG_MARK_RELEASED records it (released_at), and rows
 * still NULL there are retried by the release sweep. */
#ifndef ORDER_PAY_PG_H
#define ORDER_PAY_PG_H

#include "order_pg_job.h"

/** @brief Runs job (PAY_ORDER or CANCEL_ORDER) on c. Out: status (OK, NOT_FOUND: not in
 *  PostgreSQL, ERROR), and when OK: pay_answer, order_status, changed, event_id, user_id,
 *  pay_by_ms, rebuy. Blocking: on a pool thread only. */
void order_pay_pg_run(void *pgconn, order_pg_job *job);

/** @brief Sets released_at of order job->id (if not set). Blocking. */
void order_pay_pg_mark_released(void *pgconn, order_pg_job *job);

#endif
