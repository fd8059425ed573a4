/* consumer_db_migrate: the schema migrations (the files of deploy/sql, compiled in as
 * consumer_migrations), each once, in order, under an advisory lock, and the order-events
 * slot before them. See consumer_db.h. */
#include "consumer_db.h"
#include "consumer_db_int.h"
#include "consumer_events.h" /* the slot */
#include "sk_pg.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>

static const char SQL_VERSION_TABLE[] =
    "CREATE TABLE IF NOT EXISTS seckill_schema_version ("
    "  version    int PRIMARY KEY,"
    "  name       text NOT NULL,"
    "  applied_at timestamptz NOT NULL DEFAULT now())";

/* A constant key for pg_advisory_xact_lock: "seckill-migrate" (any fixed number works,
 * it only has to be the same in every consumer). */
#define MIGRATE_LOCK_KEY 0x5345434b4d4947LL

int consumer_db_migrate(consumer_db *db)
{
    if (cdb_connect(db) != 0)
        return -1;
    /* A migration may rewrite or index a large table: no client deadline here, and each
     * migration's transaction lifts statement_timeout (SET LOCAL: it ends with it). The
     * connection was just opened, so the server was answering. */
    sk_pg_set_deadline(db->conn, 0);
    PGresult *r;
    int applied = 0;
    for (const consumer_migration *m = consumer_migrations; m->name; m++) {
        int version = atoi(m->name);
        if (version <= 0) {
            cdb_set_err(db, "migration %s: the file name must start with its number", m->name);
            return -1;
        }
        /* BEGIN; advisory lock; version table; already applied?; apply; record; COMMIT.
         * The lock serialises concurrent starters; the check under it makes each file
         * run once, and IF NOT EXISTS in the files makes a repeat harmless anyway. */
        if (cdb_exec_cmd(db, "BEGIN", "migrate begin") != 0 ||
            cdb_exec_cmd(db, "SET LOCAL statement_timeout = 0", "migrate timeout") != 0)
            goto fail;
        char key[32], ver[16];
        snprintf(key, sizeof(key), "%lld", (long long)MIGRATE_LOCK_KEY);
        snprintf(ver, sizeof(ver), "%d", version);
        const char *p_key[] = {key};
        /* $1: the advisory lock key */
        if (cdb_exec(db, "migrate lock", "SELECT pg_advisory_xact_lock($1::bigint)", 1, p_key,
                    PGRES_TUPLES_OK, NULL) != 0)
            goto fail;
        if (cdb_exec_cmd(db, SQL_VERSION_TABLE, "migrate version table") != 0)
            goto fail;
        const char *p_ver[] = {ver};
        /* $1: the migration's version */
        if (cdb_exec(db, "migrate check",
                    "SELECT 1 FROM seckill_schema_version WHERE version = $1::int", 1, p_ver,
                    PGRES_TUPLES_OK, &r) != 0)
            goto fail;
        int done = PQntuples(r) > 0;
        PQclear(r);
        if (!done) {
            /* Our own file, compiled in: run as is (several statements). */
            if (cdb_exec(db, m->name, m->sql, 0, NULL, PGRES_COMMAND_OK, NULL) != 0)
                goto fail;
            const char *p_rec[] = {ver, m->name};
            /* $1: version, $2: file name */
            if (cdb_exec(db, "migrate record",
                        "INSERT INTO seckill_schema_version (version, name) VALUES ($1::int, $2)",
                        2, p_rec, PGRES_COMMAND_OK, NULL) != 0)
                goto fail;
            applied++;
        }
        if (cdb_exec_cmd(db, "COMMIT", "migrate commit") != 0)
            goto fail;
    }
    sk_pg_set_deadline(db->conn, SK_PG_STATEMENT_TIMEOUT_MS + SK_PG_DEADLINE_GRACE_MS);
    return applied;
fail:
    cdb_rollback_quietly(db);
    sk_pg_set_deadline(db->conn, SK_PG_STATEMENT_TIMEOUT_MS + SK_PG_DEADLINE_GRACE_MS);
    return -1;
}

int consumer_db_migrate_events(consumer_db *db, const char *slot_cfg, char *warn, size_t warnsz)
{
    warn[0] = '\0';
    if (slot_cfg) {
        if (cdb_connect(db) != 0)
            return -1;
        char slot[CONSUMER_EVENTS_SLOT_MAX + 1];
        if (consumer_events_slot_ensure(db->conn, slot_cfg, slot, warn, warnsz) != 0 &&
            PQstatus(db->conn) != CONNECTION_OK) {
            cdb_set_err(db, "%s", warn);
            cdb_disconnect(db);
            return -1;
        }
    }
    return consumer_db_migrate(db);
}
