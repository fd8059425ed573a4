/* order_pause: the events whose sale an admin paused (issue 19 section 3), as this
 * instance knows them, and the key that holds them in Redis.
 *
 * POST /api/v1/events/{id}/pause adds the id to the Redis set ORDER_PAUSE_KEY (resume
 * removes it); every front reads the set every events.pause_refresh_ms (order_pauser.h)
 * and answers new orders of a paused event 503 `paused` from memory. Nothing of the
 * event's gate changes, so the sale continues where it stopped on resume. The set is
 * one key for every event (one read per front per interval, whatever the number of
 * events); on a Redis Cluster it lives on one master.
 *
 * At most ORDER_PAUSE_MAX events paused at once (more are ignored, and logged by the
 * poller). Readers never block: a sequence count around the array, writers (rare: the
 * poller and the admin calls) serialised by a mutex; a read that overlaps a write reads
 * again. Thread-safe. */
#ifndef ORDER_PAUSE_H
#define ORDER_PAUSE_H

#include <stddef.h>
#include <stdint.h>

#define ORDER_PAUSE_KEY "seckill:paused"
#define ORDER_PAUSE_MAX 256

typedef struct order_pause order_pause;

/** @brief @returns the table (order_pause_free) or NULL on OOM. */
order_pause *order_pause_new(void);
/** @brief NULL is fine. */
void order_pause_free(order_pause *p);

/** @brief 1 if event_id is paused here. */
int order_pause_has(order_pause *p, uint64_t event_id);

/** @brief Adds (paused 1) or removes (0) one id, at once, on this instance.
 *  @returns 0, or -1 when the table is full. */
int order_pause_set(order_pause *p, uint64_t event_id, int paused);

/** @brief Replaces the whole set with ids[0..n) (what Redis holds); n past
 *  ORDER_PAUSE_MAX keeps the first ORDER_PAUSE_MAX. */
void order_pause_replace(order_pause *p, const uint64_t *ids, size_t n);

/** @brief How many order_pause_set calls this instance made: taken before a read of
 *  the Redis set is sent, for order_pause_replace_since. */
uint64_t order_pause_version(order_pause *p);

/** @brief order_pause_replace, unless an order_pause_set came after `version` was taken:
 *  then the read may predate that pause or resume (sent on another connection, it
 *  reached Redis after the read) and would undo it here for an interval; it is dropped,
 *  the next read is fresh. @returns 1 replaced, 0 dropped. */
int order_pause_replace_since(order_pause *p, const uint64_t *ids, size_t n, uint64_t version);

/** @brief How many ids are paused here. */
size_t order_pause_count(order_pause *p);

#endif
