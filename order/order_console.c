/* order_console: see order_console.h. */
#include "order_console.h"

#include <string.h>

static const char *type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (dot && strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    return "text/html; charset=utf-8";
}

const char *order_console_find(const char *path, size_t len, const char **ctype, size_t *size)
{
    static const char root[] = "/console";
    const size_t rlen = sizeof(root) - 1;
    if (len < rlen || memcmp(path, root, rlen) != 0)
        return NULL;
    const char *name = path + rlen;
    size_t nlen = len - rlen;
    if (nlen > 0) {
        if (name[0] != '/')
            return NULL; /* "/consolex" */
        name++;
        nlen--;
    }
    if (nlen == 0) {
        name = "index.html";
        nlen = strlen(name);
    }
    for (const order_console_file *f = order_console_files; f->name; f++) {
        if (strlen(f->name) == nlen && memcmp(f->name, name, nlen) == 0) {
            *ctype = type_of(f->name);
            *size = strlen(f->data);
            return f->data;
        }
    }
    return NULL;
}
