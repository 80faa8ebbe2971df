# cmake/FluxInstantiations.cmake — one translation unit per GEMM core instantiation.
#
# flux_generate_gemm_instances(<out-var>) writes ${CMAKE_BINARY_DIR}/generated/sm90_gemm_<dtype>_<layout>_<config>[_partial].cu
# from src/gemm/kernel/sm90_gemm_instance.cu.in for every (dtype, weight layout, config), plus the fp32
# partial-output (split-K) kernels of the split-K configs, and returns the list. The config names must match
# ConfigId in src/gemm/gemm_config.h, the split-K list its ConfigShape::split_k (gemm_dispatch.cpp reads those).

set(FLUX_GEMM_DTYPES kBF16 kFP16)
set(FLUX_GEMM_LAYOUTS kNK kKN)
set(FLUX_GEMM_CONFIGS k128x256x64CoopC2x1 k128x128x64PingpongC1x2 k256x128x64CoopC1x2 k64x256x64PingpongC1x2
    k64x128x64PingpongSwapC1x2)
set(FLUX_GEMM_SPLIT_K_CONFIGS k128x128x64PingpongC1x2 k64x256x64PingpongC1x2 k64x128x64PingpongSwapC1x2)

function(flux_generate_gemm_instances out_var)
  set(sources)
  foreach(FLUX_DTYPE IN LISTS FLUX_GEMM_DTYPES)
    foreach(FLUX_LAYOUT IN LISTS FLUX_GEMM_LAYOUTS)
      foreach(FLUX_CONFIG IN LISTS FLUX_GEMM_CONFIGS)
        set(outputs kFinal)
        if(FLUX_CONFIG IN_LIST FLUX_GEMM_SPLIT_K_CONFIGS)
          list(APPEND outputs kPartial)
        endif()
        foreach(FLUX_OUTPUT IN LISTS outputs)
          string(TOLOWER "${FLUX_DTYPE}_${FLUX_LAYOUT}_${FLUX_CONFIG}" stem)
          string(REGEX REPLACE "^k" "" stem "${stem}")
          string(REPLACE "_k" "_" stem "${stem}")
          # Split-K GEMMs hint their reduction kernel (launched as a programmatic dependent) to launch once
          # their last tile's MMA is issued, hiding its launch (CUTLASS's griddepcontrol hooks). Only the
          # partial kernels: the unsplit ones must never wait on the kernel before them (AG+GEMM's gather).
          set(FLUX_GDC_DEFINE "")
          if(FLUX_OUTPUT STREQUAL "kPartial")
            string(APPEND stem "_partial")
            set(FLUX_GDC_DEFINE "#define CUTLASS_ENABLE_GDC_FOR_SM90 1")
          endif()
          set(file "${CMAKE_BINARY_DIR}/generated/sm90_gemm_${stem}.cu")
          configure_file("${PROJECT_SOURCE_DIR}/src/gemm/kernel/sm90_gemm_instance.cu.in" "${file}" @ONLY)
          list(APPEND sources "${file}")
        endforeach()
      endforeach()
    endforeach()
  endforeach()
  set(${out_var} ${sources} PARENT_SCOPE)
endfunction()
