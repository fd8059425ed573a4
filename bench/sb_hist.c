/* sb_hist: log-linear latency histogram. See sb_hist.h. */
#include "sb_hist.h"

#include <math.h>
#include <string.h>

void sb_hist_reset(sb_hist *h)
{
    memset(h, 0, sizeof(*h));
}

int sb_hist_bucket(uint64_t us)
{
    if (us < SB_HIST_SUB)
        return (int)us;
    if (us >= (1ull << SB_HIST_MAX_POW))
        return SB_HIST_BUCKETS - 1;
    int e = 63 - __builtin_clzll(us); /* 4 .. MAX_POW-1 */
    int sub = (int)((us >> (e - 4)) & (SB_HIST_SUB - 1));
    return SB_HIST_SUB + (e - 4) * SB_HIST_SUB + sub;
}

uint64_t sb_hist_bucket_upper(int bucket)
{
    if (bucket < SB_HIST_SUB)
        return (uint64_t)bucket;
    int e = (bucket - SB_HIST_SUB) / SB_HIST_SUB + 4;
    int sub = (bucket - SB_HIST_SUB) % SB_HIST_SUB;
    /* bucket holds [2^e + sub*2^(e-4), 2^e + (sub+1)*2^(e-4) - 1] */
    return (1ull << e) + ((uint64_t)(sub + 1) << (e - 4)) - 1;
}

void sb_hist_record(sb_hist *h, uint64_t us)
{
    h->b[sb_hist_bucket(us)]++;
    h->count++;
    h->sum += us;
    if (us > h->max)
        h->max = us;
}

void sb_hist_merge(sb_hist *dst, const sb_hist *src)
{
    for (int i = 0; i < SB_HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t sb_hist_quantile(const sb_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (q > 1)
        q = 1;
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < SB_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t v = sb_hist_bucket_upper(i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}

void sb_hist_write_prom(FILE *f, const char *name, const sk_prom_label *labels, int nlabels,
                        const sb_hist *h)
{
    uint64_t cum = 0;
    for (int i = 0; i < SB_HIST_BUCKETS; i++) {
        if (!h->b[i])
            continue; /* empty buckets add no line: the cumulative counts stay exact */
        cum += h->b[i];
        sk_prom_bucket_line(f, name, labels, nlabels, (double)sb_hist_bucket_upper(i) / 1e6, cum);
    }
    sk_prom_bucket_line(f, name, labels, nlabels, INFINITY, h->count);
    sk_prom_hist_tail(f, name, labels, nlabels, (double)h->sum / 1e6, h->count);
}
