/* order_loader: puts an event's gate (stock, meta) into Redis under the event's lock.
 *
 * Issue 6: loading an event's stock takes that event's lock (librlock, a simple lock
 * named seckill:{e<ID>}:lock, in the event's slot), so two instances never load one
 * event at once; event_load.lua itself never overwrites a loaded stock either. Blocking:
 * it runs on a PostgreSQL pool thread right after the event's row was inserted, never on
 * an event loop. Thread-safe (one blocking rcluster context behind a mutex: events are
 * few). The lock and the script touch only keys of the event's slot, so on a Redis
 * Cluster both go to the event's master. */
#ifndef ORDER_LOADER_H
#define ORDER_LOADER_H

#include "order_body.h"
#include "order_redis.h"

#include <stdint.h>

typedef struct order_loader order_loader;

/** @brief `url_text` is the redis.url as configured (plain or cluster; copied);
 *  `scripts` must outlive the loader. Connects lazily. @returns NULL on OOM. */
order_loader *order_loader_new(const char *url_text, const order_scripts *scripts,
                               int timeout_ms);

/** @brief Takes the event's lock, runs event_load.lua, releases the lock.
 *  @returns 1 loaded, 0 already loaded (nothing changed), -1 error (message in err). */
int order_loader_load(order_loader *l, uint64_t event_id, const order_event_spec *spec,
                      char *err, size_t errsz);

/** @brief Restock (issue 32): under the event's lock, event_restock.lua on each of its k
 *  segments: delta > 0 split as the load splits the stock (the first delta % k segments
 *  one more); delta < 0 taken from segment 0 on, each giving what it has unsold. Whole
 *  or nothing: a removal past the unsold units, or a segment not loaded, gives back what
 *  the others applied. @returns 1 applied; 2 refused, *available the unsold units that
 *  could have been taken; 0 a segment is not loaded; -1 error (err). */
int order_loader_restock(order_loader *l, uint64_t event_id, unsigned k, int64_t delta,
                         int64_t *available, char *err, size_t errsz);

/** @brief Removal (issue 32): under the event's lock, counts the buyers and pending
 *  entries of its k segments; none: deletes every key of the event (stock, buyers, meta,
 *  pending, released of each segment, the rate bucket). @returns 1 deleted; 2 an order
 *  was taken (*held buyers and pending entries; nothing deleted); -1 error (err). */
int order_loader_remove(order_loader *l, uint64_t event_id, unsigned k, int64_t *held,
                        char *err, size_t errsz);

/** @brief NULL is fine. */
void order_loader_free(order_loader *l);

#endif
