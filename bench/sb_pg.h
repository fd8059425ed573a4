/* sb_pg: samples how many rows seckill_order holds for one event, every 100 ms, on its
 * own thread with its own connection, so the timeline shows the drain into PostgreSQL
 * beside the burst at the front. The query is one index range count on
 * unique(event_id, user_id): cheap for the database even at 10 samples a second.
 *
 * Threads: sb_pg_start spawns the sampler; sb_pg_rows may be called from any thread;
 * sb_pg_stop joins it. The samples belong to the sampler until sb_pg_stop returns. */
#ifndef SB_PG_H
#define SB_PG_H

#include <stddef.h>
#include <stdint.h>

#include "sb_stats.h"

typedef struct sb_pg sb_pg;

/** @brief Connects with `conninfo` (libpq conninfo or URI) and starts sampling rows of
 *  `event_id` every period_ms, times counted from start_ns (CLOCK_MONOTONIC).
 *  @returns the sampler, or NULL with a message in errstr (no password in it). */
sb_pg *sb_pg_start(const char *conninfo, uint64_t event_id, uint64_t start_ns, int period_ms,
                   char *errstr, size_t errstr_size);

/** @brief The latest count (-1 before the first sample or after an error). Any thread. */
int64_t sb_pg_rows(const sb_pg *p);

/** @brief The count of the first sample (-1 until it is taken). Any thread. */
int64_t sb_pg_first_rows(const sb_pg *p);

/** @brief Errors seen by the sampler so far (the failed samples are skipped). */
uint64_t sb_pg_errors(const sb_pg *p);

/** @brief Stops and joins the sampler; *samples (owned by the caller, free()) and *n
 *  receive every sample in time order. Frees p. NULL p is fine. */
void sb_pg_stop(sb_pg *p, sb_db_sample **samples, size_t *n);

#endif
