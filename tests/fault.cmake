# The fault matrix (issue 7, label fault): bash drivers in tests/fault/ that start a whole
# private pipeline (redis-server with AOF, a throwaway PostgreSQL, seckill-devkafka,
# seckill-consumer, seckill-order) on free ports, drive a burst with seckill-bench, break
# one part mid-burst and judge with seckill-check. Exit 77 (skipped) without the binaries
# or the servers' packages. See tests/fault/README.md.
if(TARGET seckill-bench AND TARGET seckill-check AND TARGET seckill-order AND TARGET seckill-consumer)
  foreach(t front_kill redis_restart redis_flush pg_down broker_down two_fronts)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/fault/${t}.sh)
      continue()
    endif()
    add_test(NAME fault_${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fault/${t}.sh)
    set_tests_properties(fault_${t} PROPERTIES LABELS fault TIMEOUT 180 SKIP_RETURN_CODE 77
      ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  endforeach()
endif()
