# librlock benchmark program (bench/bench-lock.sh drives it beside redis-benchmark).
if(TARGET rlock)
  add_executable(rlock_bench ${CMAKE_CURRENT_SOURCE_DIR}/rlock_bench.c)
  target_link_libraries(rlock_bench PRIVATE seckill::rlock)
endif()
