/* sc_judge: the guarantees of docs/design.md as checks over figures gathered from
 * accepted.txt, PostgreSQL, Redis and the dead-letter topic. Pure: seckill-check fills
 * an sc_figures from the servers, these functions compare and print. */
#ifndef SC_JUDGE_H
#define SC_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sc_accepted.h"

/* One row of seckill_order for the event. */
typedef struct sc_row {
    uint64_t order_id;
    uint64_t user_id;
    int created;  /* holds its unit: status 'created' or 'paid' (issue 22) */
    int closed;   /* 'cancelled' or 'expired': its unit went back on sale */
    int released; /* closed, and released_at is set (the unit is back in the gate) */
    int quantity; /* the order's units (issue 31) */
} sc_row;

typedef struct sc_figures {
    uint64_t event_id;
    /* accepted.txt */
    uint64_t accepted, accepted_repeated, accepted_bad_lines;
    /* PostgreSQL */
    int event_found;
    long long stock_total, stock_left;
    long long per_user_limit; /* the most units one user may hold (0 read as 1) */
    uint64_t rows, created; /* created: units held by created or paid rows (issue 31) */
    uint64_t closed, closed_released; /* cancelled or expired rows; of those, released */
    uint64_t missing;       /* accepted ids with no row for this event */
    uint64_t not_created;   /* accepted ids whose row holds no unit and is not closed (rejected) */
    uint64_t extra_created; /* created rows not in accepted.txt (a 202 lost on the way back) */
    uint64_t dup_users;     /* users holding more units of the event than per_user_limit */
    /* Redis (redis_ok 0: unreachable, then the Redis lines fail) */
    int redis_ok;
    int stock_present; /* the stock key exists */
    long long redis_stock, pending, buyers;
    long long redis_released; /* SCARD of the event's released set (release.lua), -1 unread */
    /* the dead-letter topic (dlq_checked 0: not checked, -1: could not be read) */
    int dlq_checked;
    long long dlq;
    char dlq_topic[128];
    /* the wait for the drain */
    int drained;
    double waited_s;
} sc_figures;

/** @brief Fills missing, not_created, extra_created, rows, created (in units) and
 *  dup_users (against f->per_user_limit, set before) from the accepted ids and the
 *  event's rows. Sorts rows (by order_id) in place. @returns 0, -1 out of memory. */
int sc_match(const sc_ids *accepted, sc_row *rows, size_t nrows, sc_figures *f);

/** @brief Prints one line per guarantee ("ok   lost 0   ..." or "FAIL ...") and a verdict
 *  line. @returns the number of violated guarantees (0: all hold). */
int sc_judge(const sc_figures *f, FILE *out);

#endif
