/* idgen_core: layout, day keys, the monotonic stamp, lease checks, segment sizing.
 * Pure functions; see idgen_core.h. Also the public pure API: encode, decode, strerror. */
#include "idgen_core.h"

#include "idgen.h"

#include <stdio.h>
#include <string.h>

/* Howard Hinnant's civil_from_days: exact for every day number we can meet. */
void idgen_core_civil(int64_t day, int *year, int *month, int *mday)
{
    int64_t z = day + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    *year = (int)(y + (m <= 2));
    *month = (int)m;
    *mday = (int)d;
}

int idgen_core_day_key(const char *prefix, int64_t day, char *buf, size_t bufsize)
{
    int y, m, d;
    idgen_core_civil(day, &y, &m, &d);
    int n = snprintf(buf, bufsize, "icr:%s:%04d%02d%02d", prefix, y, m, d);
    return (n < 0 || (size_t)n >= bufsize) ? -1 : n;
}

int idgen_core_prefix_ok(const char *prefix)
{
    if (!prefix || !prefix[0] || strlen(prefix) > IDGEN_PREFIX_MAX)
        return 0;
    for (const unsigned char *p = (const unsigned char *)prefix; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == ':')
            return 0;
    return 1;
}

int64_t idgen_core_key_ttl(int64_t day, int64_t now_s, int ttl_days)
{
    int64_t ttl = (day + 1 + ttl_days) * IDGEN_DAY_SECS - now_s;
    /* now_s is the stamp, which lies in `day`, so ttl >= ttl_days days; the floor only
     * guards a caller that breaks that rule. */
    return ttl > 60 ? ttl : 60;
}

idgen_lease_verdict idgen_core_lease_check(uint64_t first, uint64_t last, uint64_t seen)
{
    if (first <= seen)
        return IDGEN_LEASE_RESET;
    if (first > IDGEN_SEQ_MAX)
        return IDGEN_LEASE_EXHAUSTED;
    if (last > IDGEN_SEQ_MAX)
        return IDGEN_LEASE_PARTIAL;
    return IDGEN_LEASE_OK;
}

uint32_t idgen_core_next_size(uint32_t cur, int64_t lasted_ms, int64_t target_ms, uint32_t min,
                              uint32_t max)
{
    uint64_t next = cur ? cur : 1;
    if (lasted_ms < 1)
        lasted_ms = 1; /* faster than we can measure: grow by the most we allow */
    if (lasted_ms * 2 < target_ms) {
        /* Grow towards the size that would last target_ms, at most 8x a step, so one
         * burst does not lease a block that then sits half used for minutes. */
        uint64_t want = next * (uint64_t)target_ms / (uint64_t)lasted_ms;
        next = want < next * 8 ? want : next * 8;
    } else if (lasted_ms > target_ms * 2) {
        next /= 2; /* shrink gently: a lull should not make the next burst wait */
    }
    if (next < min)
        next = min;
    if (next > max)
        next = max;
    return (uint32_t)next;
}

void idgen_day_mark_init(idgen_day_mark *m)
{
    m->day[0] = m->day[1] = INT64_MIN;
    m->v[0] = m->v[1] = 0;
}

uint64_t idgen_day_mark_get(const idgen_day_mark *m, int64_t day)
{
    int i = (int)(day & 1);
    return m->day[i] == day ? m->v[i] : 0;
}

void idgen_day_mark_raise(idgen_day_mark *m, int64_t day, uint64_t v)
{
    int i = (int)(day & 1);
    if (m->day[i] < day) {
        m->day[i] = day;
        m->v[i] = v;
    } else if (m->day[i] == day && v > m->v[i]) {
        m->v[i] = v;
    }
}

void idgen_core_format_utc(int64_t unix_seconds, char *buf, size_t bufsize)
{
    int64_t day = idgen_core_day(unix_seconds);
    int64_t sod = unix_seconds - day * IDGEN_DAY_SECS;
    int y, m, d;
    idgen_core_civil(day, &y, &m, &d);
    snprintf(buf, bufsize, "%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, (int)(sod / 3600),
             (int)(sod / 60 % 60), (int)(sod % 60));
}

/* ---- the public pure API ---- */

int idgen_encode(int64_t unix_seconds, uint32_t sequence, uint64_t *id)
{
    if (!id)
        return IDGEN_ERR_ARG;
    if (!idgen_core_time_ok(unix_seconds))
        return IDGEN_ERR_CLOCK;
    *id = idgen_core_pack(unix_seconds, sequence);
    return IDGEN_OK;
}

int idgen_decode(uint64_t id, idgen_parts *out)
{
    if (!out || (id >> 63))
        return IDGEN_ERR_ARG;
    out->unix_seconds = IDGEN_EPOCH_UNIX + (int64_t)(id >> 32);
    out->sequence = (uint32_t)id;
    return IDGEN_OK;
}

const char *idgen_strerror(int err)
{
    switch (err) {
    case IDGEN_OK:
        return "success";
    case IDGEN_ERR_ARG:
        return "invalid argument";
    case IDGEN_ERR_REDIS:
        return "Redis unreachable or failed";
    case IDGEN_ERR_EXHAUSTED:
        return "the day's 32-bit sequence is exhausted";
    case IDGEN_ERR_RESET:
        return "the day counter went backwards (Redis lost writes)";
    case IDGEN_ERR_NOMEM:
        return "out of memory";
    case IDGEN_ERR_CLOCK:
        return "the clock is outside the ID layout, or stepped back too far";
    case IDGEN_ERR_FLOOR:
        return "the floor store failed";
    case IDGEN_ERR_LEASE:
        return "no worker lease (lost, or not renewed in time)";
    default:
        return "unknown error";
    }
}

int idgen_err_retriable(int err)
{
    /* RESET is retriable: the generator has already jumped its counter past every number
     * it handed out, so the next call cannot reissue one. */
    return err == IDGEN_ERR_REDIS || err == IDGEN_ERR_EXHAUSTED || err == IDGEN_ERR_RESET ||
           err == IDGEN_ERR_FLOOR || err == IDGEN_ERR_LEASE;
}
