/* sc_db: PostgreSQL reads of seckill-check. See sc_db.h. */
#include "sc_db.h"

#include "sk_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PGconn *sc_db_connect(const char *conninfo, char *err, size_t errsz)
{
    return sk_pg_connect(conninfo, "seckill-check", err, errsz);
}

long long sc_db_count(PGconn *c, uint64_t event_id, char *err, size_t errsz)
{
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)event_id);
    const char *params[1] = {id}; /* $1: event id */
    PGresult *r = NULL;
    long long n = -1;
    if (sk_pg_exec(c, "postgresql", "SELECT count(*) FROM seckill_order WHERE event_id = $1", 1,
                   params, PGRES_TUPLES_OK, &r, err, errsz) == SK_PG_OK)
        n = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return n;
}

int sc_db_load(PGconn *c, uint64_t event_id, int *found, long long *stock_total,
               long long *stock_left, long long *per_user_limit, sc_row **rows, size_t *nrows,
               char *err, size_t errsz)
{
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)event_id);
    const char *params[1] = {id}; /* $1: event id */
    *rows = NULL;
    *nrows = 0;
    *found = 0;
    PGresult *r;
    if (sk_pg_exec(c, "postgresql",
                   "SELECT stock_total, stock_left, per_user_limit FROM seckill_event WHERE id = $1", 1,
                   params, PGRES_TUPLES_OK, &r, err, errsz) != SK_PG_OK)
        return -1;
    if (PQntuples(r) == 1) {
        *found = 1;
        *stock_total = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        *stock_left = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        *per_user_limit = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    }
    PQclear(r);
    if (sk_pg_exec(c, "postgresql",
                   "SELECT order_id, user_id, status IN ('created', 'paid'), "
                   "status IN ('cancelled', 'expired'), released_at IS NOT NULL, quantity "
                   "FROM seckill_order WHERE event_id = $1",
                   1, params, PGRES_TUPLES_OK, &r, err, errsz) != SK_PG_OK)
        return -1;
    size_t n = (size_t)PQntuples(r);
    sc_row *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v) {
        snprintf(err, errsz, "out of memory");
        PQclear(r);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        v[i].order_id = strtoull(PQgetvalue(r, (int)i, 0), NULL, 10);
        v[i].user_id = strtoull(PQgetvalue(r, (int)i, 1), NULL, 10);
        v[i].created = PQgetvalue(r, (int)i, 2)[0] == 't';
        v[i].closed = PQgetvalue(r, (int)i, 3)[0] == 't';
        v[i].released = PQgetvalue(r, (int)i, 4)[0] == 't';
        v[i].quantity = (int)strtol(PQgetvalue(r, (int)i, 5), NULL, 10);
    }
    PQclear(r);
    *rows = v;
    *nrows = n;
    return 0;
}
