/* consumer_db: the PostgreSQL side of seckill-consumer: migrations and batch writes.
 *
 * One connection, opened lazily and reopened after a failure, so the caller's retry
 * loop is just "call it again later". Every write is one transaction:
 *   1. lock the batch's events (SELECT ... FOR UPDATE, in id order so two consumers
 *      never deadlock) and learn which exist and their stock_left;
 *   2. the fast path: the batch's rows in one binary COPY, then one UPDATE that takes
 *      min(new units, stock_left) off each event; a unique violation (a replay or a
 *      second order of a user) rolls it back, and the batch (and the next 16) is
 *      written with INSERT ... ON CONFLICT DO NOTHING RETURNING, the stock taken from
 *      what it returned: replays change nothing;
 *   3. only if an event got more new orders than its stock: the latest of them (by
 *      Kafka offset) are set to 'rejected' (the database never oversells);
 *   4. COMMIT.
 * Messages for events that do not exist are marked CONSUMER_MSG_UNKNOWN_EVENT (the
 * caller dead-letters them): left in, their foreign key would fail the whole batch.
 * Not thread-safe: one owner. */
#ifndef CONSUMER_DB_H
#define CONSUMER_DB_H

#include "consumer_batch.h"

#include <stddef.h>
#include <stdint.h>

typedef struct consumer_db consumer_db;

typedef struct consumer_db_reject {
    int64_t event_id;
    long count; /* orders stored as 'rejected' for this event in this batch */
} consumer_db_reject;

typedef struct consumer_db_result {
    long created;       /* new rows with status 'created' */
    long rejected;      /* new rows with status 'rejected' (database stock exhausted) */
    long duplicates;    /* valid messages that changed nothing (replays, second orders) */
    long unknown_event; /* messages marked CONSUMER_MSG_UNKNOWN_EVENT */
    const consumer_db_reject *rejects; /* per event, owned by the db, valid until the next call */
    size_t nrejects;
} consumer_db_result;

/** @brief A handle for `conninfo` (a libpq conninfo string or URI, copied). Does not
 *  connect. A connect_timeout of 5 s applies unless conninfo sets one.
 *  @returns NULL on OOM. */
consumer_db *consumer_db_new(const char *conninfo);
/** @brief Closes the connection and frees. NULL is fine. */
void consumer_db_free(consumer_db *db);
/** @brief The last error (short, no secrets), "" if none. Owned by db. */
const char *consumer_db_errstr(const consumer_db *db);

/** @brief Applies the embedded migrations (deploy/sql/NNN_*.sql) not yet recorded in
 *  seckill_schema_version, in order, each in its own transaction, under an advisory
 *  lock so that consumers starting together apply each file once.
 *  @returns the number applied (0: up to date), or -1 with errstr. */
int consumer_db_migrate(consumer_db *db);

/** @brief consumer_db_migrate, with the order-events slot ensured first when slot_cfg is
 *  not NULL (consumer_events_slot_ensure: "" names it after the database), so that every
 *  transition the migrations and the writes after them commit is in the slot. A slot
 *  that cannot be made (wal_level below logical, no REPLICATION attribute) fails no
 *  migration, every write still works: its reason goes to warn, "" when it is there.
 *  @returns as consumer_db_migrate. */
int consumer_db_migrate_events(consumer_db *db, const char *slot_cfg, char *warn, size_t warnsz);

/** @brief Writes a batch (after consumer_batch_dedup) in one transaction; see above.
 *  @returns 0 with *res filled, or -1 with errstr: nothing was committed (the
 *  connection is dropped if broken) and the same batch may be written again.
 *  @remark Marks unknown-event messages in the batch even when it fails later. */
int consumer_db_write(consumer_db *db, consumer_batch *b, consumer_db_result *res);

/* The migrations compiled in from deploy/sql/ (generated), ending with {NULL, NULL}. */
typedef struct consumer_migration {
    const char *name; /* file name, e.g. "001_schema.sql"; its number is the version */
    const char *sql;
} consumer_migration;
extern const consumer_migration consumer_migrations[];

#endif
