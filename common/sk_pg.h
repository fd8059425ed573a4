/* sk_pg: the one way a seckill program opens PostgreSQL and runs a statement on it.
 *
 * Every connection gets the same bounds, whatever the configured conninfo says about
 * them (and the conninfo wins where it does say): connect_timeout, TCP keepalives,
 * tcp_user_timeout, a server-side statement_timeout (in `options`), and an
 * application_name naming the component ("seckill-order/pg"), so pg_stat_activity tells
 * who holds a connection. Statements run with a client-side deadline too: a server that
 * accepted the connection and then never answers fails the call instead of hanging its
 * thread (statement_timeout alone needs a server that still answers).
 *
 * Notices ("relation already exists, skipping") go to sk_log at debug level, never to
 * stderr. Messages never hold the password: libpq's own messages do not, and the
 * conninfo is never logged.
 *
 * Threads: a PGconn is used by one thread at a time (libpq's rule); these functions keep
 * no global state. */
#ifndef SK_PG_H
#define SK_PG_H

#include <libpq-fe.h>
#include <stddef.h>

/* Bounds given to every connection unless its conninfo sets its own. */
#define SK_PG_CONNECT_TIMEOUT_S 5      /* libpq's connect_timeout: per address tried */
#define SK_PG_STATEMENT_TIMEOUT_MS 30000 /* the server cancels a statement after this */
/* The client gives up on an answer this long after the server would have cancelled. */
#define SK_PG_DEADLINE_GRACE_MS 5000

typedef enum {
    SK_PG_OK = 0,
    SK_PG_ECONNECT = -1,  /* could not connect (refused, timed out, auth): retriable */
    SK_PG_ESTATEMENT = -2, /* the server refused the statement; the connection is fine */
    SK_PG_ECONN = -3,     /* the connection broke mid-call: reconnect and retry */
    SK_PG_ETIMEOUT = -4,  /* no answer within the deadline: the connection was closed */
    SK_PG_ENOMEM = -5,
} sk_pg_err;

/** @brief A short name for err ("connect failed", ...). */
const char *sk_pg_strerror(int err);

/** @brief 1 when a call that failed with err is worth retrying on a new connection
 *  (ECONNECT, ECONN, ETIMEOUT); 0 for a statement the server refused, or OOM. */
int sk_pg_err_retriable(int err);

/** @brief Opens a connection to conninfo (a URL or key=value string, NULL or "" for
 *  libpq's defaults) named `app` (application_name, e.g. "seckill-consumer/expiry").
 *  The bounds above are set first and conninfo is expanded after them (PQconnectdbParams,
 *  expand_dbname): a setting in conninfo wins over ours.
 *  @returns the connection, owned by the caller (PQfinish), or NULL with a one-line
 *  message in err (never the password). Blocks up to connect_timeout per address. */
PGconn *sk_pg_connect(const char *conninfo, const char *app, char *err, size_t errsz);

/** @brief The client-side deadline of c's statements, in ms (0: none). The default is
 *  SK_PG_STATEMENT_TIMEOUT_MS + SK_PG_DEADLINE_GRACE_MS; a caller that lifts the server's
 *  statement_timeout (a migration) lifts this too. c must come from sk_pg_connect. */
void sk_pg_set_deadline(PGconn *c, int ms);

/** @brief Runs sql with n text parameters (values[i] NULL is SQL NULL; sql may hold
 *  several statements when n is 0) and waits for its answer up to c's deadline.
 *  @param want the status a success has (PGRES_COMMAND_OK, PGRES_TUPLES_OK)
 *  @param res  on success, the result (the caller PQclears it); may be NULL when the
 *              caller wants none. On failure *res is NULL and the result was freed.
 *  @param err  on failure "what: message (sqlstate X)" on one line, quotes made single.
 *  @returns SK_PG_OK or an sk_pg_err. On ETIMEOUT the socket is shut: PQstatus(c) is
 *  CONNECTION_BAD, the caller reconnects. */
int sk_pg_exec(PGconn *c, const char *what, const char *sql, int n, const char *const *values,
               ExecStatusType want, PGresult **res, char *err, size_t errsz);

/** @brief As sk_pg_exec for a statement prepared with sk_pg_prepare, with binary or
 *  text parameters (lengths and formats as PQexecPrepared takes them; NULL: all text). */
int sk_pg_exec_prepared(PGconn *c, const char *what, const char *name, int n,
                        const char *const *values, const int *lengths, const int *formats,
                        ExecStatusType want, PGresult **res, char *err, size_t errsz);

/** @brief Prepares sql as `name` on c (PQprepare), within c's deadline.
 *  @returns SK_PG_OK or an sk_pg_err, as sk_pg_exec. */
int sk_pg_prepare(PGconn *c, const char *what, const char *name, const char *sql, int n,
                  const Oid *types, char *err, size_t errsz);

/** @brief Runs `sql`, a COPY ... FROM STDIN, and sends it `data` (len bytes, in the
 *  format the COPY names) as the whole of its input, all within c's deadline (the
 *  socket is written in non-blocking mode, so a server that stops reading cannot hold
 *  the caller past it). @returns as sk_pg_exec: SK_PG_OK once the server confirmed the
 *  COPY; SK_PG_ESTATEMENT with the SQLSTATE (a unique violation, a bad row) and nothing
 *  stored. */
int sk_pg_copy_in(PGconn *c, const char *what, const char *sql, const char *data, size_t len,
                  char *err, size_t errsz);

/** @brief The SQLSTATE of c's last failed sk_pg_* call ("23505"), "" when it had none
 *  (a broken connection, a timeout) or c's last call succeeded. */
const char *sk_pg_sqlstate(const PGconn *c);

#endif
