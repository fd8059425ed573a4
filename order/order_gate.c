/* order_gate: the gate's script calls, batched per event per loop turn (confirms across
 * turns, for at most confirm_wait_ms). See order_gate.h. */
#include "order_gate.h"
#include "order_time.h"

#include <event2/event.h>
#include <stdlib.h>

_Static_assert(ORDER_GATE_OPS == ORDER_METRICS_GATE_OPS, "a call counter per script, borrow too");

typedef struct gate_queue {
    order_gate_item *head, **tail;
} gate_queue;

struct order_gate {
    order_redis *redis;
    order_metrics *metrics;
    order_gate_done_fn *done[ORDER_GATE_OPS];
    void *arg;
    struct event *flush_ev; /* a zero timer, pending while anything is queued (order_gate.h) */
    struct event *confirm_ev; /* pending while confirms are held (confirm_wait_ms) */
    gate_queue q[ORDER_GATE_OPS];
    size_t confirms;     /* confirms queued (every event) */
    int confirm_wait_ms; /* how long the first held confirm may wait; 0: end of turn */
    int armed;           /* flush_ev is pending: the end of this turn sends */
    int closed;
};

/* The items of one script call, answered together. */
typedef struct gate_call {
    order_gate *g;
    order_gate_op op;
    size_t n;
    order_gate_item *items[ORDER_GATE_ITEMS_MAX];
} gate_call;

static void answer(gate_call *c, const redisReply *reply)
{
    long long codes[ORDER_GATE_ITEMS_MAX];
    order_gate_held held[ORDER_GATE_ITEMS_MAX];
    order_gate_codes(c->op, reply, c->n, codes, held);
    for (size_t i = 0; i < c->n; i++) {
        int named = c->op == ORDER_GATE_RESERVE && codes[i] >= 0; /* held[i] was set */
        c->items[i]->held_id = named ? held[i].order_id : 0;
        c->items[i]->held_n = named ? held[i].n : 0;
        c->g->done[c->op](c->items[i], codes[i], c->g->arg);
    }
    free(c);
}

static void on_reply(redisReply *reply, void *arg)
{
    answer(arg, reply);
}

static void fail_item(order_gate *g, order_gate_op op, order_gate_item *it)
{
    g->done[op](it, ORDER_GATE_FAILED, g->arg);
}

/* Takes the first queued item of `op` and up to order_gate_batch_max(op) - 1 more of its
 * event (in arrival order) off the queue, and sends them in one call. */
static void send_one(order_gate *g, order_gate_op op, int64_t now_ms)
{
    gate_queue *q = &g->q[op];
    gate_call *c = malloc(sizeof(*c));
    if (!c) {
        order_gate_item *it = q->head;
        q->head = it->next;
        if (!q->head)
            q->tail = &q->head;
        fail_item(g, op, it);
        return;
    }
    c->g = g;
    c->op = op;
    c->n = 0;
    uint64_t event_id = q->head->event_id;
    unsigned seg = q->head->seg;
    order_gate_item **pp = &q->head;
    size_t max = order_gate_batch_max(op);
    while (*pp && c->n < max) {
        order_gate_item *it = *pp;
        if (it->event_id != event_id || it->seg != seg) {
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        if (op == ORDER_GATE_RESERVE)
            it->now_ms = now_ms;
        c->items[c->n++] = it;
    }
    /* the tail moved if the last item was taken */
    q->tail = &q->head;
    while (*q->tail)
        q->tail = &(*q->tail)->next;
    if (g->metrics)
        order_metrics_gate(g->metrics, op, c->n);
    order_gate_args a;
    static const order_script_id script[ORDER_GATE_OPS] = {
        ORDER_SCRIPT_RESERVE, ORDER_SCRIPT_CANCEL, ORDER_SCRIPT_CONFIRM, ORDER_SCRIPT_BORROW};
    if (order_gate_args_build(&a, op, now_ms, (const order_gate_item *const *)c->items, c->n) != 0 ||
        order_redis_script(g->redis, script[op], a.nkeys, a.n, a.argv, a.lens, on_reply, c) != 0)
        answer(c, NULL);
}

/* Sends what is queued: the items of every op but confirm if `others`, the (held)
 * confirms if `confirms`. */
static void flush(order_gate *g, int others, int confirms)
{
    /* One clock read for the turn: every reservation of one call carries the same
     * now_ms (the window check and the pending entry's time). */
    int64_t now_ms = order_time_now_ms();
    for (int op = 0; op < ORDER_GATE_OPS; op++) {
        if (op == ORDER_GATE_CONFIRM ? !confirms : !others)
            continue;
        while (g->q[op].head)
            send_one(g, (order_gate_op)op, now_ms);
    }
    if (confirms) {
        g->confirms = 0;
        evtimer_del(g->confirm_ev);
    }
}

/* The end of a turn in which something was queued: confirms only once a full call's
 * worth waits (or when they are not held at all). */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    order_gate *g = arg;
    g->armed = 0;
    flush(g, 1, g->confirm_wait_ms == 0 || g->confirms >= ORDER_GATE_CONFIRM_MAX);
}

