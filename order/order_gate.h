/* order_gate: the flash-sale gate's scripts (reserve.lua, cancel.lua, confirm.lua) for one
 * worker, batched per event per loop turn.
 *
 * Design: a request that needs the gate is queued (order_gate_submit) and answered later
 * through the done callback of its operation. Everything queued in one loop turn is sent
 * at the end of that turn, as one script call per event and operation carrying up to
 * ORDER_GATE_BATCH_MAX items in arrival order, and the calls of one turn leave in one
 * write (rcl_async writes once per turn). The end of the turn is a zero-timeout timer armed by the
 * first item: it fires after the callbacks of the turn and of one more poll that does
 * not block, so the requests that arrived while the worker was busy with the turn join
 * the call, and nothing waits while the worker could sleep: no request waits for a turn
 * that needs new input. (Made active at once instead, the call left with the requests of
 * one poll alone: 4-5 orders per reserve.lua call on bench-ceiling's accept row, against
 * 7-9 with the extra poll, for a few microseconds more before the send.) On a Redis
 * Cluster one event's keys share a slot, so every call goes to one node, and the events
 * of one turn go to their own masters.
 *
 * confirm.lua is the exception: it holds up no answer (the 202 went out before it is
 * sent), so confirms are gathered across turns, for at most confirm_wait_ms after the
 * first one held (ORDER_GATE_CONFIRM_WAIT_MS) or until ORDER_GATE_CONFIRM_MAX of them
 * wait (then at the end of that turn), and order_gate_close sends what is held. In a
 * flash sale a delivery-report turn acknowledged about 20 orders, so one confirm call
 * per report turn was a quarter of the script calls per accepted order (order/README.md,
 * "Script calls per accepted order"); gathered, a call carries up to 257.
 *
 * The argument builders and the reply decoding are pure (order_gate_args.c, in
 * order_core): they follow the KEYS/ARGV contract written at the top of each script in
 * lua/, and the unit tests hold them to it.
 *
 * Threads: an order_gate belongs to one worker; every call runs on that worker's loop. */
#ifndef ORDER_GATE_H
#define ORDER_GATE_H

#include "order_metrics.h"
#include "order_msg.h"
#include "order_redis.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ORDER_GATE_RESERVE = 0, /* reserve.lua: codes 0..9, 100 + K (order_err_from_reserve) */
    ORDER_GATE_CANCEL,      /* cancel.lua: 1 cancelled, 0 nothing to cancel, -1 not the owner */
    ORDER_GATE_CONFIRM,     /* confirm.lua: 0 for every item once the call answered */
    ORDER_GATE_BORROW,      /* borrow.lua: 0 taken, 1 segment empty, 5 segment not loaded */
    ORDER_GATE_OPS
} order_gate_op;

/* An item's code when its call got no usable answer (no reply: disconnected or timed
 * out; an error reply; a reply of the wrong shape). The script may or may not have run. */
#define ORDER_GATE_FAILED (-100)

/* reserve.lua's answers for an order of several units (issue 31), decoded from its
 * bulk strings by order_gate_codes; the figure goes into the item's held_n. */
#define ORDER_GATE_LIMIT_REACHED 7 /* "L<held>:<order>": held units + quantity > the limit */
#define ORDER_GATE_FEWER_LEFT 8    /* "S<left>": fewer units left than the quantity */
#define ORDER_GATE_OVER_LIMIT 9    /* "Q<limit>": the quantity alone is over the limit */

/* The most items in one call: reserve.lua's 5 keys, now_ms and two words per item
 * within ORDER_REDIS_SCRIPT_MAX_ARGS. */
#define ORDER_GATE_BATCH_MAX ((ORDER_REDIS_SCRIPT_MAX_ARGS - 6) / 2)

/* The most orders in one confirm.lua call: its one key, then one word per order. */
#define ORDER_GATE_CONFIRM_MAX (ORDER_REDIS_SCRIPT_MAX_ARGS - 1)

/* The most items in a call of any script (the size of a call's arrays). */
#define ORDER_GATE_ITEMS_MAX ORDER_GATE_CONFIRM_MAX
_Static_assert(ORDER_GATE_ITEMS_MAX >= ORDER_GATE_BATCH_MAX, "a call's arrays hold any batch");

/* How long the first confirm held may wait for others (ms). Safe for the reconciler:
 * it looks at a pending entry only once it is older than the producer's
 * message.timeout.ms + reconcile.margin_ms (15 s by default, 1500 times this bound),
 * and even then never cancels an order that Kafka acknowledged (it is in PostgreSQL by
 * the time the consumer group passes the entry's mark: order_recon_rule.h); a confirm
 * held meanwhile only leaves an entry the reconciler would confirm itself. The request
 * of a held confirm stays in flight (SIGTERM waits for it; the wait ends within this
 * bound while the loop runs, and order_gate_close sends what is left). */
#define ORDER_GATE_CONFIRM_WAIT_MS 10

