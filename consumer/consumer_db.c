/* consumer_db: batched, idempotent order writes (the migrations: consumer_db_migrate.c).
 * See consumer_db.h.
 *
 * Why one INSERT ... SELECT FROM unnest(): six array parameters carry the whole batch
 * in one round trip and one plan, and the stock decision, the insert and the stock
 * update happen in one statement under the event row locks taken just before, so no
 * other writer can slip between "how much stock is left" and "take it".
 * Why binary arrays: the server then copies fixed-size numbers instead of parsing
 * every element's text (array_in, int8in), and we skip printing them. */
#include "consumer_db.h"
#include "consumer_db_int.h"
#include "order_msg.h"    /* ORDER_INDEX_OUTCOME_REPLAY */
#include "order_status.h" /* the outcome letters */

#include "sk_pg.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* After a unique violation on the fast path, this many batches take the safe path:
 * replays come in runs (a restart or a rebalance replays a whole uncommitted tail). */
#define SAFE_BATCHES_AFTER_CONFLICT 16

/* Locks the batch's events, in id order: two consumers locking overlapping sets in
 * the same order cannot deadlock. Their stock_left is then stable until COMMIT. The
 * third column is the pay_by (epoch ms) the INSERTs below give this event's new rows:
 * now() is the transaction's start, the same in every statement of it, so the order
 * index can carry the exact value (issue 22: GET answers pay_by without PostgreSQL).
 * The fourth: whether a user may hold several orders (issue 31). The fifth: the same
 * pay_by in microseconds, exactly as the fast path's COPY stores it.
 * $1: the event ids of the batch. */
static const char SQL_LOCK[] =
    "SELECT id, stock_left, "
    "(extract(epoch FROM now() + make_interval(secs => payment_window_s)) * 1000)::bigint, "
    "per_user_limit > 1, "
    "(extract(epoch FROM now() + make_interval(secs => payment_window_s)) * 1000000)::bigint "
    "FROM seckill_event WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE";

/* $1 order ids, $2 event ids, $3 user ids, $4 Kafka partitions, $5 Kafka offsets,
 * $6 created_at (the message's ts_ms as a timestamptz), $7 quantities (the order's units,
 * issue 31): parallel arrays, one element per order (deduplicated within the batch,
 * events known to exist and locked by SQL_LOCK in this transaction; the join with them
 * gives each row its pay_by, the payment window counted from this write, deploy/sql/002).
 * Every new order goes in as 'created'; ON CONFLICT DO NOTHING (no target: every
 * unique key, so the primary key and (event_id, user_id)) skips replays and second
 * orders. The same statement takes min(new units, stock_left) off each event, so
 * stock_left never goes below zero, and returns the new orders; the caller flips
 * the surplus beyond the stock to 'rejected' (SQL_REJECT), a rare path. The rows of an
 * event whose per_user_limit is above 1 are many_per_user: 011's one-order-per-user
 * index skips them (the gate counts a user's units).
 * Why not rank against stock before inserting: an anti-join and a window over every
 * row cost as much as the insert itself, for a case that should never happen. */
static const char SQL_INSERT[] =
    "WITH ins AS ("
    "  INSERT INTO seckill_order (order_id, event_id, user_id, status, created_at,"
    "                             kafka_partition, kafka_offset, pay_by, quantity, many_per_user)"
    "  SELECT order_id, event_id, user_id, 'created', ts, kpart, koff,"
    "         now() + make_interval(secs => e.payment_window_s), q, e.per_user_limit > 1"
    "  FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::int[], $5::bigint[],"
    "              $6::timestamptz[], $7::int[]) AS t(order_id, event_id, user_id, kpart, koff, ts, q)"
    "  JOIN seckill_event e ON e.id = t.event_id"
    "  ON CONFLICT DO NOTHING"
    "  RETURNING order_id, event_id, quantity"
    "), cnt AS ("
    "  SELECT event_id, sum(quantity) AS n FROM ins GROUP BY event_id"
    "), upd AS ("
    "  UPDATE seckill_event e SET stock_left = e.stock_left - LEAST(c.n, e.stock_left)"
    "  FROM cnt c WHERE e.id = c.event_id AND e.stock_left > 0"
    "  RETURNING e.id"
    ") SELECT order_id, event_id, quantity FROM ins";

