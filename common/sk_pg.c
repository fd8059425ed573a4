/* sk_pg: bounded PostgreSQL connections and the one query-or-fail path. See sk_pg.h.
 *
 * Design: what a connection needs beyond libpq's own state (its name for the notice log,
 * its client-side deadline, the last SQLSTATE) hangs on the PGconn as libpq "instance
 * data" (libpq-events.h), freed by libpq's PGEVT_CONNDESTROY when the caller PQfinishes:
 * callers keep passing a plain PGconn and nothing leaks. Statements go out with the
 * asynchronous calls (PQsend*) and their answer is awaited with poll() up to the deadline;
 * when it passes, the socket is shut so that libpq itself marks the connection bad and
 * every caller's "reconnect when PQstatus is not OK" path takes over. */
#include "sk_pg.h"

#include "sk_log.h"

#include <errno.h>
#include <libpq-events.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

typedef struct conn_data {
    char app[64];
    int deadline_ms; /* 0: none */
    char sqlstate[6];
} conn_data;

/* Keepalives: a peer gone without a FIN (a host down, a dropped route) is noticed after
 * idle + interval * count = 30 + 3 * 10 s even on an idle connection; tcp_user_timeout
 * bounds data sent and never acknowledged to 30 s. */
static const char KEEPALIVES_IDLE_S[] = "30", KEEPALIVES_INTERVAL_S[] = "10",
                  KEEPALIVES_COUNT[] = "3", TCP_USER_TIMEOUT_MS[] = "30000";

const char *sk_pg_strerror(int err)
{
    switch (err) {
    case SK_PG_OK: return "ok";
    case SK_PG_ECONNECT: return "connect failed";
    case SK_PG_ESTATEMENT: return "statement failed";
    case SK_PG_ECONN: return "connection lost";
    case SK_PG_ETIMEOUT: return "no answer within the deadline";
    case SK_PG_ENOMEM: return "out of memory";
    default: return "unknown error";
    }
}

int sk_pg_err_retriable(int err)
{
    return err == SK_PG_ECONNECT || err == SK_PG_ECONN || err == SK_PG_ETIMEOUT;
}

/* "what: msg" on one logfmt-safe line: libpq's messages end in a newline and may hold a
 * DETAIL line and double quotes (we log them inside err="..."). */
static void set_err(char *err, size_t errsz, const char *what, const char *msg, const char *state)
{
    if (!err || errsz == 0)
        return;
    snprintf(err, errsz, "%s: %s%s%s%s", what, msg && *msg ? msg : "no message",
             state && *state ? " (sqlstate " : "", state && *state ? state : "",
             state && *state ? ")" : "");
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
        else if (*p == '"')
            *p = '\'';
    size_t n = strlen(err);
    while (n > 0 && err[n - 1] == ' ')
        err[--n] = '\0';
}

static int event_proc(PGEventId id, void *info, void *pass)
{
    (void)pass;
    if (id == PGEVT_CONNDESTROY) {
        const PGEventConnDestroy *e = info;
        free(PQinstanceData(e->conn, event_proc));
    }
    return 1;
}

static conn_data *data_of(const PGconn *c)
{
    return c ? PQinstanceData(c, event_proc) : NULL;
}

/* A notice is the server talking, not failing: debug for NOTICE and below, info for a
 * WARNING (message starts with its severity). */
static void on_notice(void *arg, const char *message)
{
    const conn_data *d = arg;
    int warning = strncmp(message, "WARNING", 7) == 0;
    sk_log_level level = warning ? SK_LOG_INFO : SK_LOG_DEBUG;
    if ((int)level < sk_log_min_level)
        return;
    char line[256];
    set_err(line, sizeof(line), "notice", message, NULL);
    sk_log_write(level, "pg_notice", "app=%s msg=\"%s\"", d->app, line + 8 /* "notice: " */);
}

/* The options the server gets: our statement_timeout first, then the user's own options
 * (from conninfo, else PGOPTIONS) after it, so a -c statement_timeout of theirs wins.
 * @returns 0, -1 (too long) or -2 (conninfo does not parse). */
