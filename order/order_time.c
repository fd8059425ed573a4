/* order_time: RFC 3339 <-> epoch milliseconds. See order_time.h. */
#include "order_time.h"

#include <stdio.h>
#include <time.h>

/* Howard Hinnant's days_from_civil: proleptic Gregorian date -> days since 1970-01-01. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int digits(const char *s, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dm[m - 1];
}

int order_time_parse_rfc3339(const char *s, size_t len, int64_t *ms)
{
    int y, mo, d, h, mi, se, frac = 0;
    if (len < 20)
        return -1;
    if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
        digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &se))
        return -1;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
        mi > 59 || se > 59)
        return -1;
    size_t i = 19;
    if (i < len && s[i] == '.') {
        size_t start = ++i;
        int scale = 100;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            frac += (s[i] - '0') * scale;
            scale /= 10;
            i++;
        }
        if (i == start || i - start > 9)
            return -1;
    }
    int64_t offset_min = 0;
    if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < len && (s[i] == '+' || s[i] == '-')) {
        int oh, om;
        if (len - i < 6 || digits(s + i + 1, 2, &oh) || s[i + 3] != ':' ||
            digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
            return -1;
        offset_min = (int64_t)oh * 60 + om;
        if (s[i] == '-')
            offset_min = -offset_min;
        i += 6;
    } else {
        return -1;
    }
    if (i != len)
        return -1;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset_min * 60;
    /* The instant, not just the written year, must lie in 1970..9999: an offset can push
     * 9999-12-31T23:59:59-05:34 into year 10000, which the formatter would write as a
     * five-digit year that no RFC 3339 reader (this parser included) takes back. */
    if (secs < 0 || secs > INT64_C(253402300799)) /* 9999-12-31T23:59:59Z */
        return -1;
    *ms = secs * 1000 + frac;
    return 0;
}

char *order_time_format_rfc3339(int64_t ms, char *out, size_t outsz)
{
    int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    int milli = (int)(ms - secs * 1000);
    int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    int64_t rem = secs - days * 86400;
    int y, m, d;
    civil_from_days(days, &y, &m, &d);
    snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d, (int)(rem / 3600),
             (int)(rem % 3600 / 60), (int)(rem % 60), milli);
    return out;
}

int64_t order_time_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t order_time_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
