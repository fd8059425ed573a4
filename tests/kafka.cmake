# Issue 18: the pipeline on Apache Kafka (label kafka, see tests/kafka/README.md and
# deploy/kafka/README.md). One KRaft broker (deploy/kafka/kafka.sh) is started for the
# whole label by the fixture kafka_broker_up and stopped by kafka_broker_down; the tests
# that share it get topics and a consumer group of their own. The tests that kill or cut
# off brokers run a private cluster (1 or 3 nodes). Exit 77 (skipped) without java, the
# jars or the binaries.
if(TARGET seckill-bench AND TARGET seckill-check AND TARGET seckill-order AND TARGET seckill-consumer)
  set(kafka_dir ${CMAKE_BINARY_DIR}/kafka-fixture)
  set(kafka_env "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;E2E_REAL_KAFKA=${kafka_dir}")
  add_test(NAME kafka_broker_up COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/kafka/fixture.sh up ${kafka_dir})
  add_test(NAME kafka_broker_down COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/kafka/fixture.sh down ${kafka_dir})
  set_tests_properties(kafka_broker_up PROPERTIES LABELS kafka TIMEOUT 180 FIXTURES_SETUP kafka_broker)
  set_tests_properties(kafka_broker_down PROPERTIES LABELS kafka TIMEOUT 120 FIXTURES_CLEANUP kafka_broker)

  # The e2e flash sale, unchanged, on the shared broker.
  add_test(NAME kafka_e2e_flashsale COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/flashsale_small.sh)
  set_tests_properties(kafka_e2e_flashsale PROPERTIES LABELS kafka TIMEOUT 240 SKIP_RETURN_CODE 77
    FIXTURES_REQUIRED kafka_broker ENVIRONMENT "${kafka_env}")

  # The consumer's kill -9 test (tests/integration/test_consumer_kill.c) on the shared
  # broker: ctu_kafka_start attaches to it (E2E_REAL_KAFKA) with topics of its own.
  if(TARGET test_consumer_kill)
    add_test(NAME kafka_consumer_kill COMMAND test_consumer_kill)
    set_tests_properties(kafka_consumer_kill PROPERTIES LABELS kafka TIMEOUT 240
      FIXTURES_REQUIRED kafka_broker ENVIRONMENT "${kafka_env}")
  endif()
  # A ~1 MB poison message on Apache Kafka (issue 14, item 1): its lane does not stall and
  # the dead-letter topic gets a copy that fits (the refusal cases need the dev Kafka).
  if(TARGET test_consumer_poison)
    add_test(NAME kafka_consumer_poison COMMAND test_consumer_poison)
    set_tests_properties(kafka_consumer_poison PROPERTIES LABELS kafka TIMEOUT 240
      FIXTURES_REQUIRED kafka_broker ENVIRONMENT "${kafka_env}")
  endif()

  foreach(t broker_kill group_rebalance leader_kill isr_lost)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/kafka/${t}.sh)
      continue()
    endif()
    add_test(NAME kafka_${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/kafka/${t}.sh)
    set_tests_properties(kafka_${t} PROPERTIES LABELS kafka TIMEOUT 240 SKIP_RETURN_CODE 77
      FIXTURES_REQUIRED kafka_broker ENVIRONMENT "${kafka_env}")
  endforeach()
endif()
