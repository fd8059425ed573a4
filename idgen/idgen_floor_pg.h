/* idgen_floor_pg: libidgen's floor store (idgen_floor_store) in PostgreSQL, table
 * idgen_floor (deploy/sql/005_idgen_floor.sql). Apart from libidgen, which needs no
 * libpq: a program that wants floor mode links seckill::idgen_floor_pg and passes
 * idgen_floor_pg_store() as opts.floor.
 *
 * Threads: one connection behind a mutex (a store call is a floor write every few
 * leases, or a restore): every function but _free is thread-safe. A broken connection
 * is dropped and opened again by the next call; every statement has sk_pg's deadline. */
#ifndef IDGEN_FLOOR_PG_H
#define IDGEN_FLOOR_PG_H

#include "idgen.h"

#include <stddef.h>

typedef struct idgen_floor_pg idgen_floor_pg;

/** @brief A store on `conninfo` (libpq conninfo or URI; copied). Connects lazily.
 *  `app` names the connection in pg_stat_activity ("seckill-order/idgen").
 *  @returns it (free with idgen_floor_pg_free) or NULL (out of memory). */
idgen_floor_pg *idgen_floor_pg_new(const char *conninfo, const char *app);

/** @brief The store to pass as idgen_opts.floor; valid until idgen_floor_pg_free, which
 *  must come after idgen_free of every generator using it. */
const idgen_floor_store *idgen_floor_pg_store(idgen_floor_pg *p);

/** @brief Closes the connection and frees. NULL is fine. */
void idgen_floor_pg_free(idgen_floor_pg *p);

#endif