/* The fast path: the batch's rows in one binary COPY (wr_build_rows writes them: the
 * same values SQL_INSERT would store, pay_by and many_per_user from SQL_LOCK), then the
 * stock taken off from counts the caller computed ($1 event ids, $2 new units per event):
 * when no order of the batch is stored yet, every row goes in, so the counts are known in
 * advance. A replay makes the COPY fail with unique_violation (23505); the caller then
 * rolls back and writes the batch again with SQL_INSERT. COPY skips the executor's
 * per-row work of an INSERT ... SELECT FROM unnest(...) JOIN (the arrays' unpacking, the
 * join, the pay_by expression): measured on 1,000-row batches (docs/benchmarks.md,
 * issue 36), the writers' backends spend less per order; replays are rare (they follow
 * crashes and rebalances). The statement triggers (006) fire for a COPY as for an
 * INSERT, so the transitions are emitted the same. */
static const char SQL_COPY[] =
    "COPY seckill_order (order_id, event_id, user_id, status, created_at, kafka_partition,"
    " kafka_offset, pay_by, quantity, many_per_user) FROM STDIN (FORMAT binary)";
static const char SQL_STOCK[] =
    "UPDATE seckill_event e SET stock_left = e.stock_left - LEAST(d.n, e.stock_left)"
    "  FROM unnest($1::bigint[], $2::int[]) AS d(id, n) WHERE e.id = d.id";

/* $1: the order ids stored in this transaction beyond their event's stock; $2 event
 * ids, $3 units given back to each: an order is rejected whole (issue 31), so the
 * rejected orders may hold more units than the statement above could not take off
 * stock_left; the difference goes back (0 when every order is one unit). */
static const char SQL_REJECT[] =
    "WITH rej AS ("
    "  UPDATE seckill_order SET status = 'rejected' WHERE order_id = ANY($1::bigint[])"
    "  RETURNING 1"
    ") UPDATE seckill_event e SET stock_left = e.stock_left + g.back"
    "  FROM unnest($2::bigint[], $3::int[]) AS g(id, back) WHERE e.id = g.id AND g.back > 0";

