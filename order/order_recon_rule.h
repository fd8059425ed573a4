/* order_recon_rule: the reconciler's rule for "this order can no longer reach
 * PostgreSQL" (see order_reconcile.h for the argument), as pure functions: no I/O,
 * unit-tested, so that the one decision that gives stock back can be checked alone. */
#ifndef ORDER_RECON_RULE_H
#define ORDER_RECON_RULE_H

#include <stdint.h>

/* ORDER_RECON_NEVER: nothing may be cancelled on this partition yet. */
#define ORDER_RECON_NEVER INT64_MIN

/* A partition's mark: its high watermark `hw` read at wall time `t_ms`. Once the group's
 * committed offset reaches hw, every message produced before t_ms is in PostgreSQL. */
typedef struct order_recon_mark {
    int64_t hw, t_ms;
    int set;
} order_recon_mark;

/** @brief One scan of one partition: `t_now` was read before `hw_now`, and both before
 *  `committed` (the group's committed offset, < 0 when it has none). Updates the mark.
 *  @returns the cutoff: entries reserved at or before cutoff - (message timeout + margin)
 *  and not in PostgreSQL (read after `committed`) can never land; ORDER_RECON_NEVER
 *  while the group has not passed any mark. */
int64_t order_recon_cutoff(order_recon_mark *m, int64_t t_now, int64_t hw_now, int64_t committed);

/** @brief 1 when an entry reserved at ts_ms may be cancelled under `cutoff`, given the
 *  producer's message timeout plus margin `wait_ms`. */
int order_recon_may_cancel(int64_t ts_ms, int64_t cutoff, int64_t wait_ms);

#endif
