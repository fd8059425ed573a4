/* rcl_map: cluster URLs, node connections with the URL's credentials, the slot map from
 * CLUSTER SLOTS, and the script registry. Pure apart from rcl_node_connect. */
#include "rcl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* redis-cluster://[[user]:password@]host:port[,host:port...]: the credentials are parsed
 * by sk_redis_url (one place for the userinfo rules) from "redis://userinfo@seed0". */
int rcl_url_parse(const char *url, rcl_url *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof(*out));
    if (!rcl_url_is_cluster(url))
        return sk_redis_url_parse(url, &out->plain, err, errsz);
    out->cluster = 1;
    const char *rest = url + 16;
    const char *at = strrchr(rest, '@');
    const char *hosts = at ? at + 1 : rest;
    char tmp[1024];
    if (snprintf(tmp, sizeof(tmp), "redis://%.*s%slocalhost", at ? (int)(at - rest) : 0, rest,
                 at ? "@" : "") >= (int)sizeof(tmp) ||
        sk_redis_url_parse(tmp, &out->plain, err, errsz) != 0) {
        snprintf(err, errsz, "cluster URL: bad user or password");
        return -1;
    }
    while (*hosts) {
        const char *comma = strchr(hosts, ',');
        size_t n = comma ? (size_t)(comma - hosts) : strlen(hosts);
        sk_redis_url one;
        if (n == 0 || n >= sizeof(tmp) - 16 || out->nseeds == RCL_MAX_SEEDS) {
            snprintf(err, errsz, "cluster URL: empty or too many seed nodes");
            return -1;
        }
        snprintf(tmp, sizeof(tmp), "redis://%.*s", (int)n, hosts);
        if (memchr(hosts, '/', n) || sk_redis_url_parse(tmp, &one, err, errsz) != 0) {
            snprintf(err, errsz, "cluster URL: bad seed %.*s (host:port)", (int)n, hosts);
            return -1;
        }
        snprintf(out->seeds[out->nseeds].host, sizeof(out->seeds[0].host), "%s", one.host);
        out->seeds[out->nseeds].port = one.port;
        out->nseeds++;
        hosts += n + (comma != NULL);
        if (comma && !*hosts) {
            snprintf(err, errsz, "cluster URL: trailing comma");
            return -1;
        }
    }
    if (out->nseeds == 0) {
        snprintf(err, errsz, "cluster URL: no seed node");
        return -1;
    }
    return 0;
}

int rcl_url_check(const char *url, char *err, size_t errsz)
{
    rcl_url u;
    return rcl_url_parse(url ? url : "", &u, err, errsz);
}

redisContext *rcl_node_connect(const rcl_url *u, const char *host, int port, struct timeval tv,
                               char *err, size_t errsz)
{
    sk_redis_url one = u->plain;
    one.is_unix = 0;
    one.db = 0;
    snprintf(one.host, sizeof(one.host), "%s", host);
    one.port = port;
    return sk_redis_url_connect(&one, tv, err, errsz);
}

void rcl_slotmap_clear(rcl_slotmap *m)
{
    free(m->masters);
    m->masters = NULL;
    m->nmasters = 0;
    for (int i = 0; i < RCL_SLOTS; i++)
        m->owner[i] = -1;
}

/* Each entry: [start, end, [host, port, id...], replicas...]. */
int rcl_slotmap_parse(const redisReply *r, const char *from_host, rcl_slotmap *m, char *err,
                      size_t errsz)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errsz, "CLUSTER SLOTS: %s",
                 r && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        return -1;
    }
    rcl_slotmap n;
    n.masters = calloc(r->elements ? r->elements : 1, sizeof(rcl_addr));
    n.nmasters = 0;
    if (!n.masters) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    for (int i = 0; i < RCL_SLOTS; i++)
        n.owner[i] = -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2 ||
            e->element[2]->element[0]->type != REDIS_REPLY_STRING ||
            e->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
            snprintf(err, errsz, "CLUSTER SLOTS: malformed entry");
            free(n.masters);
            return -1;
        }
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        const char *host = e->element[2]->element[0]->str;
        int port = (int)e->element[2]->element[1]->integer;
        if (!host[0] || strcmp(host, "?") == 0)
            host = from_host; /* "": the node we asked */
        int k = 0;
        while (k < n.nmasters && !(n.masters[k].port == port && strcmp(n.masters[k].host, host) == 0))
            k++;
        if (k == n.nmasters) {
            snprintf(n.masters[k].host, sizeof(n.masters[k].host), "%s", host);
            n.masters[k].port = port;
            n.nmasters++;
        }
        for (long long s = lo < 0 ? 0 : lo; s <= hi && s < RCL_SLOTS; s++)
            n.owner[s] = (int16_t)k;
    }
    if (n.nmasters == 0) {
        snprintf(err, errsz, "CLUSTER SLOTS: no slot is served");
        free(n.masters);
        return -1;
    }
    free(m->masters);
    *m = n;
    return 0;
}

