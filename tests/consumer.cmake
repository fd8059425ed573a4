# seckill-consumer tests (issue 4). Unit: parser, batch, metrics. Integration and
# fault: a private seckill-devkafka per test, a database per test on the shared
# PostgreSQL (the PostgreSQL-down test runs its own throwaway server).
if(TARGET seckill_consumer_core)
  seckill_add_test(NAME test_consumer_msg SOURCES unit/test_consumer_msg.c
                   LIBS seckill_consumer_pure LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_consumer_walproto SOURCES unit/test_consumer_walproto.c
                   LIBS seckill_consumer_pure LABELS unit TIMEOUT 60)

  add_library(seckill_consumer_test_util STATIC integration/test_consumer_util.c)
  target_include_directories(seckill_consumer_test_util PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/integration)
  target_link_libraries(seckill_consumer_test_util PUBLIC seckill_test_support seckill::domain seckill::common
                      PkgConfig::RDKAFKA PkgConfig::LIBPQ)

  foreach(t cli drain stock group poison http nofile mac replay queue)
    seckill_add_test(NAME test_consumer_${t} SOURCES integration/test_consumer_${t}.c
                     LIBS seckill_consumer_test_util LABELS integration TIMEOUT 240)
    # The tests spawn these binaries: build them first.
    add_dependencies(test_consumer_${t} seckill-consumer seckill-devkafka)
  endforeach()
  # The order index's recorder thread against a Redis of its own (issue 36, round 13).
  seckill_add_test(NAME test_consumer_oidx SOURCES integration/test_consumer_oidx.c
                   LIBS seckill_consumer_core seckill_test_support LABELS integration TIMEOUT 120)
  # seckill.order-events from the WAL, read back from the dev Kafka (issue 36).
  add_library(seckill_consumer_test_evutil STATIC integration/test_consumer_evutil.c)
  target_link_libraries(seckill_consumer_test_evutil PUBLIC seckill_consumer_test_util)
  seckill_add_test(NAME test_consumer_events SOURCES integration/test_consumer_events.c
                   LIBS seckill_consumer_test_evutil LABELS integration TIMEOUT 240)
  add_dependencies(test_consumer_events seckill-consumer seckill-devkafka)
  seckill_add_test(NAME test_consumer_wal SOURCES integration/test_consumer_wal.c
                   LIBS seckill_consumer_test_evutil LABELS fault TIMEOUT 240)
  add_dependencies(test_consumer_wal seckill-consumer seckill-devkafka)
  foreach(t kill pgdown)
    seckill_add_test(NAME test_consumer_${t} SOURCES integration/test_consumer_${t}.c
                     LIBS seckill_consumer_test_util LABELS fault TIMEOUT 240)
    add_dependencies(test_consumer_${t} seckill-consumer seckill-devkafka)
  endforeach()
endif()
