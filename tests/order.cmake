# seckill-order tests (issue 3). Unit: pure modules, no network (the config and token
# tests run the binary, which stops before any connection). Integration: the shared
# Redis and PostgreSQL of deploy/local.sh up (a private database per test, fresh event
# ids), a private seckill-devkafka and a private seckill-order per test; the NOSCRIPT
# test uses its own throwaway redis-server.
if(TARGET seckill_order_core)
  foreach(t route body reply limits limit events evlist idem challenge)
    seckill_add_test(NAME test_order_${t} SOURCES unit/test_order_${t}.c
                     LIBS seckill_order_core LABELS unit TIMEOUT 60)
  endforeach()
  # order_pay is the domain's (tests/domain.cmake); its test also checks the front's pay
  # body, event settings and pay_by reply, hence order_core.
  seckill_add_test(NAME test_order_pay SOURCES unit/test_order_pay.c
                   LIBS seckill::domain seckill_order_core LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_order_gate SOURCES unit/test_order_gate.c
                   LIBS seckill_order_core seckill::lua LABELS unit TIMEOUT 60)
  foreach(t config token)
    seckill_add_test(NAME test_order_${t} SOURCES unit/test_order_${t}.c
                     LIBS seckill_order_core PkgConfig::LIBCRYPTO LABELS unit TIMEOUT 60)
    add_dependencies(test_order_${t} seckill-order)
  endforeach()

  add_library(seckill_order_test_support STATIC integration/test_order_support.c)
  target_include_directories(seckill_order_test_support PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/integration)
  target_link_libraries(seckill_order_test_support PUBLIC seckill_test_support seckill::common seckill_order_core
    PkgConfig::HIREDIS PkgConfig::RDKAFKA PkgConfig::LIBPQ)
  foreach(t lua lua_units http gate_faults kafka reconcile slow auth nofile reads levels http1 challenge_http)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_order_${t}.c)
      continue()
    endif()
    seckill_add_test(NAME test_order_${t} SOURCES integration/test_order_${t}.c
                     LIBS seckill_order_test_support seckill_order_core seckill::lua
                          PkgConfig::LIBCRYPTO PkgConfig::LIBPQ
                     LABELS integration TIMEOUT 240)
    add_dependencies(test_order_${t} seckill-order seckill-devkafka)
  endforeach()
  # The gate's confirms held across loop turns (issue 16), against a throwaway
  # redis-server: order_gate.c and order_redis.c are the binary's, built in here.
  seckill_add_test(NAME test_order_gate_wait SOURCES integration/test_order_gate_wait.c
                   ${CMAKE_SOURCE_DIR}/order/order_gate.c ${CMAKE_SOURCE_DIR}/order/order_redis.c
                   LIBS seckill_order_core seckill::lua seckill::rcluster PkgConfig::HIREDIS
                        PkgConfig::LIBEVENT PkgConfig::LIBCRYPTO
                   LABELS integration TIMEOUT 120)
  # reads waits five times for PostgreSQL's statistics to settle (11 s each, 60 s at most)
  set_tests_properties(test_order_reads PROPERTIES TIMEOUT 420)
  # The same HTTP tests with the loops on poll instead of epoll (http.event_method).
  add_test(NAME test_order_http_poll COMMAND test_order_http)
  set_tests_properties(test_order_http_poll PROPERTIES LABELS integration TIMEOUT 240
    ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;SECKILL_TEST_EVENT_METHOD=poll")
endif()
