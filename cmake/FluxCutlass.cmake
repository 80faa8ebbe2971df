# cmake/FluxCutlass.cmake — CUTLASS / CuTe 4.2 C++ headers.
#
# Default: the build downloads the PyPI wheel nvidia-cutlass==4.2.0.0 with
#   python3 -m pip download --no-deps
# into the build tree, checks its sha256, and unpacks the C++ headers it carries
# (cutlass_library/source/include and cutlass_library/source/tools/util/include). Nothing is committed.
# Override: -DFLUX_CUTLASS_DIR=<dir> where <dir>/include/cutlass/cutlass.h exists (a CUTLASS checkout or
# an unpacked wheel's cutlass_library/source); <dir>/tools/util/include is used when present.
#
# Result: FLUX_CUTLASS_INCLUDE_DIRS (for targets that compile kernels; flux adds them PRIVATE so they
# never reach an install), the INTERFACE target flux::cutlass with the same SYSTEM include directories
# for in-tree tools and tests, and a check that the headers are CUTLASS 4.2 or newer (the first release
# that handles CUDA 13).

set(FLUX_CUTLASS_DIR "" CACHE PATH "CUTLASS source/include root to use instead of downloading the wheel")
set(FLUX_CUTLASS_WHEEL_VERSION "4.2.0.0")
set(FLUX_CUTLASS_WHEEL_SHA256 "f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6")

if(FLUX_CUTLASS_DIR)
  set(_flux_cutlass_root "${FLUX_CUTLASS_DIR}")
else()
  set(_flux_cutlass_dl "${CMAKE_BINARY_DIR}/_deps/cutlass")
  set(_flux_cutlass_wheel "${_flux_cutlass_dl}/nvidia_cutlass-${FLUX_CUTLASS_WHEEL_VERSION}-py3-none-any.whl")
  set(_flux_cutlass_root "${_flux_cutlass_dl}/unpacked/cutlass_library/source")
  if(NOT EXISTS "${_flux_cutlass_root}/include/cutlass/cutlass.h")
    if(NOT EXISTS "${_flux_cutlass_wheel}")
      find_package(Python3 REQUIRED COMPONENTS Interpreter)
      message(STATUS "flux: downloading nvidia-cutlass==${FLUX_CUTLASS_WHEEL_VERSION} (C++ headers) with pip")
      execute_process(
        COMMAND "${Python3_EXECUTABLE}" -m pip download --no-deps --disable-pip-version-check
                "nvidia-cutlass==${FLUX_CUTLASS_WHEEL_VERSION}" -d "${_flux_cutlass_dl}"
        RESULT_VARIABLE _flux_pip_rc
        OUTPUT_VARIABLE _flux_pip_out
        ERROR_VARIABLE _flux_pip_out)
      if(NOT _flux_pip_rc EQUAL 0 OR NOT EXISTS "${_flux_cutlass_wheel}")
        message(FATAL_ERROR "flux: could not download nvidia-cutlass==${FLUX_CUTLASS_WHEEL_VERSION} with pip "
                            "(exit ${_flux_pip_rc}):\n${_flux_pip_out}\n"
                            "Set -DFLUX_CUTLASS_DIR=<dir with include/cutlass/cutlass.h> to use local headers.")
      endif()
    endif()
    file(SHA256 "${_flux_cutlass_wheel}" _flux_sha)
    if(NOT _flux_sha STREQUAL FLUX_CUTLASS_WHEEL_SHA256)
      file(REMOVE "${_flux_cutlass_wheel}")
      message(FATAL_ERROR "flux: ${_flux_cutlass_wheel} has sha256 ${_flux_sha}, expected "
                          "${FLUX_CUTLASS_WHEEL_SHA256}; removed it. Re-run cmake to download again.")
    endif()
    file(ARCHIVE_EXTRACT INPUT "${_flux_cutlass_wheel}" DESTINATION "${_flux_cutlass_dl}/unpacked"
         PATTERNS "cutlass_library/source/include/*" "cutlass_library/source/tools/util/include/*")
  endif()
endif()

if(NOT EXISTS "${_flux_cutlass_root}/include/cutlass/cutlass.h")
  message(FATAL_ERROR "flux: no CUTLASS headers at ${_flux_cutlass_root}/include/cutlass/cutlass.h")
endif()

file(STRINGS "${_flux_cutlass_root}/include/cutlass/version.h" _flux_cutlass_ver REGEX "#define CUTLASS_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*CUTLASS_MAJOR ([0-9]+).*" "\\1" _flux_cutlass_major "${_flux_cutlass_ver}")
string(REGEX REPLACE ".*CUTLASS_MINOR ([0-9]+).*" "\\1" _flux_cutlass_minor "${_flux_cutlass_ver}")
if(NOT "${_flux_cutlass_major}.${_flux_cutlass_minor}" VERSION_GREATER_EQUAL "4.2")
  message(FATAL_ERROR "flux: CUTLASS ${_flux_cutlass_major}.${_flux_cutlass_minor} at ${_flux_cutlass_root}; "
                      "4.2 or newer is needed (the first release that builds with CUDA 13)")
endif()
message(STATUS "flux: CUTLASS ${_flux_cutlass_major}.${_flux_cutlass_minor} headers from ${_flux_cutlass_root}")

set(FLUX_CUTLASS_INCLUDE_DIRS "${_flux_cutlass_root}/include")
if(EXISTS "${_flux_cutlass_root}/tools/util/include")
  list(APPEND FLUX_CUTLASS_INCLUDE_DIRS "${_flux_cutlass_root}/tools/util/include")
endif()
add_library(flux_cutlass INTERFACE)
add_library(flux::cutlass ALIAS flux_cutlass)
target_include_directories(flux_cutlass SYSTEM INTERFACE ${FLUX_CUTLASS_INCLUDE_DIRS})
