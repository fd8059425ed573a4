# Library boundaries (issue 15), label `libs`:
# - libs_link_once_<binary> (also `unit`): no global symbol is defined twice in the static
#   libraries a binary links (its link closure, read from the targets here), so it does
#   not link by the order of its archives;
# - libs_shared / libs_static (also `integration`: they run against the test Redis): the
#   libraries configured in a temporary tree as a user builds them, the shared ones
#   exporting only their IDGEN_EXPORT / RLOCK_EXPORT API, installed, and a program built
#   against them twice, with pkg-config alone and with find_package(seckill) alone
#   (tests/libs/cmake_user), each run (tests/libs/install.sh).

# The static libraries in the link closure of `tgt`, as $<TARGET_FILE:...> generator
# expressions in `out`: direct LINK_LIBRARIES, then INTERFACE_LINK_LIBRARIES (where a
# static library's private dependencies appear as $<LINK_ONLY:...>), imported targets
# (system libraries) left out.
function(libs_static_closure out tgt)
  set(files "")
  set(seen "")
  get_target_property(queue ${tgt} LINK_LIBRARIES)
  while(queue)
    list(POP_FRONT queue item)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
    if(NOT TARGET "${item}")
      continue()
    endif()
    get_target_property(real ${item} ALIASED_TARGET)
    if(real)
      set(item ${real})
    endif()
    get_target_property(imported ${item} IMPORTED)
    if(imported OR item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${item})
    get_target_property(type ${item} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
      list(APPEND files $<TARGET_FILE:${item}>)
    endif()
    get_target_property(next ${item} INTERFACE_LINK_LIBRARIES)
    if(next)
      list(APPEND queue ${next})
    endif()
  endwhile()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

foreach(bin seckill-order seckill-consumer idgen_cli)
  if(TARGET ${bin})
    libs_static_closure(archives ${bin})
    list(LENGTH archives n)
    if(n LESS 2) # e.g. idgen_cli on a shared libidgen: nothing to compare
      continue()
    endif()
    add_test(NAME libs_link_once_${bin}
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/libs/link_once.sh ${CMAKE_NM} ${archives})
    set_tests_properties(libs_link_once_${bin} PROPERTIES LABELS "unit;libs" TIMEOUT 60)
  endif()
endforeach()

if(TARGET idgen AND TARGET rlock)
  foreach(mode shared static)
    add_test(NAME libs_${mode}
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/libs/install.sh ${mode} ${CMAKE_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/libs-${mode} ${CMAKE_C_COMPILER} ${CMAKE_NM})
    # Its own build tree: not alongside another test that builds (RUN_SERIAL).
    set_tests_properties(libs_${mode} PROPERTIES LABELS "integration;libs" TIMEOUT 300
      RUN_SERIAL ON)
  endforeach()
endif()
