# The HTTP API's contract and the sale console (label web; see tests/web/run.sh):
# docs/openapi.yaml validated, every documented call sent to the test stack's front and
# checked against the file, schemathesis's generated requests, and the console driven in
# Debian's chromium. Node packages and the schemathesis venv come from deploy/local.sh deps.
if(TARGET seckill-order)
  foreach(t lint contract schemathesis console)
    add_test(NAME web_${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/web/run.sh ${t})
    set_tests_properties(web_${t} PROPERTIES LABELS web TIMEOUT 300 SKIP_RETURN_CODE 77
      ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;SECKILL_WEB_OUT=${CMAKE_BINARY_DIR}/web-out")
  endforeach()
  # The lint needs no stack; the others share the test stack's front, one at a time.
  set_tests_properties(web_contract web_schemathesis web_console PROPERTIES RESOURCE_LOCK seckill_front)
endif()
