# cmake/FluxCudaLibs.cmake — cuBLAS / cuBLASLt from the CUDA toolkit, NCCL from wherever it is installed.
#
# cuBLASLt: CUDAToolkit's CUDA::cublasLt / CUDA::cublas (override the toolkit with -DCUDAToolkit_ROOT=<dir>).
# NCCL: nccl.h and libnccl (search order below; -DFLUX_NCCL_DIR=<dir> first). The header
# version is checked here (>= 2.28 for the device API, nccl_device.h); the runtime library's version is
# checked against the header at run time by the runtime that uses it (ncclGetVersion).
#
# Result: targets CUDA::cublasLt, CUDA::cublas (from CUDAToolkit) and flux::nccl (IMPORTED).

find_package(CUDAToolkit 13.0 REQUIRED)

set(FLUX_NCCL_DIR "" CACHE PATH "NCCL root (include/nccl.h, lib/libnccl.so) searched before every other place")
# Where NCCL is looked for, in this order (the first place with both the header and the library wins):
#   1. FLUX_NCCL_DIR (when set, only there: a wrong override is an error, not a silent fallback);
#   2. the CUDA toolkit (the build machine's CUDA 13 ships NCCL inside it);
#   3. the system's usual places (Debian/Ubuntu libnccl-dev: /usr/include/nccl.h,
#      /usr/lib/<arch>/libnccl.so; the GPU machine has it there);
#   4. the PyPI wheel nvidia-nccl-cu13 of the python3 on PATH (site-packages/nvidia/nccl: include/nccl.h,
#      lib/libnccl.so.2 — the wheel has no unversioned libnccl.so).
set(_flux_nccl_names nccl libnccl.so.2)
# Searched anew at every configure (cheap), so that a changed FLUX_NCCL_DIR takes effect.
unset(FLUX_NCCL_SOURCE)
function(_flux_try_nccl where)
  if(FLUX_NCCL_SOURCE)
    return()
  endif()
  unset(FLUX_NCCL_INCLUDE_DIR CACHE)
  unset(FLUX_NCCL_LIBRARY CACHE)
  find_path(FLUX_NCCL_INCLUDE_DIR nccl.h ${ARGN})
  find_library(FLUX_NCCL_LIBRARY NAMES ${_flux_nccl_names} ${ARGN})
  if(FLUX_NCCL_INCLUDE_DIR AND FLUX_NCCL_LIBRARY)
    set(FLUX_NCCL_SOURCE "${where}" PARENT_SCOPE)
  else()
    unset(FLUX_NCCL_INCLUDE_DIR CACHE)
    unset(FLUX_NCCL_LIBRARY CACHE)
  endif()
endfunction()

if(FLUX_NCCL_DIR)
  _flux_try_nccl("FLUX_NCCL_DIR" HINTS "${FLUX_NCCL_DIR}" PATH_SUFFIXES include lib lib64 NO_DEFAULT_PATH)
  if(NOT FLUX_NCCL_SOURCE)
    message(FATAL_ERROR "flux: FLUX_NCCL_DIR=${FLUX_NCCL_DIR} has no include/nccl.h with lib/libnccl.so "
                        "(or lib/libnccl.so.2)")
  endif()
else()
  _flux_try_nccl("the CUDA toolkit" HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR}
                 PATH_SUFFIXES include lib lib64 NO_DEFAULT_PATH)
  _flux_try_nccl("the system (e.g. libnccl-dev)" PATH_SUFFIXES include)
  if(NOT FLUX_NCCL_SOURCE)
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(Python3_Interpreter_FOUND)
      execute_process(
        COMMAND "${Python3_EXECUTABLE}" -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
        OUTPUT_VARIABLE _flux_nccl_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _flux_rc)
      if(_flux_rc EQUAL 0 AND _flux_nccl_wheel)
        _flux_try_nccl("the nvidia-nccl-cu13 wheel" HINTS "${_flux_nccl_wheel}" PATH_SUFFIXES include lib
                       NO_DEFAULT_PATH)
      endif()
    endif()
  endif()
endif()
if(NOT FLUX_NCCL_INCLUDE_DIR OR NOT FLUX_NCCL_LIBRARY)
  message(FATAL_ERROR "flux: NCCL not found in the CUDA toolkit, the system's usual places (libnccl-dev) or the "
                      "nvidia-nccl-cu13 wheel; set -DFLUX_NCCL_DIR=<dir with include/nccl.h and lib/libnccl.so>")
endif()
file(STRINGS "${FLUX_NCCL_INCLUDE_DIR}/nccl.h" _flux_nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*" "\\1" _flux_nccl_major "${_flux_nccl_ver}")
string(REGEX REPLACE ".*NCCL_MINOR ([0-9]+).*" "\\1" _flux_nccl_minor "${_flux_nccl_ver}")
string(REGEX REPLACE ".*NCCL_PATCH ([0-9]+).*" "\\1" _flux_nccl_patch "${_flux_nccl_ver}")
set(FLUX_NCCL_VERSION "${_flux_nccl_major}.${_flux_nccl_minor}.${_flux_nccl_patch}")
if(FLUX_NCCL_VERSION VERSION_LESS "2.28")
  message(FATAL_ERROR "flux: NCCL ${FLUX_NCCL_VERSION} at ${FLUX_NCCL_INCLUDE_DIR}; 2.28 or newer is needed")
endif()
message(STATUS "flux: NCCL ${FLUX_NCCL_VERSION} from ${FLUX_NCCL_SOURCE}: ${FLUX_NCCL_INCLUDE_DIR}/nccl.h, ${FLUX_NCCL_LIBRARY}")

if(NOT TARGET flux::nccl)
  add_library(flux::nccl UNKNOWN IMPORTED)
  set_target_properties(flux::nccl PROPERTIES
    IMPORTED_LOCATION "${FLUX_NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${FLUX_NCCL_INCLUDE_DIR}")
endif()
