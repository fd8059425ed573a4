# seckill-consumer benchmark programs (bench/bench-consumer.sh drives them).
if(TARGET seckill_consumer_core)
  add_executable(consumer-load consumer_load.c)
  target_link_libraries(consumer-load PRIVATE seckill::domain seckill::common PkgConfig::RDKAFKA)
  # The PostgreSQL write path alone (consumer_db), for A/B runs of changes to it.
  add_executable(consumer-dbload consumer_dbload.c)
  target_link_libraries(consumer-dbload PRIVATE seckill_consumer_core seckill_pg Threads::Threads)
endif()
