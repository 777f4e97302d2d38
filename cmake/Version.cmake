# The binary's version string (project version + git describe) and build flags, recorded in every result
# and ledger run. The header is rewritten at every build, not only at configure time, so that a rebuild
# after a new commit (or with uncommitted edits: "-dirty") says so.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _bt)
# -march=native (CLOCKTRAIN_NATIVE, cmake/Dependencies.cmake) is an added compile option, not part of
# CMAKE_CXX_FLAGS: named here so that the flags say which CPU the binary was built for.
set(_native_flag "")
if(CLOCKTRAIN_NATIVE)
  set(_native_flag " -march=native")
endif()
set(CLOCKTRAIN_BUILD_FLAGS "${CMAKE_CXX_COMPILER_ID}-${CMAKE_CXX_COMPILER_VERSION} ${CMAKE_BUILD_TYPE} ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_bt}}${_native_flag} sanitize=${CLOCKTRAIN_SANITIZE}")
set(CLOCKTRAIN_VERSION_HEADER ${PROJECT_BINARY_DIR}/generated/clocktrain_version.h)

set(SOURCE_DIR ${PROJECT_SOURCE_DIR})
set(OUTPUT ${CLOCKTRAIN_VERSION_HEADER})
include(${PROJECT_SOURCE_DIR}/cmake/WriteVersionHeader.cmake)

add_custom_target(clocktrain_version_header
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${CLOCKTRAIN_VERSION_HEADER}
          -DPROJECT_VERSION=${PROJECT_VERSION} -DCLOCKTRAIN_BUILD_FLAGS=${CLOCKTRAIN_BUILD_FLAGS}
          -P ${PROJECT_SOURCE_DIR}/cmake/WriteVersionHeader.cmake
  BYPRODUCTS ${CLOCKTRAIN_VERSION_HEADER}
  VERBATIM)
