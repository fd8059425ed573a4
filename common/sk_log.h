/* sk_log: one line per event on stderr, logfmt, level-gated before formatting.
 *
 * Line shape: ts=2026-11-22T07:00:00.123Z level=info prog=seckill-order event=listening port=18080
 * Programs log; libraries never do (they return errors or call a callback).
 * Thread-safe: each line is formatted into a local buffer and written with one write(2). */
#ifndef SK_LOG_H
#define SK_LOG_H

typedef enum {
    SK_LOG_DEBUG = 0,
    SK_LOG_INFO = 1,
    SK_LOG_WARN = 2,
    SK_LOG_ERROR = 3,
} sk_log_level;

/* The minimum level written; read without a lock (a torn read only mis-gates one line). */
extern volatile int sk_log_min_level;

/** @brief Sets the program name stamped on every line (not copied: pass a literal). */
void sk_log_init(const char *prog, sk_log_level min_level);

/** @brief Parses "debug", "info", "warn" or "error". @returns 0, or -1 if unknown. */
int sk_log_level_parse(const char *s, sk_log_level *out);

/** @brief Writes one line: `event` is a short word, `fmt` more logfmt fields (may be NULL).
 *  @remark Never pass a secret in fmt's arguments. */
void sk_log_write(sk_log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The gate sits in the macro so that arguments are not even evaluated when the level is off. */
#define sk_log(level, event, ...)                                                                  \
    do {                                                                                           \
        if ((int)(level) >= sk_log_min_level)                                                      \
            sk_log_write((level), (event), __VA_ARGS__);                                           \
    } while (0)

#endif
