/* order_pg_job: one PostgreSQL job of seckill-order, what a worker asks and what it gets
 * back. Below both order_pg (the pool that runs jobs) and order_pay_pg (the pay and
 * cancel transactions it runs), so that neither needs the other's header for it.
 * The job is owned by the caller throughout; the pool only borrows it until done. */
#ifndef ORDER_PG_JOB_H
#define ORDER_PG_JOB_H

#include "order_body.h"
#include "order_evlist.h"

#include <stdint.h>

typedef enum {
    ORDER_PG_CREATE_EVENT = 1, /* in: id, spec */
    ORDER_PG_GET_EVENT,        /* in: id; out: spec (name, stock, times), stock_left */
    ORDER_PG_GET_ORDER,        /* in: id; out: event_id, user_id, order_status */
    ORDER_PG_LIST_EVENTS,      /* in: id = the most rows; out: rows, nrows (events not ended) */
    ORDER_PG_PAY_ORDER,        /* in: id, actor, actor_admin, payment_ref; out: order_pay_pg.h */
    ORDER_PG_CANCEL_ORDER,     /* in: id, actor, actor_admin; out: see order_pay_pg.h */
    ORDER_PG_MARK_RELEASED,    /* in: id: the unit is back in Redis (released_at) */
    ORDER_PG_CHANGE_EVENT,     /* in: id, patch, ending, now_ms; out: spec, stock_left (order_event_change.h) */
    ORDER_PG_RESTOCK_EVENT,    /* in: id, add or total, now_ms, loader; out: spec, stock_left, available */
    ORDER_PG_AUDIT_EVENT,      /* in: id, actor, act, audit_after: one audit row (pause, resume) */
    ORDER_PG_READ_AUDIT,       /* in: id, offset, limit; out: audit_json, more */
    ORDER_PG_REMOVE_EVENT,     /* in: id, actor, now_ms, loader; out: removed, spec */
    ORDER_PG_USER_ORDER,       /* in: event_id, user_id; out: id (the order), order_status */
    ORDER_PG_LIST_ENDED,       /* in: offset, limit; out: rows, nrows, more (ended, not archived) */
} order_pg_kind;

typedef enum {
    ORDER_PG_OK = 0,
    ORDER_PG_NOT_FOUND = 1,
    ORDER_PG_CONFLICT = 2, /* CHANGE_EVENT: the event's state refuses it, why in conflict */
    ORDER_PG_RETRY = 3,    /* RESTOCK_EVENT: the gate is not loaded now, why in conflict */
    ORDER_PG_ERROR = -1, /* connection or query failed: message in err (not for clients) */
} order_pg_status;

typedef struct order_pg_job {
    order_pg_kind kind;
    uint64_t id;
    order_event_spec spec;
    int64_t stock_left;
    uint64_t event_id, user_id;
    char order_status[16];
    int64_t pay_by_ms;      /* GET_ORDER, PAY/CANCEL: the order's pay_by, 0 when none */
    /* PAY_ORDER / CANCEL_ORDER (order_pay_pg.h) */
    uint64_t actor;         /* the token's sub */
    int actor_admin;
    char payment_ref[ORDER_PAYMENT_REF_MAX + 1];
    int pay_answer;         /* order_pay_answer */
    int changed;            /* 1: this call made the transition (order_status is new) */
    int rebuy;              /* the event's rebuy_after_release */
    unsigned segments;      /* PAY/CANCEL: the event's K (a release goes to the home segment) */
    uint32_t quantity;      /* PAY/CANCEL: the order's units (issue 31), what a release gives */
    /* CHANGE_EVENT (order_event_change.h) */
    order_event_patch patch;
    int ending;             /* POST /end: ends_at = now_ms, whatever the patch */
    int64_t now_ms;
    char conflict[160];     /* ORDER_PG_CONFLICT: the reason, for the client */
    /* RESTOCK_EVENT: the units to add (< 0: take out), or the new total (-1: add) */
    int64_t add, total, available;
    struct order_loader *loader; /* the gate's side, on the pool thread */
    /* the admin audit (issue 32): every act's actor is `actor` above */
    char act[12];           /* AUDIT_EVENT: "pause", "resume" */
    const char *audit_after; /* AUDIT_EVENT: the after JSON (static text) */
    int64_t offset, limit;  /* READ_AUDIT, LIST_ENDED */
    char *audit_json;       /* READ_AUDIT: a JSON array, malloc'd by the pool, freed by the caller */
    int more;               /* READ_AUDIT, LIST_ENDED: rows past the page */
    int removed;            /* REMOVE_EVENT: 1 deleted, 2 archived */
    order_evlist_row *rows; /* LIST_EVENTS, LIST_ENDED: malloc'd by the pool, freed by the caller */
    size_t nrows;
    order_pg_status status;
    char err[256];
    void (*done)(struct order_pg_job *job); /* on a pool thread; may block, never on a loop */
    void *arg;
    struct order_pg_job *next; /* the pool's queue */
} order_pg_job;

#endif
