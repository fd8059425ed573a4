/* sb_stats: counters, outcomes, timeline. See sb_stats.h. */
#include "sb_stats.h"

#include <stdlib.h>
#include <string.h>

void sb_stats_init(sb_stats *s)
{
    memset(s, 0, sizeof(*s));
}

void sb_stats_free(sb_stats *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ntl; i++)
        free(s->tl[i].lat);
    free(s->tl);
    free(s->accepted);
    memset(s, 0, sizeof(*s));
}

/* The bucket of t_ms, growing the timeline (zeroed) as needed. */
static sb_tl_bucket *bucket_at(sb_stats *s, uint64_t t_ms)
{
    size_t k = (size_t)(t_ms / SB_BUCKET_MS);
    if (k >= s->captl) {
        size_t cap = s->captl ? s->captl : 256;
        while (cap <= k)
            cap *= 2;
        sb_tl_bucket *tl = realloc(s->tl, cap * sizeof(*tl));
        if (!tl)
            return NULL;
        memset(tl + s->captl, 0, (cap - s->captl) * sizeof(*tl));
        s->tl = tl;
        s->captl = cap;
    }
    if (k >= s->ntl)
        s->ntl = k + 1;
    return &s->tl[k];
}

int sb_stats_sent(sb_stats *s, uint64_t t_ms)
{
    sb_tl_bucket *b = bucket_at(s, t_ms);
    if (!b)
        return -1;
    b->sent++;
    s->sent++;
    return 0;
}

static sb_outcome *outcome_find(sb_stats *s, int status, const char *code)
{
    for (int i = 0; i < s->noutcomes; i++)
        if (s->outcomes[i].status == status && strcmp(s->outcomes[i].code, code) == 0)
            return &s->outcomes[i];
    if (s->noutcomes == SB_MAX_OUTCOMES)
        return NULL;
    sb_outcome *o = &s->outcomes[s->noutcomes++];
    o->status = status;
    snprintf(o->code, sizeof(o->code), "%s", code);
    o->n = 0;
    sb_hist_reset(&o->lat);
    return o;
}

int sb_stats_answer(sb_stats *s, uint64_t t_ms, int status, const char *code, uint64_t lat_us)
{
    sb_tl_bucket *b = bucket_at(s, t_ms);
    if (!b)
        return -1;
    if (!b->lat && !(b->lat = calloc(1, sizeof(*b->lat))))
        return -1;
    switch (status) {
    case 202: b->ok202++; break;
    case 409: b->r409++; break;
    case 429: b->r429++; break;
    case 503: b->r503++; break;
    default: b->other++; break;
    }
    sb_outcome *o = outcome_find(s, status, code ? code : "");
    if (o) {
        o->n++;
        sb_hist_record(&o->lat, lat_us);
    } else {
        s->outcome_overflow++;
    }
    if (status != 0) {
        sb_hist_record(&s->lat, lat_us);
        sb_hist_record(b->lat, lat_us);
    }
    s->answered++;
    if (t_ms > s->last_answer_ms)
        s->last_answer_ms = t_ms;
    if (status == 202 && t_ms > s->last_202_ms)
        s->last_202_ms = t_ms;
    return 0;
}

int sb_stats_accept(sb_stats *s, uint64_t order_id)
{
    if (s->naccepted == s->capaccepted) {
        size_t cap = s->capaccepted ? s->capaccepted * 2 : 4096;
        uint64_t *a = realloc(s->accepted, cap * sizeof(*a));
        if (!a)
            return -1;
        s->accepted = a;
        s->capaccepted = cap;
    }
    s->accepted[s->naccepted++] = order_id;
    return 0;
}

