/* consumer_db: migrations and batched, idempotent order writes. See consumer_db.h.
 *
 * Why one INSERT ... SELECT FROM unnest(): six array parameters carry the whole batch
 * in one round trip and one plan, and the stock decision, the insert and the stock
 * update happen in one statement under the event row locks taken just before, so no
 * other writer can slip between "how much stock is left" and "take it". */
#include "consumer_db.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct consumer_db {
    char *conninfo;
    PGconn *conn;
    int prepared; /* statements prepared on this connection */
    char errstr[512];
    consumer_db_reject *rejects;
    size_t rejects_cap;
    /* Text arrays for the six parameters, reused across batches. */
    char *arr[6];
    size_t arr_len[6], arr_cap[6];
};

/* Locks the batch's events, in id order: two consumers locking overlapping sets in
 * the same order cannot deadlock. $1: the event ids of the batch. */
static const char SQL_LOCK[] =
    "SELECT id FROM seckill_event WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE";

/* $1 order ids, $2 event ids, $3 user ids, $4 Kafka partitions, $5 Kafka offsets,
 * $6 ts_ms: parallel arrays, one element per order (deduplicated within the batch,
 * events known to exist and locked by SQL_LOCK in this transaction).
 * 'fresh' drops orders already stored; the rest are ranked per event in Kafka order,
 * the first stock_left of them are 'created'. ON CONFLICT DO NOTHING still guards
 * every unique key, and the stock update counts what the INSERT really returned. */
static const char SQL_INSERT[] =
    "WITH input AS ("
    "  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::int[], $5::bigint[],"
    "                       $6::bigint[]) AS t(order_id, event_id, user_id, kpart, koff, ts_ms)"
    "), fresh AS ("
    "  SELECT i.*, row_number() OVER (PARTITION BY i.event_id ORDER BY i.kpart, i.koff) AS rn"
    "  FROM input i"
    "  WHERE NOT EXISTS (SELECT 1 FROM seckill_order o WHERE o.order_id = i.order_id)"
    "    AND NOT EXISTS (SELECT 1 FROM seckill_order o"
    "                    WHERE o.event_id = i.event_id AND o.user_id = i.user_id)"
    "), ins AS ("
    "  INSERT INTO seckill_order (order_id, event_id, user_id, status, created_at,"
    "                             kafka_partition, kafka_offset)"
    "  SELECT f.order_id, f.event_id, f.user_id,"
    "         CASE WHEN f.rn <= e.stock_left THEN 'created' ELSE 'rejected' END,"
    "         to_timestamp(f.ts_ms / 1000.0), f.kpart, f.koff"
    "  FROM fresh f JOIN seckill_event e ON e.id = f.event_id"
    "  ON CONFLICT DO NOTHING"
    "  RETURNING event_id, status"
    "), cnt AS ("
    "  SELECT event_id, count(*) FILTER (WHERE status = 'created') AS created,"
    "         count(*) FILTER (WHERE status = 'rejected') AS rejected"
    "  FROM ins GROUP BY event_id"
    "), upd AS ("
    "  UPDATE seckill_event e SET stock_left = e.stock_left - c.created"
    "  FROM cnt c WHERE e.id = c.event_id AND c.created > 0"
    "  RETURNING e.id"
    ") SELECT event_id, created, rejected FROM cnt";

static const char SQL_VERSION_TABLE[] =
    "CREATE TABLE IF NOT EXISTS seckill_schema_version ("
    "  version    int PRIMARY KEY,"
    "  name       text NOT NULL,"
    "  applied_at timestamptz NOT NULL DEFAULT now())";

/* A constant key for pg_advisory_xact_lock: "seckill-migrate" (any fixed number works,
 * it only has to be the same in every consumer). */
#define MIGRATE_LOCK_KEY 0x5345434b4d4947LL

