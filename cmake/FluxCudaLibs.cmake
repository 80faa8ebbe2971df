# cmake/FluxCudaLibs.cmake — cuBLAS / cuBLASLt and NCCL from the CUDA toolkit.
#
# cuBLASLt: CUDAToolkit's CUDA::cublasLt / CUDA::cublas (override the toolkit with -DCUDAToolkit_ROOT=<dir>).
# NCCL: nccl.h and libnccl from -DFLUX_NCCL_DIR=<dir> (include/ and lib/ below it) or the toolkit. The header
# version is checked here (>= 2.28 for the device API, nccl_device.h); the runtime library's version is
# checked against the header at run time by the runtime that uses it (ncclGetVersion).
#
# Result: targets CUDA::cublasLt, CUDA::cublas (from CUDAToolkit) and flux::nccl (IMPORTED).

find_package(CUDAToolkit 13.0 REQUIRED)

set(FLUX_NCCL_DIR "" CACHE PATH "NCCL root (include/nccl.h, lib/libnccl.so) instead of the CUDA toolkit's")
find_path(FLUX_NCCL_INCLUDE_DIR nccl.h
  HINTS ${FLUX_NCCL_DIR} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include
  NO_DEFAULT_PATH)
find_library(FLUX_NCCL_LIBRARY NAMES nccl
  HINTS ${FLUX_NCCL_DIR} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64
  NO_DEFAULT_PATH)
if(NOT FLUX_NCCL_INCLUDE_DIR OR NOT FLUX_NCCL_LIBRARY)
  message(FATAL_ERROR "flux: NCCL not found (nccl.h: '${FLUX_NCCL_INCLUDE_DIR}', libnccl: '${FLUX_NCCL_LIBRARY}'); "
                      "set -DFLUX_NCCL_DIR=<dir with include/nccl.h and lib/libnccl.so>")
endif()
file(STRINGS "${FLUX_NCCL_INCLUDE_DIR}/nccl.h" _flux_nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*" "\\1" _flux_nccl_major "${_flux_nccl_ver}")
string(REGEX REPLACE ".*NCCL_MINOR ([0-9]+).*" "\\1" _flux_nccl_minor "${_flux_nccl_ver}")
string(REGEX REPLACE ".*NCCL_PATCH ([0-9]+).*" "\\1" _flux_nccl_patch "${_flux_nccl_ver}")
set(FLUX_NCCL_VERSION "${_flux_nccl_major}.${_flux_nccl_minor}.${_flux_nccl_patch}")
if(FLUX_NCCL_VERSION VERSION_LESS "2.28")
  message(FATAL_ERROR "flux: NCCL ${FLUX_NCCL_VERSION} at ${FLUX_NCCL_INCLUDE_DIR}; 2.28 or newer is needed")
endif()
message(STATUS "flux: NCCL ${FLUX_NCCL_VERSION} (${FLUX_NCCL_LIBRARY})")

if(NOT TARGET flux::nccl)
  add_library(flux::nccl UNKNOWN IMPORTED)
  set_target_properties(flux::nccl PROPERTIES
    IMPORTED_LOCATION "${FLUX_NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${FLUX_NCCL_INCLUDE_DIR}")
endif()
