/* order_recon_pg: the reconciler's SQL. See order_recon_pg.h. */
#include "order_recon_pg.h"
#include "order_recon_rule.h"
#include "sk_log.h"
#include "sk_pg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct order_recon_pg {
    const char *conninfo;
    PGconn *conn;
    char err[256]; /* the last failure, one line (sk_pg: never the password) */
};

#define RECON_APP "seckill-order/reconciler"

order_recon_pg *order_recon_pg_new(const char *conninfo)
{
    order_recon_pg *p = calloc(1, sizeof(*p));
    if (p)
        p->conninfo = conninfo;
    return p;
}

static void log_failure(const order_recon_pg *p)
{
    sk_log(SK_LOG_WARN, "reconciler_pg_failed", "app=" RECON_APP " err=\"%s\"", p->err);
}

/* One statement with text parameters; a failure is logged, and a connection it broke
 * (or closed at its deadline) is dropped. @returns 0 or -1. */
static int recon_exec(order_recon_pg *p, const char *what, const char *sql, int n,
                      const char *const *params, PGresult **res)
{
    if (sk_pg_exec(p->conn, what, sql, n, params, PGRES_TUPLES_OK, res, p->err,
                   sizeof(p->err)) == SK_PG_OK)
        return 0;
    log_failure(p);
    if (p->conn && PQstatus(p->conn) != CONNECTION_OK)
        order_recon_pg_disconnect(p);
    return -1;
}

int order_recon_pg_connect(order_recon_pg *p)
{
    if (p->conn && PQstatus(p->conn) == CONNECTION_OK)
        return 0;
    order_recon_pg_disconnect(p);
    p->conn = sk_pg_connect(p->conninfo, RECON_APP, p->err, sizeof(p->err));
    if (!p->conn) {
        log_failure(p);
        return -1;
    }
    return 0;
}

int order_recon_pg_up(const order_recon_pg *p)
{
    return p->conn != NULL;
}

void order_recon_pg_disconnect(order_recon_pg *p)
{
    if (p->conn)
        PQfinish(p->conn);
    p->conn = NULL;
}

void order_recon_pg_free(order_recon_pg *p)
{
    if (!p)
        return;
    order_recon_pg_disconnect(p);
    free(p);
}

int order_recon_pg_events(order_recon_pg *p, long long horizon_s, order_recon_event **out)
{
    char hz[24];
    snprintf(hz, sizeof(hz), "%lld", horizon_s);
    const char *params[1] = {hz}; /* $1: horizon in seconds */
    PGresult *ev;
    if (recon_exec(p, "events",
                   "SELECT id::text, ends_at > now(), segments FROM seckill_event "
                   "WHERE ends_at > now() - make_interval(secs => $1::int)",
                   1, params, &ev) != 0) {
        order_recon_pg_disconnect(p); /* the scan starts over on a new connection */
        return -1;
    }
    int n = PQntuples(ev);
    order_recon_event *e = calloc((size_t)n + 1, sizeof(*e));
    if (!e) {
        PQclear(ev);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        e[i].id = strtoull(PQgetvalue(ev, i, 0), NULL, 10);
        e[i].live = PQgetvalue(ev, i, 1)[0] == 't';
        e[i].k = order_recon_segments_k(PQgetvalue(ev, i, 2));
    }
    PQclear(ev);
    *out = e;
    return n;
}

int order_recon_pg_stored(order_recon_pg *p, const char *const *ids, size_t n,
                          unsigned char *stored)
{
    /* One query for all: the ids as a bigint[] literal. */
    char *arr = order_recon_id_array(ids, n);
    if (!arr)
        return -1;
    const char *params[1] = {arr}; /* $1: the pending order ids */
    PGresult *res;
    int rc = recon_exec(p, "stored",
                        "SELECT order_id::text FROM seckill_order "
                        "WHERE order_id = ANY($1::bigint[])",
                        1, params, &res);
    free(arr);
    if (rc != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        stored[i] = 0;
        for (int j = 0; j < PQntuples(res) && !stored[i]; j++)
            stored[i] = strcmp(PQgetvalue(res, j, 0), ids[i]) == 0;
    }
    PQclear(res);
    return 0;
}

/* Runs one read of the gate's snapshot ($1: the event id). @returns its rows, or NULL
 * (logged). */
