# librlock tests (issue 6). Unit: pure parts. Integration: the shared Redis of
# deploy/local.sh up ($SECKILL_REDIS_URL), throwaway servers (sk_test_redis) for
# Redlock and the script-cache flush, and PostgreSQL ($SECKILL_PG) for fencing.
if(TARGET rlock)
  seckill_add_test(NAME test_rlock_unit SOURCES unit/test_rlock_unit.c
    LIBS seckill::rlock LABELS unit TIMEOUT 60)
  target_include_directories(test_rlock_unit PRIVATE ${CMAKE_SOURCE_DIR}/lock ${CMAKE_SOURCE_DIR}/common ${CMAKE_SOURCE_DIR}/rcluster
    ${CMAKE_BINARY_DIR}/lock)

  # name;timeout;extra libs
  foreach(t basic:120 mutex:240 watchdog:120 redlock:120 fencing:180)
    string(REPLACE ":" ";" t "${t}")
    list(GET t 0 n)
    list(GET t 1 tmo)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_rlock_${n}.c)
      set(libs seckill::rlock)
      if(n STREQUAL "fencing")
        list(APPEND libs PkgConfig::LIBPQ)
      endif()
      seckill_add_test(NAME test_rlock_${n}
        SOURCES integration/test_rlock_${n}.c integration/rlock_test_util.c
        LIBS ${libs} LABELS integration TIMEOUT ${tmo})
    endif()
  endforeach()
endif()

# The mutual-exclusion test again on a throwaway Redis Cluster (issue 8): simple and
# reentrant locks through a redis-cluster:// URL. seckill_test_cluster: tests/rcluster.cmake.
if(TARGET rlock AND TARGET rcluster)
  seckill_add_test(NAME test_rlock_mutex_cluster
    SOURCES integration/test_rlock_mutex.c integration/rlock_test_util.c
    LIBS seckill::rlock seckill::rcluster seckill_test_cluster LABELS "integration;cluster" TIMEOUT 240)
  target_compile_definitions(test_rlock_mutex_cluster PRIVATE RLOCK_MUTEX_CLUSTER)
endif()
