/* sk_httpdate: the Date header, once per second. See sk_httpdate.h. */
#include "sk_httpdate.h"

#include <string.h>
#include <time.h>

void sk_httpdate_init(sk_httpdate *d)
{
    d->sec = -1;
    d->text[0] = '\0';
}

/* Two decimal digits of v (0 to 99; gmtime's fields are). */
static void put2(char *p, int v)
{
    unsigned u = (unsigned)v % 100;
    p[0] = (char)('0' + u / 10);
    p[1] = (char)('0' + u % 10);
}

const char *sk_httpdate_get(sk_httpdate *d, int64_t now_s)
{
    if (now_s == d->sec && d->text[0])
        return d->text;
    /* English names whatever the locale: the format is fixed by the RFC, not by strftime's
     * idea of the process's locale. */
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = (time_t)now_s;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        memset(&tm, 0, sizeof(tm)); /* out of gmtime's range: never for a real clock */
        tm.tm_mday = 1;
        tm.tm_year = 70;
        tm.tm_wday = 4;
    }
    char *p = d->text;
    unsigned year = (unsigned)(tm.tm_year + 1900) % 10000;
    memcpy(p, days[(unsigned)tm.tm_wday % 7], 3);
    memcpy(p + 3, ", ", 2);
    put2(p + 5, tm.tm_mday);
    p[7] = ' ';
    memcpy(p + 8, months[(unsigned)tm.tm_mon % 12], 3);
    p[11] = ' ';
    put2(p + 12, (int)(year / 100));
    put2(p + 14, (int)(year % 100));
    p[16] = ' ';
    put2(p + 17, tm.tm_hour);
    p[19] = ':';
    put2(p + 20, tm.tm_min);
    p[22] = ':';
    put2(p + 23, tm.tm_sec);
    memcpy(p + 25, " GMT", 5); /* and the NUL */
    d->sec = now_s;
    return d->text;
}
