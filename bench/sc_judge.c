/* sc_judge: compare and print the guarantees. See sc_judge.h. */
#include "sc_judge.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int cmp_order(const void *a, const void *b)
{
    const sc_row *x = a, *y = b;
    return x->order_id < y->order_id ? -1 : x->order_id > y->order_id;
}

/* A user's units in one created row: sorted by user, a run is one user. */
typedef struct user_units {
    uint64_t user_id;
    long long units;
} user_units;

static int cmp_user(const void *a, const void *b)
{
    uint64_t x = ((const user_units *)a)->user_id, y = ((const user_units *)b)->user_id;
    return x < y ? -1 : x > y;
}

/* A row's units: its quantity, 1 when not read. */
static long long units_of(const sc_row *r)
{
    return r->quantity > 0 ? r->quantity : 1;
}

int sc_match(const sc_ids *acc, sc_row *rows, size_t nrows, sc_figures *f)
{
    qsort(rows, nrows, sizeof(*rows), cmp_order);
    f->rows = nrows;
    f->created = f->missing = f->not_created = f->extra_created = f->dup_users = 0;
    f->closed = f->closed_released = 0;
    /* Both sorted: one merge walk. */
    size_t i = 0, j = 0;
    while (i < acc->n || j < nrows) {
        if (j == nrows || (i < acc->n && acc->v[i] < rows[j].order_id)) {
            f->missing++;
            i++;
        } else if (i == acc->n || rows[j].order_id < acc->v[i]) {
            f->created += rows[j].created ? units_of(&rows[j]) : 0;
            f->extra_created += rows[j].created;
            j++;
        } else {
            f->created += rows[j].created ? units_of(&rows[j]) : 0;
            f->not_created += !rows[j].created && !rows[j].closed;
            i++;
            j++;
        }
    }
    for (size_t k = 0; k < nrows; k++) {
        f->closed += rows[k].closed != 0;
        f->closed_released += rows[k].closed && rows[k].released;
    }
    user_units *users = malloc((nrows ? nrows : 1) * sizeof(*users));
    if (!users)
        return -1;
    /* At most per_user_limit units per user at a time (issue 31; 1: one order): a closed
     * order no longer holds its units. */
    long long limit = f->per_user_limit > 0 ? f->per_user_limit : 1;
    size_t nu = 0;
    for (size_t k = 0; k < nrows; k++)
        if (rows[k].created)
            users[nu++] = (user_units){rows[k].user_id, units_of(&rows[k])};
    qsort(users, nu, sizeof(*users), cmp_user);
    for (size_t k = 0; k < nu;) {
        long long sum = 0;
        size_t e = k;
        for (; e < nu && users[e].user_id == users[k].user_id; e++)
            sum += users[e].units;
        f->dup_users += sum > limit;
        k = e;
    }
    free(users);
    return 0;
}

