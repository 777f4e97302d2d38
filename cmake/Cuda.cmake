# The CUDA language, only when nvcc is found (CLOCKTRAIN_CUDA on): the rest of the project builds
# without it. Enabled here, at the top level, because every executable that links the CUDA backend
# (through ct_backends) must see the language (CMake's rule for enable_language).
#
# The backend is compiled for one architecture, Hopper's sm_90a (wgmma, setmaxnreg; HOPPER.md in the
# device notes), with the -gencode form, which nvcc 13.0 accepts for the "a" targets. Set
# CLOCKTRAIN_CUDA_GENCODE to build for another GPU (e.g. "arch=compute_80,code=sm_80"); the kernels
# need compute capability 8.0 or newer (bf16 tensor-core mma, cp.async).
set(CLOCKTRAIN_CUDA_GENCODE "arch=compute_90a,code=sm_90a" CACHE STRING
    "nvcc -gencode value(s) for the CUDA backend, separated by ';'")
set(CLOCKTRAIN_HAVE_CUDA_COMPILER OFF)
if(CLOCKTRAIN_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Architectures come from CLOCKTRAIN_CUDA_GENCODE, not from CMake's default list.
    set(CMAKE_CUDA_ARCHITECTURES OFF)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA 20 dialect for nvcc; the .cu files need C++17
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.0)
      message(STATUS "CUDA backend: nvcc ${CMAKE_CUDA_COMPILER_VERSION} is older than 12.0 (sm_90a, CUDA 12 graph API): not built")
    elseif(NOT TARGET CUDA::cublasLt OR NOT TARGET CUDA::cudart_static)
      message(STATUS "CUDA backend: the toolkit has no cuBLASLt or static cudart: not built")
    else()
      set(CLOCKTRAIN_HAVE_CUDA_COMPILER ON)
      message(STATUS "CUDA backend: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, -gencode ${CLOCKTRAIN_CUDA_GENCODE}")
    endif()
  else()
    message(STATUS "CUDA backend: nvcc not found, not built")
  endif()
endif()
