# Parquet input (docs/data.md, "Parquet"): Apache Arrow's C++ Parquet library, which Debian 12 does
# not package. Found, in this order:
#   1. Arrow's own CMake package (Apache's APT repository: libparquet-dev), find_package(Parquet);
#   2. the libarrow/libparquet and headers that PyPI's pyarrow wheel ships, from the python3 named
#      by CLOCKTRAIN_PYARROW_PYTHON, by default build/pyarrow-venv/bin/python3
#      (scripts/install-pyarrow.sh makes that venv; the test command runs it).
# Neither: clocktrain builds without Parquet and a .parquet input is an error that says how to get it.
# The wheel's libraries are built with the new libstdc++ ABI (_GLIBCXX_USE_CXX11_ABI=1: their
# symbols take std::__cxx11::basic_string) and need GLIBCXX_3.4.22, which Debian 12's g++ 12 meets.
option(CLOCKTRAIN_PARQUET "Read Parquet corpus files when Arrow's Parquet library is found" ON)
set(CLOCKTRAIN_PYARROW_PYTHON "${PROJECT_SOURCE_DIR}/build/pyarrow-venv/bin/python3"
    CACHE FILEPATH "A python3 with pyarrow whose C++ libraries provide Parquet support")
set(CLOCKTRAIN_PARQUET_FROM "")

if(CLOCKTRAIN_PARQUET)
  find_package(Parquet CONFIG QUIET)
  if(Parquet_FOUND AND TARGET Parquet::parquet_shared)
    add_library(clocktrain_parquet INTERFACE)
    target_link_libraries(clocktrain_parquet INTERFACE Parquet::parquet_shared)
    set(CLOCKTRAIN_PARQUET_FROM "Arrow's CMake package (${Parquet_DIR})")
  elseif(EXISTS "${CLOCKTRAIN_PYARROW_PYTHON}")
    execute_process(
      COMMAND "${CLOCKTRAIN_PYARROW_PYTHON}" -c
              "import pyarrow as pa; print(pa.__version__); print(pa.get_include()); print(pa.get_library_dirs()[0])"
      OUTPUT_VARIABLE _pyarrow OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _pyarrow_rc ERROR_QUIET)
    if(_pyarrow_rc EQUAL 0)
      string(REPLACE "\n" ";" _pyarrow "${_pyarrow}")
      list(GET _pyarrow 0 _pyarrow_version)
      list(GET _pyarrow 1 _pyarrow_include)
      list(GET _pyarrow 2 _pyarrow_libdir)
      # The wheel ships only versioned names (libparquet.so.2100), no libparquet.so to link by -l.
      file(GLOB _parquet_lib "${_pyarrow_libdir}/libparquet.so.[0-9]*")
      file(GLOB _arrow_lib "${_pyarrow_libdir}/libarrow.so.[0-9]*")
      list(FILTER _parquet_lib EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
      list(FILTER _arrow_lib EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
      if(_parquet_lib AND _arrow_lib AND EXISTS "${_pyarrow_include}/parquet/arrow/reader.h")
        list(GET _parquet_lib 0 _parquet_lib)
        list(GET _arrow_lib 0 _arrow_lib)
        add_library(clocktrain_arrow SHARED IMPORTED)
        set_target_properties(clocktrain_arrow PROPERTIES IMPORTED_LOCATION "${_arrow_lib}"
                              INTERFACE_INCLUDE_DIRECTORIES "${_pyarrow_include}")
        add_library(clocktrain_parquet_lib SHARED IMPORTED)
        set_target_properties(clocktrain_parquet_lib PROPERTIES IMPORTED_LOCATION "${_parquet_lib}")
        add_library(clocktrain_parquet INTERFACE)
        # The wheel's libparquet carries a static OpenSSL whose symbols it exports (CRYPTO_*, SSL_*,
        # EVP_*: 1243 of them in pyarrow 21). Were it ahead of Debian's libssl/libcrypto in the
        # loader's search order, libcurl's OpenSSL calls would land in that copy half-way (a crash in
        # curl_global_init, seen): Debian's OpenSSL is named first, and kept even where nothing of
        # the program calls it directly (the linker's --as-needed would drop it), so its symbols win.
        # One flag, so that CMake neither reorders nor merges the two libraries with later mentions.
        target_link_libraries(clocktrain_parquet INTERFACE
          "-Wl,--push-state,--no-as-needed,${OPENSSL_CRYPTO_LIBRARY},${OPENSSL_SSL_LIBRARY},--pop-state"
          clocktrain_parquet_lib clocktrain_arrow)
        set(CLOCKTRAIN_PARQUET_FROM "pyarrow ${_pyarrow_version} (${_pyarrow_libdir})")
      endif()
    endif()
  endif()
endif()

if(CLOCKTRAIN_PARQUET_FROM)
  message(STATUS "Parquet input: Arrow's Parquet library from ${CLOCKTRAIN_PARQUET_FROM}")
  target_compile_definitions(clocktrain_parquet INTERFACE CLOCKTRAIN_HAVE_PARQUET=1)
else()
  message(STATUS "Parquet input: not built (no libparquet-dev, no pyarrow at ${CLOCKTRAIN_PYARROW_PYTHON}; "
                 "scripts/install-pyarrow.sh, then configure again)")
  add_library(clocktrain_parquet INTERFACE)
endif()
