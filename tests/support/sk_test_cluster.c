/* sk_test_cluster: a throwaway Redis Cluster for tests. See sk_test_cluster.h. */
#include "sk_test_cluster.h"
#include "sk_test_proc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sk_test_cluster {
    sk_test_redis *node[SK_TEST_CLUSTER_NODES];
    char pass[128];
    char url[1024];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int sk_test_cluster_port(const sk_test_cluster *c, int i) { return sk_test_redis_port(c->node[i]); }
pid_t sk_test_cluster_pid(const sk_test_cluster *c, int i) { return sk_test_redis_pid(c->node[i]); }
sk_test_redis *sk_test_cluster_node(sk_test_cluster *c, int i) { return c->node[i]; }
const char *sk_test_cluster_url(const sk_test_cluster *c) { return c->url; }

redisContext *sk_test_cluster_connect(const sk_test_cluster *c, int i)
{
    if (sk_test_redis_pid(c->node[i]) <= 0)
        return NULL;
    struct timeval tv = {2, 0};
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", sk_test_cluster_port(c, i), tv);
    if (!rc || rc->err) {
        if (rc)
            redisFree(rc);
        return NULL;
    }
    redisSetTimeout(rc, tv);
    if (c->pass[0]) {
        redisReply *r = redisCommand(rc, "AUTH %s", c->pass);
        int ok = r && r->type != REDIS_REPLY_ERROR;
        if (r)
            freeReplyObject(r);
        if (!ok) {
            redisFree(rc);
            return NULL;
        }
    }
    return rc;
}

redisReply *sk_test_cluster_cmd(const sk_test_cluster *c, int i, const char *fmt, ...)
{
    redisContext *rc = sk_test_cluster_connect(c, i);
    if (!rc)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    redisFree(rc);
    return r;
}

int sk_test_cluster_node_id(const sk_test_cluster *c, int i, char id[41])
{
    redisReply *r = sk_test_cluster_cmd(c, i, "CLUSTER MYID");
    int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (ok)
        memcpy(id, r->str, 41);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static int index_of_port(const sk_test_cluster *c, long long port)
{
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++)
        if (sk_test_cluster_port(c, i) == port)
            return i;
    return -1;
}

/* The master port of `slot` in node i's CLUSTER SLOTS, -1 unknown. */
static int slot_owner_seen_by(const sk_test_cluster *c, int i, int slot)
{
    redisReply *r = sk_test_cluster_cmd(c, i, "CLUSTER SLOTS");
    int port = -1;
    for (size_t k = 0; r && r->type == REDIS_REPLY_ARRAY && k < r->elements; k++) {
        redisReply *e = r->element[k];
        if (e->elements >= 3 && slot >= e->element[0]->integer && slot <= e->element[1]->integer)
            port = (int)e->element[2]->element[1]->integer;
    }
    if (r)
        freeReplyObject(r);
    return port;
}

int sk_test_cluster_master_of(const sk_test_cluster *c, int slot)
{
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++) {
        if (sk_test_cluster_pid(c, i) <= 0)
            continue;
        int port = slot_owner_seen_by(c, i, slot);
        if (port > 0)
            return index_of_port(c, port);
    }
    return -1;
}

static int is_master(const sk_test_cluster *c, int i)
{
    redisReply *r = sk_test_cluster_cmd(c, i, "ROLE");
    int m = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0;
    if (r)
        freeReplyObject(r);
    return m;
}

int sk_test_cluster_other_master(const sk_test_cluster *c, int slot)
{
    int owner = sk_test_cluster_master_of(c, slot);
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++)
        if (i != owner && sk_test_cluster_pid(c, i) > 0 && is_master(c, i))
            return i;
    return -1;
}

/* cluster_state:ok and all slots served, as node i sees it. (At start, deploy/cluster.sh
 * create waits for more: every node known, every replica's link up.) */
static int node_ok(const sk_test_cluster *c, int i)
{
    redisReply *r = sk_test_cluster_cmd(c, i, "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") &&
             strstr(r->str, "cluster_slots_ok:16384");
    if (r)
        freeReplyObject(r);
    return ok;
}

static int wait_ok(const sk_test_cluster *c, int slot, int timeout_ms, char *err, size_t errsz)
{
    double deadline = now_s() + timeout_ms / 1000.0;
    for (;;) {
        int ok = 1, owner = -2;
        for (int i = 0; ok && i < SK_TEST_CLUSTER_NODES; i++) {
            if (sk_test_cluster_pid(c, i) <= 0)
                continue;
            ok = node_ok(c, i);
            if (ok && slot >= 0) {
                int o = slot_owner_seen_by(c, i, slot);
                ok = o > 0 && (owner == -2 || owner == o);
                owner = o;
            }
        }
        if (ok)
            return 0;
        if (now_s() > deadline) {
            snprintf(err, errsz, "cluster not ok (slot %d agreed) within %d ms", slot, timeout_ms);
            return -1;
        }
        /* Polling is the condition wait: the cluster offers no readiness signal. */
        usleep(20000);
    }
}

