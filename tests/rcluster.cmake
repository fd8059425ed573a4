# rcluster (issue 8): the Redis Cluster routing module, on throwaway clusters from
# tests/support/sk_test_cluster (6 redis-server processes, 3 masters + 3 replicas).
# Label `cluster` (and `integration`). seckill_test_cluster is shared: other
# components' cluster tests link it.
add_library(seckill_test_cluster STATIC ${CMAKE_CURRENT_SOURCE_DIR}/support/sk_test_cluster.c)
target_link_libraries(seckill_test_cluster PUBLIC seckill_test_support)

if(TARGET rcluster)
  seckill_add_test(NAME test_rcluster_unit SOURCES unit/test_rcluster_unit.c
    LIBS seckill::rcluster LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_rcluster SOURCES integration/test_rcluster.c
    LIBS seckill::rcluster seckill_test_cluster LABELS "integration;cluster" TIMEOUT 120)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_rcluster_async.c)
    seckill_add_test(NAME test_rcluster_async SOURCES integration/test_rcluster_async.c
      LIBS seckill::rcluster seckill_test_cluster PkgConfig::LIBEVENT LABELS "integration;cluster" TIMEOUT 120)
  endif()
endif()

# seckill-order's gate on a throwaway cluster: events on different masters in one loop
# turn (here, not in order.cmake: this file comes later and defines seckill_test_cluster).
if(TARGET rcluster AND TARGET seckill_order_test_support)
  seckill_add_test(NAME test_order_gate_cluster SOURCES integration/test_order_gate_cluster.c
                   LIBS seckill_order_test_support seckill_order_core seckill::lua seckill::rcluster
                        seckill_test_cluster
                   LABELS "integration;cluster" TIMEOUT 240)
  add_dependencies(test_order_gate_cluster seckill-order seckill-devkafka)
endif()

# redis-sentinel:// through rcluster's contexts on a throwaway set from deploy/sentinel.sh
# (issue 33; labels integration and sentinel; about 30 s: two failovers).
if(TARGET rcluster AND TARGET rlock AND TARGET idgen)
  seckill_add_test(NAME test_redis_sentinel SOURCES integration/test_redis_sentinel.c
    LIBS seckill::rcluster seckill::rlock seckill::idgen PkgConfig::LIBEVENT
    LABELS "integration;sentinel" TIMEOUT 120)
  set_tests_properties(test_redis_sentinel PROPERTIES SKIP_RETURN_CODE 77)
endif()
