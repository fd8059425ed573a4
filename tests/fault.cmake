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

  # The network fault matrix (issue 33, tests/fault/netfault.sh LINK [FAULT...]): each link
  # behind toxiproxy, five faults each. The whole matrix is label long (by hand: 1.5 to 5
  # minutes a link, about 25 in all); CI runs the subset of label netfault (101 s):
  # the black hole and the reset on the front's Redis link (the order path) and the black
  # hole on the consumer's PostgreSQL link (the drain).
  set(netfault_env "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  foreach(link front-redis consumer-redis front-pg consumer-pg front-kafka consumer-kafka kafka3 redis-cluster)
    string(REPLACE "-" "_" n ${link})
    add_test(NAME netfault_${n} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fault/netfault.sh ${link})
    set_tests_properties(netfault_${n} PROPERTIES LABELS long TIMEOUT 900 SKIP_RETURN_CODE 77
      ENVIRONMENT "${netfault_env}")
  endforeach()
  add_test(NAME netfault_ci_front_redis COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fault/netfault.sh front-redis blackhole reset)
  add_test(NAME netfault_ci_consumer_pg COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fault/netfault.sh consumer-pg blackhole)
  set_tests_properties(netfault_ci_front_redis netfault_ci_consumer_pg PROPERTIES LABELS netfault
    TIMEOUT 240 SKIP_RETURN_CODE 77 ENVIRONMENT "${netfault_env}")
endif()
