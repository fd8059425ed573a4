/* order_pg: PostgreSQL for seckill-order (create event, read event, read order), on a
 * small pool of blocking threads so that no event loop ever waits on the database.
 *
 * A worker fills an order_pg_job and submits it; a pool thread runs it on its own
 * connection (reconnecting when the connection broke) and calls job->done on the pool
 * thread; it hands the job back to its worker (it may first do blocking work of its own,
 * as event creation does to load Redis). Parameterised SQL only.
 * The job is owned by the caller throughout; the pool only borrows it until done. */
#ifndef ORDER_PG_H
#define ORDER_PG_H

#include "order_pg_job.h"

typedef struct order_pg order_pg;

/** @brief Starts `threads` pool threads for `conninfo` (connections open lazily).
 *  @returns the pool or NULL on OOM. */
order_pg *order_pg_new(const char *conninfo, int threads);

/** @brief Queues a job. @returns 0, or -1 when the queue is over `max_queue` or the pool
 *  is stopping (done is not called). */
int order_pg_submit(order_pg *p, order_pg_job *job, int max_queue);

/** @brief Runs one job right here on a blocking connection (tests, tools). */
void order_pg_run(void *pgconn, order_pg_job *job);

/** @brief Finishes the queued jobs, stops the threads, closes. NULL is fine. */
void order_pg_free(order_pg *p);

#endif