int sk_test_cluster_wait_ok(const sk_test_cluster *c, int slot, int timeout_ms, char *err,
                            size_t errsz)
{
    return wait_ok(c, slot, timeout_ms, err, errsz);
}

static int ok_reply(redisReply *r)
{
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (r)
        freeReplyObject(r);
    return ok;
}

int sk_test_cluster_migrate_slot(sk_test_cluster *c, int slot, int to, char *err, size_t errsz)
{
    int from = sk_test_cluster_master_of(c, slot);
    if (from < 0) {
        snprintf(err, errsz, "slot %d has no master", slot);
        return -1;
    }
    if (from == to)
        return 0;
    char from_id[41], to_id[41];
    if (sk_test_cluster_node_id(c, from, from_id) || sk_test_cluster_node_id(c, to, to_id)) {
        snprintf(err, errsz, "CLUSTER MYID failed");
        return -1;
    }
    if (!ok_reply(sk_test_cluster_cmd(c, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id)) ||
        !ok_reply(sk_test_cluster_cmd(c, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id))) {
        snprintf(err, errsz, "CLUSTER SETSLOT IMPORTING/MIGRATING failed");
        return -1;
    }
    redisContext *src = sk_test_cluster_connect(c, from);
    if (!src) {
        snprintf(err, errsz, "source node does not answer");
        return -1;
    }
    int rc = 0;
    for (int round = 0; rc == 0 && round < 100000; round++) {
        redisReply *keys = redisCommand(src, "CLUSTER GETKEYSINSLOT %d 100", slot);
        if (!keys || keys->type != REDIS_REPLY_ARRAY) {
            snprintf(err, errsz, "CLUSTER GETKEYSINSLOT failed");
            rc = -1;
        } else if (keys->elements == 0) {
            freeReplyObject(keys);
            break;
        } else {
            const char *argv[100 + 12];
            size_t lens[100 + 12];
            char port[16];
            snprintf(port, sizeof(port), "%d", sk_test_cluster_port(c, to));
            int n = 0;
            const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", "5000"};
            for (int i = 0; i < 6; i++)
                argv[n++] = head[i];
            if (c->pass[0]) {
                argv[n++] = "AUTH";
                argv[n++] = c->pass;
            }
            argv[n++] = "KEYS";
            for (size_t k = 0; k < keys->elements; k++)
                argv[n++] = keys->element[k]->str;
            for (int i = 0; i < n; i++)
                lens[i] = strlen(argv[i]);
            for (size_t k = 0; k < keys->elements; k++)
                lens[n - keys->elements + k] = keys->element[k]->len;
            redisReply *m = redisCommandArgv(src, n, argv, lens);
            if (!m || m->type == REDIS_REPLY_ERROR) {
                snprintf(err, errsz, "MIGRATE: %s", m ? m->str : src->errstr);
                rc = -1;
            }
            if (m)
                freeReplyObject(m);
            freeReplyObject(keys);
        }
    }
    redisFree(src);
    if (rc != 0)
        return -1;
    /* The target first: from then on it owns the slot, whoever asks. */
    ok_reply(sk_test_cluster_cmd(c, to, "CLUSTER SETSLOT %d NODE %s", slot, to_id));
    ok_reply(sk_test_cluster_cmd(c, from, "CLUSTER SETSLOT %d NODE %s", slot, to_id));
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++)
        if (i != to && i != from && sk_test_cluster_pid(c, i) > 0 && is_master(c, i))
            ok_reply(sk_test_cluster_cmd(c, i, "CLUSTER SETSLOT %d NODE %s", slot, to_id));
    return wait_ok(c, slot, 20000, err, errsz);
}

/* deploy/cluster.sh, the one Redis Cluster bring-up of the repository: from
 * $SECKILL_SOURCE_DIR (ctest sets it), else from this file's place in the tree. */
static void cluster_script(char *buf, size_t size)
{
    const char *src = getenv("SECKILL_SOURCE_DIR");
    if (src && *src) {
        snprintf(buf, size, "%s/deploy/cluster.sh", src);
        return;
    }
    const char *f = __FILE__, *cut = strstr(f, "tests/support/");
    snprintf(buf, size, "%.*sdeploy/cluster.sh", cut ? (int)(cut - f) : 0, f);
}

/* run_script: `deploy/cluster.sh ARGS...` with its stdout and stderr into one temporary
 * file whose text goes to out (NUL-terminated, the tail if longer). `auth`: a password
 * for redis-cli through REDISCLI_AUTH (never on a command line), or "". @returns the
 * exit status, or -1 if it could not run. */
