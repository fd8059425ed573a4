/* order_recon_pg: the reconciler's PostgreSQL client: the events still worth a look, which
 * pending orders are stored, and what rebuilds a lost gate. Parameterised SQL only; one
 * connection, opened lazily and dropped on a failure (the next scan opens it again).
 *
 * Blocking libpq calls: the reconciler's thread only. */
#ifndef ORDER_RECON_PG_H
#define ORDER_RECON_PG_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

typedef struct order_recon_pg order_recon_pg;

/** @brief A client of conninfo (borrowed, must outlive it). @returns it, or NULL on OOM. */
order_recon_pg *order_recon_pg_new(const char *conninfo);

/** @brief Opens the connection if it is not up. @returns 0, or -1 (logged, without the
 *  password: PQerrorMessage never holds it). */
int order_recon_pg_connect(order_recon_pg *p);

/** @brief 1 while connected (it was opened and no call has dropped it since). */
int order_recon_pg_up(const order_recon_pg *p);

/** @brief Closes the connection (reopened by the next order_recon_pg_connect). */
void order_recon_pg_disconnect(order_recon_pg *p);

/** @brief Frees p, closing its connection. NULL is fine. */
void order_recon_pg_free(order_recon_pg *p);

/* An event that may still have reservations. */
typedef struct order_recon_event {
    uint64_t id;
    int live;   /* 1: its sale is still on (a lost gate is rebuilt only then) */
    unsigned k; /* its stock segments (issue 19), 1 .. ORDER_SEGMENTS_MAX */
} order_recon_event;

/** @brief The events whose sale ended less than horizon_s ago. @returns their number, with
 *  a malloc'd array in *out (the caller frees; one spare slot, never NULL on success), or
 *  -1 (logged; the connection is dropped). */
int order_recon_pg_events(order_recon_pg *p, long long horizon_s, order_recon_event **out);

/** @brief Which of the n order ids (decimal strings) are in seckill_order, created or
 *  rejected: stored[i] = 1 or 0. @returns 0, or -1 (logged). */
int order_recon_pg_stored(order_recon_pg *p, const char *const *ids, size_t n,
                          unsigned char *stored);

/* What event_reload.lua takes after its keys: stock_left, starts_at_ms, ends_at_ms,
 * per_user_limit, the event's rate overrides (ip_rate, user_rate, event_rate; "0" none),
 * its challenge's bits ("0" none),
 * the number of users, the users that stay buyers as "user_id:order_id" (created or
 * paid orders, and closed ones when the event keeps them out), then the ids of the event's
 * closed (cancelled or expired) orders, whose units stock_left already counts. All read
 * in one snapshot (REPEATABLE READ): stock_left counts exactly these closed orders. */
/* The fixed head of event_reload.lua's ARGV: stock .. challenge_bits, then the user count. */
#define ORDER_RECON_GATE_FIXED 9
typedef struct order_recon_gate {
    const char **argv;          /* ORDER_RECON_GATE_FIXED + nbuyers + nclosed strings, owned by g */
    int nbuyers, nclosed;
    const char **closed_users;  /* nclosed: the user of each closed order (its home) */
    char nbuyers_s[12];         /* argv[ORDER_RECON_GATE_FIXED - 1] */
    PGresult *event, *buyers, *closed;
} order_recon_gate;

/** @brief Reads what rebuilds event_id's gate into *g. @returns 1 (g filled: clear it
 *  with order_recon_gate_clear), 0 (no such event, or OOM), or -1 (logged). *g needs
 *  clearing in every case. */
int order_recon_pg_gate(order_recon_pg *p, uint64_t event_id, order_recon_gate *g);

/** @brief Frees what order_recon_pg_gate put in g. */
void order_recon_gate_clear(order_recon_gate *g);

/** @brief How many of the n order ids (decimal strings; anything else is skipped; an id
 *  given once per unit of its order counts its units, issue 31) are
 *  orders of event_id that took a unit off stock_left (any status but rejected: a
 *  closed one's unit is back in stock_left and owed to its home segment), into *count:
 *  a lost segment's snapshot ids that did land (docs/segments.md). @returns 0, or -1
 *  (logged). */
int order_recon_pg_taken_count(order_recon_pg *p, uint64_t event_id, const char *const *ids,
                                 size_t n, long long *count);

/* An event whose Redis keys the expiry sweep looks after (order_recon_expire.h). */
typedef struct order_recon_expiry {
    uint64_t id;
    unsigned k;           /* its stock segments, 1 .. ORDER_SEGMENTS_MAX */
    int64_t expire_at_ms; /* ends_at + payment_window_s + retention_s, epoch ms */
} order_recon_expiry;

/** @brief The events whose keys are due to expire after now - grace_s (retention_s: the
 *  deployment's events.retention_s), at most max of them, the soonest due first.
 *  @returns their number, with a malloc'd array in *out (the caller frees; one spare
 *  slot, never NULL on success), or -1 (logged; the connection is dropped). */
int order_recon_pg_expiries(order_recon_pg *p, long long retention_s, long long grace_s,
                            int max, order_recon_expiry **out);

/** @brief Which of the n event ids (decimal strings) are gone from PostgreSQL or past their
 *  keys' expiry (retention_s as above): gone[i] = 1 or 0. @returns 0, or -1 (logged). */
int order_recon_pg_events_gone(order_recon_pg *p, const char *const *ids, size_t n,
                               long long retention_s, unsigned char *gone);

#endif
