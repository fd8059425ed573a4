# Issue 5: the flash sale end to end. Unit tests of seckill-bench's and seckill-check's
# pure parts (no network), and the e2e runs (label e2e, see tests/e2e/README.md).
if(TARGET seckill_bench_core)
  seckill_add_test(NAME test_sb_http SOURCES unit/test_sb_http.c LIBS seckill_bench_core LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_sb_hist SOURCES unit/test_sb_hist.c LIBS seckill_bench_core LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_sb_stats SOURCES unit/test_sb_stats.c LIBS seckill_bench_core LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_sc_judge SOURCES unit/test_sc_judge.c LIBS seckill_check_core LABELS unit TIMEOUT 60)
  # The load engine against a scripted HTTP server in process (loopback only).
  seckill_add_test(NAME test_sb_load SOURCES unit/test_sb_load.c ${CMAKE_SOURCE_DIR}/bench/sb_load.c
    LIBS seckill_bench_core seckill::domain seckill::common PkgConfig::LIBEVENT Threads::Threads LABELS integration TIMEOUT 120)
  # The dead-letter scan against librdkafka's mock cluster, in process (loopback only).
  seckill_add_test(NAME test_sc_dlq SOURCES unit/test_sc_dlq.c ${CMAKE_SOURCE_DIR}/bench/sc_dlq.c
    LIBS seckill_check_core seckill_kafka_conf seckill::common PkgConfig::RDKAFKA LABELS integration TIMEOUT 120)
endif()

# End to end (label e2e): bash drivers that start a private seckill-devkafka,
# seckill-order and seckill-consumer from SECKILL_BIN_DIR on free ports against the
# shared Redis and PostgreSQL (SECKILL_REDIS_URL, SECKILL_PG), drive them with
# seckill-bench and judge with seckill-check. Exit 77 (skipped) without a stack or
# without the binaries. See tests/e2e/README.md.
if(TARGET seckill-bench AND TARGET seckill-check)
  foreach(t flashsale_small flashsale_units consumer_pause restock_fronts order_pay order_retry order_expiry release_flush flashsale_lifecycle
            flashsale_challenge
            event_admin restock_live event_cleanup event_ended)
    add_test(NAME e2e_${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${t}.sh)
    set_tests_properties(e2e_${t} PROPERTIES LABELS e2e TIMEOUT 240 SKIP_RETURN_CODE 77
      ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  endforeach()
  # seckill-check on a sale staged by hand in the shared Redis and PostgreSQL.
  add_test(NAME e2e_check_violations COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/check_violations.sh)
  set_tests_properties(e2e_check_violations PROPERTIES LABELS integration TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
endif()