static void set_err(consumer_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(consumer_db *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(db->errstr, sizeof(db->errstr), fmt, ap);
    va_end(ap);
    /* libpq messages end with a newline (and may hold a DETAIL line): keep one line. */
    for (char *p = db->errstr; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = (p[1] ? ' ' : '\0');
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

static void db_disconnect(consumer_db *db)
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
    db_disconnect(db);
    free(db->conninfo);
    free(db->rejects);
    for (int i = 0; i < 6; i++)
        free(db->arr[i]);
    free(db);
}

const char *consumer_db_errstr(const consumer_db *db)
{
    return db->errstr;
}

/* Server notices ("relation already exists, skipping") are not errors: libpq would
 * print them on stderr, and libraries never print. */
static void on_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static int db_connect(consumer_db *db)
{
    if (db->conn && PQstatus(db->conn) == CONNECTION_OK)
        return 0;
    db_disconnect(db);
    /* connect_timeout first, then the caller's conninfo expanded from dbname: later
     * keywords win, so the caller's own connect_timeout overrides ours. */
    const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *vals[] = {"5", "seckill-consumer", db->conninfo, NULL};
    db->conn = PQconnectdbParams(keys, vals, 1);
    if (!db->conn) {
        set_err(db, "connect: out of memory");
        return -1;
    }
    if (PQstatus(db->conn) != CONNECTION_OK) {
        /* PQerrorMessage never contains the password. */
        set_err(db, "connect: %s", PQerrorMessage(db->conn));
        db_disconnect(db);
        return -1;
    }
    PQsetNoticeProcessor(db->conn, on_notice, NULL);
    return 0;
}

/* Checks a result; on failure records the error and drops a broken connection.
 * Frees res on failure. @returns 0 or -1. */
static int check(consumer_db *db, PGresult *res, ExecStatusType want, const char *what)
{
    if (res && PQresultStatus(res) == want)
        return 0;
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    set_err(db, "%s: %s%s%s%s", what, res ? PQresultErrorMessage(res) : PQerrorMessage(db->conn),
            state ? " (sqlstate " : "", state ? state : "", state ? ")" : "");
    PQclear(res);
    if (PQstatus(db->conn) != CONNECTION_OK)
        db_disconnect(db);
    return -1;
}

static int exec_cmd(consumer_db *db, const char *sql, const char *what)
{
    PGresult *r = PQexec(db->conn, sql);
    if (check(db, r, PGRES_COMMAND_OK, what) != 0)
        return -1;
    PQclear(r);
    return 0;
}

static void rollback_quietly(consumer_db *db)
{
    if (db->conn && PQstatus(db->conn) == CONNECTION_OK) {
        PGresult *r = PQexec(db->conn, "ROLLBACK");
        PQclear(r);
    }
}

int consumer_db_migrate(consumer_db *db)
{
    if (db_connect(db) != 0)
        return -1;
    PGresult *r;
    int applied = 0;
    for (const consumer_migration *m = consumer_migrations; m->name; m++) {
        int version = atoi(m->name);
        if (version <= 0) {
            set_err(db, "migration %s: the file name must start with its number", m->name);
            return -1;
        }
        /* BEGIN; advisory lock; version table; already applied?; apply; record; COMMIT.
         * The lock serialises concurrent starters; the check under it makes each file
         * run once, and IF NOT EXISTS in the files makes a repeat harmless anyway. */
        if (exec_cmd(db, "BEGIN", "migrate begin") != 0)
            return -1;
        char key[32], ver[16];
        snprintf(key, sizeof(key), "%lld", (long long)MIGRATE_LOCK_KEY);
        snprintf(ver, sizeof(ver), "%d", version);
        const char *p_key[] = {key};
        /* $1: the advisory lock key */
        r = PQexecParams(db->conn, "SELECT pg_advisory_xact_lock($1::bigint)", 1, NULL, p_key,
                         NULL, NULL, 0);
        if (check(db, r, PGRES_TUPLES_OK, "migrate lock") != 0)
            goto fail;
        PQclear(r);
        if (exec_cmd(db, SQL_VERSION_TABLE, "migrate version table") != 0)
            goto fail;
        const char *p_ver[] = {ver};
        /* $1: the migration's version */
        r = PQexecParams(db->conn, "SELECT 1 FROM seckill_schema_version WHERE version = $1::int",
                         1, NULL, p_ver, NULL, NULL, 0);
        if (check(db, r, PGRES_TUPLES_OK, "migrate check") != 0)
            goto fail;
        int done = PQntuples(r) > 0;
        PQclear(r);
        if (!done) {
            /* Our own file, compiled in: run as is (several statements). */
            r = PQexec(db->conn, m->sql);
            if (check(db, r, PGRES_COMMAND_OK, m->name) != 0)
                goto fail;
            PQclear(r);
            const char *p_rec[] = {ver, m->name};
            /* $1: version, $2: file name */
            r = PQexecParams(db->conn,
                             "INSERT INTO seckill_schema_version (version, name) VALUES ($1::int, $2)",
                             2, NULL, p_rec, NULL, NULL, 0);
            if (check(db, r, PGRES_COMMAND_OK, "migrate record") != 0)
                goto fail;
            PQclear(r);
            applied++;
        }
        if (exec_cmd(db, "COMMIT", "migrate commit") != 0)
            goto fail;
    }
    return applied;
fail:
    rollback_quietly(db);
    return -1;
}

/* Appends text to array parameter i. @returns 0 or -1 on OOM. */
static int arr_put(consumer_db *db, int i, const char *s, size_t n)
{
    if (db->arr_len[i] + n + 2 > db->arr_cap[i]) {
        size_t cap = db->arr_cap[i] ? db->arr_cap[i] * 2 : 4096;
        while (cap < db->arr_len[i] + n + 2)
            cap *= 2;
        char *p = realloc(db->arr[i], cap);
        if (!p)
            return -1;
        db->arr[i] = p;
        db->arr_cap[i] = cap;
    }
    memcpy(db->arr[i] + db->arr_len[i], s, n);
    db->arr_len[i] += n;
    db->arr[i][db->arr_len[i]] = '\0';
    return 0;
}

/* Appends one element: "{" is the only content before the first, so no comma then. */
static int arr_add_int(consumer_db *db, int i, int64_t v)
{
    char buf[24];
    int first = db->arr_len[i] == 1;
    int n = snprintf(buf, sizeof(buf), "%s%" PRId64, first ? "" : ",", v);
    return arr_put(db, i, buf, (size_t)n);
}

static int arrs_start(consumer_db *db, int n)
{
    for (int i = 0; i < n; i++)
        db->arr_len[i] = 0;
    for (int i = 0; i < n; i++)
        if (arr_put(db, i, "{", 1) != 0)
            return -1;
    return 0;
}

static int arrs_close(consumer_db *db, int n)
{
    for (int i = 0; i < n; i++)
        if (arr_put(db, i, "}", 1) != 0)
            return -1;
    return 0;
}

static int prepare(consumer_db *db)
{
    if (db->prepared)
        return 0;
    PGresult *r = PQprepare(db->conn, "sk_lock", SQL_LOCK, 1, NULL);
    if (check(db, r, PGRES_COMMAND_OK, "prepare lock") != 0)
        return -1;
    PQclear(r);
    r = PQprepare(db->conn, "sk_insert", SQL_INSERT, 6, NULL);
    if (check(db, r, PGRES_COMMAND_OK, "prepare insert") != 0)
        return -1;
    PQclear(r);
    db->prepared = 1;
    return 0;
}

/* Sorted unique event ids of the batch's valid, non-duplicate messages. */
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int found(const int64_t *sorted, size_t n, int64_t v)
{
    return bsearch(&v, sorted, n, sizeof(*sorted), cmp_i64) != NULL;
}

int consumer_db_write(consumer_db *db, consumer_batch *b, consumer_db_result *res)
{
    memset(res, 0, sizeof(*res));
    size_t n = consumer_batch_count(b);
    int64_t *events = malloc((n ? n : 1) * sizeof(int64_t));
    int64_t *known = NULL;
    size_t nev = 0, nknown = 0;
    PGresult *r = NULL;
    int in_tx = 0;
    if (!events) {
        set_err(db, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(b, i);
        if (m->err == CONSUMER_MSG_UNKNOWN_EVENT) /* from an earlier failed attempt */
            m->err = CONSUMER_MSG_OK;
        if (m->err == CONSUMER_MSG_OK)
            events[nev++] = m->order.event_id;
    }
    qsort(events, nev, sizeof(*events), cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < nev; i++)
        if (u == 0 || events[u - 1] != events[i])
            events[u++] = events[i];
    nev = u;
    if (nev == 0) { /* only poison: nothing to write */
        free(events);
        return 0;
    }
    if (db_connect(db) != 0 || prepare(db) != 0)
        goto fail;
    if (exec_cmd(db, "BEGIN", "begin") != 0)
        goto fail;
    in_tx = 1;

    if (arrs_start(db, 1) != 0)
        goto oom;
    for (size_t i = 0; i < nev; i++)
        if (arr_add_int(db, 0, events[i]) != 0)
            goto oom;
    if (arrs_close(db, 1) != 0)
        goto oom;
    const char *p_lock[] = {db->arr[0]};
    r = PQexecPrepared(db->conn, "sk_lock", 1, p_lock, NULL, NULL, 0);
    if (check(db, r, PGRES_TUPLES_OK, "lock events") != 0) {
        r = NULL;
        goto fail;
    }
    nknown = (size_t)PQntuples(r);
    known = malloc((nknown ? nknown : 1) * sizeof(int64_t));
    if (!known)
        goto oom;
    for (size_t i = 0; i < nknown; i++)
        known[i] = strtoll(PQgetvalue(r, (int)i, 0), NULL, 10);
    PQclear(r);
    r = NULL;
    /* Rows come back in id order (ORDER BY id), so `known` is sorted for bsearch. */

    long rows = 0;
    if (arrs_start(db, 6) != 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(b, i);
        if (m->err != CONSUMER_MSG_OK)
            continue;
        if (!found(known, nknown, m->order.event_id)) {
            m->err = CONSUMER_MSG_UNKNOWN_EVENT;
            res->unknown_event++;
            continue;
        }
        if (m->dup)
            continue;
        if (arr_add_int(db, 0, m->order.order_id) || arr_add_int(db, 1, m->order.event_id) ||
            arr_add_int(db, 2, m->order.user_id) || arr_add_int(db, 3, m->partition) ||
            arr_add_int(db, 4, m->offset) || arr_add_int(db, 5, m->order.ts_ms))
            goto oom;
        rows++;
    }
    if (arrs_close(db, 6) != 0)
        goto oom;
    size_t nrej = 0;
    if (rows > 0) {
        const char *p_ins[6];
        for (int i = 0; i < 6; i++)
            p_ins[i] = db->arr[i];
        r = PQexecPrepared(db->conn, "sk_insert", 6, p_ins, NULL, NULL, 0);
        if (check(db, r, PGRES_TUPLES_OK, "insert orders") != 0) {
            r = NULL;
            goto fail;
        }
        int nt = PQntuples(r);
        for (int i = 0; i < nt; i++) {
            long created = strtol(PQgetvalue(r, i, 1), NULL, 10);
            long rejected = strtol(PQgetvalue(r, i, 2), NULL, 10);
            res->created += created;
            res->rejected += rejected;
            if (rejected > 0) {
                if (nrej == db->rejects_cap) {
                    size_t cap = db->rejects_cap ? db->rejects_cap * 2 : 8;
                    consumer_db_reject *p = realloc(db->rejects, cap * sizeof(*p));
                    if (!p)
                        goto oom;
                    db->rejects = p;
                    db->rejects_cap = cap;
                }
                db->rejects[nrej++] = (consumer_db_reject){
                    .event_id = strtoll(PQgetvalue(r, i, 0), NULL, 10), .count = rejected};
            }
        }
        PQclear(r);
        r = NULL;
    }
    if (exec_cmd(db, "COMMIT", "commit") != 0) {
        in_tx = 0; /* a failed COMMIT ends the transaction (or the connection is gone) */
        goto fail;
    }
    res->duplicates = 0;
    for (size_t i = 0; i < n; i++) {
        consumer_batch_msg *m = consumer_batch_msg_at(b, i);
        if (m->err == CONSUMER_MSG_OK)
            res->duplicates++;
    }
    res->duplicates -= res->created + res->rejected;
    res->rejects = db->rejects;
    res->nrejects = nrej;
    free(events);
    free(known);
    return 0;
oom:
    set_err(db, "out of memory");
fail:
    PQclear(r);
    if (in_tx)
        rollback_quietly(db);
    free(events);
    free(known);
    return -1;
}
