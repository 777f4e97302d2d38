# The CUDA backend's cuDNN attention (src/backend/cuda/cudnn_attention.cpp; docs/cuda.md,
# "Attention"): compiled in when the cuDNN frontend's headers (NVIDIA's header-only graph API, not
# packaged by Debian) and cuDNN's own cudnn.h are both found. scripts/install-cudnn-frontend.sh puts a
# pinned copy of the frontend in build/cudnn-frontend; CLOCKTRAIN_CUDNN_FRONTEND_INCLUDE names another.
# Nothing is linked: the frontend opens libcudnn.so.9 at run time (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING),
# so a build with the path starts, and runs the other attention kernels, on a machine without cuDNN.
# Included by src/backend/cuda/CMakeLists.txt, after ct_backend_cuda exists.
set(CLOCKTRAIN_CUDNN_FRONTEND_INCLUDE "${PROJECT_SOURCE_DIR}/build/cudnn-frontend/include"
    CACHE PATH "Folder holding cudnn_frontend.h (scripts/install-cudnn-frontend.sh)")
find_path(CLOCKTRAIN_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
          DOC "Folder holding cuDNN's cudnn.h (version 9)")

set(_cudnn_attention_src ${PROJECT_SOURCE_DIR}/src/backend/cuda/cudnn_attention.cpp)
if(EXISTS "${CLOCKTRAIN_CUDNN_FRONTEND_INCLUDE}/cudnn_frontend.h" AND CLOCKTRAIN_CUDNN_INCLUDE)
  file(STRINGS "${CLOCKTRAIN_CUDNN_INCLUDE}/cudnn_version.h" _cudnn_major REGEX "#define CUDNN_MAJOR ")
  string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*" "\\1" _cudnn_major "${_cudnn_major}")
  if(_cudnn_major STREQUAL "9")
    # Only this file sees the frontend: its headers are large and warn under -Wextra. The file builds
    # cuDNN's graphs (once per shape, then cached) and launches them: host code that orchestrates, so it
    # is compiled for build time (CLOCKTRAIN_COLD_OPTIMIZE: -O1 takes 48 s where -O3 took 83 s on the
    # 2-core Zen 4, the longest file of the build).
    set_source_files_properties(${_cudnn_attention_src} PROPERTIES
      COMPILE_DEFINITIONS "CT_HAVE_CUDNN_FRONTEND=1;NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING"
      COMPILE_OPTIONS "-isystem;${CLOCKTRAIN_CUDNN_FRONTEND_INCLUDE};-isystem;${CLOCKTRAIN_CUDNN_INCLUDE};${CLOCKTRAIN_COLD_OPTIMIZE}")
    message(STATUS "CUDA backend: cuDNN attention built (frontend ${CLOCKTRAIN_CUDNN_FRONTEND_INCLUDE}, "
                   "cudnn.h ${CLOCKTRAIN_CUDNN_INCLUDE})")
  else()
    message(STATUS "CUDA backend: cuDNN attention not built (cudnn.h in ${CLOCKTRAIN_CUDNN_INCLUDE} is "
                   "version ${_cudnn_major}, not 9)")
  endif()
else()
  message(STATUS "CUDA backend: cuDNN attention not built (no cudnn_frontend.h in "
                 "${CLOCKTRAIN_CUDNN_FRONTEND_INCLUDE} or no cudnn.h; scripts/install-cudnn-frontend.sh, "
                 "then configure again)")
endif()