static int line(FILE *out, int ok, const char *name, long long figure, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int line(FILE *out, int ok, const char *name, long long figure, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    fprintf(out, "%-4s %-14s %-8lld %s\n", ok ? "ok" : "FAIL", name, figure, detail);
    return !ok;
}

int sc_judge(const sc_figures *f, FILE *out)
{
    int bad = 0;
    long long total = f->stock_total;
    if (!f->event_found) {
        fprintf(out, "FAIL event         -        event %llu is not in seckill_event\n",
                (unsigned long long)f->event_id);
        bad++;
    }
    /* 3. No lost order: every 202 is exactly one row, created. Order ids are the primary
     * key, so "exactly once" is "present"; a repeated id in accepted.txt would be two
     * promises on one row. */
    long long lost = (long long)(f->missing + f->not_created + f->accepted_repeated);
    bad += line(out, lost == 0 && f->accepted_bad_lines == 0, "lost", lost,
                "accepted %llu, in seckill_order %llu, missing %llu, not 'created' %llu, "
                "repeated in accepted.txt %llu, unreadable lines %llu",
                (unsigned long long)f->accepted,
                (unsigned long long)(f->accepted - f->missing), (unsigned long long)f->missing,
                (unsigned long long)f->not_created, (unsigned long long)f->accepted_repeated,
                (unsigned long long)f->accepted_bad_lines);
    /* 1. No oversell, in PostgreSQL and in Redis. */
    long long over_pg = (long long)f->created - total;
    /* Buyers may also name users of closed orders (rebuy_after_release false keeps them). */
    long long over_redis = f->redis_ok ? (f->buyers - total - (long long)f->closed) : 0;
    long long oversold = over_pg > 0 ? over_pg : 0;
    if (over_redis > oversold)
        oversold = over_redis;
    if (f->redis_ok && f->stock_present && f->redis_stock < 0 && -f->redis_stock > oversold)
        oversold = -f->redis_stock;
    bad += line(out, oversold == 0 && f->event_found, "oversold", oversold,
                "held (created + paid) %llu of stock_total %lld; redis buyers %lld "
                "(closed orders %llu), redis stock %lld",
                (unsigned long long)f->created, total, f->buyers,
                (unsigned long long)f->closed, f->redis_stock);
    /* 2. One per user, or per_user_limit units per user (issue 31). */
    bad += line(out, f->dup_users == 0, "duplicates", (long long)f->dup_users,
                "users holding more than per_user_limit %lld units of the event (rows %llu)",
                f->per_user_limit > 0 ? f->per_user_limit : 1, (unsigned long long)f->rows);
    /* PostgreSQL's stock agrees with its orders. */
    long long stock_diff = f->stock_left - (total - (long long)f->created);
    bad += line(out, stock_diff == 0 && f->event_found, "stock_left", stock_diff,
                "seckill_event.stock_left %lld vs stock_total %lld - held %llu",
                f->stock_left, total, (unsigned long long)f->created);
    /* 4. No leaked stock: once drained, what Redis still holds plus what waits plus what
     * was created is the whole stock. */
    if (!f->redis_ok || !f->stock_present) {
        bad += line(out, 0, "redis_balance", -1, "%s",
                    f->redis_ok ? "the event's stock key is not in Redis" : "Redis unreachable");
    } else {
        long long diff = f->redis_stock + f->pending + (long long)f->created - total;
        bad += line(out, diff == 0, "redis_balance", diff,
                    "redis stock %lld + pending %lld + held %llu vs stock_total %lld",
                    f->redis_stock, f->pending, (unsigned long long)f->created, total);
    }
    /* Issue 22: every cancelled or expired order gave its unit back exactly once: all
     * released in PostgreSQL, and the gate's released set names each of them once. */
    long long unreleased = (long long)(f->closed - f->closed_released);
    long long set_diff = f->redis_ok && f->redis_released >= 0
                             ? f->redis_released - (long long)f->closed
                             : 0;
    bad += line(out, unreleased == 0 && set_diff == 0 && (!f->redis_ok || f->redis_released >= 0),
                "releases", unreleased ? unreleased : set_diff,
                "closed orders %llu, released in PostgreSQL %llu, in the gate's released set %lld",
                (unsigned long long)f->closed, (unsigned long long)f->closed_released,
                f->redis_released);
    /* 5. Nothing in the dead-letter topic for this event. */
    if (f->dlq_checked == 0)
        fprintf(out, "%-4s %-14s %-8s %s\n", "skip", "dlq", "-", "not checked (dlq = false)");
    else if (f->dlq_checked < 0)
        bad += line(out, 0, "dlq", -1, "%s could not be read", f->dlq_topic);
    else
        bad += line(out, f->dlq == 0, "dlq", f->dlq, "messages in %s naming event %llu",
                    f->dlq_topic, (unsigned long long)f->event_id);
    fprintf(out, "info drain          %-8s %s after %.1f s; %llu created rows without a 202 here "
                 "(answers lost on the way back)\n",
            f->drained ? "over" : "NOT-OVER", f->drained ? "drained" : "still moving or stuck",
            f->waited_s, (unsigned long long)f->extra_created);
    if (bad)
        fprintf(out, "%d guarantee(s) violated for event %llu\n", bad, (unsigned long long)f->event_id);
    else
        fprintf(out, "all guarantees hold for event %llu\n", (unsigned long long)f->event_id);
    return bad;
}
