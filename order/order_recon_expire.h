/* order_recon_expire: the clean-up after a sale (issue 32 item 5), run by the leading
 * reconciler after each scan. Every Redis key of an event (stock, meta, buyers, pending,
 * released, on each segment) gets PEXPIREAT ends_at + payment_window_s +
 * events.retention_s, set again at every sweep: keys that reserve.lua, cancel.lua,
 * release.lua or a reload create later get it within one sweep, and an end moved later
 * (PATCH) moves the expiry at the next one. An event stays in the sweep for
 * ORDER_RECON_EXPIRE_GRACE_S after its expiry, so a key written again late (a release
 * after the expiry) is removed at once. The seckill:changed hash loses the field of an
 * event that is gone from PostgreSQL or past its expiry, once two sweeps saw the same
 * count (every front has read it by then: they poll every events.pause_refresh_ms);
 * seckill:paused loses such an event's id at once (a pause never resumed).
 * The order index expires apart (order.index_ttl_s on each write, order_index.h).
 *
 * Blocking calls: the reconciler's thread only. */
#ifndef ORDER_RECON_EXPIRE_H
#define ORDER_RECON_EXPIRE_H

#include "order_recon_pg.h"
#include "rcluster.h"

/* How long after its keys' expiry an event is still swept (a late write removed). */
#define ORDER_RECON_EXPIRE_GRACE_S 86400
/* Events swept per round at most, the soonest due first. */
#define ORDER_RECON_EXPIRE_MAX 10000

typedef struct order_recon_expire order_recon_expire;

/** @brief A sweep's state (the changed-hash counts of the previous round). @returns it, or
 *  NULL on OOM. */
order_recon_expire *order_recon_expire_new(void);

/** @brief Frees x. NULL is fine. */
void order_recon_expire_free(order_recon_expire *x);

/** @brief One round: the keys' expiry of every event in the sweep, then the changed hash.
 *  @returns the number of seckill:changed fields and seckill:paused members removed, or -1 (Redis or PostgreSQL
 *  failed: logged; the caller drops its Redis connection, the next round starts over). */
int order_recon_expire_sweep(order_recon_expire *x, rcl_ctx *rc, order_recon_pg *pg,
                             long long retention_s);

#endif
