/* order_console: the sale console's files (console/, embedded at build time), pure.
 *
 * GET /console is the page; /console/<file> its script and style sheet. The files are
 * compiled into the binary (cmake/embed_files.cmake), like the Lua scripts, so the page
 * is the one that was tested and needs nothing on disk. */
#ifndef ORDER_CONSOLE_H
#define ORDER_CONSOLE_H

#include <stddef.h>

/* One embedded file: its name under console/ and its bytes (NUL-terminated). */
typedef struct order_console_file {
    const char *name;
    const char *data;
} order_console_file;

/* The generated table, ended by {NULL, NULL}. */
extern const order_console_file order_console_files[];

/* Security headers of every console answer. The page reaches its own origin for the API
 * and any http(s) URL for the consumer's /metrics (connect-src); scripts and styles come
 * only from the origin, so no injected inline script can run. */
#define ORDER_CONSOLE_CSP                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "       \
    "connect-src 'self' http: https:; base-uri 'none'; form-action 'none'; "                  \
    "frame-ancestors 'none'"

/** @brief The file for a path under /console (`path` is the request path without the
 *  query, `len` bytes): "/console" and "/console/" are index.html.
 *  @param ctype set to the file's Content-Type.
 *  @param size set to its length.
 *  @returns the bytes (static, never freed), or NULL when there is no such file. */
const char *order_console_find(const char *path, size_t len, const char **ctype, size_t *size);

#endif
