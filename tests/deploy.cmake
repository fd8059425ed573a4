# deploy/local.sh itself (label deploy): an unknown flag refused with exit status 2, a
# taken port named with its holder, a change of shape said, an interrupted `test`
# stopping ctest and its stack. It drives small stacks of its own (Redis and PostgreSQL
# on free ports, its own run directories), never the stack the suite runs on.
add_test(NAME deploy_local_sh COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy/local_sh.sh)
set_tests_properties(deploy_local_sh PROPERTIES LABELS deploy TIMEOUT 300
  ENVIRONMENT "SECKILL_SOURCE_DIR=${CMAKE_SOURCE_DIR};SECKILL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
