/* order_recon_rule: the reconciler's rule for "this order can no longer reach
 * PostgreSQL" (see order/order_reconcile.h for the argument), as pure functions: no I/O,
 * unit-tested, so that the one decision that gives stock back can be checked alone. */
#ifndef ORDER_RECON_RULE_H
#define ORDER_RECON_RULE_H

#include <stddef.h>
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

/* What the reconciler does with one pending entry. */
typedef enum {
    ORDER_RECON_KEEP = 0, /* its order may still land: leave it */
    ORDER_RECON_CONFIRM,  /* its order is in PostgreSQL: confirm.lua */
    ORDER_RECON_CANCEL    /* its order can never land: cancel.lua gives the stock back */
} order_recon_action;

/** @brief The action for an entry reserved at ts_ms whose order is (in_pg 1) or is not in
 *  PostgreSQL, PostgreSQL having been read after the cutoff was computed. */
order_recon_action order_recon_decide(int in_pg, int64_t ts_ms, int64_t cutoff, int64_t wait_ms);

/** @brief The cutoff of an event on partition p (from the producer's partitioner), or, p
 *  out of [0, n) (a partitioner that cannot be reproduced), the lowest of all n: every
 *  partition must have passed its mark. ORDER_RECON_NEVER when n is 0. */
int64_t order_recon_event_cutoff(const int64_t *cutoffs, int32_t n, int32_t p);

/** @brief 1 if a pending hash field looks like an order id of ours (1 to 20 digits);
 *  anything else is never touched. */
int order_recon_is_order_id(const char *id);

/** @brief Parses a pending entry's value "user_id:ts_ms", or "user_id:ts_ms:c" (the claim
 *  of a segmented event's borrowed unit, reserve.lua: cancel.lua releases it without
 *  stock), either with ":q" after ts_ms for an order of q > 1 units (issue 31), into user (NUL-terminated, at most usz - 1 characters), *ts_ms and *claim (1
 *  for a claim; claim may be NULL). @returns 0, or -1 (malformed: left alone). */
int order_recon_pending_parse(const char *val, char *user, size_t usz, int64_t *ts_ms, int *claim);

/** @brief The units a pending value holds or claims: its ":q" (issue 31), else 1. */
int order_recon_pending_units(const char *val);

/** @brief 1 if a pending value of len bytes is a claim (ends in ":c"): it holds no unit. */
int order_recon_is_claim(const char *val, size_t len);

/** @brief The ids among the n that order_recon_is_order_id accepts, as a PostgreSQL
 *  bigint[] literal "{1,2}" ("{}" for none). @returns it (malloc'd: the caller frees), or
 *  NULL on OOM. */
char *order_recon_id_array(const char *const *ids, size_t n);

/** @brief An event's segment count K from the `segments` column's text: 2 ..
 *  ORDER_SEGMENTS_MAX as given, anything else (NULL, 1, out of range) 1. */
unsigned order_recon_segments_k(const char *col);

/** @brief A lost segment's stock, rebuilt from its snapshot of the other segments
 *  (docs/segments.md): stock_left - their stock - (their pending units not stored in
 *  PostgreSQL: npending - in_pg), at least 0. What the others sell after the snapshot
 *  only makes it smaller: never oversold. The caller subtracts the units owed to other
 *  segments (order_recon_owed_elsewhere) from stock_left first. */
long long order_recon_segment_stock(long long stock_left, long long snap_stock, size_t npending,
                                    long long in_pg);

/** @brief Keeps, in place and in order, the users (decimal ids, or "user_id:order_id"
 *  as event_reload.lua takes them: the id before the colon counts) of users[0..n) whose home
 *  segment among k is seg (order_seg_home). @returns how many are kept. */
int order_recon_buyers_homed(const char **users, int n, unsigned seg, unsigned k);

/** @brief Keeps, in place and in order, the closed orders ids[i] (with their users[i])
 *  whose user's home segment among k is seg: the ones whose release.lua goes to seg's
 *  released set. @returns how many are kept. */
int order_recon_closed_homed(const char **ids, const char **users, int n, unsigned seg, unsigned k);

/** @brief How long a produced message may still land: the producer's message.timeout.ms
 *  (or delivery.timeout.ms, its alias; NULL: unset) as kafka.* gives it, else the
 *  producer's default 10000. 0 or less is librdkafka's "for ever": a wait so long that
 *  nothing is ever cancelled. */
int64_t order_recon_msg_timeout_ms(const char *message_timeout, const char *delivery_timeout);

/* A live event's segment whose gate (stock key) is missing in Redis, and since when we
 * know. A segment of a segmented event (k > 1) also keeps its snapshot of the other
 * segments (docs/segments.md): taken at snap_ms (0: not yet), their stock summed, the
 * order ids of their pending units (snap_ids: nsnap strings, owned, room for snap_cap),
 * which of them were loaded (bit j of snap_present), and the ids in their released sets
 * (rel_ids: nrel strings, owned, sorted once the snapshot is complete; issue 22). */
typedef struct order_recon_lost {
    uint64_t id;
    unsigned seg, k;
    int64_t since_ms, snap_ms;
    long long snap_stock;
    char **snap_ids;
    size_t nsnap, snap_cap;
    uint64_t snap_present;
    char **rel_ids;
    size_t nrel, rel_cap;
} order_recon_lost;

/** @brief Fills l (id, seg and k set by the caller) from the previous scan's record of
 *  the same segment (prev, n entries), if any: since_ms (the earliest is what the reload
 *  waits from) and the snapshot, whose ids move from prev to l. New: since_ms = now.
 *  @returns l->since_ms. */
int64_t order_recon_lost_carry(order_recon_lost *prev, int n, order_recon_lost *l, int64_t now);

/** @brief Appends a copy of id to l's snapshot. @returns 0, or -1 on OOM (l unchanged). */
int order_recon_snap_add(order_recon_lost *l, const char *id);

/** @brief Appends a copy of id to l's snapshot of released ids. @returns 0, or -1 on OOM. */
int order_recon_snap_add_released(order_recon_lost *l, const char *id);

/** @brief Sorts l's released ids (once, after the snapshot's last add). */
void order_recon_snap_sort_released(order_recon_lost *l);

/** @brief How many of the n closed orders (ids[i], users[i]; decimal strings) are owed to
 *  another segment than l's: homed on a segment j != l->seg that was loaded at the
 *  snapshot, and not in its released set then. stock_left counts their units, but
 *  release.lua will give them to j (or gave them after the snapshot, after j's stock was
 *  read): the lost segment must not hold them too (issue 22). */
long long order_recon_owed_elsewhere(const char *const *ids, const char *const *users, int n,
                                     const order_recon_lost *l);

/** @brief Frees l's snapshot; snap_ms back to 0 (none). */
void order_recon_snap_drop(order_recon_lost *l);

/** @brief Frees the n entries' snapshots and the array. NULL is fine. */
void order_recon_lost_free(order_recon_lost *l, int n);

#endif
