/* sc_redis: what seckill-check reads from Redis for one event: the gate's stock, the
 * reservations waiting to become durable, the buyers. Keys per DESIGN.md. */
#ifndef SC_REDIS_H
#define SC_REDIS_H

#include <stddef.h>
#include <stdint.h>

struct redisContext;

/** @brief GET stock (present 0 if missing), HLEN pending, SCARD buyers of event_id.
 *  @returns 0, or -1 with a message in errstr. */
int sc_redis_figures(struct redisContext *c, uint64_t event_id, int *present, long long *stock,
                     long long *pending, long long *buyers, char *errstr, size_t errstr_size);

#endif
