# Writes the version header: run by cmake/Version.cmake at configure time and, through the
# clocktrain_version_header target, at every build (cmake -P). Inputs: SOURCE_DIR, OUTPUT, PROJECT_VERSION,
# CLOCKTRAIN_BUILD_FLAGS. configure_file leaves OUTPUT untouched when its text would not change, so an
# unchanged version recompiles nothing.
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE CLOCKTRAIN_GIT_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT CLOCKTRAIN_GIT_VERSION)
  set(CLOCKTRAIN_GIT_VERSION "unknown")
endif()
configure_file(${SOURCE_DIR}/src/util/version.h.in ${OUTPUT} @ONLY)
