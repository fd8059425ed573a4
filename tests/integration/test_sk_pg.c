/* sk_pg (common/sk_pg.h) against the stack's PostgreSQL and against a server that accepts
 * and never answers (test_pg_hold): the bounds every connection gets, the precedence of
 * the user's own conninfo over them (key=value and URL forms), the statement paths (an
 * error with its SQLSTATE, several statements, a prepared one, a COPY's input), the
 * client-side deadline,
 * notices routed to sk_log, and connect_timeout on a hung server, with no password in
 * any message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sk_log.h"
#include "sk_pg.h"
#include "sk_test_proc.h"
#include "test_pg_hold.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *stack_pg(void)
{
    const char *pg = getenv("SECKILL_PG");
    return pg && *pg ? pg : NULL;
}

/* SHOW name on c, into buf. */
static const char *show(PGconn *c, const char *name, char *buf, size_t size)
{
    char sql[128], err[256];
    snprintf(sql, sizeof(sql), "SHOW %s", name);
    PGresult *r = NULL;
    buf[0] = '\0';
    if (sk_pg_exec(c, "show", sql, 0, NULL, PGRES_TUPLES_OK, &r, err, sizeof(err)) == SK_PG_OK)
        snprintf(buf, size, "%s", PQgetvalue(r, 0, 0));
    else
        fprintf(stderr, "# %s\n", err);
    PQclear(r);
    return buf;
}

/* The value libpq used for keyword `key` on c (PQconninfo), into buf. */
static const char *used(PGconn *c, const char *key, char *buf, size_t size)
{
    buf[0] = '\0';
    PQconninfoOption *o = PQconninfo(c);
    for (PQconninfoOption *p = o; p && p->keyword; p++)
        if (strcmp(p->keyword, key) == 0 && p->val)
            snprintf(buf, size, "%s", p->val);
    PQconninfoFree(o);
    return buf;
}

