/* idgen: the command-line face of libidgen.
 *
 *   idgen next   [--redis URL] [--prefix P] [--mode incr|segment] [-n N] [--timeout-ms MS]
 *                [--scramble] [--floor] [--retry-ms MS] [--rate R]
 *   idgen decode [--scramble] ID...
 *   idgen bench  [--redis URL] [--prefix P] [--seconds S] [--threads T[,T...]] [--json]
 *
 * Exit status: 0 ok; 1 Redis (or the counter) failed; 2 a bad argument or a bad ID. */
#include "idgen.h"
#include "idgen_bench.h"
#include "idgen_floor_pg.h"
#include "idgen_serve.h"
#include "sk_id.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_REDIS 1
#define EXIT_USAGE 2

static const char usage[] =
    "usage: idgen next   [--redis URL] [--prefix P] [--mode incr|segment] [-n N] [--timeout-ms MS]\n"
    "                    [--scramble] [--floor] [--retry-ms MS] [--rate R]\n"
    "       idgen decode [--scramble] ID...\n"
    "       idgen serve  [--config FILE] [--key=value ...]   (idgen serve --help)\n"
    "       idgen bench  [--redis URL] [--prefix P] [--seconds S] [--threads T[,T...]]\n"
    "                    [--modes incr,segment,snowflake,uuidv7,keyed,worker] [--timeout-ms MS]\n"
    "                    [--json]\n"
    "\n"
    "IDs are 64-bit: bit 63 zero, bits 62..32 seconds since 2024-01-01T00:00:00Z, bits 31..0\n"
    "the sequence from INCR icr:<prefix>:<yyyymmdd> on that UTC day.\n"
    "\n"
    "  next     prints N new IDs, one a line (default N 1, prefix \"default\", mode segment)\n"
    "  decode   prints {\"id\",\"unix_seconds\",\"utc\",\"sequence\"} as one JSON object a line\n"
    "  bench    runs incr, segment (Redis) and the snowflake and uuidv7 baselines (local)\n"
    "           for S seconds (default 2) with T threads (default 1), as a table or --json\n"
    "\n"
    "--scramble: the unguessable layout, bits 31..0 the sequence permuted under the secret in\n"
    "$SECKILL_IDGEN_SECRET (16..1024 bytes; never on the command line, where ps shows it);\n"
    "decode --scramble gives the sequence back with the same secret.\n"
    "--floor: floor mode, each day counter's floor kept in PostgreSQL ($SECKILL_PG, table\n"
    "idgen_floor), so that a Redis that lost it cannot reissue IDs.\n"
    "--retry-ms: retry a retriable error (Redis down, a reset) for up to MS; --rate: at most\n"
    "R IDs a second (both for tests that break Redis under a running generator).\n"
    "--redis defaults to $SECKILL_REDIS_URL. Exit status: 0 ok, 1 Redis failed,\n"
    "2 a bad argument or a bad ID.\n";

static int die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die_usage(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "idgen: %s (see idgen --help)\n", msg);
    return EXIT_USAGE;
}

/* Numbers on the command line follow the one decimal rule (sk_id.h): no sign, no
 * leading zero, no spaces. */
static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    uint64_t v;
    if (sk_id_parse_str(s, (uint64_t)lo, (uint64_t)hi, &v) != 0)
        return -1;
    *out = (long long)v;
    return 0;
}

static const char *default_url(void)
{
    const char *u = getenv("SECKILL_REDIS_URL");
    return u && *u ? u : NULL;
}

