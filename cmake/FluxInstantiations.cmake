# cmake/FluxInstantiations.cmake — one translation unit per GEMM core instantiation.
#
# flux_generate_gemm_instances(<out-var>) writes ${CMAKE_BINARY_DIR}/generated/sm90_gemm_<dtype>_<layout>_<config>.cu
# from src/gemm/kernel/sm90_gemm_instance.cu.in for every (dtype, weight layout, config) and returns the list.
# The config names must match ConfigId in src/gemm/gemm_config.h (gemm_dispatch.cpp has the same table).

set(FLUX_GEMM_DTYPES kBF16 kFP16)
set(FLUX_GEMM_LAYOUTS kNK kKN)
set(FLUX_GEMM_CONFIGS k128x256x64CoopC2x1 k128x128x64PingpongC1x2 k256x128x64CoopC1x2 k64x256x64PingpongC2x1)

function(flux_generate_gemm_instances out_var)
  set(sources)
  foreach(FLUX_DTYPE IN LISTS FLUX_GEMM_DTYPES)
    foreach(FLUX_LAYOUT IN LISTS FLUX_GEMM_LAYOUTS)
      foreach(FLUX_CONFIG IN LISTS FLUX_GEMM_CONFIGS)
        string(TOLOWER "${FLUX_DTYPE}_${FLUX_LAYOUT}_${FLUX_CONFIG}" stem)
        string(REGEX REPLACE "^k" "" stem "${stem}")
        string(REPLACE "_k" "_" stem "${stem}")
        set(file "${CMAKE_BINARY_DIR}/generated/sm90_gemm_${stem}.cu")
        configure_file("${PROJECT_SOURCE_DIR}/src/gemm/kernel/sm90_gemm_instance.cu.in" "${file}" @ONLY)
        list(APPEND sources "${file}")
      endforeach()
    endforeach()
  endforeach()
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()
