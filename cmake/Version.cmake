# The binary's version string (git describe) and build flags, recorded in every result and ledger run.
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                OUTPUT_VARIABLE CLOCKTRAIN_GIT_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT CLOCKTRAIN_GIT_VERSION)
  set(CLOCKTRAIN_GIT_VERSION "unknown")
endif()
string(TOUPPER "${CMAKE_BUILD_TYPE}" _bt)
set(CLOCKTRAIN_BUILD_FLAGS "${CMAKE_CXX_COMPILER_ID}-${CMAKE_CXX_COMPILER_VERSION} ${CMAKE_BUILD_TYPE} ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_bt}} sanitize=${CLOCKTRAIN_SANITIZE}")
configure_file(${PROJECT_SOURCE_DIR}/src/util/version.h.in ${PROJECT_BINARY_DIR}/generated/clocktrain_version.h @ONLY)
