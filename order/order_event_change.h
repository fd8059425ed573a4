/* order_event_change: an admin changes a live event (issue 32), on the worker's loop.
 *  - PATCH /api/v1/events/{id}: name, starts_at, ends_at, per_user_limit, limits.
 *  - POST /api/v1/events/{id}/end: ends the sale now (ends_at = the front's now).
 *  - POST /api/v1/events/{id}/stock: restock, up or down, while orders flow (below).
 *  - DELETE /api/v1/events/{id}: remove an ended event (order_event_remove_pg).
 * Both: the row is locked, checked and updated in one PostgreSQL transaction (on a pool
 * thread: order_event_change_pg below); then every segment's meta in Redis gets the new
 * window and limits (reserve.lua judges with it at once, on every front), the event's
 * count in ORDER_CHANGED_KEY is raised (the other fronts forget what they remembered of
 * the event within events.pause_refresh_ms, order_pauser.h), and this front sets its own
 * memory at once, so its GET shows the change. An end also clears a pause (the sale is
 * over: orders are 403 ended, not 503 paused).
 *
 * What is refused, 409 conflict with the reason (nothing changed):
 *  - any change of an event that has ended (ends_at <= now);
 *  - an ends_at not in the future (POST /end is the way to end now), or not after the
 *    start;
 *  - a new starts_at once the sale opened or opens within ORDER_CHANGE_START_GUARD_MS,
 *    or once PostgreSQL holds an order of the event: orders may have been taken under
 *    the old window.
 * The orders already taken go on (pay, cancel, expiry): nothing of them is touched.
 *
 * Restock: {"add": N} (N < 0 takes units out) or {"total": N}. One delta moves PostgreSQL's
 * stock_total and stock_left and the gate's stock together, so orders in flight (whose
 * reservations and inserts are deltas too) leave both exact. The gate moves inside the
 * transaction, under the event's lock (order_loader_restock: event_restock.lua on each
 * segment): new units are split over the segments as at creation; units taken out come
 * from segment 0 on, each segment giving what it has unsold. A removal past the unsold
 * units is refused whole (409, the message says how many could go): a unit held by an
 * order (pending, created or paid) is never taken back. A segment not loaded (Redis lost
 * it) is 503: the reconciler's reload reads PostgreSQL, which has not moved. */
#ifndef ORDER_EVENT_CHANGE_H
#define ORDER_EVENT_CHANGE_H

#include "order_app.h"
#include "order_pg_job.h"
#include "order_route.h"

#include <stdint.h>

#define ORDER_CHANGE_START_GUARD_MS 5000

/** @brief Serves ORDER_ROUTE_EVENT_CHANGE and ORDER_ROUTE_EVENT_END (rt->arg: the id). */
void order_event_change_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                               int64_t start_us);

/** @brief Serves ORDER_ROUTE_EVENT_STOCK (rt->arg: the id): POST
 *  /api/v1/events/{id}/stock {"add": N} or {"total": N}, see order_event_restock_pg. */
void order_event_stock_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                              int64_t start_us);

/** @brief Serves ORDER_ROUTE_EVENT_DELETE (rt->arg: the id): DELETE /api/v1/events/{id},
 *  see order_event_remove_pg. 200 {"event_id","removed":"deleted"|"archived"}. */
void order_event_remove_handle(order_worker *w, sk_http_req *req, const order_route *rt,
                               int64_t start_us);

/** @brief The transaction of ORDER_PG_CHANGE_EVENT, on a pool thread (order_pg.c). On
 *  ORDER_PG_OK job->spec and job->stock_left hold the event as changed;
 *  ORDER_PG_NOT_FOUND; ORDER_PG_CONFLICT with job->conflict; ORDER_PG_ERROR. */
void order_event_change_pg(void *pgconn, order_pg_job *job);

/** @brief The transaction of ORDER_PG_RESTOCK_EVENT, on a pool thread (order_pg.c): the
 *  row locked and checked, stock_total and stock_left moved by the same delta, the gate
 *  moved by order_loader_restock inside the transaction (committed only if the gate took
 *  it whole). ORDER_PG_OK with job->spec and job->stock_left as they now are;
 *  ORDER_PG_NOT_FOUND; ORDER_PG_CONFLICT (ended; a removal past the unsold units,
 *  job->available); ORDER_PG_RETRY (a segment not loaded); ORDER_PG_ERROR. */
void order_event_restock_pg(void *pgconn, order_pg_job *job);

/** @brief ORDER_PG_REMOVE_EVENT (DELETE /api/v1/events/{id}), on a pool thread: an event
 *  whose sale is on is 409 (end it first); one that never took an order (none in
 *  PostgreSQL, no buyer or pending entry in Redis) is deleted, its Redis keys first
 *  (order_loader_remove); one that did is archived (archived_at: out of the list, its
 *  orders and record readable). The record gets a delete or archive row in the same
 *  transaction. job->removed 1 deleted, 2 archived. */
void order_event_remove_pg(void *pgconn, order_pg_job *job);

/** @brief ORDER_PG_AUDIT_EVENT: one audit row for an act without a transaction of its
 *  own (pause, resume). ORDER_PG_OK or ORDER_PG_ERROR. */
void order_event_audit_pg(void *pgconn, order_pg_job *job);

/** @brief ORDER_PG_READ_AUDIT: the page [offset, offset + limit) of the event's record,
 *  oldest first, as a JSON array in job->audit_json, and job->more. */
void order_event_audit_read_pg(void *pgconn, order_pg_job *job);

/** @brief The audit JSON of an event's fields (name, stock_total, stock_left, starts_at,
 *  ends_at, per_user_limit, limits), malloc'd, or NULL on OOM. */
char *order_event_audit_json(const order_event_spec *s, int64_t stock_left);

#endif
