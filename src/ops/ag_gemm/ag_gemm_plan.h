// src/ops/ag_gemm/ag_gemm_plan.h — GPU-free planning of AG+GEMM (ag_gemm_plan.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "flux/ag_gemm.h"

namespace flux::ops {

// SMs of fused_ce's GEMM: the rank's share (gemm + gather) when ranks share a GPU (fused_ce is refused
// there anyway), else every SM but one, which the one-CTA wait / flag kernels of the side stream use.
int ag_gemm_ce_gemm_sms(int sm_count, bool shares_gpu, int gemm_sms, int gather_sms);

// Whether `impl` can run a call of M rows (false: `why`, if not null, says why and what to use instead):
// fused_ce needs one GPU per rank; decomposed with FP8 per-row scales needs M / W a multiple of 4. Every
// path runs at W = 1. plan_ag_gemm refuses a forced path that cannot run, and the rule skips it.
bool ag_gemm_path_supported(AgGemmImpl impl, const AgGemmDesc& desc, int64_t m, int world_size, bool shares_gpu,
                            std::string* why);

// `limits`: the device's SMs (split between the GEMM and the gather) and HBM bandwidth (the rule's GEMM rates).
AgGemmLayout plan_ag_gemm(int64_t m, const AgGemmDesc& desc, int world_size, int rank, bool shares_gpu,
                          int ranks_on_gpu, const DeviceLimits& limits, int gather_sms, AgGemmImpl forced);

}  // namespace flux::ops