static int merged_options(const char *conninfo, char *out, size_t outsz)
{
    const char *user = NULL;
    PQconninfoOption *opts = NULL;
    if (conninfo && *conninfo) {
        char *perr = NULL;
        opts = PQconninfoParse(conninfo, &perr);
        PQfreemem(perr); /* it quotes the bad token, which may be part of a password */
        if (!opts)
            return -2;
        for (PQconninfoOption *o = opts; o && o->keyword; o++)
            if (strcmp(o->keyword, "options") == 0 && o->val && *o->val)
                user = o->val;
    }
    if (!user)
        user = getenv("PGOPTIONS");
    int n = snprintf(out, outsz, "-c statement_timeout=%d%s%s", SK_PG_STATEMENT_TIMEOUT_MS,
                     user && *user ? " " : "", user && *user ? user : "");
    PQconninfoFree(opts);
    return n >= 0 && (size_t)n < outsz ? 0 : -1;
}

PGconn *sk_pg_connect(const char *conninfo, const char *app, char *err, size_t errsz)
{
    char timeout[16], options[1024];
    snprintf(timeout, sizeof(timeout), "%d", SK_PG_CONNECT_TIMEOUT_S);
    int mo = merged_options(conninfo, options, sizeof(options));
    if (mo != 0) {
        set_err(err, errsz, "connect",
                mo == -2 ? "the conninfo does not parse (libpq's detail is withheld: it may "
                           "quote the password)"
                         : "options too long",
                NULL);
        return NULL;
    }
    /* Ours first, then conninfo expanded from "dbname": later keywords win (libpq's
     * PQconnectdbParams), so whatever conninfo sets itself overrides these; only the
     * merged options come after it, and they already hold the user's. */
    const char *keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
                          "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                          "application_name", "dbname", "options", NULL};
    const char *vals[] = {timeout, "1", KEEPALIVES_IDLE_S, KEEPALIVES_INTERVAL_S,
                          KEEPALIVES_COUNT, TCP_USER_TIMEOUT_MS, app ? app : "seckill",
                          conninfo ? conninfo : "", options, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c) {
        set_err(err, errsz, "connect", "out of memory", NULL);
        return NULL;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        set_err(err, errsz, "connect", PQerrorMessage(c), NULL); /* never holds the password */
        PQfinish(c);
        return NULL;
    }
    conn_data *d = calloc(1, sizeof(*d));
    if (!d || !PQregisterEventProc(c, event_proc, "sk_pg", NULL) ||
        !PQsetInstanceData(c, event_proc, d)) {
        free(d);
        set_err(err, errsz, "connect", "out of memory", NULL);
        PQfinish(c);
        return NULL;
    }
    snprintf(d->app, sizeof(d->app), "%s", app ? app : "seckill");
    d->deadline_ms = SK_PG_STATEMENT_TIMEOUT_MS + SK_PG_DEADLINE_GRACE_MS;
    PQsetNoticeProcessor(c, on_notice, d);
    return c;
}

void sk_pg_set_deadline(PGconn *c, int ms)
{
    conn_data *d = data_of(c);
    if (d)
        d->deadline_ms = ms > 0 ? ms : 0;
}

