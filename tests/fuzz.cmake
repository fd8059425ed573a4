# Fuzzing (issue 7): libFuzzer harnesses for the HTTP request handling (paths, ids,
# bodies), the bearer token, the Kafka message parser and the config parser. They need
# clang, and the main build is gcc, so this registers one ctest test (label fuzz) that
# runs tests/fuzz/run.sh: it configures tests/fuzz/ as a standalone project with clang
# in <build>/fuzz and runs each harness for FUZZ_SECONDS (60 unless the environment
# says otherwise), one after another; a crash, a leak or UB fails it. Without clang the
# test is not registered.
find_program(SECKILL_FUZZ_CC NAMES clang clang-14)
if(SECKILL_FUZZ_CC)
  add_test(NAME fuzz_harnesses COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run.sh)
  # 6 harnesses x 60 s (CI: 20 s each), plus the clang build (about 30 s on 2 cores) and slack.
  set_tests_properties(fuzz_harnesses PROPERTIES LABELS "fuzz" TIMEOUT 900 SKIP_RETURN_CODE 77
    ENVIRONMENT "FUZZ_BUILD_DIR=${CMAKE_BINARY_DIR}/fuzz;FUZZ_CC=${SECKILL_FUZZ_CC}")
else()
  message(STATUS "clang not found: fuzz harnesses (tests/fuzz) not registered")
endif()
