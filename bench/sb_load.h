/* sb_load: the load engine of seckill-bench: keep-alive HTTP/1.1 connections driven by
 * libevent, one event_base per worker thread, no thread per connection.
 *
 * Design: each worker owns its connections, its stats and its event_base; nothing on
 * the hot path is shared but one atomic request counter (which request number to send
 * next, so that N requests are sent exactly once over all workers). A connection
 * writes its next request as soon as it has room (pipeline depth, 1 by default) and
 * the rate limiter (a token bucket refilled by a 2 ms timer) allows it. Closed loop (the
 * default), the bucket holds at most 20 ms of requests: after a slow moment the worker
 * goes on at the rate, and what it could not send is never sent. Open loop (open_loop),
 * requests keep their schedule: the bucket holds up to 10 s of requests owed, sent as
 * soon as a connection has room, and each one's latency counts from when it was due,
 * not when it left (so a slow server is not flattered by the requests it delayed:
 * no coordinated omission). Responses are
 * framed by sb_http and counted by sb_stats; the request's latency is measured from
 * the moment its bytes were handed to the kernel. A connection that breaks counts its
 * in-flight requests as answered with status 0 ("io") and reconnects with a backoff.
 *
 * Threads: sb_load_start spawns the workers; sb_load_progress and sb_load_request_stop
 * may be called from any thread (they read/write atomics only); sb_load_join joins. */
#ifndef SB_LOAD_H
#define SB_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "sb_plan.h"
#include "sb_stats.h"

/* The bearer tokens of users 1..N: token of user u is arena[off[u-1] .. off[u]). */
typedef struct sb_tokens {
    char *arena;
    uint32_t *off; /* N + 1 entries */
    uint64_t n;
} sb_tokens;

typedef struct sb_load_cfg {
    const sb_url *urls; /* connections are spread over them in turn */
    int nurls;
    int connections; /* total over all workers */
    int threads;
    int pipeline;       /* requests in flight per connection (1..64) */
    uint64_t requests;  /* stop after this many (0: no limit) */
    double duration_s;  /* stop sending after this long (0: no limit) */
    double rate;        /* target requests/s over all workers (0: flat out) */
    int open_loop;      /* with rate: requests keep their schedule (see below) */
    double stall_s;     /* give up when no answer comes for this long */
    uint64_t event_id;
    int read_page;      /* 1: each request is GET /api/v1/events/{id} (the page read before
                         * buying) instead of an order */
    int polls;          /* after a 202, the connection polls GET /api/v1/orders/{id} this many
                         * times with the buyer's token before its next order (counted apart:
                         * sb_stats.polls); with pipeline > 1 a later 202 takes over the polls
                         * an earlier one had left */
    int quantity;       /* issue 31: > 1: each order carries {"quantity":q}, q from 1 to this
                         * (a hash of the request's index: the same run asks the same) */
    const sb_plan *plan;
    const sb_tokens *tokens;
} sb_load_cfg;

typedef struct sb_load sb_load;

typedef struct sb_load_progress_t {
    uint64_t sent, answered, accepted, errors; /* errors: status 0 and 5xx */
    uint64_t connect_errors;
} sb_load_progress_t;

/** @brief Prepares workers and resolves the URLs; cfg and what it points to must outlive l.
 *  @returns the engine or NULL with a message in errstr. */
sb_load *sb_load_new(const sb_load_cfg *cfg, char *errstr, size_t errstr_size);

/** @brief Starts the workers; times are counted from start_ns (CLOCK_MONOTONIC).
 *  @returns 0, or -1 with errstr set. */
int sb_load_start(sb_load *l, uint64_t start_ns, char *errstr, size_t errstr_size);

/** @brief Progress so far (approximate: refreshed by each worker every few ms). Any thread. */
void sb_load_progress(const sb_load *l, sb_load_progress_t *p);

/** @brief 1 once every worker has finished. Any thread. */
int sb_load_finished(const sb_load *l);

/** @brief Asks the workers to stop sending and finish what is in flight. Any thread,
 *  async-signal-safe (one atomic store). */
void sb_load_request_stop(sb_load *l);

/** @brief Joins the workers and adds their stats into *out. @returns 0, or -1 if a worker
 *  ran out of memory or gave up (stalled) (the stats are still merged). */
int sb_load_join(sb_load *l, sb_stats *out, char *errstr, size_t errstr_size);

/** @brief Frees l (joins first if needed). NULL is fine. */
void sb_load_free(sb_load *l);

#endif