const char *sk_pg_sqlstate(const PGconn *c)
{
    const conn_data *d = data_of(c);
    return d ? d->sqlstate : "";
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until c's socket is ready for `events` or the deadline (ms, monotonic; 0: none)
 * passes. @returns 1 ready, 0 deadline, -1 error. */
static int wait_socket(PGconn *c, short events, long long deadline)
{
    struct pollfd p = {.fd = PQsocket(c), .events = events};
    if (p.fd < 0)
        return -1;
    for (;;) {
        long long left = deadline ? deadline - now_ms() : -1;
        if (deadline && left <= 0)
            return 0;
        int rc = poll(&p, 1, left > 0x7fffffff ? 0x7fffffff : (int)left);
        if (rc > 0)
            return 1;
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* Shuts c's socket after a missed deadline: libpq then reads EOF, marks the connection
 * bad and answers the pending call with an error result, which is drained here. */
static void abandon(PGconn *c)
{
    shutdown(PQsocket(c), SHUT_RDWR);
    PQconsumeInput(c);
    PGresult *r;
    while ((r = PQgetResult(c)) != NULL)
        PQclear(r);
}

/* A call the server answered with an error (or with an unexpected status), the
 * connection still up: err and the SQLSTATE from `r`, which is freed (NULL: no result).
 * @returns SK_PG_ESTATEMENT. */
static int refused(PGconn *c, PGresult *r, const char *what, char *err, size_t errsz)
{
    conn_data *d = data_of(c);
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorMessage(r) : "";
    if (!*msg)
        msg = r ? PQresStatus(PQresultStatus(r)) : "no result";
    set_err(err, errsz, what, msg, state);
    if (d && state)
        snprintf(d->sqlstate, sizeof(d->sqlstate), "%s", state);
    PQclear(r);
    return SK_PG_ESTATEMENT;
}

/* A call that missed its deadline (timed_out) or lost its connection: err says which, and
 * the socket is shut so that the caller reconnects. @returns the sk_pg_err. */
static int broken(PGconn *c, int timed_out, const char *what, char *err, size_t errsz)
{
    conn_data *d = data_of(c);
    if (timed_out) {
        char msg[64];
        snprintf(msg, sizeof(msg), "no answer in %d ms", d ? d->deadline_ms : 0);
        set_err(err, errsz, what, msg, NULL);
        abandon(c);
        return SK_PG_ETIMEOUT;
    }
    set_err(err, errsz, what, PQerrorMessage(c), NULL);
    if (PQstatus(c) == CONNECTION_OK)
        abandon(c); /* a half-read answer is of no use: start over on a new one */
    return SK_PG_ECONN;
}

/* After a PQsend*: flushes, awaits every result of the call up to the deadline and keeps
 * the first error result (a later statement was not run) or else the last result. */
static int finish(PGconn *c, int sent, const char *what, ExecStatusType want, PGresult **out,
                  char *err, size_t errsz)
{
    conn_data *d = data_of(c);
    long long deadline = d && d->deadline_ms ? now_ms() + d->deadline_ms : 0;
    PGresult *keep = NULL;
    int timed_out = 0;
    if (out)
        *out = NULL;
    if (d)
        d->sqlstate[0] = '\0';
    if (!sent)
        goto failed;
    for (int f; (f = PQflush(c)) != 0;) {
        int w = f < 0 ? -1 : wait_socket(c, POLLOUT, deadline);
        if (w <= 0) {
            timed_out = w == 0;
            goto failed;
        }
    }
    for (;;) {
        while (!PQisBusy(c)) {
            PGresult *r = PQgetResult(c);
            if (!r)
                goto done;
            ExecStatusType s = PQresultStatus(r);
            int is_err = s == PGRES_FATAL_ERROR || s == PGRES_BAD_RESPONSE;
            if (keep && PQresultStatus(keep) == PGRES_FATAL_ERROR && !is_err) {
                PQclear(r);
            } else {
                PQclear(keep);
                keep = r;
            }
        }
        int w = wait_socket(c, POLLIN, deadline);
        if (w <= 0) {
            timed_out = w == 0;
            goto failed;
        }
        if (!PQconsumeInput(c))
            goto failed;
    }
done:
    if (keep && PQresultStatus(keep) == want) {
        if (out)
            *out = keep;
        else
            PQclear(keep);
        return SK_PG_OK;
    }
    if (PQstatus(c) == CONNECTION_OK)
        return refused(c, keep, what, err, errsz);
failed:
    PQclear(keep);
    return broken(c, timed_out, what, err, errsz);
}

int sk_pg_exec(PGconn *c, const char *what, const char *sql, int n, const char *const *values,
               ExecStatusType want, PGresult **res, char *err, size_t errsz)
{
    if (!c) {
        set_err(err, errsz, what, "not connected", NULL);
        return SK_PG_ECONN;
    }
    /* PQsendQuery takes several statements (a migration file); parameters need the
     * extended protocol, one statement. */
    int sent = n == 0 ? PQsendQuery(c, sql)
                      : PQsendQueryParams(c, sql, n, NULL, values, NULL, NULL, 0);
    return finish(c, sent, what, want, res, err, errsz);
}

int sk_pg_exec_prepared(PGconn *c, const char *what, const char *name, int n,
                        const char *const *values, const int *lengths, const int *formats,
                        ExecStatusType want, PGresult **res, char *err, size_t errsz)
{
    if (!c) {
        set_err(err, errsz, what, "not connected", NULL);
        return SK_PG_ECONN;
    }
    int sent = PQsendQueryPrepared(c, name, n, values, lengths, formats, 0);
    return finish(c, sent, what, want, res, err, errsz);
}

/* Sends a COPY's input in non-blocking mode: put (PQputCopyData or PQputCopyEnd) returns
 * 0 while libpq's buffer is full, which flushing, up to the deadline, empties.
 * @returns 1 sent, 0 deadline, -1 error. */
static int copy_put(PGconn *c, const char *data, size_t len, long long deadline)
{
    for (;;) {
        int rc = data ? PQputCopyData(c, data, (int)len) : PQputCopyEnd(c, NULL);
        if (rc < 0)
            return -1;
        if (rc > 0)
            return 1;
        int f = PQflush(c);
        if (f < 0)
            return -1;
        if (f > 0) {
            int w = wait_socket(c, POLLOUT, deadline);
            if (w <= 0)
                return w;
        }
    }
}

int sk_pg_copy_in(PGconn *c, const char *what, const char *sql, const char *data, size_t len,
                  char *err, size_t errsz)
{
    if (!c) {
        set_err(err, errsz, what, "not connected", NULL);
        return SK_PG_ECONN;
    }
    conn_data *d = data_of(c);
    long long deadline = d && d->deadline_ms ? now_ms() + d->deadline_ms : 0;
    if (d)
        d->sqlstate[0] = '\0';
    if (!PQsendQuery(c, sql))
        return finish(c, 0, what, PGRES_COMMAND_OK, NULL, err, errsz);
    /* The server's first answer: CopyInResponse, or an error (refused reports it). */
    PGresult *r = NULL;
    for (;;) {
        if (PQflush(c) == 0 && !PQisBusy(c)) {
            r = PQgetResult(c);
            break;
        }
        int w = wait_socket(c, PQflush(c) ? POLLIN | POLLOUT : POLLIN, deadline);
        if (w <= 0 || !PQconsumeInput(c))
            return broken(c, w == 0, what, err, errsz);
    }
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
        for (PGresult *rest; (rest = PQgetResult(c)) != NULL;)
            PQclear(rest);
        if (PQstatus(c) != CONNECTION_OK) {
            PQclear(r);
            return broken(c, 0, what, err, errsz);
        }
        return refused(c, r, what, err, errsz);
    }
    PQclear(r);
    int sent = 0;
    if (PQsetnonblocking(c, 1) == 0) {
        int w = copy_put(c, data, len, deadline);
        if (w > 0)
            w = copy_put(c, NULL, 0, deadline);
        PQsetnonblocking(c, 0);
        if (w <= 0)
            return broken(c, w == 0, what, err, errsz);
        sent = 1;
    }
    /* CommandComplete, or the error that refused a row (a unique violation). */
    return finish(c, sent, what, PGRES_COMMAND_OK, NULL, err, errsz);
}

int sk_pg_prepare(PGconn *c, const char *what, const char *name, const char *sql, int n,
                  const Oid *types, char *err, size_t errsz)
{
    if (!c) {
        set_err(err, errsz, what, "not connected", NULL);
        return SK_PG_ECONN;
    }
    int sent = PQsendPrepare(c, name, sql, n, types);
    return finish(c, sent, what, PGRES_COMMAND_OK, NULL, err, errsz);
}
