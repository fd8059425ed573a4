# libidgen and the idgen CLI. Unit tests need no network; integration tests use the
# shared Redis ($SECKILL_REDIS_URL, a unique key prefix per run) and throwaway servers
# from tests/support for anything that stops, kills or floods Redis.
# White-box tests (test_idgen_core, _gen, _clock) call internals, which a shared libidgen
# hides (-fvisibility=hidden): they are built against the static library (the default).
if(TARGET idgen)
  get_target_property(idgen_type idgen TYPE)
endif()
if(TARGET idgen AND idgen_type STREQUAL "STATIC_LIBRARY")
  seckill_add_test(NAME test_idgen_core SOURCES unit/test_idgen_core.c
    LIBS seckill::idgen LABELS unit TIMEOUT 60)
  seckill_add_test(NAME test_idgen_gen SOURCES unit/test_idgen_gen.c
    LIBS seckill::idgen Threads::Threads LABELS unit TIMEOUT 120)
  seckill_add_test(NAME test_idgen_scramble SOURCES unit/test_idgen_scramble.c
    LIBS seckill::idgen LABELS unit TIMEOUT 60)
endif()

# Integration tests: the CLI must be built first (they spawn it from SECKILL_BIN_DIR).
if(TARGET idgen_cli)
  set(idgen_integration procs faults keyed)
  if(idgen_type STREQUAL "STATIC_LIBRARY")
    list(APPEND idgen_integration clock)
  endif()
  foreach(t ${idgen_integration})
    seckill_add_test(NAME test_idgen_${t} SOURCES integration/test_idgen_${t}.c
      LIBS seckill::idgen Threads::Threads PkgConfig::HIREDIS LABELS integration TIMEOUT 240)
    target_include_directories(test_idgen_${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integration)
    add_dependencies(test_idgen_${t} idgen_cli)
  endforeach()
endif()

# Floor mode: a throwaway Redis without AOF and a PostgreSQL database of its own.
if(TARGET idgen_cli)
  seckill_add_test(NAME test_idgen_floor SOURCES integration/test_idgen_floor.c
    LIBS seckill::idgen Threads::Threads PkgConfig::HIREDIS LABELS integration TIMEOUT 180)
  target_include_directories(test_idgen_floor PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integration)
  add_dependencies(test_idgen_floor idgen_cli)
endif()

# Worker mode on the shared Redis (seckill::idgen_worker).
if(TARGET idgen_worker)
  seckill_add_test(NAME test_idgen_worker SOURCES integration/test_idgen_worker.c
    LIBS seckill::idgen_worker Threads::Threads PkgConfig::HIREDIS LABELS integration TIMEOUT 120)
  target_include_directories(test_idgen_worker PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integration)
endif()

# `idgen serve`: its routes (pure) and its contract against the binary.
if(TARGET idgen_serve_route)
  seckill_add_test(NAME test_idgen_serve_route SOURCES unit/test_idgen_serve_route.c
    LIBS idgen_serve_route LABELS unit TIMEOUT 30)
endif()
if(TARGET idgen_cli AND TARGET idgen_worker)
  seckill_add_test(NAME test_idgen_serve SOURCES integration/test_idgen_serve.c
    LIBS seckill::idgen_worker seckill::common Threads::Threads PkgConfig::HIREDIS
    LABELS integration TIMEOUT 120)
  target_include_directories(test_idgen_serve PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integration)
  add_dependencies(test_idgen_serve idgen_cli)
endif()

# docs/idgen-openapi.yaml against the meta-schema, with tests/web's validator (its
# node_modules come from deploy/local.sh deps; label web, as docs/openapi.yaml's lint).
find_program(SECKILL_NODE node)
if(SECKILL_NODE)
  add_test(NAME idgen_openapi_lint COMMAND ${SECKILL_NODE}
    ${CMAKE_CURRENT_SOURCE_DIR}/web/lint_openapi.mjs ${CMAKE_SOURCE_DIR}/docs/idgen-openapi.yaml
    ${PROJECT_VERSION})
  set_tests_properties(idgen_openapi_lint PROPERTIES LABELS web TIMEOUT 60)
endif()

# On a throwaway Redis Cluster (issue 8): label cluster.
if(TARGET idgen_cli AND TARGET rcluster) # seckill_test_cluster: tests/rcluster.cmake
  seckill_add_test(NAME test_idgen_cluster SOURCES integration/test_idgen_cluster.c
    LIBS seckill::idgen seckill::rcluster seckill_test_cluster Threads::Threads
    LABELS "integration;cluster" TIMEOUT 180)
  target_include_directories(test_idgen_cluster PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integration)
  add_dependencies(test_idgen_cluster idgen_cli)
endif()
