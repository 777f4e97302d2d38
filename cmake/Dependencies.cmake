# Every dependency comes from Debian's packages (see README.md for the list).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(ZLIB REQUIRED)
find_package(CURL REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(yaml-cpp REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET tomlplusplus)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
find_package(dnnl QUIET)
if(NOT dnnl_FOUND)
  find_library(DNNL_LIBRARY dnnl REQUIRED)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY})
endif()
# OpenBLAS: cblas.h at build time; the library itself is loaded at run time from its OpenMP build
# (src/backend/cpu/gemm_library.h says why), so it is found here by path and not linked.
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread openblas-openmp openblas REQUIRED)
find_file(OPENBLAS_OPENMP_LIBRARY libopenblas.so.0
          PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp /usr/lib64/openblas-openmp
          NO_DEFAULT_PATH REQUIRED)
# BLIS: loaded at run time from its OpenMP build too, when it is used (CLOCKTRAIN_CPU_GEMM=blis, or a
# CPU whose default is BLIS, gemm_library.h); the path where Debian puts it, or the loader's search.
find_file(BLIS_OPENMP_LIBRARY libblis.so.4
          PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp /usr/lib64/blis-openmp NO_DEFAULT_PATH)
if(NOT BLIS_OPENMP_LIBRARY)
  set(BLIS_OPENMP_LIBRARY libblis.so.4)
endif()
# Open MPI (Debian's libopenmpi-dev): the collectives of CPU processes launched by mpirun
# (src/backend/parallel/process_group.h). Optional: without it a multi-process CPU launch is a clear
# error, and a build for another machine (the GPU check's) does not need it.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  message(STATUS "clocktrain: MPI ${MPI_C_VERSION} found (${MPI_C_LIBRARIES}): CPU data-parallel training on")
else()
  message(STATUS "clocktrain: MPI not found: CPU data-parallel training off (install libopenmpi-dev)")
endif()
# Gloo (Debian's libgloo-dev): the collectives of CPU processes launched by torchrun, meeting through
# torchrun's store (src/backend/parallel/gloo_collectives.cpp). Optional, as MPI is.
find_package(Gloo CONFIG QUIET)
if(Gloo_FOUND)
  message(STATUS "clocktrain: Gloo ${GLOO_VERSION} found: CPU processes under torchrun on")
else()
  message(STATUS "clocktrain: Gloo not found: CPU processes under torchrun off (install libgloo-dev)")
endif()
if(CLOCKTRAIN_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CLOCKTRAIN_BENCH)
  find_package(benchmark REQUIRED)
endif()

# Build for the processor we run on (as llama.cpp does): the kernels rely on AVX-512 where present.
option(CLOCKTRAIN_NATIVE "Compile with -march=native" ON)
if(CLOCKTRAIN_NATIVE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