/* Writes v in decimal followed by '\n' at p; returns the new end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    *p++ = '\n';
    return p;
}

enum {
    OPT_TIMEOUT = 1000,
    OPT_JSON,
    OPT_SECONDS,
    OPT_THREADS,
    OPT_MODES,
    OPT_SCRAMBLE,
    OPT_FLOOR,
    OPT_RETRY,
    OPT_RATE
};

#define SECRET_ENV "SECKILL_IDGEN_SECRET"

/* --scramble: the secret from the environment. @returns it, or NULL after a message. */
static const char *secret_from_env(void)
{
    const char *s = getenv(SECRET_ENV);
    size_t n = s ? strlen(s) : 0;
    if (n < 16 || n > 1024) {
        fprintf(stderr, "idgen: --scramble needs %s: %zu bytes, want 16..1024\n", SECRET_ENV,
                n);
        return NULL;
    }
    return s;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct next_args {
    idgen_mode mode;
    long long n;
    long long retry_ms; /* 0: the first error ends the run */
    long long rate;     /* IDs a second, 0: as fast as it goes */
} next_args;

/* Takes k IDs into ids: one INCR per ID in incr mode, as the mode promises (a batch would
 * be one INCRBY); the batch call in segment mode, which takes whole ranges of the block.
 * Retriable errors are retried for up to retry_ms since the last success. */
static int next_take(idgen_t *g, const next_args *a, uint64_t *ids, size_t k)
{
    int64_t since = now_ms();
    for (;;) {
        int rc = IDGEN_OK;
        size_t i = 0;
        if (a->mode == IDGEN_MODE_INCR)
            for (; i < k && rc == IDGEN_OK; i++)
                rc = idgen_next(g, &ids[i]);
        else
            rc = idgen_next_batch(g, ids, k);
        if (rc == IDGEN_OK)
            return IDGEN_OK;
        if (!idgen_err_retriable(rc) || now_ms() - since >= a->retry_ms)
            return rc;
        /* What incr mode issued before the error stands: keep it, take the rest. */
        if (a->mode == IDGEN_MODE_INCR && i > 1) {
            ids += i - 1;
            k -= i - 1;
            since = now_ms();
        }
        struct timespec pause = {0, 5 * 1000000};
        nanosleep(&pause, NULL);
    }
}

/* Prints a->n IDs of g, one a line, in chunks. @returns 0, EXIT_USAGE or EXIT_REDIS
 * (an error, or stdout closed). */
static int next_print(idgen_t *g, const next_args *a)
{
    enum { CHUNK = 4096 };
    static uint64_t ids[CHUNK];
    static char out[CHUNK * 21];
    int status = 0;
    /* With a rate, chunks of a hundredth of a second's worth, each on its own schedule. */
    size_t chunk = a->rate ? (size_t)(a->rate / 100 > 0 ? a->rate / 100 : 1) : CHUNK;
    if (chunk > CHUNK)
        chunk = CHUNK;
    int64_t t0 = now_ms();
    for (long long done = 0; done < a->n;) {
        size_t k = (size_t)(a->n - done) < chunk ? (size_t)(a->n - done) : chunk;
        if (a->rate) {
            int64_t due = t0 + done * 1000 / a->rate, wait = due - now_ms();
            if (wait > 0) {
                struct timespec ts = {wait / 1000, (wait % 1000) * 1000000};
                nanosleep(&ts, NULL);
            }
        }
        int rc = next_take(g, a, ids, k);
        if (rc) {
            fflush(stdout);
            fprintf(stderr, "idgen: %s: %s\n", idgen_strerror(rc), idgen_errstr(g));
            status = rc == IDGEN_ERR_ARG ? EXIT_USAGE : EXIT_REDIS;
            break;
        }
        char *p = out;
        for (size_t i = 0; i < k; i++)
            p = put_u64(p, ids[i]);
        if (fwrite(out, 1, (size_t)(p - out), stdout) != (size_t)(p - out)) {
            status = EXIT_REDIS; /* stdout closed (a pipe reader left): stop quietly */
            break;
        }
        if (a->rate)
            fflush(stdout); /* a test reads what was issued so far */
        done += (long long)k;
    }
    return status;
}

static int cmd_next(int argc, char **argv)
{
    static const struct option lo[] = {{"redis", required_argument, NULL, 'r'},
                                       {"prefix", required_argument, NULL, 'p'},
                                       {"mode", required_argument, NULL, 'm'},
                                       {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
                                       {"scramble", no_argument, NULL, OPT_SCRAMBLE},
                                       {"floor", no_argument, NULL, OPT_FLOOR},
                                       {"retry-ms", required_argument, NULL, OPT_RETRY},
                                       {"rate", required_argument, NULL, OPT_RATE},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    const char *url = default_url(), *prefix = "default";
    long long n = 1, timeout = 1000;
    next_args na = {0};
    int floor = 0;
    idgen_opts o;
    idgen_opts_init(&o);
    int c;
    while ((c = getopt_long(argc, argv, "+r:p:m:n:h", lo, NULL)) != -1) {
        switch (c) {
        case 'r':
            url = optarg;
            break;
        case 'p':
            prefix = optarg;
            break;
        case 'm':
            if (strcmp(optarg, "incr") == 0)
                o.mode = IDGEN_MODE_INCR;
            else if (strcmp(optarg, "segment") == 0)
                o.mode = IDGEN_MODE_SEGMENT;
            else
                return die_usage("bad --mode '%s': incr or segment", optarg);
            break;
        case 'n':
            if (parse_int(optarg, 1, 1000000000LL, &n))
                return die_usage("bad -n '%s': a count in 1..1000000000", optarg);
            break;
        case OPT_TIMEOUT:
            if (parse_int(optarg, 1, 600000, &timeout))
                return die_usage("bad --timeout-ms '%s': 1..600000", optarg);
            break;
        case OPT_SCRAMBLE:
            if (!(o.secret = secret_from_env()))
                return EXIT_USAGE;
            o.secret_len = strlen(o.secret);
            break;
        case OPT_FLOOR:
            floor = 1;
            break;
        case OPT_RETRY:
            if (parse_int(optarg, 0, 3600000, &na.retry_ms))
                return die_usage("bad --retry-ms '%s': 0..3600000", optarg);
            break;
        case OPT_RATE:
            if (parse_int(optarg, 1, 100000000, &na.rate))
                return die_usage("bad --rate '%s': 1..100000000", optarg);
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            return die_usage("%s", "bad option for next");
        }
    }
    if (optind < argc)
        return die_usage("unexpected argument '%s'", argv[optind]);
    if (!url)
        return die_usage("%s", "no Redis URL: pass --redis or set SECKILL_REDIS_URL");
    o.timeout_ms = (int)timeout;
    /* Lease no more than needed: the rest of a block is skipped when we exit. */
    if (o.mode == IDGEN_MODE_SEGMENT && n < (long long)o.segment_min)
        o.segment_min = (uint32_t)n;
    idgen_floor_pg *fp = NULL;
    if (floor) {
        const char *pg = getenv("SECKILL_PG");
        if (!pg || !*pg)
            return die_usage("%s", "--floor needs $SECKILL_PG (a PostgreSQL conninfo)");
        if (!(fp = idgen_floor_pg_new(pg, "idgen/floor"))) {
            fprintf(stderr, "idgen: out of memory\n");
            return EXIT_REDIS;
        }
        o.floor = idgen_floor_pg_store(fp);
    }
    char err[256];
    idgen_t *g = idgen_new(url, prefix, &o, err, sizeof(err));
    if (!g) {
        fprintf(stderr, "%s\n", err);
        idgen_floor_pg_free(fp);
        return EXIT_USAGE; /* only a bad URL, prefix or option fails here: connect is lazy */
    }
    na.mode = o.mode;
    na.n = n;
    int status = next_print(g, &na);
    idgen_free(g);
    idgen_floor_pg_free(fp);
    if (fflush(stdout) != 0 && !status)
        status = EXIT_REDIS;
    return status;
}

static int cmd_decode(int argc, char **argv)
{
    const char *secret = NULL;
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "--scramble") == 0) {
        if (!(secret = secret_from_env()))
            return EXIT_USAGE;
        first = 2;
    }
    if (argc <= first)
        return die_usage("%s", "decode needs at least one ID");
    size_t slen = secret ? strlen(secret) : 0;
    for (int i = first; i < argc; i++) {
        uint64_t v;
        idgen_parts parts;
        if (sk_id_parse_str(argv[i], 0, (uint64_t)INT64_MAX, &v) != 0 ||
            idgen_decode(v, &parts) != IDGEN_OK)
            return die_usage("bad ID '%s': a decimal in 0..9223372036854775807", argv[i]);
    }
    for (int i = first; i < argc; i++) {
        uint64_t v = 0;
        idgen_parts p;
        sk_id_parse_str(argv[i], 0, (uint64_t)INT64_MAX, &v);
        if (secret)
            idgen_decode_keyed(v, secret, slen, &p);
        else
            idgen_decode(v, &p);
        time_t t = (time_t)p.unix_seconds;
        struct tm tm;
        char utc[32];
        gmtime_r(&t, &tm);
        strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%SZ", &tm);
        printf("{\"id\":\"%llu\",\"unix_seconds\":%lld,\"utc\":\"%s\",\"sequence\":%u}\n",
               (unsigned long long)v, (long long)p.unix_seconds, utc, p.sequence);
    }
    return 0;
}

static int cmd_bench(int argc, char **argv)
{
    static const struct option lo[] = {{"redis", required_argument, NULL, 'r'},
                                       {"prefix", required_argument, NULL, 'p'},
                                       {"seconds", required_argument, NULL, OPT_SECONDS},
                                       {"threads", required_argument, NULL, OPT_THREADS},
                                       {"modes", required_argument, NULL, OPT_MODES},
                                       {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
                                       {"json", no_argument, NULL, OPT_JSON},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    static char prefix[64];
    snprintf(prefix, sizeof(prefix), "bench-%ld", (long)getpid());
    idgen_bench_args a = {.redis_url = default_url(), .prefix = prefix, .seconds = 2,
                          .threads = {1}, .nthreads = 1, .timeout_ms = 1000};
    int c;
    long long v;
    while ((c = getopt_long(argc, argv, "+r:p:h", lo, NULL)) != -1) {
        switch (c) {
        case 'r':
            a.redis_url = optarg;
            break;
        case 'p':
            a.prefix = optarg;
            break;
        case OPT_SECONDS: {
            char *end;
            errno = 0;
            a.seconds = strtod(optarg, &end);
            if (errno || *end || !(a.seconds >= 0.1 && a.seconds <= 3600))
                return die_usage("bad --seconds '%s': 0.1..3600", optarg);
            break;
        }
        case OPT_THREADS: {
            a.nthreads = 0;
            char buf[128];
            snprintf(buf, sizeof(buf), "%s", optarg);
            for (char *save, *tok = strtok_r(buf, ",", &save); tok;
                 tok = strtok_r(NULL, ",", &save)) {
                if (a.nthreads == 16 || parse_int(tok, 1, IDGEN_BENCH_MAX_THREADS, &v))
                    return die_usage("bad --threads '%s': up to 16 counts in 1..64", optarg);
                a.threads[a.nthreads++] = (int)v;
            }
            if (!a.nthreads)
                return die_usage("bad --threads '%s'", optarg);
            break;
        }
        case OPT_MODES: {
            char buf[128];
            snprintf(buf, sizeof(buf), "%s", optarg);
            for (char *save, *tok = strtok_r(buf, ",", &save); tok;
                 tok = strtok_r(NULL, ",", &save))
                if (strcmp(tok, "incr") && strcmp(tok, "segment") && strcmp(tok, "snowflake") &&
                    strcmp(tok, "uuidv7") && strcmp(tok, "keyed") && strcmp(tok, "worker"))
                    return die_usage("bad --modes '%s': incr,segment,snowflake,uuidv7,keyed,"
                                     "worker", optarg);
            a.modes = optarg;
            break;
        }
        case OPT_TIMEOUT:
            if (parse_int(optarg, 1, 600000, &v))
                return die_usage("bad --timeout-ms '%s': 1..600000", optarg);
            a.timeout_ms = (int)v;
            break;
        case OPT_JSON:
            a.json = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            return die_usage("%s", "bad option for bench");
        }
    }
    if (optind < argc)
        return die_usage("unexpected argument '%s'", argv[optind]);
    int needs_redis = !a.modes || strstr(a.modes, "incr") || strstr(a.modes, "segment") ||
                      strstr(a.modes, "keyed") || strstr(a.modes, "worker");
    if (needs_redis && !a.redis_url)
        return die_usage("%s", "no Redis URL: pass --redis or set SECKILL_REDIS_URL");
    return idgen_bench_run(&a, stdout, stderr);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return die_usage("%s", "a command is needed: next, decode or bench");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("idgen %s\n", SECKILL_VERSION);
        return 0;
    }
    /* Each command parses its own options, with argv[0] = the command. */
    optind = 1;
    if (!strcmp(cmd, "next"))
        return cmd_next(argc - 1, argv + 1);
    if (!strcmp(cmd, "decode"))
        return cmd_decode(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve"))
        return idgen_serve_main(argc - 1, argv + 1);
    return die_usage("unknown command '%s': next, decode, bench or serve", cmd);
}