static PGresult *gate_query(order_recon_pg *p, const char *sql, const char *event)
{
    const char *params[1] = {event};
    PGresult *res = NULL;
    if (p->conn && PQstatus(p->conn) == CONNECTION_OK)
        recon_exec(p, "gate", sql, 1, params, &res);
    return res;
}

int order_recon_pg_gate(order_recon_pg *p, uint64_t event_id, order_recon_gate *g)
{
    memset(g, 0, sizeof(*g));
    char a[24];
    snprintf(a, sizeof(a), "%" PRIu64, event_id);
    /* One snapshot for the three reads: a close committed between the stock_left read and
     * the closed list would put an order in the released set whose unit the stock does
     * not count (a unit lost), or the other way round (a unit given twice). */
    if (sk_pg_exec(p->conn, "gate begin", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0,
                   NULL, PGRES_COMMAND_OK, NULL, p->err, sizeof(p->err)) != SK_PG_OK) {
        log_failure(p);
        if (p->conn && PQstatus(p->conn) != CONNECTION_OK)
            order_recon_pg_disconnect(p);
        return -1;
    }
    g->event = gate_query(p,
                          "SELECT stock_left, (extract(epoch FROM starts_at) * 1000)::bigint, "
                          "(extract(epoch FROM ends_at) * 1000)::bigint, per_user_limit, "
                          "coalesce(ip_rate, 0), coalesce(user_rate, 0), coalesce(event_rate, 0), "
                          "coalesce(challenge_bits, 0) FROM seckill_event WHERE id = $1",
                          a);
    /* The buyers: users holding an order (created or paid), and those whose order was
     * cancelled or expired when the event keeps them out (rebuy_after_release false). */
    /* "user_id:order_id" (event_reload.lua's buyers hash): per user the order a
     * duplicate names, a live one before a closed one, the latest first; for an event
     * whose per_user_limit is above 1, ":units" after it (issue 31): the units of those
     * orders, which count against the limit as reserve.lua's units hash did. */
    g->buyers = gate_query(p,
                           "SELECT o.user_id::text || ':' || (array_agg(o.order_id ORDER BY "
                           "o.status IN ('created', 'paid') DESC, o.order_id DESC))[1]::text || "
                           "CASE WHEN e.per_user_limit > 1 THEN ':' || sum(o.quantity)::text "
                           "ELSE '' END FROM seckill_order o "
                           "JOIN seckill_event e ON e.id = o.event_id WHERE o.event_id = $1 "
                           "AND (o.status IN ('created', 'paid') OR (o.status IN "
                           "('cancelled', 'expired') AND NOT e.rebuy_after_release)) "
                           "GROUP BY o.user_id, e.per_user_limit",
                           a);
    /* The closed orders: stock_left counts their units, given back to Redis or not. */
    g->closed = gate_query(p,
                           "SELECT order_id::text, user_id::text FROM seckill_order "
                           "WHERE event_id = $1 AND status IN ('cancelled', 'expired')",
                           a);
    if (!g->event || !g->buyers || !g->closed) {
        if (p->conn) { /* a refused read aborted the transaction: end it */
            char ignored[8];
            sk_pg_exec(p->conn, "gate rollback", "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL,
                       ignored, sizeof(ignored));
        }
        return -1; /* logged */
    }
    if (sk_pg_exec(p->conn, "gate commit", "COMMIT", 0, NULL, PGRES_COMMAND_OK, NULL, p->err,
                   sizeof(p->err)) != SK_PG_OK) {
        log_failure(p);
        if (p->conn && PQstatus(p->conn) != CONNECTION_OK)
            order_recon_pg_disconnect(p);
        return -1;
    }
    if (PQntuples(g->event) != 1)
        return 0;
    int nu = PQntuples(g->buyers), nc = PQntuples(g->closed);
    const int f = ORDER_RECON_GATE_FIXED;
    g->argv = calloc((size_t)nu + (size_t)nc + (size_t)f, sizeof(*g->argv));
    g->closed_users = calloc((size_t)nc + 1, sizeof(*g->closed_users));
    if (!g->argv || !g->closed_users)
        return 0;
    for (int i = 0; i < f - 1; i++)
        g->argv[i] = PQgetvalue(g->event, 0, i);
    snprintf(g->nbuyers_s, sizeof(g->nbuyers_s), "%d", nu);
    g->argv[f - 1] = g->nbuyers_s;
    for (int i = 0; i < nu; i++)
        g->argv[f + i] = PQgetvalue(g->buyers, i, 0);
    for (int i = 0; i < nc; i++) {
        g->argv[f + nu + i] = PQgetvalue(g->closed, i, 0);
        g->closed_users[i] = PQgetvalue(g->closed, i, 1);
    }
    g->nbuyers = nu;
    g->nclosed = nc;
    return 1;
}