static void test_defaults(void **state)
{
    (void)state;
    char err[256], v[128];
    PGconn *c = sk_pg_connect(stack_pg(), "seckill-test/defaults", err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(show(c, "application_name", v, sizeof(v)), "seckill-test/defaults");
    assert_string_equal(show(c, "statement_timeout", v, sizeof(v)), "30s");
    assert_string_equal(used(c, "connect_timeout", v, sizeof(v)), "5");
    assert_string_equal(used(c, "keepalives", v, sizeof(v)), "1");
    assert_string_equal(used(c, "keepalives_idle", v, sizeof(v)), "30");
    assert_string_equal(used(c, "keepalives_interval", v, sizeof(v)), "10");
    assert_string_equal(used(c, "keepalives_count", v, sizeof(v)), "3");
    assert_string_equal(used(c, "tcp_user_timeout", v, sizeof(v)), "30000");
    PQfinish(c);
}

/* The user's settings win: key=value form, options merged with ours. */
static void test_user_wins_keyvalue(void **state)
{
    (void)state;
    char conninfo[1024], err[256], v[128];
    snprintf(conninfo, sizeof(conninfo),
             "%s application_name=mine connect_timeout=7 keepalives_idle=11 "
             "options='-c statement_timeout=1234'",
             stack_pg());
    PGconn *c = sk_pg_connect(conninfo, "seckill-test/ours", err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(show(c, "application_name", v, sizeof(v)), "mine");
    assert_string_equal(show(c, "statement_timeout", v, sizeof(v)), "1234ms");
    assert_string_equal(used(c, "connect_timeout", v, sizeof(v)), "7");
    assert_string_equal(used(c, "keepalives_idle", v, sizeof(v)), "11");
    assert_string_equal(used(c, "keepalives_count", v, sizeof(v)), "3"); /* not set: ours */
    PQfinish(c);

    /* Options of theirs that do not touch statement_timeout keep ours beside them. */
    snprintf(conninfo, sizeof(conninfo), "%s options='-c work_mem=8MB'", stack_pg());
    c = sk_pg_connect(conninfo, "seckill-test/ours", err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(show(c, "work_mem", v, sizeof(v)), "8MB");
    assert_string_equal(show(c, "statement_timeout", v, sizeof(v)), "30s");
    assert_string_equal(show(c, "application_name", v, sizeof(v)), "seckill-test/ours");
    PQfinish(c);
}

/* The same through a URL, the form deploy files use. */
static void test_user_wins_url(void **state)
{
    (void)state;
    char host[128] = "", port[16] = "", user[64] = "", db[64] = "", url[1024], err[256], v[64];
    PQconninfoOption *o = PQconninfoParse(stack_pg(), NULL);
    assert_non_null(o);
    for (PQconninfoOption *p = o; p->keyword; p++) {
        char *dst = !strcmp(p->keyword, "host")   ? host
                    : !strcmp(p->keyword, "port") ? port
                    : !strcmp(p->keyword, "user") ? user
                    : !strcmp(p->keyword, "dbname") ? db
                                                    : NULL;
        if (dst && p->val)
            snprintf(dst, 64, "%s", p->val);
    }
    PQconninfoFree(o);
    snprintf(url, sizeof(url),
             "postgresql://%s@%s:%s/%s?application_name=from-url&connect_timeout=9"
             "&options=-c%%20statement_timeout%%3D4321",
             user, host, port, db);
    PGconn *c = sk_pg_connect(url, "seckill-test/ours", err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(show(c, "application_name", v, sizeof(v)), "from-url");
    assert_string_equal(show(c, "statement_timeout", v, sizeof(v)), "4321ms");
    assert_string_equal(used(c, "connect_timeout", v, sizeof(v)), "9");
    PQfinish(c);
}

static void test_statements(void **state)
{
    (void)state;
    char err[256];
    PGconn *c = sk_pg_connect(stack_pg(), "seckill-test/statements", err, sizeof(err));
    assert_non_null(c);
    PGresult *r = (PGresult *)1;
    /* Refused: the SQLSTATE in the message and on the connection, no result, still up. */
    assert_int_equal(sk_pg_exec(c, "divide", "SELECT 1 / 0", 0, NULL, PGRES_TUPLES_OK, &r, err,
                                sizeof(err)),
                     SK_PG_ESTATEMENT);
    assert_null(r);
    assert_non_null(strstr(err, "divide: "));
    assert_non_null(strstr(err, "(sqlstate 22012)"));
    assert_null(strchr(err, '\n'));
    assert_string_equal(sk_pg_sqlstate(c), "22012");
    assert_false(sk_pg_err_retriable(SK_PG_ESTATEMENT));
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    /* Several statements (n 0): the last one's rows; the SQLSTATE is cleared. */
    assert_int_equal(sk_pg_exec(c, "two", "SELECT 1; SELECT 2", 0, NULL, PGRES_TUPLES_OK, &r, err,
                                sizeof(err)),
                     SK_PG_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "2");
    PQclear(r);
    assert_string_equal(sk_pg_sqlstate(c), "");
    /* A wrong expectation is a failure too (a command where rows were wanted). */
    assert_int_equal(sk_pg_exec(c, "want rows", "SET work_mem = '4MB'", 0, NULL, PGRES_TUPLES_OK,
                                NULL, err, sizeof(err)),
                     SK_PG_ESTATEMENT);
    /* Parameters, and a prepared statement with one. */
    const char *one[1] = {"41"};
    assert_int_equal(sk_pg_exec(c, "param", "SELECT $1::int + 1", 1, one, PGRES_TUPLES_OK, &r, err,
                                sizeof(err)),
                     SK_PG_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "42");
    PQclear(r);
    assert_int_equal(sk_pg_prepare(c, "prepare", "p1", "SELECT $1::int * 2", 1, NULL, err,
                                   sizeof(err)),
                     SK_PG_OK);
    assert_int_equal(sk_pg_exec_prepared(c, "run", "p1", 1, one, NULL, NULL, PGRES_TUPLES_OK, &r,
                                         err, sizeof(err)),
                     SK_PG_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "82");
    PQclear(r);
    /* A NULL connection is an error, not a crash. */
    assert_int_equal(sk_pg_exec(NULL, "none", "SELECT 1", 0, NULL, PGRES_TUPLES_OK, NULL, err,
                                sizeof(err)),
                     SK_PG_ECONN);
    PQfinish(c);
}

static long count_rows(PGconn *c, const char *table)
{
    char sql[128], err[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    PGresult *r = NULL;
    long n = -1;
    if (sk_pg_exec(c, "count", sql, 0, NULL, PGRES_TUPLES_OK, &r, err, sizeof(err)) == SK_PG_OK)
        n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

/* sk_pg_copy_in (the consumer's fast path): rows in; a unique violation refused whole
 * with its SQLSTATE and the connection still up; an input larger than the socket's
 * buffers (the non-blocking put loop); a COPY that cannot start (no such table); and a
 * COPY held behind another session's lock, which returns at the client's deadline. */
static void test_copy_in(void **state)
{
    (void)state;
    char err[256];
    PGconn *c = sk_pg_connect(stack_pg(), "seckill-test/copy", err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(sk_pg_exec(c, "table", "DROP TABLE IF EXISTS sk_pg_copy_t; "
                                "CREATE TABLE sk_pg_copy_t (id int8 PRIMARY KEY, s text)",
                                0, NULL, PGRES_COMMAND_OK, NULL, err, sizeof(err)),
                     SK_PG_OK);
    static const char SQL[] = "COPY sk_pg_copy_t FROM STDIN";
    static const char two[] = "1\ta\n2\tb\n";
    assert_int_equal(sk_pg_copy_in(c, "copy", SQL, two, strlen(two), err, sizeof(err)), SK_PG_OK);
    assert_int_equal(count_rows(c, "sk_pg_copy_t"), 2);
    assert_string_equal(sk_pg_sqlstate(c), "");
    /* A row already there: the whole COPY refused, 23505, nothing of it stored. */
    static const char dup[] = "3\tc\n1\ta\n";
    assert_int_equal(sk_pg_copy_in(c, "copy dup", SQL, dup, strlen(dup), err, sizeof(err)),
                     SK_PG_ESTATEMENT);
    assert_string_equal(sk_pg_sqlstate(c), "23505");
    assert_non_null(strstr(err, "copy dup: "));
    assert_null(strchr(err, '\n'));
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    assert_int_equal(count_rows(c, "sk_pg_copy_t"), 2);
    /* 200,000 rows (about 3 MB): more than the socket takes at once. */
    size_t cap = 200000 * 24, len = 0;
    char *big = malloc(cap);
    assert_non_null(big);
    for (int i = 0; i < 200000; i++)
        len += (size_t)snprintf(big + len, cap - len, "%d\trow-%d\n", 100 + i, i);
    assert_int_equal(sk_pg_copy_in(c, "copy big", SQL, big, len, err, sizeof(err)), SK_PG_OK);
    free(big);
    assert_int_equal(count_rows(c, "sk_pg_copy_t"), 200002);
    /* No such table: refused before any data, the connection still up. */
    assert_int_equal(sk_pg_copy_in(c, "copy none", "COPY sk_pg_no_such FROM STDIN", two,
                                   strlen(two), err, sizeof(err)),
                     SK_PG_ESTATEMENT);
    assert_string_equal(sk_pg_sqlstate(c), "42P01");
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    /* Held behind a lock another session keeps: back at the deadline, connection closed. */
    PGconn *holder = sk_pg_connect(stack_pg(), "seckill-test/copy-holder", err, sizeof(err));
    assert_non_null(holder);
    assert_int_equal(sk_pg_exec(holder, "lock", "BEGIN; LOCK TABLE sk_pg_copy_t", 0, NULL,
                                PGRES_COMMAND_OK, NULL, err, sizeof(err)),
                     SK_PG_OK);
    sk_pg_set_deadline(c, 300);
    static const char more[] = "900000\tz\n";
    int64_t t0 = sk_test_now_ms();
    int rc = sk_pg_copy_in(c, "copy held", SQL, more, strlen(more), err, sizeof(err));
    int64_t took = sk_test_now_ms() - t0;
    fprintf(stderr, "# COPY behind a lock, deadline 300 ms: returned in %lld ms: %s\n",
            (long long)took, err);
    assert_int_equal(rc, SK_PG_ETIMEOUT);
    assert_true(took >= 250 && took < 2000);
    assert_int_equal(PQstatus(c), CONNECTION_BAD);
    PQfinish(c);
    assert_int_equal(sk_pg_exec(holder, "end", "ROLLBACK; DROP TABLE sk_pg_copy_t", 0, NULL,
                                PGRES_COMMAND_OK, NULL, err, sizeof(err)),
                     SK_PG_OK);
    PQfinish(holder);
}

/* A server that takes the statement and does not answer in time: the call returns at the
 * client's deadline, the connection is closed, and the caller's reconnect path follows. */
static void test_client_deadline(void **state)
{
    (void)state;
    char err[256];
    PGconn *c = sk_pg_connect(stack_pg(), "seckill-test/deadline", err, sizeof(err));
    assert_non_null(c);
    sk_pg_set_deadline(c, 300);
    int64_t t0 = sk_test_now_ms();
    int rc = sk_pg_exec(c, "sleep", "SELECT pg_sleep(5)", 0, NULL, PGRES_TUPLES_OK, NULL, err,
                        sizeof(err));
    int64_t took = sk_test_now_ms() - t0;
    fprintf(stderr, "# deadline 300 ms: returned in %lld ms: %s\n", (long long)took, err);
    assert_int_equal(rc, SK_PG_ETIMEOUT);
    assert_true(took >= 250 && took < 2000);
    assert_true(sk_pg_err_retriable(rc));
    assert_non_null(strstr(err, "no answer in 300 ms"));
    assert_int_equal(PQstatus(c), CONNECTION_BAD);
    PQfinish(c);
}

/* Notices go to sk_log (stderr, one logfmt line), tagged with the connection's name. */
static void test_notice_logged(void **state)
{
    (void)state;
    char path[] = "/tmp/test_sk_pg_notice_XXXXXX", err[256];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    PGconn *c = sk_pg_connect(stack_pg(), "seckill-test/notice", err, sizeof(err));
    assert_non_null(c);
    sk_log_init("test_sk_pg", SK_LOG_INFO);
    int saved = dup(2);
    dup2(fd, 2);
    int rc = sk_pg_exec(c, "warn", "DO $$BEGIN RAISE WARNING 'probe \"q\"'; END$$", 0, NULL,
                        PGRES_COMMAND_OK, NULL, err, sizeof(err));
    dup2(saved, 2);
    close(saved);
    close(fd);
    assert_int_equal(rc, SK_PG_OK);
    assert_true(sk_test_log_has(
        path, "event=pg_notice app=seckill-test/notice msg=\"WARNING:  probe 'q'\""));
    unlink(path);
    PQfinish(c);
}

/* A server that accepts and never answers: connect fails at connect_timeout (ours, or
 * the user's when set), with libpq's reason and without the password. */
static void test_hung_server(void **state)
{
    (void)state;
    pg_hold h;
    assert_int_equal(pg_hold_start(&h), 0);
    char conninfo[512], mine[600], err[256];
    pg_hold_conninfo(&h, "s3cretpass", conninfo, sizeof(conninfo));
    snprintf(mine, sizeof(mine), "%s connect_timeout=2", conninfo);
    int64_t t0 = sk_test_now_ms();
    PGconn *c = sk_pg_connect(mine, "seckill-test/hung", err, sizeof(err));
    int64_t took_user = sk_test_now_ms() - t0;
    assert_null(c);
    fprintf(stderr, "# hung server, connect_timeout=2: failed in %lld ms: %s\n",
            (long long)took_user, err);
    assert_non_null(strstr(err, "timeout expired"));
    assert_null(strstr(err, "s3cretpass"));
    assert_true(took_user >= 1000 && took_user < 4000);

    t0 = sk_test_now_ms();
    c = sk_pg_connect(conninfo, "seckill-test/hung", err, sizeof(err));
    int64_t took = sk_test_now_ms() - t0;
    assert_null(c);
    fprintf(stderr, "# hung server, our connect_timeout (%d s): failed in %lld ms: %s\n",
            SK_PG_CONNECT_TIMEOUT_S, (long long)took, err);
    assert_non_null(strstr(err, "timeout expired"));
    assert_null(strstr(err, "s3cretpass"));
    assert_true(took >= (SK_PG_CONNECT_TIMEOUT_S - 1) * 1000 &&
                took < (SK_PG_CONNECT_TIMEOUT_S + 2) * 1000);
    assert_true(atomic_load(&h.nfds) >= 2); /* it did accept: a hang, not a refusal */
    pg_hold_stop(&h);
}

/* A conninfo that does not parse: refused at once, and libpq's message (which quotes the
 * offending token: here a piece of the password) is not passed on. */
static void test_bad_conninfo(void **state)
{
    (void)state;
    char err[256];
    PGconn *c = sk_pg_connect("host=127.0.0.1 password=abc s3cretpass", "seckill-test/bad", err,
                              sizeof(err));
    assert_null(c);
    fprintf(stderr, "# bad conninfo: %s\n", err);
    assert_non_null(strstr(err, "does not parse"));
    assert_null(strstr(err, "s3cretpass"));
}

int main(void)
{
    if (!stack_pg()) {
        fprintf(stderr, "skipped: no stack (SECKILL_PG unset; source .run/env)\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_user_wins_keyvalue),
        cmocka_unit_test(test_user_wins_url),
        cmocka_unit_test(test_statements),
        cmocka_unit_test(test_client_deadline),
        cmocka_unit_test(test_copy_in),
        cmocka_unit_test(test_notice_logged),
        cmocka_unit_test(test_hung_server),
        cmocka_unit_test(test_bad_conninfo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
