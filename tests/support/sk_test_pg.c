/* sk_test_pg: see sk_test_pg.h. */
#include "sk_test_pg.h"

#include <dirent.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sk_test_pg_name(char *buf, size_t size, const char *prefix)
{
    snprintf(buf, size, "%s_%d", prefix, (int)getpid());
}

int sk_test_pg_exec(const char *conninfo, const char *sql)
{
    PGconn *c = PQconnectdb(conninfo);
    int rc = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        /* No NOTICE chatter ("does not exist, skipping") in the test output. */
        PQclear(PQexec(c, "SET client_min_messages = warning"));
        PGresult *r = PQexec(c, sql);
        rc = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
        if (rc)
            fprintf(stderr, "pg: %s", PQresultErrorMessage(r));
        PQclear(r);
    } else {
        fprintf(stderr, "pg: %s", PQerrorMessage(c));
    }
    PQfinish(c);
    return rc;
}

/* Applies deploy/sql/NNN_*.sql in name order. @returns 0 or -1. */
static int apply_migrations(const char *conninfo)
{
    const char *src = getenv("SECKILL_SOURCE_DIR");
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/deploy/sql", src ? src : ".");
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    int rc = n < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(list[i]->d_name);
        if (rc == 0 && len > 4 && strcmp(list[i]->d_name + len - 4, ".sql") == 0) {
            char path[1024];
            snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
            FILE *f = fopen(path, "r");
            char *text = calloc(1, 1 << 20);
            size_t r = f && text ? fread(text, 1, (1 << 20) - 1, f) : 0;
            if (f)
                fclose(f);
            if (!r || sk_test_pg_exec(conninfo, text) != 0)
                rc = -1;
            free(text);
        }
        free(list[i]);
    }
    free(list);
    return rc;
}

int sk_test_pg_create(const char *dbname, int migrate, char *conninfo, size_t size)
{
    const char *admin = getenv("SECKILL_PG_ADMIN"), *user = getenv("SECKILL_PG");
    if (!admin || !user) {
        fprintf(stderr, "SECKILL_PG / SECKILL_PG_ADMIN not set: source .run/env\n");
        return -1;
    }
    char sql[512];
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
    if (sk_test_pg_exec(admin, sql) != 0)
        return -1;
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s OWNER seckill", dbname);
    if (sk_test_pg_exec(admin, sql) != 0)
        return -1;
    /* a later keyword wins in a conninfo */
    snprintf(conninfo, size, "%s dbname=%s", user, dbname);
    return migrate ? apply_migrations(conninfo) : 0;
}

void sk_test_pg_drop(const char *dbname)
{
    const char *admin = getenv("SECKILL_PG_ADMIN");
    char sql[256];
    if (!admin)
        return;
    /* A logical replication slot being streamed (the consumer's order-events publisher,
     * issue 36) blocks DROP DATABASE even WITH (FORCE); an idle one is dropped with the
     * database. The walsender of a consumer just stopped may linger a moment. */
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
    for (int i = 0; i < 50; i++) {
        char kill[256];
        snprintf(kill, sizeof(kill),
                 "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                 "WHERE database = '%s' AND active_pid IS NOT NULL", dbname);
        sk_test_pg_exec(admin, kill);
        if (sk_test_pg_exec(admin, sql) == 0)
            return;
        usleep(100 * 1000);
    }
}
