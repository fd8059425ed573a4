/* sc_accepted: accepted.txt reader. See sc_accepted.h. */
#include "sc_accepted.h"
#include "sk_id.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int parse_line(const char *s, uint64_t *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strcspn(s, " \t\r\n");
    const char *rest = s + n;
    while (*rest == ' ' || *rest == '\t' || *rest == '\r' || *rest == '\n')
        rest++;
    if (*rest)
        return -1;
    return sk_id_parse(s, n, out); /* sk_id.h: the one id rule */
}

int sc_ids_read(FILE *f, sc_ids *out)
{
    memset(out, 0, sizeof(*out));
    size_t cap = 0;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        if (!strchr(line, '\n') && !feof(f)) {
            int c; /* a line too long to be an id: skip the rest of it */
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            out->bad_lines++;
            continue;
        }
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        uint64_t id;
        if (parse_line(line, &id) != 0) {
            out->bad_lines++;
            continue;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint64_t *v = realloc(out->v, cap * sizeof(*v));
            if (!v) {
                sc_ids_free(out);
                return -1;
            }
            out->v = v;
        }
        out->v[out->n++] = id;
    }
    if (out->n > 1) {
        qsort(out->v, out->n, sizeof(*out->v), cmp_u64);
        size_t w = 1;
        for (size_t i = 1; i < out->n; i++) {
            if (out->v[i] == out->v[w - 1])
                out->repeated++;
            else
                out->v[w++] = out->v[i];
        }
        out->n = w;
    }
    return 0;
}

int sc_ids_load(const char *path, sc_ids *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errsz, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = sc_ids_read(f, out);
    if (rc == 0 && ferror(f)) {
        snprintf(err, errsz, "%s: read error", path);
        sc_ids_free(out);
        rc = -1;
    } else if (rc != 0) {
        snprintf(err, errsz, "out of memory");
    }
    fclose(f);
    return rc;
}

int sc_ids_contains(const sc_ids *ids, uint64_t id)
{
    return ids->n && bsearch(&id, ids->v, ids->n, sizeof(*ids->v), cmp_u64) != NULL;
}

void sc_ids_free(sc_ids *ids)
{
    if (!ids)
        return;
    free(ids->v);
    memset(ids, 0, sizeof(*ids));
}