int rcl_slotmap_move(rcl_slotmap *m, int **master_node, int slot, const rcl_addr *to, int ni)
{
    int k = 0;
    while (k < m->nmasters && (*master_node)[k] != ni)
        k++;
    if (k == m->nmasters) {
        rcl_addr *ma = realloc(m->masters, (size_t)(k + 1) * sizeof(rcl_addr));
        if (!ma)
            return -1;
        m->masters = ma;
        int *mn = realloc(*master_node, (size_t)(k + 1) * sizeof(int));
        if (!mn)
            return -1;
        *master_node = mn;
        m->masters[k] = *to;
        mn[k] = ni;
        m->nmasters++;
    }
    m->owner[slot] = (int16_t)k;
    return 0;
}

int rcl_scripts_add(rcl_scripts *s, const char *body, char sha[41])
{
    rcl_sha1_hex(body, strlen(body), sha);
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->s[i].sha, sha) == 0)
            return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        void *p = realloc(s->s, (size_t)cap * sizeof(*s->s));
        if (!p)
            return -1;
        s->s = p;
        s->cap = cap;
    }
    char *copy = strdup(body);
    if (!copy)
        return -1;
    memcpy(s->s[s->n].sha, sha, 41);
    s->s[s->n].body = copy;
    s->n++;
    return 0;
}

const char *rcl_scripts_body_for(const rcl_scripts *s, int argc, const char **argv,
                                 const size_t *lens)
{
    if (argc < 2 || (lens ? lens[0] : strlen(argv[0])) != 7 || strncasecmp(argv[0], "EVALSHA", 7) != 0 ||
        (lens ? lens[1] : strlen(argv[1])) != 40)
        return NULL;
    for (int i = 0; i < s->n; i++)
        if (strncasecmp(s->s[i].sha, argv[1], 40) == 0)
            return s->s[i].body;
    return NULL;
}

void rcl_scripts_free(rcl_scripts *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->s[i].body);
    free(s->s);
    memset(s, 0, sizeof(*s));
}

void *rcl_argv_copy(int argc, const char **argv, const size_t *lens, const char ***out_argv,
                    size_t **out_lens)
{
    size_t total = 0;
    for (int i = 0; i < argc; i++)
        total += (lens ? lens[i] : strlen(argv[i])) + 1;
    size_t head = (size_t)argc * (sizeof(char *) + sizeof(size_t));
    char *mem = malloc(head + total + 1);
    if (!mem)
        return NULL;
    const char **v = (const char **)mem;
    size_t *l = (size_t *)(mem + (size_t)argc * sizeof(char *));
    char *p = mem + head;
    for (int i = 0; i < argc; i++) {
        l[i] = lens ? lens[i] : strlen(argv[i]);
        memcpy(p, argv[i], l[i]);
        p[l[i]] = '\0';
        v[i] = p;
        p += l[i] + 1;
    }
    *out_argv = v;
    *out_lens = l;
    return mem;
}

/* Writes v in decimal at p; @returns the end. (common/'s sk_id_format is not linked
 * into this library, which the shared libidgen and librlock carry as hidden copies.) */
static char *put_dec(char *p, size_t v)
{
    char tmp[24];
    size_t n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = tmp[--n];
    return p;
}

char *rcl_resp_format(int argc, const char **argv, const size_t *lens, size_t *len)
{
    size_t total = 1 + 20 + 2;
    for (int i = 0; i < argc; i++)
        total += 1 + 20 + 2 + (lens ? lens[i] : strlen(argv[i])) + 2;
    char *buf = malloc(total);
    if (!buf)
        return NULL;
    char *p = buf;
    *p++ = '*';
    p = put_dec(p, (size_t)argc);
    *p++ = '\r';
    *p++ = '\n';
    for (int i = 0; i < argc; i++) {
        size_t n = lens ? lens[i] : strlen(argv[i]);
        *p++ = '$';
        p = put_dec(p, n);
        *p++ = '\r';
        *p++ = '\n';
        memcpy(p, argv[i], n);
        p += n;
        *p++ = '\r';
        *p++ = '\n';
    }
    *len = (size_t)(p - buf);
    return buf;
}
