/* seckill_lua: lookup by name over the generated table. See seckill_lua.h. */
#include "seckill_lua.h"

#include <stddef.h>
#include <string.h>

const char *seckill_lua_find(const char *name)
{
    for (size_t i = 0; seckill_lua_scripts[i].name != NULL; i++)
        if (strcmp(seckill_lua_scripts[i].name, name) == 0)
            return seckill_lua_scripts[i].text;
    return NULL;
}
