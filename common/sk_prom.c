/* sk_prom: Prometheus text writer and histogram. See sk_prom.h. */
#include "sk_prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

int sk_prom_text_open(sk_prom_text *t)
{
    t->buf = NULL;
    t->len = 0;
    t->f = open_memstream(&t->buf, &t->len);
    return t->f ? 0 : -1;
}

char *sk_prom_text_close(sk_prom_text *t, size_t *len)
{
    /* open_memstream reports a failed write (OOM) only at fclose */
    if (fclose(t->f) != 0) {
        free(t->buf);
        t->buf = NULL;
        return NULL;
    }
    t->f = NULL;
    *len = t->len;
    return t->buf;
}

/* Writes s with the exposition format's escapes: backslash and newline always, the
 * double quote inside a label value only (a HELP line keeps it as is). */
static void put_escaped(FILE *f, const char *s, int in_label)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else if (*s == '"' && in_label)
            fputs("\\\"", f);
        else
            fputc(*s, f);
    }
}

void sk_prom_head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s ", name);
    put_escaped(f, help, 0);
    fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/* `name{a="x",b="y",le="..."}` and the space before the value; le NULL: no le label. */
static void put_series(FILE *f, const char *name, const char *suffix, const sk_prom_label *labels,
                       int nlabels, const char *le)
{
    fputs(name, f);
    fputs(suffix, f);
    if (nlabels > 0 || le) {
        fputc('{', f);
        for (int i = 0; i < nlabels; i++) {
            fprintf(f, "%s%s=\"", i ? "," : "", labels[i].name);
            put_escaped(f, labels[i].value, 1);
            fputc('"', f);
        }
        if (le)
            fprintf(f, "%sle=\"%s\"", nlabels ? "," : "", le);
        fputc('}', f);
    }
    fputc(' ', f);
}

void sk_prom_sample_u64(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        uint64_t v)
{
    put_series(f, name, "", labels, nlabels, NULL);
    fprintf(f, "%" PRIu64 "\n", v);
}

void sk_prom_sample_i64(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        int64_t v)
{
    put_series(f, name, "", labels, nlabels, NULL);
    fprintf(f, "%" PRId64 "\n", v);
}

void sk_prom_sample_fixed(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                          double v, int decimals)
{
    put_series(f, name, "", labels, nlabels, NULL);
    fprintf(f, "%.*f\n", decimals, v);
}

void sk_prom_counter(FILE *f, const char *name, const char *help, uint64_t v)
{
    sk_prom_head(f, name, "counter", help);
    sk_prom_sample_u64(f, name, NULL, 0, v);
}

void sk_prom_gauge(FILE *f, const char *name, const char *help, int64_t v)
{
    sk_prom_head(f, name, "gauge", help);
    sk_prom_sample_i64(f, name, NULL, 0, v);
}

void sk_prom_gauge_fixed(FILE *f, const char *name, const char *help, double v, int decimals)
{
    sk_prom_head(f, name, "gauge", help);
    sk_prom_sample_fixed(f, name, NULL, 0, v, decimals);
}

int sk_prom_bucket(const sk_prom_bounds *b, double v)
{
    for (int i = 0; i < b->n; i++)
        if (v <= b->le[i])
            return i;
    return b->n;
}

void sk_prom_hist_observe(sk_prom_hist *h, const sk_prom_bounds *b, double v)
{
    atomic_fetch_add_explicit(&h->bucket[sk_prom_bucket(b, v)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_micro, v > 0 ? (uint64_t)(v * 1e6) : 0, memory_order_relaxed);
}

void sk_prom_hist_observe_micro(sk_prom_hist *h, const sk_prom_bounds *b, int64_t micro)
{
    /* micro / 1e6 is the correctly rounded quotient, as is a bound written k / 1e6 in
     * decimal, so the comparison is exact for whole millionths */
    atomic_fetch_add_explicit(&h->bucket[sk_prom_bucket(b, (double)micro / 1e6)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_micro, micro > 0 ? (uint64_t)micro : 0, memory_order_relaxed);
}

void sk_prom_bucket_line(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                         double le, uint64_t cum)
{
    char s[32] = "+Inf";
    if (!isinf(le))
        snprintf(s, sizeof(s), "%g", le);
    put_series(f, name, "_bucket", labels, nlabels, s);
    fprintf(f, "%" PRIu64 "\n", cum);
}

void sk_prom_hist_tail(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                       double sum, uint64_t count)
{
    put_series(f, name, "_sum", labels, nlabels, NULL);
    fprintf(f, "%.6f\n", sum);
    put_series(f, name, "_count", labels, nlabels, NULL);
    fprintf(f, "%" PRIu64 "\n", count);
}

void sk_prom_hist_write(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        const sk_prom_hist *h, const sk_prom_bounds *b)
{
    uint64_t cum = 0;
    for (int i = 0; i <= b->n; i++) {
        cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        sk_prom_bucket_line(f, name, labels, nlabels, i < b->n ? b->le[i] : INFINITY, cum);
    }
    /* the count is the +Inf bucket of this same pass: a scrape never shows them apart */
    sk_prom_hist_tail(f, name, labels, nlabels,
                      (double)atomic_load_explicit(&h->sum_micro, memory_order_relaxed) / 1e6, cum);
}
