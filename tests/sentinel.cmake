# Redis behind Sentinel (issue 33, label sentinel): bash drivers in tests/sentinel/ on
# tests/fault/lib.sh's private pipeline, with deploy/sentinel.sh's set (1 master, 2
# replicas, 3 sentinels) for Redis and toxiproxy in front of the master where a link is
# cut. About 45 s each (test_redis_sentinel, label sentinel too, is in rcluster.cmake:
# about 30 s). The variant without redis.wait_replicas that shows what a
# failover throws away runs under `long` (CI skips it). Exit 77 (skipped) without the
# binaries, redis-sentinel or toxiproxy. See tests/sentinel/README.md.
if(TARGET seckill-bench AND TARGET seckill-check AND TARGET seckill-order AND TARGET seckill-consumer)
  foreach(t master_kill master_cut master_cut_nowait)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/sentinel/${t}.sh)
      continue()
    endif()
    set(label sentinel)
    if(t STREQUAL "master_cut_nowait")
      set(label "sentinel;long")
    endif()
    add_test(NAME sentinel_${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sentinel/${t}.sh)
    set_tests_properties(sentinel_${t} PROPERTIES LABELS "${label}" TIMEOUT 180 SKIP_RETURN_CODE 77
      ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
  endforeach()
endif()
