/* order_place_wait: redis.wait_replicas, the gate's optional WAIT (issue 33).
 *
 * With redis.wait_replicas N > 0, a reserved order is produced to Kafka only after
 * `WAIT N redis.wait_timeout_ms` on the worker's Redis connection answered N or more:
 * its reservation is then on N replicas, so a failover to one of them keeps it. Fewer
 * (the replicas are cut off, slow, or gone) and the order is cancelled and answered 503
 * (nothing was taken, nothing went to Kafka): a 202 is never sent for a reservation
 * that a failover could throw away. One WAIT per worker and loop turn covers every
 * reservation of the turn: WAIT counts the replicas that acknowledged all of the
 * connection's writes so far. Not with a Redis Cluster (order_config_check refuses
 * it): WAIT goes to one node, the reservations to many. */
#ifndef ORDER_PLACE_WAIT_H
#define ORDER_PLACE_WAIT_H

#include "order_place_int.h"

typedef struct order_place_wait order_place_wait;

/* What becomes of a reserved order: pass (produce to Kafka) or fail (cancel, 503). */
typedef void order_place_wait_fn(order_place_req *r);

/** @brief The worker's WAIT queue, or NULL when redis.wait_replicas is 0 (then the
 *  caller produces at once) or memory is short (*err set to 1). */
order_place_wait *order_place_wait_new(order_worker *w, order_place_wait_fn *pass,
                                       order_place_wait_fn *fail, int *err);

/** @brief Queues reserved r: at the end of this loop turn one WAIT goes out for the
 *  turn's orders, and each then goes to pass or fail. r is the queue's until then. */
void order_place_wait_add(order_place_wait *pw, order_place_req *r);

/** @brief Sends the queued WAIT now (shutdown: its answer, or the NULL reply of the
 *  connection's close, still decides each order). NULL is fine. */
void order_place_wait_flush(order_place_wait *pw);

/** @brief Frees the queue (after flush and after the Redis connection). NULL is fine. */
void order_place_wait_free(order_place_wait *pw);

#endif