/* One order in the gate; embedded in the caller's request, which outlives the call. */
typedef struct order_gate_item {
    struct order_gate_item *next; /* the gate's queue */
    uint64_t event_id, user_id, order_id;
    int64_t now_ms; /* reserve: set by the gate to the now_ms its call carried */
    /* Segmented stock (issue 19): the segment this call goes to, and the event's K as
     * the front knows it (0 or 1: one segment, the keys and arguments of before). One
     * call carries items of one event and one segment. */
    unsigned seg, segs;
    /* reserve, code 2 (a duplicate): the order the user holds (the buyers hash's, issue
     * 31), 0 when the script did not know it. Set by the gate before done runs. */
    uint64_t held_id;
    /* The order's units (issue 31; 0 or 1: one, the words of before). */
    uint32_t quantity;
    /* reserve, codes 7-9: the held units, the units left, or the event's limit. */
    int64_t held_n;
} order_gate_item;

/* What a reserve answer names beside its code: the order held (code 2 and 7) and the
 * figure of codes 7-9 (0 otherwise). */
typedef struct order_gate_held {
    uint64_t order_id;
    int64_t n;
} order_gate_held;

/* ---- pure: arguments and codes (order_gate_args.c) ---- */

/** @brief The most items one `op` call carries: ORDER_GATE_CONFIRM_MAX for confirm,
 *  ORDER_GATE_BATCH_MAX for the others (two words per item). */
size_t order_gate_batch_max(order_gate_op op);

/* One script call's keys then arguments, as order_redis_script takes them. The strings
 * point into the struct itself. */
typedef struct order_gate_args {
    int nkeys, n;
    const char *argv[ORDER_REDIS_SCRIPT_MAX_ARGS];
    size_t lens[ORDER_REDIS_SCRIPT_MAX_ARGS];
    char keys[4][ORDER_KEY_MAX];
    char words[ORDER_REDIS_SCRIPT_MAX_ARGS][32]; /* "order_id:q" fits: 20 + 1 + 10 */
} order_gate_args;

/** @brief The arguments of one `op` call for items[0..n-1], all of event items[0]'s
 *  segment items[0]->seg (reserve: KEYS stock, buyers, meta, pending, units; ARGV
 *  now_ms, or "now_ms:K" when segs > 1, then user_id, order_id per item. cancel: KEYS
 *  stock, buyers, pending, units; ARGV order_id, user_id per item. confirm: KEYS pending;
 *  ARGV order_id per item. borrow: KEYS stock, pending; ARGV now_ms, then user_id,
 *  order_id per item). An item of quantity q > 1 has "order_id:q" in reserve and borrow.
 *  now_ms is used by reserve and borrow only.
 *  @returns 0, or -1 if n is 0 or above order_gate_batch_max(op), or the items' events or
 *  segments differ. */
int order_gate_args_build(order_gate_args *a, order_gate_op op, int64_t now_ms,
                          const order_gate_item *const *items, size_t n);

/** @brief The per-item codes of one `op` call for n items from its reply (NULL: none
 *  came). reserve answers an array of n integers, where a duplicate is the held order's
 *  id as a bulk string (code 2, the id into held[i].order_id, 0 when empty or not an
 *  id; held may be NULL), and "L<held>:<order>", "S<left>", "Q<limit>" are codes 7, 8,
 *  9 with the figure in held[i].n (issue 31); cancel an integer for one item and an
 *  array for several (borrow an array, like reserve); confirm an integer (how many were
 *  pending), which is 0 per item.
 *  @returns 0 with codes[0..n-1] set, or -1 (every code is then ORDER_GATE_FAILED). */
int order_gate_codes(order_gate_op op, const redisReply *reply, size_t n, long long *codes,
                     order_gate_held *held);

/* ---- the batching, on a worker's loop (order_gate.c) ---- */

typedef struct order_gate order_gate;

/* Called once per submitted item, in the order the items were submitted within their
 * call, with its code or ORDER_GATE_FAILED. The item may be freed by the callback. */
typedef void order_gate_done_fn(order_gate_item *it, long long code, void *arg);

/** @brief A gate on `base` (the worker's loop) sending through `redis` and counting its
 *  calls in `metrics` (all must outlive it; metrics may be NULL), answering each op
 *  through done[op] with `arg`. @returns NULL on OOM. */
order_gate *order_gate_new(struct event_base *base, order_redis *redis, order_metrics *metrics,
                           order_gate_done_fn *const done[ORDER_GATE_OPS], void *arg);

/** @brief Queues `it` for the end of this loop turn (event_id, user_id, order_id set;
 *  the gate owns it->next until done runs); a confirm is held for up to the gate's
 *  confirm wait instead (above). After order_gate_close, done runs at once with
 *  ORDER_GATE_FAILED. */
void order_gate_submit(order_gate *g, order_gate_op op, order_gate_item *it);

/** @brief Sets how long a confirm may be held (ms; ORDER_GATE_CONFIRM_WAIT_MS by
 *  default; 0: sent at the end of its turn like the other scripts). Call before the
 *  first confirm is submitted (the tests set a long wait to see the gathering without
 *  timing). */
void order_gate_set_confirm_wait(order_gate *g, int wait_ms);

/** @brief Sends everything queued now, held confirms included (the end-of-turn event
 *  and the confirm timer do this; call it once more after the loop ended), then
 *  refuses new items: call before freeing the Redis
 *  connection, whose pending calls then fail and may submit (e.g. a cancel). */
void order_gate_close(order_gate *g);

/** @brief Frees the gate (nothing may be queued: close first). NULL is fine. */
void order_gate_free(order_gate *g);

#endif
