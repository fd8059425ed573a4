# seckill-bench (the flash-sale load generator) and seckill-check (the guarantee
# checker): issue 5. Pure parts are static libraries so that tests/unit links them.
add_library(seckill_bench_core STATIC sb_http.c sb_hist.c sb_plan.c sb_stats.c)
target_include_directories(seckill_bench_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(seckill_bench_core PUBLIC m seckill_id seckill::common)

add_executable(seckill-bench seckill_bench.c sb_load.c sb_pg.c sb_admin.c sb_challenge.c)
target_link_libraries(seckill-bench PRIVATE seckill_bench_core seckill::domain seckill::common PkgConfig::LIBEVENT
  seckill_pg PkgConfig::JANSSON Threads::Threads)

add_library(seckill_check_core STATIC sc_accepted.c sc_judge.c sc_dlq_match.c)
target_include_directories(seckill_check_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(seckill_check_core PUBLIC seckill_id)

add_executable(seckill-check seckill_check.c sc_db.c sc_redis.c sc_dlq.c)
target_link_libraries(seckill-check PRIVATE seckill_check_core seckill::domain seckill_kafka_conf seckill::common seckill::rcluster PkgConfig::HIREDIS
  seckill_pg PkgConfig::RDKAFKA)

install(TARGETS seckill-bench seckill-check RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
