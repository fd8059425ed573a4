# seckill-consumer benchmark programs (bench/bench-consumer.sh drives them).
if(TARGET seckill_consumer_core)
  add_executable(consumer-load consumer_load.c)
  target_link_libraries(consumer-load PRIVATE PkgConfig::RDKAFKA)
endif()
