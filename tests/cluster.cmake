# Issue 8, the pipeline on a Redis Cluster (label cluster): bash drivers that start a
# throwaway 3+3 Redis Cluster (tests/cluster/lib.sh) and, from SECKILL_BIN_DIR, their own
# seckill-devkafka, two seckill-order and two seckill-consumer on free ports; only
# PostgreSQL is shared (SECKILL_PG). Exit 77 (skipped) without PostgreSQL, the binaries
# or redis-server. See tests/cluster/README.md.
if(TARGET seckill-bench AND TARGET seckill-check AND TARGET seckill-order)
  foreach(t flashsale failover)
    add_test(NAME cluster_${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/${t}.sh)
    set_tests_properties(cluster_${t} PROPERTIES LABELS cluster TIMEOUT 240 SKIP_RETURN_CODE 77
      ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  endforeach()
  # Segmented stock (issue 19): spread, skewed users, a segment's master killed.
  add_test(NAME cluster_segments COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/segments.sh)
  set_tests_properties(cluster_segments PROPERTIES LABELS cluster TIMEOUT 480 SKIP_RETURN_CODE 77
    ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  # The failover with the replica cut off first: acknowledged writes certainly lost.
  add_test(NAME cluster_failover_lost COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/failover.sh lose)
  set_tests_properties(cluster_failover_lost PROPERTIES LABELS cluster TIMEOUT 240 SKIP_RETURN_CODE 77
    ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
endif()

# The keys of every script of seckill-order share one slot (pure, no network).
if(TARGET seckill_order_core AND TARGET rcluster)
  seckill_add_test(NAME test_order_cluster_keys SOURCES cluster/test_order_cluster_keys.c
                   LIBS seckill_order_core seckill::rcluster LABELS "unit;cluster" TIMEOUT 60)
endif()
