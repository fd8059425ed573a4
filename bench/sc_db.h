/* sc_db: what seckill-check reads from PostgreSQL: the event's stock columns and its
 * orders. Parameterised queries only. */
#ifndef SC_DB_H
#define SC_DB_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_judge.h"

/** @brief Opens conninfo with sk_pg's bounds, named "seckill-check". @returns the
 *  connection (the caller PQfinishes it), or NULL with errstr (never the password). */
PGconn *sc_db_connect(const char *conninfo, char *errstr, size_t errstr_size);

/** @brief Rows of seckill_order for the event. @returns the count, or -1 with errstr. */
long long sc_db_count(PGconn *c, uint64_t event_id, char *errstr, size_t errstr_size);

/** @brief Reads seckill_event's stock_total, stock_left and per_user_limit (found 0 when
 *  there is no such event) and every order row, with its quantity, into *rows (malloc'd,
 *  caller frees). @returns 0 or -1 with errstr. */
int sc_db_load(PGconn *c, uint64_t event_id, int *found, long long *stock_total,
               long long *stock_left, long long *per_user_limit, sc_row **rows, size_t *nrows,
               char *errstr, size_t errstr_size);

#endif
