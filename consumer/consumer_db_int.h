/* consumer_db_int: what consumer_db.c (the batch writes) and consumer_db_migrate.c (the
 * migrations) share: the handle's layout and the connection helpers. Internal: nothing
 * outside those two files includes it. Not thread-safe, as the handle is not. */
#ifndef CONSUMER_DB_INT_H
#define CONSUMER_DB_INT_H

#include "consumer_db.h"

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

/* A one-dimensional array without NULLs, binary format: a 20-byte header (ndim 1,
 * no nulls, element type, length, lower bound 1), then per element its length and
 * its big-endian value. The header is written by barr_close, once the length is known. */
#define BARR_HEADER 20
typedef struct barr {
    char *buf;
    size_t len, cap;
    uint32_t count;
    uint32_t oid; /* element type */
} barr;

/* Type oids of the parameters (pg_type.h; stable across PostgreSQL versions). */
#define OID_INT8 20u
#define OID_INT4 23u
#define OID_TIMESTAMPTZ 1184u
#define OID_INT8_ARRAY 1016u
#define OID_INT4_ARRAY 1007u
#define OID_TIMESTAMPTZ_ARRAY 1185u
/* Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC). */
#define PG_EPOCH_US 946684800000000LL

#define NARR 7 /* SQL_INSERT's seven; the others use fewer */

struct consumer_db {
    char *conninfo;
    PGconn *conn;
    int prepared; /* statements prepared on this connection */
    char errstr[512];
    consumer_db_reject *rejects;
    size_t rejects_cap;
    int safe_left; /* batches still to write with SQL_INSERT after a conflict */
    /* Array parameters in PostgreSQL's binary format (array_recv), reused across batches. */
    barr arr[NARR];
    /* The fast path's COPY input in PostgreSQL's binary COPY format, reused likewise
     * (only buf, len and cap used). */
    barr copy;
};

/** @brief db->errstr from fmt, on one logfmt-safe line. */
void cdb_set_err(consumer_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** @brief The connection (sk_pg's bounds), opened if it is not. @returns 0 or -1 (error set). */
int cdb_connect(consumer_db *db);

/** @brief Closes the connection; the next call reconnects. */
void cdb_disconnect(consumer_db *db);

/** @brief Runs sql (n text parameters) expecting `want`, rows in *res when res is not NULL;
 *  a connection the call broke is dropped. @returns 0 or -1 (error set). */
int cdb_exec(consumer_db *db, const char *what, const char *sql, int n,
             const char *const *params, ExecStatusType want, PGresult **res);

/** @brief cdb_exec of a command without parameters or rows. */
int cdb_exec_cmd(consumer_db *db, const char *sql, const char *what);

/** @brief ROLLBACK if the connection is up, its own failure ignored. */
void cdb_rollback_quietly(consumer_db *db);

#endif
