# Turns lua/rlock_*.lua into lock's own rlock_lua.c / rlock_lua.h (run by
# lock/CMakeLists.txt at build time). Script rlock_foo.lua becomes
# `const char rlock_lua_foo[]`. librlock embeds its scripts itself (not through
# seckill::lua) so the installed library carries them and needs nothing of ours.
# Inputs: OUT_C, OUT_H, SCRIPTS (','-separated paths: a ';' list would be split by
# add_custom_command).
string(REPLACE "," ";" SCRIPTS "${SCRIPTS}")
set(c "/* Generated from lua/rlock_*.lua by lock/rlock_embed_lua.cmake. Do not edit. */\n#include \"rlock_lua.h\"\n\n")
set(h "/* Generated from lua/rlock_*.lua by lock/rlock_embed_lua.cmake. Do not edit. */\n#ifndef RLOCK_LUA_H\n#define RLOCK_LUA_H\n\n")
foreach(path ${SCRIPTS})
  get_filename_component(name ${path} NAME_WE)
  string(REGEX REPLACE "^rlock_" "" name "${name}")
  file(READ ${path} body HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${body}")
  string(APPEND c "const char rlock_lua_${name}[] = {${body}0x00};\n")
  string(APPEND h "extern const char rlock_lua_${name}[];\n")
endforeach()
string(APPEND h "\n#endif\n")
file(WRITE ${OUT_C}.tmp "${c}")
file(WRITE ${OUT_H}.tmp "${h}")
file(COPY_FILE ${OUT_C}.tmp ${OUT_C} ONLY_IF_DIFFERENT)
file(COPY_FILE ${OUT_H}.tmp ${OUT_H} ONLY_IF_DIFFERENT)
