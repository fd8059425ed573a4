/* seckill_lua: the text of every script in lua/, embedded at build time by
 * cmake/embed_files.cmake (library seckill::lua). Tests read the same arrays, so what is
 * tested is what ships. Everything here is static data: nothing to free. */
#ifndef SECKILL_LUA_H
#define SECKILL_LUA_H

/* `extern const char seckill_lua_<name>[]` per script (file <name>.lua), NUL-terminated. */
#include "seckill_lua_gen.h"

typedef struct seckill_lua_script {
    const char *name; /* file name without .lua */
    const char *text;
} seckill_lua_script;

/* Every script, in file-name order, ending with {NULL, NULL}. */
extern const seckill_lua_script seckill_lua_scripts[];

/** @brief The script called `name` (file name without .lua), or NULL. */
const char *seckill_lua_find(const char *name);

#endif
