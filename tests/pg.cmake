# PostgreSQL connections (common/sk_pg.h, issue 30). test_sk_pg: the helper against the
# stack's server and a server that accepts and never answers; test_pg_hang: every
# component that opens PostgreSQL (consumer: migration, writer, expiry, events publisher;
# order: the front's pool, the reconciler) against that server, with a private dev Kafka.
if(TARGET seckill_consumer_core AND TARGET seckill_order_core)
  add_library(seckill_pg_test_hold STATIC integration/test_pg_hold.c)
  target_include_directories(seckill_pg_test_hold PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/integration)
  target_link_libraries(seckill_pg_test_hold PUBLIC Threads::Threads)

  seckill_add_test(NAME test_sk_pg SOURCES integration/test_sk_pg.c
                   LIBS seckill_pg seckill_pg_test_hold LABELS integration TIMEOUT 120)
  seckill_add_test(NAME test_pg_hang SOURCES integration/test_pg_hang.c
                   LIBS seckill_order_test_support seckill_consumer_test_util seckill_pg
                        seckill_pg_test_hold
                   LABELS integration TIMEOUT 240)
  add_dependencies(test_pg_hang seckill-order seckill-consumer seckill-devkafka)
endif()
