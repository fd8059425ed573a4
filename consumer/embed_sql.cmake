# Turns deploy/sql/NNN_*.sql into consumer_migrations[] (run by consumer/CMakeLists.txt),
# so the binary carries its schema and needs no files at run time.
# Inputs: OUT_C, FILES ('|'-separated list, already sorted).
set(c "/* Generated from deploy/sql/ by consumer/embed_sql.cmake. Do not edit. */\n#include \"consumer_db.h\"\n\n")
set(table "")
set(i 0)
string(REPLACE "|" ";" FILES "${FILES}")
foreach(path ${FILES})
  get_filename_component(name ${path} NAME)
  file(READ ${path} body HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${body}")
  string(APPEND c "static const char sql_${i}[] = {${body}0x00};\n")
  string(APPEND table "    {\"${name}\", sql_${i}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND c "\nconst consumer_migration consumer_migrations[] = {\n${table}    {0, 0},\n};\n")
file(WRITE ${OUT_C}.tmp "${c}")
file(COPY_FILE ${OUT_C}.tmp ${OUT_C} ONLY_IF_DIFFERENT)
