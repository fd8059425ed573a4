# Turns lua/*.lua into one C file and one header (run by lua/CMakeLists.txt).
# Inputs: OUT_C, OUT_H, SCRIPTS (;-separated list of .lua paths).
# Each script foo_bar.lua becomes `const char seckill_lua_foo_bar[]`, and
# seckill_lua_find("foo_bar") looks one up by name.
set(c "/* Generated from the lua/ scripts by cmake/embed_lua.cmake. Do not edit. */\n#include \"seckill_lua.h\"\n#include <string.h>\n\n")
set(h "/* Generated from the lua/ scripts by cmake/embed_lua.cmake. Do not edit. */\n#ifndef SECKILL_LUA_H\n#define SECKILL_LUA_H\n\n/* The text of each Redis Lua script, NUL-terminated. */\n")
set(table "")
foreach(path ${SCRIPTS})
  get_filename_component(name ${path} NAME_WE)
  file(READ ${path} body HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${body}")
  string(APPEND c "const char seckill_lua_${name}[] = {${body}0x00};\n")
  string(APPEND h "extern const char seckill_lua_${name}[];\n")
  string(APPEND table "    {\"${name}\", seckill_lua_${name}},\n")
endforeach()
string(APPEND c "\nstatic const struct { const char *name; const char *text; } scripts[] = {\n${table}    {0, 0},\n};\n\n")
string(APPEND c "const char *seckill_lua_find(const char *name)\n{\n    for (size_t i = 0; scripts[i].name != NULL; i++)\n        if (strcmp(scripts[i].name, name) == 0)\n            return scripts[i].text;\n    return NULL;\n}\n")
string(APPEND h "\n/* Returns the script called `name` (file name without .lua), or NULL. */\nconst char *seckill_lua_find(const char *name);\n\n#endif\n")
file(WRITE ${OUT_C}.tmp "${c}")
file(WRITE ${OUT_H}.tmp "${h}")
# Only touch the outputs when they change, so dependants do not rebuild for nothing.
file(COPY_FILE ${OUT_C}.tmp ${OUT_C} ONLY_IF_DIFFERENT)
file(COPY_FILE ${OUT_H}.tmp ${OUT_H} ONLY_IF_DIFFERENT)