static int run_script(const char *const *args, const char *auth, char *out, size_t outsz)
{
    char script[1024], env_auth[160];
    cluster_script(script, sizeof(script));
    const char *argv[24];
    int n = 0;
    argv[n++] = "bash";
    argv[n++] = script;
    for (int i = 0; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    snprintf(env_auth, sizeof(env_auth), "REDISCLI_AUTH=%s", auth);
    const char *env[] = {auth[0] ? env_auth : NULL, NULL};
    char path[] = "/tmp/sk-test-cluster-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(out, outsz, "mkstemp: %s", strerror(errno));
        return -1;
    }
    sk_test_spawn_opts o = {.env = env, .out_path = path, .err_path = path, .null_stdin = 1};
    pid_t pid = sk_test_spawn(argv, &o);
    int status = pid > 0 ? sk_test_proc_stop(pid, 0, 120000) : -1;
    char buf[4096] = "";
    ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
    buf[got > 0 ? got : 0] = '\0';
    size_t len = strlen(buf), keep = len < outsz ? len : outsz - 1;
    memcpy(out, buf + len - keep, keep); /* the tail: where the error is */
    out[keep] = '\0';
    close(fd);
    unlink(path);
    return status;
}

/* The test profile's redis-server options (`deploy/cluster.sh options test`, one a line)
 * into opts (pointers into store). @returns how many, or -1 with err set. */
static int profile_options(char *store, size_t storesz, const char **opts, int max, char *err,
                           size_t errsz)
{
    const char *args[] = {"options", "test", NULL};
    if (run_script(args, "", store, storesz) != 0) {
        snprintf(err, errsz, "deploy/cluster.sh options test failed: %.200s", store);
        return -1;
    }
    int n = 0;
    for (char *line = strtok(store, "\n"); line && n < max; line = strtok(NULL, "\n"))
        opts[n++] = line;
    return n;
}

sk_test_cluster *sk_test_cluster_start(const char *password, char *err, size_t errsz)
{
    sk_test_cluster *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    if (password)
        snprintf(c->pass, sizeof(c->pass), "%s", password);
    char store[1024];
    const char *opts[16];
    int nopts = profile_options(store, sizeof(store), opts, 16, err, errsz);
    if (nopts < 0) {
        free(c);
        return NULL;
    }
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++) {
        /* The nodes are sk_test_redis servers (the tests kill and restart them); the bus
         * port is our own pick too: port + 10000 may be past 65535. */
        for (int attempt = 0; attempt < 3 && !c->node[i]; attempt++) {
            char bus[16];
            snprintf(bus, sizeof(bus), "%d", sk_test_free_port());
            const char *extra[32];
            int n = 0;
            const char *cl[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                "--cluster-port", bus};
            for (size_t k = 0; k < sizeof(cl) / sizeof(cl[0]); k++)
                extra[n++] = cl[k];
            for (int k = 0; k < nopts; k++)
                extra[n++] = opts[k];
            if (password) {
                extra[n++] = "--requirepass";
                extra[n++] = c->pass;
                extra[n++] = "--masterauth";
                extra[n++] = c->pass;
            }
            extra[n] = NULL;
            c->node[i] = sk_test_redis_start(extra, err, errsz);
        }
        if (!c->node[i]) {
            sk_test_cluster_free(c);
            return NULL;
        }
    }
    /* `create` joins them and waits until the cluster is ok: every slot served, every
     * node known, every replica's link up. */
    char ports[SK_TEST_CLUSTER_NODES][16], out[400];
    const char *args[SK_TEST_CLUSTER_NODES + 4] = {"create", "--seconds", "30"};
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++) {
        snprintf(ports[i], sizeof(ports[i]), "%d", sk_test_cluster_port(c, i));
        args[3 + i] = ports[i];
    }
    args[3 + SK_TEST_CLUSTER_NODES] = NULL;
    if (run_script(args, c->pass, out, sizeof(out)) != 0) {
        snprintf(err, errsz, "deploy/cluster.sh create: %s", out);
        sk_test_cluster_free(c);
        return NULL;
    }
    int n = snprintf(c->url, sizeof(c->url), "redis-cluster://%s%s%s", c->pass[0] ? ":" : "",
                     c->pass, c->pass[0] ? "@" : "");
    for (int i = 0; i < 3; i++)
        n += snprintf(c->url + n, sizeof(c->url) - (size_t)n, "%s127.0.0.1:%d", i ? "," : "",
                      sk_test_cluster_port(c, i));
    return c;
}

void sk_test_cluster_free(sk_test_cluster *c)
{
    if (!c)
        return;
    for (int i = 0; i < SK_TEST_CLUSTER_NODES; i++)
        sk_test_redis_free(c->node[i]);
    free(c);
}