/* The first held confirm waited confirm_wait_ms: send the confirms, and only them
 * (what this turn queued for the other scripts waits for the turn's end, in one call). */
static void on_confirm_wait(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    flush(arg, 0, 1);
}

order_gate *order_gate_new(struct event_base *base, order_redis *redis, order_metrics *metrics,
                           order_gate_done_fn *const done[ORDER_GATE_OPS], void *arg)
{
    order_gate *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->redis = redis;
    g->metrics = metrics;
    g->arg = arg;
    for (int op = 0; op < ORDER_GATE_OPS; op++) {
        g->done[op] = done[op];
        g->q[op].tail = &g->q[op].head;
    }
    g->confirm_wait_ms = ORDER_GATE_CONFIRM_WAIT_MS;
    g->flush_ev = event_new(base, -1, 0, on_flush, g);
    g->confirm_ev = evtimer_new(base, on_confirm_wait, g);
    if (!g->flush_ev || !g->confirm_ev) {
        order_gate_free(g);
        return NULL;
    }
    return g;
}

void order_gate_submit(order_gate *g, order_gate_op op, order_gate_item *it)
{
    if (g->closed) {
        fail_item(g, op, it);
        return;
    }
    it->next = NULL;
    *g->q[op].tail = it;
    g->q[op].tail = &it->next;
    if (op == ORDER_GATE_CONFIRM && g->confirm_wait_ms > 0) {
        /* Held (see order_gate.h): a full call's worth goes at the end of this turn,
         * else the first confirm's wait starts the timer. */
        if (++g->confirms < ORDER_GATE_CONFIRM_MAX) {
            if (!evtimer_pending(g->confirm_ev, NULL)) {
                struct timeval tv = {g->confirm_wait_ms / 1000, (g->confirm_wait_ms % 1000) * 1000};
                evtimer_add(g->confirm_ev, &tv);
            }
            return;
        }
    }
    if (!g->armed) {
        g->armed = 1;
        static const struct timeval now = {0, 0};
        evtimer_add(g->flush_ev, &now); /* after one more poll that does not block */
    }
}

void order_gate_set_confirm_wait(order_gate *g, int wait_ms)
{
    g->confirm_wait_ms = wait_ms > 0 ? wait_ms : 0;
}

void order_gate_close(order_gate *g)
{
    if (!g)
        return;
    flush(g, 1, 1);
    g->closed = 1;
}

void order_gate_free(order_gate *g)
{
    if (!g)
        return;
    if (g->flush_ev)
        event_free(g->flush_ev);
    if (g->confirm_ev)
        event_free(g->confirm_ev);
    free(g);
}
