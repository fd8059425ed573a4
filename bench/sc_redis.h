/* sc_redis: what seckill-check reads from Redis for one event: the gate's stock, the
 * reservations waiting to become durable, the buyers. Keys per docs/design.md. The three keys
 * share the event's hash tag, so on a Redis Cluster they are read from the one master
 * of the event's slot (rcluster routes them; a plain URL is one server). */
#ifndef SC_REDIS_H
#define SC_REDIS_H

#include <stddef.h>
#include <stdint.h>

struct rcl_ctx;

/** @brief GET stock (present 0 if missing), the units of the pending entries (HVALS, issue 31), HLEN buyers (a hash, user -> order id) of event_id, in
 *  one pipelined round trip after reading its segment count K (meta "segments"). A
 *  segmented event (K > 1, issue 19) answers the sums over its segments (present 0 if
 *  any is missing), pending counting units (not the claims of borrowed ones).
 *  @returns 0, or -1 with a message in errstr. */
int sc_redis_figures(struct rcl_ctx *c, uint64_t event_id, int *present, long long *stock,
                     long long *pending, long long *buyers, char *errstr, size_t errstr_size);

/** @brief SCARD of the event's released set (release.lua: the orders whose unit came
 *  back), summed over the segments of a segmented event (a release goes home). @returns 0, or -1 with a message in errstr. */
int sc_redis_released(struct rcl_ctx *c, uint64_t event_id, long long *n, char *errstr,
                      size_t errstr_size);

#endif