int sb_stats_merge(sb_stats *dst, const sb_stats *src)
{
    for (int i = 0; i < src->noutcomes; i++) {
        sb_outcome *o = outcome_find(dst, src->outcomes[i].status, src->outcomes[i].code);
        if (o) {
            o->n += src->outcomes[i].n;
            sb_hist_merge(&o->lat, &src->outcomes[i].lat);
        } else
            dst->outcome_overflow += src->outcomes[i].n;
    }
    dst->outcome_overflow += src->outcome_overflow;
    sb_hist_merge(&dst->lat, &src->lat);
    dst->polls += src->polls;
    dst->polls_ok += src->polls_ok;
    sb_hist_merge(&dst->poll_lat, &src->poll_lat);
    if (src->ntl > 0 && !bucket_at(dst, (src->ntl - 1) * SB_BUCKET_MS))
        return -1;
    for (size_t k = 0; k < src->ntl; k++) {
        const sb_tl_bucket *a = &src->tl[k];
        sb_tl_bucket *b = &dst->tl[k];
        b->sent += a->sent;
        b->ok202 += a->ok202;
        b->r409 += a->r409;
        b->r429 += a->r429;
        b->r503 += a->r503;
        b->other += a->other;
        if (a->lat) {
            if (!b->lat && !(b->lat = calloc(1, sizeof(*b->lat))))
                return -1;
            sb_hist_merge(b->lat, a->lat);
        }
    }
    for (size_t i = 0; i < src->naccepted; i++)
        if (sb_stats_accept(dst, src->accepted[i]) != 0)
            return -1;
    dst->sent += src->sent;
    dst->answered += src->answered;
    dst->bad_202 += src->bad_202;
    if (src->last_answer_ms > dst->last_answer_ms)
        dst->last_answer_ms = src->last_answer_ms;
    if (src->last_202_ms > dst->last_202_ms)
        dst->last_202_ms = src->last_202_ms;
    return 0;
}

uint64_t sb_stats_count_status(const sb_stats *s, int status)
{
    uint64_t n = 0;
    for (int i = 0; i < s->noutcomes; i++)
        if (s->outcomes[i].status == status)
            n += s->outcomes[i].n;
    return n;
}

int64_t sb_db_rows_at(const sb_db_sample *v, size_t n, uint64_t t_ms)
{
    /* Samples are in time order: binary search for the last one at or before t_ms. */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].t_ms <= t_ms)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? -1 : v[lo - 1].rows;
}

double sb_stats_peak_rate(const sb_stats *s, int which)
{
    uint64_t best = 0;
    for (size_t k = 0; k < s->ntl; k++) {
        const sb_tl_bucket *b = &s->tl[k];
        uint64_t v = which == 0   ? b->sent
                     : which == 1 ? b->ok202
                     : which == 2 ? b->r409
                                  : (uint64_t)b->ok202 + b->r409 + b->r429 + b->r503 + b->other;
        if (v > best)
            best = v;
    }
    return (double)best * 1000.0 / SB_BUCKET_MS;
}

double sb_db_peak_rate(const sb_db_sample *v, size_t n)
{
    double best = 0;
    size_t j = 0; /* the earlier sample of the pair */
    for (size_t i = 1; i < n; i++) {
        if (v[i].t_ms - v[j].t_ms < SB_BUCKET_MS)
            continue;
        if (v[i].rows >= 0 && v[j].rows >= 0) {
            double r = (double)(v[i].rows - v[j].rows) * 1000.0 / (double)(v[i].t_ms - v[j].t_ms);
            if (r > best)
                best = r;
        }
        j = i;
    }
    return best;
}

int sb_stats_write_timeline(FILE *f, const sb_stats *s, const sb_db_sample *v, size_t n)
{
    size_t nb = s->ntl;
    if (n > 0 && v[n - 1].t_ms / SB_BUCKET_MS + 1 > nb)
        nb = (size_t)(v[n - 1].t_ms / SB_BUCKET_MS + 1);
    fprintf(f, "t_s,sent,ok_202,r_409,r_429,r_503,other,db_rows,db_rows_per_s,p50_ms,p90_ms,"
               "p99_ms,p999_ms,max_ms\n");
    int64_t prev_rows = -1;
    for (size_t k = 0; k < nb; k++) {
        static const sb_tl_bucket empty;
        const sb_tl_bucket *b = k < s->ntl ? &s->tl[k] : &empty;
        uint64_t end_ms = (k + 1) * SB_BUCKET_MS;
        int64_t rows = sb_db_rows_at(v, n, end_ms);
        double rps = (rows >= 0 && prev_rows >= 0) ? (double)(rows - prev_rows) * 1000.0 / SB_BUCKET_MS : 0;
        fprintf(f, "%.1f,%u,%u,%u,%u,%u,%u,%lld,%.0f", (double)end_ms / 1000.0, b->sent, b->ok202,
                b->r409, b->r429, b->r503, b->other, (long long)rows, rps);
        if (b->lat && b->lat->count)
            fprintf(f, ",%.3f,%.3f,%.3f,%.3f,%.3f\n", sb_hist_quantile(b->lat, 0.50) / 1000.0,
                    sb_hist_quantile(b->lat, 0.90) / 1000.0, sb_hist_quantile(b->lat, 0.99) / 1000.0,
                    sb_hist_quantile(b->lat, 0.999) / 1000.0, b->lat->max / 1000.0);
        else
            fprintf(f, ",,,,,\n");
        prev_rows = rows;
    }
    return ferror(f) ? -1 : 0;
}