void cdb_set_err(consumer_db *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(db->errstr, sizeof(db->errstr), fmt, ap);
    va_end(ap);
    /* libpq messages end with a newline (and may hold a DETAIL line): keep one logfmt-safe line. */
    for (char *p = db->errstr; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
        else if (*p == '"') /* logged inside err="..." */
            *p = '\'';
    /* ... and no trailing blank. */
    for (size_t n = strlen(db->errstr); n > 0 && db->errstr[n - 1] == ' '; n--)
        db->errstr[n - 1] = '\0';
}

consumer_db *consumer_db_new(const char *conninfo)
{
    consumer_db *db = calloc(1, sizeof(*db));
    if (!db || !(db->conninfo = strdup(conninfo ? conninfo : ""))) {
        free(db);
        return NULL;
    }
    return db;
}

void cdb_disconnect(consumer_db *db)
{
    if (db->conn)
        PQfinish(db->conn);
    db->conn = NULL;
    db->prepared = 0;
}

void consumer_db_free(consumer_db *db)
{
    if (!db)
        return;
    cdb_disconnect(db);
    free(db->conninfo);
    free(db->rejects);
    for (int i = 0; i < NARR; i++)
        free(db->arr[i].buf);
    free(db->copy.buf);
    free(db);
}

const char *consumer_db_errstr(const consumer_db *db)
{
    return db->errstr;
}

/* The connection: sk_pg's bounds (connect_timeout, keepalives, statement deadline) and
 * its notice log. */
int cdb_connect(consumer_db *db)
{
    if (db->conn && PQstatus(db->conn) == CONNECTION_OK)
        return 0;
    cdb_disconnect(db);
    db->conn = sk_pg_connect(db->conninfo, "seckill-consumer/writer", db->errstr,
                             sizeof(db->errstr));
    return db->conn ? 0 : -1;
}

/* After an sk_pg call that answered rc: a connection it broke (or closed at its deadline)
 * is dropped, the next call reconnects. @returns rc. */
static int db_after(consumer_db *db, int rc)
{
    if (rc != SK_PG_OK && PQstatus(db->conn) != CONNECTION_OK)
        cdb_disconnect(db);
    return rc;
}

/* Runs sql (n text parameters) expecting `want`, rows in *res when res is not NULL.
 * @returns 0 or -1 (error set). */
int cdb_exec(consumer_db *db, const char *what, const char *sql, int n,
                   const char *const *params, ExecStatusType want, PGresult **res)
{
    return db_after(db, sk_pg_exec(db->conn, what, sql, n, params, want, res, db->errstr,
                                   sizeof(db->errstr))) == SK_PG_OK ? 0 : -1;
}

int cdb_exec_cmd(consumer_db *db, const char *sql, const char *what)
{
    return cdb_exec(db, what, sql, 0, NULL, PGRES_COMMAND_OK, NULL);
}

void cdb_rollback_quietly(consumer_db *db)
{
    if (db->conn && PQstatus(db->conn) == CONNECTION_OK) {
        char ignored[8]; /* the failure that led here is the one to report */
        db_after(db, sk_pg_exec(db->conn, "rollback", "ROLLBACK", 0, NULL, PGRES_COMMAND_OK, NULL,
                                ignored, sizeof(ignored)));
    }
}

/* Makes room for `n` more bytes in `a`. @returns 0 or -1 on OOM. */
static int barr_reserve(barr *a, size_t n)
{
    if (a->len + n <= a->cap)
        return 0;
    size_t cap = a->cap ? a->cap * 2 : 16384;
    while (cap < a->len + n)
        cap *= 2;
    char *p = realloc(a->buf, cap);
    if (!p)
        return -1;
    a->buf = p;
    a->cap = cap;
    return 0;
}

static void put_be32(char *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
}

static void put_be64(char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* Starts array i, empty, of element type `oid`. @returns 0 or -1 on OOM. */
static int barr_start(consumer_db *db, int i, uint32_t oid)
{
    barr *a = &db->arr[i];
    a->len = a->count = 0;
    a->oid = oid;
    if (barr_reserve(a, BARR_HEADER) != 0)
        return -1;
    a->len = BARR_HEADER;
    return 0;
}

/* Appends one element; its width follows the element type (int4: 4 bytes, int8 and
 * timestamptz: 8). @returns 0 or -1 on OOM. */
static int barr_add(consumer_db *db, int i, int64_t v)
{
    barr *a = &db->arr[i];
    uint32_t w = a->oid == OID_INT4 ? 4 : 8;
    if (barr_reserve(a, 4 + w) != 0)
        return -1;
    char *p = a->buf + a->len;
    put_be32(p, w);
    if (w == 4)
        put_be32(p + 4, (uint32_t)(int32_t)v);
    else
        put_be64(p + 4, (uint64_t)v);
    a->len += 4 + w;
    a->count++;
    return 0;
}

/* Writes array i's header now that its length is known. */
static void barr_close(consumer_db *db, int i)
{
    barr *a = &db->arr[i];
    put_be32(a->buf, 1);         /* ndim */
    put_be32(a->buf + 4, 0);     /* no NULLs */
    put_be32(a->buf + 8, a->oid);
    put_be32(a->buf + 12, a->count);
    put_be32(a->buf + 16, 1);    /* lower bound */
}

/* Runs prepared statement `name` with arrays 0..n-1 as its binary parameters, expecting
 * `want` (rows in *res when res is not NULL). @returns an sk_pg_err (error set). */
static int exec_arrays(consumer_db *db, const char *name, int n, const char *what,
                       ExecStatusType want, PGresult **res)
{
    const char *vals[NARR];
    int lens[NARR], fmts[NARR];
    for (int i = 0; i < n; i++) {
        barr_close(db, i);
        vals[i] = db->arr[i].buf;
        lens[i] = (int)db->arr[i].len;
        fmts[i] = 1;
    }
    return db_after(db, sk_pg_exec_prepared(db->conn, what, name, n, vals, lens, fmts, want, res,
                                            db->errstr, sizeof(db->errstr)));
}

static int prepare(consumer_db *db)
{
    if (db->prepared)
        return 0;
    /* the rows ($1..$7 of SQL_INSERT; SQL_LOCK's $1 is the first) */
    static const Oid t_ins[] = {OID_INT8_ARRAY, OID_INT8_ARRAY, OID_INT8_ARRAY, OID_INT4_ARRAY,
                                OID_INT8_ARRAY, OID_TIMESTAMPTZ_ARRAY, OID_INT4_ARRAY};
    static const Oid t_rej[] = {OID_INT8_ARRAY, OID_INT8_ARRAY, OID_INT4_ARRAY};
    static const Oid t_stock[] = {OID_INT8_ARRAY, OID_INT4_ARRAY};
    static const struct {
        const char *what, *name, *sql;
        int n;
        const Oid *types;
    } stmts[] = {{"prepare lock", "sk_lock", SQL_LOCK, 1, t_ins},
                 {"prepare insert", "sk_insert", SQL_INSERT, 7, t_ins},
                 {"prepare stock", "sk_stock", SQL_STOCK, 2, t_stock},
                 {"prepare reject", "sk_reject", SQL_REJECT, 3, t_rej}};
    for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++)
        if (db_after(db, sk_pg_prepare(db->conn, stmts[i].what, stmts[i].name, stmts[i].sql,
                                       stmts[i].n, stmts[i].types, db->errstr,
                                       sizeof(db->errstr))) != 0)
            return -1;
    db->prepared = 1;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Per event of the batch: its stock before, and the new orders stored now. */
typedef struct ev_stock {
    int64_t id;
    long stock;    /* stock_left read under the lock */
    long inserted; /* new units this transaction (issue 31: an order holds quantity) */
    long orders;   /* new rows this transaction */
    long sent;     /* units sent to the INSERT */
    long sent_rows; /* rows sent to the INSERT */
    int surplus;    /* more new units than stock: wr_choose_rejects rejects some */
    int many;       /* per_user_limit > 1: a user's second order in a batch is one */
    int64_t pay_by_ms; /* the pay_by of its rows written now */
    int64_t pay_by_us; /* the same, in microseconds (the fast path's COPY) */
} ev_stock;

static int cmp_ev(const void *a, const void *b)
{
    return cmp_i64(&((const ev_stock *)a)->id, &((const ev_stock *)b)->id);
}

static ev_stock *ev_find(ev_stock *evs, size_t n, int64_t id)
{
    ev_stock key = {.id = id};
    return bsearch(&key, evs, n, sizeof(*evs), cmp_ev);
}

/* One write_once call's working set: the batch, the transaction's choices and what
 * the steps below learn from PostgreSQL. Owned by write_once (wr_free). */
typedef struct wr_state {
    consumer_db *db;
    consumer_batch *b;
    consumer_db_result *res;
    int safe;          /* SQL_INSERT (replays allowed) rather than SQL_COPY */
    size_t n;          /* messages in the batch */
    int64_t *events;   /* distinct event ids of the valid messages, sorted */
    size_t nev;
    ev_stock *evs;     /* the events that exist, sorted by id (SQL_LOCK's ORDER BY) */
    size_t nknown;
    int64_t *fresh;    /* order ids inserted now, sorted (safe path only) */
    size_t nfresh;
    size_t nrej;       /* entries of db->rejects used by this batch */
} wr_state;

static void wr_free(wr_state *w)
{
    free(w->events);
    free(w->evs);
    free(w->fresh);
}

static int wr_oom(wr_state *w)
{
    cdb_set_err(w->db, "out of memory");
    return -1;
}

/* Step 0: resets the messages' per-attempt marks and collects the batch's distinct
 * event ids into w->events. @returns 0 or -1 (out of memory). */
static int wr_collect(wr_state *w)
{
    w->events = malloc((w->n ? w->n : 1) * sizeof(int64_t));
    if (!w->events)
        return wr_oom(w);
    size_t nev = 0;
    for (size_t i = 0; i < w->n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(w->b, i);
        if (m->err == CONSUMER_MSG_UNKNOWN_EVENT) /* from an earlier failed attempt */
            m->err = CONSUMER_MSG_OK;
        m->outcome = 0;
        m->pay_by_ms = 0;
        if (m->err == CONSUMER_MSG_OK)
            w->events[nev++] = m->order.event_id;
    }
    qsort(w->events, nev, sizeof(*w->events), cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < nev; i++)
        if (u == 0 || w->events[u - 1] != w->events[i])
            w->events[u++] = w->events[i];
    w->nev = u;
    return 0;
}

/* Step 1 (in the transaction): locks the events, learns which exist and their stock.
 * @returns 0 or -1 (error set). */
static int wr_lock(wr_state *w)
{
    consumer_db *db = w->db;
    if (barr_start(db, 0, OID_INT8) != 0)
        return wr_oom(w);
    for (size_t i = 0; i < w->nev; i++)
        if (barr_add(db, 0, w->events[i]) != 0)
            return wr_oom(w);
    PGresult *r;
    if (exec_arrays(db, "sk_lock", 1, "lock events", PGRES_TUPLES_OK, &r) != SK_PG_OK)
        return -1;
    w->nknown = (size_t)PQntuples(r);
    w->evs = calloc(w->nknown ? w->nknown : 1, sizeof(*w->evs));
    if (!w->evs) {
        PQclear(r);
        return wr_oom(w);
    }
    for (size_t i = 0; i < w->nknown; i++) {
        w->evs[i].id = strtoll(PQgetvalue(r, (int)i, 0), NULL, 10);
        w->evs[i].stock = strtol(PQgetvalue(r, (int)i, 1), NULL, 10);
        w->evs[i].pay_by_ms = strtoll(PQgetvalue(r, (int)i, 2), NULL, 10);
        w->evs[i].many = PQgetvalue(r, (int)i, 3)[0] == 't';
        w->evs[i].pay_by_us = strtoll(PQgetvalue(r, (int)i, 4), NULL, 10);
    }
    PQclear(r);
    /* Rows come back in id order (ORDER BY id), so evs is sorted for bsearch. */
    return 0;
}

/* The binary COPY format (PostgreSQL's "COPY" page): an 11-byte signature, flags and
 * header-extension length (both 0), then per row its field count and each field's
 * length and big-endian value, then -1 as the count that ends it. */
static const char COPY_SIGNATURE[11] = {'P', 'G',  'C',  'O',  'P', 'Y',
                                         '\n', '\377', '\r', '\n', '\0'};
#define COPY_FIELDS 10 /* SQL_COPY's columns */
/* The largest row: the count, then 10 lengths and at most 8 bytes each. */
#define COPY_ROW_MAX (2 + COPY_FIELDS * (4 + 8))

static int copy_start(consumer_db *db)
{
    barr *a = &db->copy;
    a->len = 0;
    if (barr_reserve(a, sizeof(COPY_SIGNATURE) + 8) != 0)
        return -1;
    memcpy(a->buf, COPY_SIGNATURE, sizeof(COPY_SIGNATURE));
    put_be32(a->buf + sizeof(COPY_SIGNATURE), 0);
    put_be32(a->buf + sizeof(COPY_SIGNATURE) + 4, 0);
    a->len = sizeof(COPY_SIGNATURE) + 8;
    return 0;
}

static char *copy_field(char *p, const void *v, uint32_t n)
{
    put_be32(p, n);
    memcpy(p + 4, v, n);
    return p + 4 + n;
}

static char *copy_i64(char *p, int64_t v)
{
    put_be32(p, 8);
    put_be64(p + 4, (uint64_t)v);
    return p + 12;
}

static char *copy_i32(char *p, int32_t v)
{
    put_be32(p, 4);
    put_be32(p + 4, (uint32_t)v);
    return p + 8;
}

/* One row of SQL_COPY: the order as SQL_INSERT would store it. @returns 0 or -1 (OOM). */
static int copy_row(consumer_db *db, const consumer_batch_msg *m, const ev_stock *e)
{
    barr *a = &db->copy;
    if (barr_reserve(a, COPY_ROW_MAX) != 0)
        return -1;
    char *p = a->buf + a->len;
    p[0] = 0;
    p[1] = COPY_FIELDS;
    p += 2;
    p = copy_i64(p, m->order.order_id);
    p = copy_i64(p, m->order.event_id);
    p = copy_i64(p, m->order.user_id);
    p = copy_field(p, "created", 7);
    p = copy_i64(p, m->order.ts_ms * 1000 - PG_EPOCH_US);
    p = copy_i32(p, m->partition);
    p = copy_i64(p, m->offset);
    p = copy_i64(p, e->pay_by_us - PG_EPOCH_US);
    p = copy_i32(p, m->order.quantity);
    char many = e->many ? 1 : 0;
    p = copy_field(p, &many, 1);
    a->len = (size_t)(p - a->buf);
    return 0;
}

static int copy_end(consumer_db *db)
{
    barr *a = &db->copy;
    if (barr_reserve(a, 2) != 0)
        return -1;
    a->buf[a->len++] = (char)0xff; /* -1 as a 16-bit count */
    a->buf[a->len++] = (char)0xff;
    return 0;
}

/* Step 2a: writes the rows to insert, the fast path's COPY input or the safe path's
 * arrays $1..$7, marks the messages of unknown events, counts per event what is sent.
 * @returns the rows to insert, or -1 (OOM). */
static long wr_build_rows(wr_state *w)
{
    consumer_db *db = w->db;
    long rows = 0;
    static const uint32_t row_types[7] = {OID_INT8, OID_INT8, OID_INT8, OID_INT4, OID_INT8,
                                          OID_TIMESTAMPTZ, OID_INT4};
    if (!w->safe && copy_start(db) != 0)
        return wr_oom(w);
    for (int i = 0; w->safe && i < 7; i++)
        if (barr_start(db, i, row_types[i]) != 0)
            return wr_oom(w);
    for (size_t i = 0; i < w->n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(w->b, i);
        if (m->err != CONSUMER_MSG_OK)
            continue;
        ev_stock *e = ev_find(w->evs, w->nknown, m->order.event_id);
        if (!e) {
            m->err = CONSUMER_MSG_UNKNOWN_EVENT;
            w->res->unknown_event++;
            continue;
        }
        if (m->dup == 2 && e->many)
            m->dup = 0; /* a user's second order, which this event allows (issue 31) */
        if (m->dup)
            continue;
        e->sent += m->order.quantity;
        e->sent_rows++;
        /* ts_ms is at most year 9999 (consumer_msg), so the microseconds fit. */
        if (!w->safe ? copy_row(db, m, e) != 0
                     : barr_add(db, 0, m->order.order_id) || barr_add(db, 1, m->order.event_id) ||
                           barr_add(db, 2, m->order.user_id) || barr_add(db, 3, m->partition) ||
                           barr_add(db, 4, m->offset) ||
                           barr_add(db, 5, m->order.ts_ms * 1000 - PG_EPOCH_US) ||
                           barr_add(db, 6, m->order.quantity))
            return wr_oom(w);
        rows++;
    }
    if (!w->safe && copy_end(db) != 0)
        return wr_oom(w);
    return rows;
}

/* Step 2b, safe path: SQL_INSERT skips replays and returns the orders stored now,
 * which become w->fresh and the per-event counts. @returns 0 or -1 (error set). */
static int wr_insert_safe(wr_state *w)
{
    PGresult *r;
    if (exec_arrays(w->db, "sk_insert", 7, "insert orders", PGRES_TUPLES_OK, &r) != SK_PG_OK)
        return -1;
    w->nfresh = (size_t)PQntuples(r);
    w->fresh = malloc((w->nfresh ? w->nfresh : 1) * sizeof(int64_t));
    if (!w->fresh) {
        PQclear(r);
        return wr_oom(w);
    }
    for (size_t i = 0; i < w->nfresh; i++) {
        w->fresh[i] = strtoll(PQgetvalue(r, (int)i, 0), NULL, 10);
        ev_stock *e = ev_find(w->evs, w->nknown, strtoll(PQgetvalue(r, (int)i, 1), NULL, 10));
        if (e) {
            e->inserted += strtol(PQgetvalue(r, (int)i, 2), NULL, 10);
            e->orders++;
        }
    }
    PQclear(r);
    qsort(w->fresh, w->nfresh, sizeof(*w->fresh), cmp_i64);
    return 0;
}

/* Step 2b, fast path: the COPY; every row goes in (or the COPY fails), so the counts
 * are known now and take the stock off (SQL_STOCK: arrays 0 and 1, free once the COPY
 * is sent). @returns 0, -1 (error set) or -2 (a unique violation: a replay, write again
 * on the safe path). */
static int wr_insert_fast(wr_state *w)
{
    consumer_db *db = w->db;
    int rc = db_after(db, sk_pg_copy_in(db->conn, "copy orders", SQL_COPY, db->copy.buf,
                                        db->copy.len, db->errstr, sizeof(db->errstr)));
    if (rc != SK_PG_OK) /* a refused COPY leaves the connection up: its SQLSTATE is there */
        return rc == SK_PG_ESTATEMENT && strcmp(sk_pg_sqlstate(db->conn), "23505") == 0 ? -2
                                                                                         : -1;
    if (barr_start(db, 0, OID_INT8) || barr_start(db, 1, OID_INT4))
        return wr_oom(w);
    for (size_t i = 0; i < w->nknown; i++) {
        ev_stock *e = &w->evs[i];
        e->inserted = e->sent;
        e->orders = e->sent_rows;
        if (e->sent > 0 && (barr_add(db, 0, e->id) || barr_add(db, 1, e->sent)))
            return wr_oom(w);
    }
    return exec_arrays(db, "sk_stock", 2, "take stock", PGRES_COMMAND_OK, NULL) == SK_PG_OK ? 0
                                                                                          : -1;
}

/* Counts one rejected order of event `id` in db->rejects (the per-event summary the
 * caller logs). @returns 0 or -1 (OOM). */
static int wr_reject_count(wr_state *w, int64_t id)
{
    consumer_db *db = w->db;
    size_t j;
    for (j = 0; j < w->nrej && db->rejects[j].event_id != id; j++)
        ;
    if (j == w->nrej) {
        if (w->nrej == db->rejects_cap) {
            size_t cap = db->rejects_cap ? db->rejects_cap * 2 : 8;
            consumer_db_reject *q = realloc(db->rejects, cap * sizeof(*q));
            if (!q)
                return wr_oom(w);
            db->rejects = q;
            db->rejects_cap = cap;
        }
        db->rejects[w->nrej++] = (consumer_db_reject){.event_id = id, .count = 0};
    }
    db->rejects[j].count++;
    return 0;
}

/* Step 3a: counts the created orders; beyond an event's stock (in units), the latest
 * new orders of the batch (Kafka order) are chosen for 'rejected' into array 0, whole
 * (issue 31), and the units the rejects hold beyond the surplus go back to the event
 * (arrays 1 and 2). Redis should never let this happen: it is logged. @returns 1 when
 * there is a surplus (array 0 holds the chosen orders, possibly none), 0 when there is
 * none, or -1 (OOM). */
static long wr_choose_rejects(wr_state *w)
{
    long surplus_total = 0;
    for (size_t i = 0; i < w->nknown; i++) {
        ev_stock *e = &w->evs[i];
        e->surplus = e->inserted > e->stock;
        if (e->surplus)
            surplus_total += e->inserted - e->stock;
        else
            w->res->created += e->orders;
    }
    if (surplus_total == 0)
        return 0;
    if (barr_start(w->db, 0, OID_INT8) || barr_start(w->db, 1, OID_INT8) ||
        barr_start(w->db, 2, OID_INT4))
        return wr_oom(w);
    /* Walk the batch backwards (latest first); a message whose order is in `fresh`
     * and whose event still has surplus is rejected. */
    for (size_t i = w->n; i-- > 0;) {
        consumer_batch_msg *m = consumer_batch_msg_at(w->b, i);
        if (m->err != CONSUMER_MSG_OK || m->dup)
            continue;
        ev_stock *e = ev_find(w->evs, w->nknown, m->order.event_id);
        if (!e || e->inserted <= e->stock)
            continue;
        if (w->safe && !bsearch(&m->order.order_id, w->fresh, w->nfresh, sizeof(*w->fresh), cmp_i64))
            continue;
        if (barr_add(w->db, 0, m->order.order_id) != 0)
            return wr_oom(w);
        m->outcome = ORDER_STATUS_LETTER_REJECTED;
        e->inserted -= m->order.quantity; /* its units no longer beyond the stock */
        e->orders--;
        w->res->rejected++;
        if (wr_reject_count(w, e->id) != 0)
            return -1;
    }
    for (size_t i = 0; i < w->nknown; i++) {
        ev_stock *e = &w->evs[i];
        if (!e->surplus)
            continue; /* counted above */
        w->res->created += e->orders;
        long back = e->stock - (e->inserted > 0 ? e->inserted : 0);
        if (back > 0 && (barr_add(w->db, 1, e->id) || barr_add(w->db, 2, back)))
            return wr_oom(w);
    }
    return 1;
}

/* Step 3b: flips the chosen orders (array 0) to 'rejected', the units back (arrays 1,
 * 2). @returns 0 or -1. */
static int wr_write_rejects(wr_state *w)
{
    return exec_arrays(w->db, "sk_reject", 3, "reject surplus", PGRES_COMMAND_OK, NULL) == SK_PG_OK
               ? 0
               : -1;
}

/* Step 4, after COMMIT: every valid message not created nor rejected now is a
 * duplicate; sets each message's outcome, the one GET /api/v1/orders/{id} shows
 * (consumer_oidx.h): a row written now is created unless rejected above; anything
 * else is already in PostgreSQL (a replay) or never will be (a second order of a
 * user), which the front asks PostgreSQL about. */
static void wr_count_duplicates(wr_state *w)
{
    consumer_db_result *res = w->res;
    for (size_t i = 0; i < w->n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(w->b, i);
        if (m->err != CONSUMER_MSG_OK)
            continue;
        res->duplicates++;
        if (!m->outcome)
            m->outcome = !m->dup && (!w->safe || (w->fresh && bsearch(&m->order.order_id, w->fresh,
                                                                     w->nfresh, sizeof(*w->fresh),
                                                                     cmp_i64)))
                             ? ORDER_STATUS_LETTER_CREATED
                             : ORDER_INDEX_OUTCOME_REPLAY;
        if (m->outcome == ORDER_STATUS_LETTER_CREATED) {
            const ev_stock *e = ev_find(w->evs, w->nknown, m->order.event_id);
            m->pay_by_ms = e ? e->pay_by_ms : 0;
        }
    }
    res->duplicates -= res->created + res->rejected;
    res->rejects = w->db->rejects;
    res->nrejects = w->nrej;
}

/* Steps 1 to 3 inside the open transaction. @returns 0, -1 or -2 (as write_once). */
static int wr_transaction(wr_state *w)
{
    if (wr_lock(w) != 0)
        return -1;
    long rows = wr_build_rows(w);
    if (rows <= 0)
        return (int)rows; /* 0: nothing new to insert (unknown events, duplicates) */
    int rc = w->safe ? wr_insert_safe(w) : wr_insert_fast(w);
    if (rc != 0)
        return rc;
    long surplus = wr_choose_rejects(w);
    if (surplus < 0)
        return -1;
    return surplus > 0 ? wr_write_rejects(w) : 0;
}

/* One transaction. `safe`: SQL_INSERT (replays allowed) rather than SQL_COPY.
 * @returns 0, -1 (error, rolled back), or -2 (fast path hit a unique violation,
 * rolled back: write again with safe = 1). */
static int write_once(consumer_db *db, consumer_batch *b, consumer_db_result *res, int safe)
{
    memset(res, 0, sizeof(*res));
    wr_state w = {.db = db, .b = b, .res = res, .safe = safe, .n = consumer_batch_count(b)};
    int rc = wr_collect(&w);
    if (rc != 0 || w.nev == 0) { /* nev 0: only poison, nothing to write */
        wr_free(&w);
        return rc;
    }
    if (cdb_connect(db) != 0 || prepare(db) != 0 || cdb_exec_cmd(db, "BEGIN", "begin") != 0) {
        wr_free(&w);
        return -1;
    }
    rc = wr_transaction(&w);
    if (rc != 0) {
        cdb_rollback_quietly(db);
    } else if (cdb_exec_cmd(db, "COMMIT", "commit") != 0) {
        rc = -1; /* a failed COMMIT ends the transaction (or the connection is gone) */
    } else {
        wr_count_duplicates(&w);
    }
    wr_free(&w);
    return rc;
}

int consumer_db_write(consumer_db *db, consumer_batch *b, consumer_db_result *res)
{
    int safe = db->safe_left > 0;
    int rc = write_once(db, b, res, safe);
    if (rc == -2) { /* a replay: the fast path cannot take it */
        db->safe_left = SAFE_BATCHES_AFTER_CONFLICT;
        safe = 1;
        rc = write_once(db, b, res, 1);
    }
    if (rc == 0 && safe && db->safe_left > 0)
        db->safe_left--;
    return rc == 0 ? 0 : -1;
}
