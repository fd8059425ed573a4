/* consumer_http: /healthz and /metrics of seckill-consumer, on its own thread.
 *
 * libevent's evhttp runs in a thread of its own with its own event_base, so a slow
 * scrape never delays the consumer loop, and a long database outage never makes
 * /healthz stop answering (liveness is "the process is alive and serving"; database
 * state shows in /metrics as seckill_consumer_db_up). */
#ifndef CONSUMER_HTTP_H
#define CONSUMER_HTTP_H

#include "consumer_loop.h"
#include "consumer_metrics.h"

#include <stddef.h>

typedef struct consumer_http consumer_http;

/** @brief Binds cfg->http_bind:cfg->http_port with the cfg's limits (header size,
 *  idle timeout; no request body; GET and HEAD only, others 405) and starts the thread.
 *  `cfg` and `m` are borrowed: they must outlive the server.
 *  @returns the handle, or NULL with errstr set. */
consumer_http *consumer_http_start(const consumer_cfg *cfg, consumer_metrics *m, char *errstr,
                                   size_t errstr_size);

/** @brief Stops the thread (waits for it) and frees. NULL is fine. */
void consumer_http_stop(consumer_http *h);

#endif