void order_recon_gate_clear(order_recon_gate *g)
{
    free(g->argv);
    free(g->closed_users);
    PQclear(g->event);
    PQclear(g->buyers);
    PQclear(g->closed);
    memset(g, 0, sizeof(*g));
}

int order_recon_pg_taken_count(order_recon_pg *p, uint64_t event_id, const char *const *ids,
                                 size_t n, long long *count)
{
    char a[24];
    snprintf(a, sizeof(a), "%" PRIu64, event_id);
    char *arr = order_recon_id_array(ids, n);
    if (!arr)
        return -1;
    const char *params[2] = {a, arr}; /* $1: the event id, $2: the order ids */
    PGresult *c;
    int rc = recon_exec(p, "taken count",
                        /* an id comes once per unit of its order (issue 31): the
                         * join counts a stored order's units */
                        "SELECT count(*) FROM seckill_order o "
                        "JOIN unnest($2::bigint[]) AS t(id) ON o.order_id = t.id "
                        "WHERE o.event_id = $1 AND o.status <> 'rejected'",
                        2, params, &c);
    free(arr);
    if (rc != 0)
        return -1;
    *count = strtoll(PQgetvalue(c, 0, 0), NULL, 10);
    PQclear(c);
    return 0;
}

/* The expiry of an event's keys, epoch ms ($1 below: events.retention_s). */
#define RECON_EXPIRE_AT_SQL                                                                \
    "(extract(epoch FROM ends_at + make_interval(secs => payment_window_s + $1::int)) "   \
    "* 1000)::bigint"

int order_recon_pg_expiries(order_recon_pg *p, long long retention_s, long long grace_s,
                            int max, order_recon_expiry **out)
{
    char ret[24], gr[24], lim[24];
    snprintf(ret, sizeof(ret), "%lld", retention_s);
    snprintf(gr, sizeof(gr), "%lld", grace_s);
    snprintf(lim, sizeof(lim), "%d", max);
    const char *params[3] = {ret /* $1 retention, s */, gr /* $2 grace, s */, lim /* $3 rows */};
    PGresult *res;
    if (recon_exec(p, "expiries",
                   "SELECT id::text, segments, " RECON_EXPIRE_AT_SQL " AS at FROM seckill_event "
                   "WHERE ends_at + make_interval(secs => payment_window_s + $1::int) > "
                   "      now() - make_interval(secs => $2::int) "
                   "ORDER BY at LIMIT $3::int",
                   3, params, &res) != 0)
        return -1;
    int n = PQntuples(res);
    order_recon_expiry *e = calloc((size_t)n + 1, sizeof(*e));
    if (!e) {
        PQclear(res);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        e[i].id = strtoull(PQgetvalue(res, i, 0), NULL, 10);
        e[i].k = order_recon_segments_k(PQgetvalue(res, i, 1));
        e[i].expire_at_ms = strtoll(PQgetvalue(res, i, 2), NULL, 10);
    }
    PQclear(res);
    *out = e;
    return n;
}

int order_recon_pg_events_gone(order_recon_pg *p, const char *const *ids, size_t n,
                               long long retention_s, unsigned char *gone)
{
    char *arr = order_recon_id_array(ids, n);
    if (!arr)
        return -1;
    char ret[24];
    snprintf(ret, sizeof(ret), "%lld", retention_s);
    const char *params[2] = {ret /* $1 retention, s */, arr /* $2 the event ids */};
    PGresult *res;
    int rc = recon_exec(p, "events gone",
                        "SELECT id::text FROM seckill_event WHERE id = ANY($2::bigint[]) "
                        "AND ends_at + make_interval(secs => payment_window_s + $1::int) > now()",
                        2, params, &res);
    free(arr);
    if (rc != 0)
        return -1;
    for (size_t i = 0; i < n; i++) { /* gone unless a row still in its keys' life says so */
        gone[i] = 1;
        for (int j = 0; j < PQntuples(res) && gone[i]; j++)
            gone[i] = strcmp(PQgetvalue(res, j, 0), ids[i]) != 0;
    }
    PQclear(res);
    return 0;
}
