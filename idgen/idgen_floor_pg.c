/* idgen_floor_pg: the floor store in PostgreSQL. See idgen_floor_pg.h and, for the rules
 * the store serves, idgen_floor.c. Both statements are one upsert on the row of
 * (prefix, day), so two processes racing on a new day need no lock of ours: the primary
 * key serialises them. */
#include "idgen_floor_pg.h"

#include "sk_pg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct idgen_floor_pg {
    idgen_floor_store store;
    char *conninfo;
    char *app;
    pthread_mutex_t mu; /* guards conn */
    PGconn *conn;
};

/* Raises the floor, never lowers it: GREATEST, so a slow writer with an older value
 * cannot undo a newer one. */
static const char raise_sql[] =
    "INSERT INTO idgen_floor (prefix, day, floor) VALUES ($1, $2::date, $3::bigint) "
    "ON CONFLICT (prefix, day) DO UPDATE "
    "SET floor = GREATEST(idgen_floor.floor, EXCLUDED.floor), updated_at = now()";

/* A restore: a new epoch (the first restore of a day, the day's creation, is epoch 1),
 * and the floor every process has written ahead so far. */
static const char restore_sql[] =
    "INSERT INTO idgen_floor (prefix, day, epoch) VALUES ($1, $2::date, 1) "
    "ON CONFLICT (prefix, day) DO UPDATE "
    "SET epoch = idgen_floor.epoch + 1, updated_at = now() "
    "RETURNING floor, epoch";

/* "YYYY-MM-DD" of a UTC day number. */
static void day_text(int64_t day, char *buf, size_t size)
{
    time_t t = (time_t)(day * 86400);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d", &tm);
}

/* Runs sql with 3 or 2 text parameters on the (re)opened connection. Caller holds p->mu.
 * @returns 0 with *res (may be NULL when not wanted), or -1 with err set. */
static int run(idgen_floor_pg *p, const char *what, const char *sql, int n,
               const char *const *values, ExecStatusType want, PGresult **res, char *err,
               size_t errsz)
{
    if (!p->conn && !(p->conn = sk_pg_connect(p->conninfo, p->app, err, errsz)))
        return -1;
    int rc = sk_pg_exec(p->conn, what, sql, n, values, want, res, err, errsz);
    if (rc != SK_PG_OK && (rc != SK_PG_ESTATEMENT || PQstatus(p->conn) != CONNECTION_OK)) {
        PQfinish(p->conn); /* broken or timed out: the next call opens a fresh one */
        p->conn = NULL;
    }
    return rc == SK_PG_OK ? 0 : -1;
}

static int pg_raise(void *arg, const char *prefix, int64_t day, uint64_t floor, char *err,
                    size_t errsz)
{
    idgen_floor_pg *p = arg;
    char dbuf[16], fbuf[24];
    day_text(day, dbuf, sizeof(dbuf));
    snprintf(fbuf, sizeof(fbuf), "%llu", (unsigned long long)floor);
    const char *values[3] = {prefix, /* $1 the generator's prefix */
                             dbuf,   /* $2 its UTC day */
                             fbuf};  /* $3 the new floor: a lease's last number + step */
    pthread_mutex_lock(&p->mu);
    int rc = run(p, "idgen floor raise", raise_sql, 3, values, PGRES_COMMAND_OK, NULL, err,
                 errsz);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static int pg_restore(void *arg, const char *prefix, int64_t day, uint64_t *floor,
                      uint32_t *epoch, char *err, size_t errsz)
{
    idgen_floor_pg *p = arg;
    char dbuf[16];
    day_text(day, dbuf, sizeof(dbuf));
    const char *values[2] = {prefix, /* $1 the generator's prefix */
                             dbuf};  /* $2 the UTC day whose counter Redis lacks */
    PGresult *res = NULL;
    pthread_mutex_lock(&p->mu);
    int rc = run(p, "idgen floor restore", restore_sql, 2, values, PGRES_TUPLES_OK, &res, err,
                 errsz);
    pthread_mutex_unlock(&p->mu);
    if (rc)
        return -1;
    if (PQntuples(res) != 1) {
        snprintf(err, errsz, "idgen floor restore: %d rows", PQntuples(res));
        PQclear(res);
        return -1;
    }
    *floor = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    *epoch = (uint32_t)strtoul(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return 0;
}

idgen_floor_pg *idgen_floor_pg_new(const char *conninfo, const char *app)
{
    idgen_floor_pg *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->conninfo = strdup(conninfo ? conninfo : "");
    p->app = strdup(app && *app ? app : "idgen/floor");
    if (!p->conninfo || !p->app) {
        idgen_floor_pg_free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->store.raise = pg_raise;
    p->store.restore = pg_restore;
    p->store.arg = p;
    return p;
}

const idgen_floor_store *idgen_floor_pg_store(idgen_floor_pg *p)
{
    return p ? &p->store : NULL;
}

void idgen_floor_pg_free(idgen_floor_pg *p)
{
    if (!p)
        return;
    if (p->conn)
        PQfinish(p->conn);
    if (p->store.raise) /* the mutex was made */
        pthread_mutex_destroy(&p->mu);
    free(p->conninfo);
    free(p->app);
    free(p);
}
