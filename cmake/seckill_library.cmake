# seckill_library(<target> MACRO <PREFIX> NAME <pc name> DESCRIPTION <text> HEADERS <h...>)
#
# What libidgen and librlock share as installable libraries (rcluster/README.md,
# "Build and linking"):
# - hidden visibility; the public API is marked <PREFIX>_EXPORT in the header, which means
#   visibility("default") while <PREFIX>_BUILDING is defined (here, privately), so that
#   `nm -D` on the shared library shows the public API only (tests/libs.cmake checks it);
# - rcluster's blocking half and the Redis URL parser: a shared library carries hidden
#   copies of their objects and needs nothing of ours; a static one links seckill::rcluster
#   (the one archive defining them), so a binary linking both libraries and rcluster
#   defines every symbol once;
# - the version from project(): VERSION/SOVERSION, <prefix>_version.h (generated from
#   cmake/seckill_version.h.in, installed with the headers) and the .pc file;
# - install rules (component <target>) and a relocatable pkg-config file: a static build
#   also requires seckill-rcluster (rcluster/), which pkg-config then links after it;
#   the installed target joins the export set seckillTargets (the CMake package, top
#   CMakeLists.txt), as seckill::<target>.
include_guard(GLOBAL)

function(seckill_library tgt)
  cmake_parse_arguments(L "" "MACRO;NAME;DESCRIPTION" "HEADERS" ${ARGN})
  string(TOLOWER ${L_MACRO} prefix)
  get_target_property(type ${tgt} TYPE)

  set(MACRO ${L_MACRO})
  configure_file(${CMAKE_SOURCE_DIR}/cmake/seckill_version.h.in
    ${CMAKE_CURRENT_BINARY_DIR}/${prefix}_version.h @ONLY)
  target_include_directories(${tgt}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}>
           $<BUILD_INTERFACE:${CMAKE_CURRENT_BINARY_DIR}>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_SOURCE_DIR}/common ${CMAKE_SOURCE_DIR}/rcluster)
  target_compile_definitions(${tgt} PRIVATE ${L_MACRO}_BUILDING)
  set_target_properties(${tgt} PROPERTIES
    C_VISIBILITY_PRESET hidden
    POSITION_INDEPENDENT_CODE ON
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}
    PUBLIC_HEADER "${L_HEADERS};${CMAKE_CURRENT_BINARY_DIR}/${prefix}_version.h")

  if(type STREQUAL "SHARED_LIBRARY")
    target_sources(${tgt} PRIVATE $<TARGET_OBJECTS:seckill_rcluster_sync>
                                  $<TARGET_OBJECTS:seckill_redis_url>)
    target_link_libraries(${tgt} PRIVATE PkgConfig::HIREDIS Threads::Threads)
    if(NOT SECKILL_SANITIZE) # the sanitizer runtimes come with the executable
      target_link_options(${tgt} PRIVATE -Wl,--no-undefined)
    endif()
    set(PC_LINK "Libs: -L\${libdir} -l${prefix}\nLibs.private: -pthread\nRequires.private: hiredis")
  else()
    target_link_libraries(${tgt} PRIVATE seckill::rcluster Threads::Threads)
    set(PC_LINK "Libs: -L\${libdir} -l${prefix} -pthread\nRequires: hiredis seckill-rcluster")
  endif()

  set(PC_NAME ${L_NAME})
  set(PC_DESCRIPTION ${L_DESCRIPTION})
  file(RELATIVE_PATH PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  configure_file(${CMAKE_SOURCE_DIR}/cmake/seckill_library.pc.in
    ${CMAKE_CURRENT_BINARY_DIR}/${L_NAME}.pc @ONLY)
  install(TARGETS ${tgt} EXPORT seckillTargets COMPONENT ${tgt}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${L_NAME}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT ${tgt})
endfunction()
