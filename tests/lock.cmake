# librlock tests (issue 6). Unit: pure parts. Integration: the shared Redis of
# deploy/local.sh up ($SECKILL_REDIS_URL), throwaway servers (sk_test_redis) for
# Redlock and the script-cache flush, and PostgreSQL ($SECKILL_PG) for fencing.
if(TARGET rlock)
  get_target_property(rlock_type rlock TYPE)
endif()
# test_rlock_unit is white-box: internals, which a shared librlock hides.
if(TARGET rlock AND rlock_type STREQUAL "STATIC_LIBRARY")
  seckill_add_test(NAME test_rlock_unit SOURCES unit/test_rlock_unit.c
    LIBS seckill::rlock LABELS unit TIMEOUT 60)
  target_include_directories(test_rlock_unit PRIVATE ${CMAKE_SOURCE_DIR}/lock ${CMAKE_SOURCE_DIR}/common ${CMAKE_SOURCE_DIR}/rcluster
    ${CMAKE_BINARY_DIR}/lock)
endif()
if(TARGET rlock)
  # name;timeout;extra libs
  foreach(t basic:120 mutex:240 watchdog:120 redlock:120 fencing:180 retention:180 psem:60 rate:60 gate:120)
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

# No key left behind with 100,000 names (issue 34): about a minute and a half under the
# sanitizers, so label long (CI runs test_rlock_retention's 10,000 names instead).
if(TARGET rlock)
  seckill_add_test(NAME test_rlock_retention_long
    SOURCES integration/test_rlock_retention.c integration/rlock_test_util.c
    LIBS seckill::rlock LABELS "integration;long" TIMEOUT 600)
  set_property(TEST test_rlock_retention_long APPEND PROPERTY ENVIRONMENT "RLOCK_RETENTION_NAMES=100000")
endif()

# The mutual-exclusion test again on a throwaway Redis Cluster (issue 8): simple and
# reentrant locks through a redis-cluster:// URL. seckill_test_cluster: tests/rcluster.cmake.
if(TARGET rlock AND TARGET rcluster)
  seckill_add_test(NAME test_rlock_mutex_cluster
    SOURCES integration/test_rlock_mutex.c integration/rlock_test_util.c
    LIBS seckill::rlock seckill::rcluster seckill_test_cluster LABELS "integration;cluster" TIMEOUT 240)
  target_compile_definitions(test_rlock_mutex_cluster PRIVATE RLOCK_MUTEX_CLUSTER)
endif()

# Interop with real Redisson (issue 20, label redisson): tests/redisson's driver built by
# Maven into the build tree (offline first, from ~/.m2, else from Maven Central), then
# the C test drives two JVMs of it against librlock in Redisson mode, on the test Redis
# and on a throwaway Redis Cluster. Needs java (17+) and mvn on PATH (deploy/local.sh deps
# installs them); without them the tests are not defined, except in CI, where a missing
# tool is an error rather than a silently smaller suite.
find_program(SECKILL_JAVA java)
find_program(SECKILL_MVN mvn)
if(DEFINED ENV{CI} AND TARGET rlock AND NOT (SECKILL_JAVA AND SECKILL_MVN))
  message(FATAL_ERROR "CI: java and mvn are needed for the redisson tests (deploy/local.sh deps)")
endif()
if(TARGET rlock AND TARGET rcluster AND SECKILL_JAVA AND SECKILL_MVN)
  set(rlock_redisson_dir ${CMAKE_BINARY_DIR}/redisson)
  # Another Redisson than the pom's (4.7.0), e.g. -DRLOCK_REDISSON_VERSION=3.50.0
  set(RLOCK_REDISSON_VERSION "" CACHE STRING "Redisson version for the interop tests (empty: tests/redisson/pom.xml's)")
  set(rlock_redisson_args -Drlock.build.dir=${rlock_redisson_dir})
  if(RLOCK_REDISSON_VERSION)
    list(APPEND rlock_redisson_args -Dredisson.version=${RLOCK_REDISSON_VERSION})
  endif()
  add_test(NAME rlock_redisson_build
    COMMAND sh -c "mvn=$0; \"$mvn\" -q -B -o package \"$@\" || \"$mvn\" -q -B package \"$@\""
            ${SECKILL_MVN} -f ${CMAKE_CURRENT_SOURCE_DIR}/redisson/pom.xml ${rlock_redisson_args})
  set_tests_properties(rlock_redisson_build PROPERTIES LABELS redisson TIMEOUT 600
    FIXTURES_SETUP rlock_redisson_jar)
  # Two binaries (the locks; the synchronizers: one file each, under 800 lines), each on
  # the shared test Redis and on a throwaway cluster; rlock_redisson_harness.c in each.
  foreach(v single cluster)
    foreach(part "" _sync)
      set(n test_rlock_redisson${part})
      if(v STREQUAL "cluster")
        set(n test_rlock_redisson${part}_cluster)
      endif()
      seckill_add_test(NAME ${n}
        SOURCES integration/test_rlock_redisson${part}.c integration/rlock_redisson_harness.c
                integration/rlock_test_util.c
        LIBS seckill::rlock seckill::rcluster seckill_test_cluster LABELS "integration;redisson" TIMEOUT 300)
      target_include_directories(${n} PRIVATE ${CMAKE_SOURCE_DIR}/rcluster)
      set_property(TEST ${n} APPEND PROPERTY ENVIRONMENT "RLOCK_REDISSON_JAR=${rlock_redisson_dir}/rlock-redisson-driver.jar")
      set_tests_properties(${n} PROPERTIES FIXTURES_REQUIRED rlock_redisson_jar)
      if(v STREQUAL "cluster")
        target_compile_definitions(${n} PRIVATE RLOCK_REDISSON_CLUSTER)
        set_property(TEST ${n} APPEND PROPERTY LABELS cluster)
      endif()
    endforeach()
  endforeach()
endif()
