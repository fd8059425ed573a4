/* sk_log: logfmt lines on stderr. See sk_log.h. */
#include "sk_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile int sk_log_min_level = SK_LOG_INFO;
static const char *log_prog = "seckill";

static const char *level_names[] = {"debug", "info", "warn", "error"};

void sk_log_init(const char *prog, sk_log_level min_level)
{
    log_prog = prog;
    sk_log_min_level = (int)min_level;
}

int sk_log_level_parse(const char *s, sk_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (sk_log_level)i;
            return 0;
        }
    }
    return -1;
}

void sk_log_write(sk_log_level level, const char *event, const char *fmt, ...)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line),
                     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s prog=%s event=%s",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, level_names[level & 3], log_prog, event);
    if (fmt && n > 0 && (size_t)n < sizeof(line) - 2) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        va_end(ap);
        if (m > 0)
            n += m;
    }
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line) - 1)
        n = (int)sizeof(line) - 2; /* truncated: keep the newline */
    line[n++] = '\n';
    /* One write per line, so lines from many threads never interleave. */
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
