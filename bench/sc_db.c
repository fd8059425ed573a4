/* sc_db: PostgreSQL reads of seckill-check. See sc_db.h. */
#include "sc_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void pg_error(PGconn *c, PGresult *r, char *err, size_t errsz)
{
    snprintf(err, errsz, "postgresql: %s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    err[strcspn(err, "\n")] = '\0';
}

long long sc_db_count(PGconn *c, uint64_t event_id, char *err, size_t errsz)
{
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)event_id);
    const char *params[1] = {id}; /* $1: event id */
    PGresult *r = PQexecParams(c, "SELECT count(*) FROM seckill_order WHERE event_id = $1", 1,
                               NULL, params, NULL, NULL, 0);
    long long n = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else
        pg_error(c, r, err, errsz);
    PQclear(r);
    return n;
}

int sc_db_load(PGconn *c, uint64_t event_id, int *found, long long *stock_total,
               long long *stock_left, sc_row **rows, size_t *nrows, char *err, size_t errsz)
{
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)event_id);
    const char *params[1] = {id}; /* $1: event id */
    *rows = NULL;
    *nrows = 0;
    *found = 0;
    PGresult *r = PQexecParams(c, "SELECT stock_total, stock_left FROM seckill_event WHERE id = $1",
                               1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_error(c, r, err, errsz);
        PQclear(r);
        return -1;
    }
    if (PQntuples(r) == 1) {
        *found = 1;
        *stock_total = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        *stock_left = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    r = PQexecParams(c,
                     "SELECT order_id, user_id, status IN ('created', 'paid'), "
                     "status IN ('cancelled', 'expired'), released_at IS NOT NULL "
                     "FROM seckill_order WHERE event_id = $1",
                     1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_error(c, r, err, errsz);
        PQclear(r);
        return -1;
    }
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
    }
    PQclear(r);
    *rows = v;
    *nrows = n;
    return 0;
}
