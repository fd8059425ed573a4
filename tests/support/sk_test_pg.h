/* sk_test_pg: a PostgreSQL database of one test's own on the shared server of
 * deploy/local.sh up ($SECKILL_PG_ADMIN to create and drop it, $SECKILL_PG to use it as
 * the seckill role), created fresh and dropped at the end. Not thread-safe. */
#ifndef SK_TEST_PG_H
#define SK_TEST_PG_H

#include <stddef.h>

/** @brief "<prefix>_<our pid>" into buf: two runs of one test never share a database. */
void sk_test_pg_name(char *buf, size_t size, const char *prefix);

/** @brief (Re)creates database `dbname` (dropping one left behind, forcing out its
 *  sessions) owned by role seckill; with `migrate`, applies deploy/sql/NNN_*.sql in
 *  name order (from $SECKILL_SOURCE_DIR) as seckill-consumer migrate would. Writes the
 *  conninfo for it as the seckill role ($SECKILL_PG dbname=...) into conninfo.
 *  @returns 0, or -1 (why on stderr; $SECKILL_PG or $SECKILL_PG_ADMIN unset included). */
int sk_test_pg_create(const char *dbname, int migrate, char *conninfo, size_t size);

/** @brief Drops `dbname` if it exists, forcing out its sessions. */
void sk_test_pg_drop(const char *dbname);

/** @brief Runs `sql` (one or more statements) on a new connection to conninfo.
 *  @returns 0, or -1 (the server's message on stderr). */
int sk_test_pg_exec(const char *conninfo, const char *sql);

#endif
