// src/ops/ag_gemm/ag_gemm_plan.h — GPU-free planning of AG+GEMM (ag_gemm_plan.cpp).
#pragma once

#include <cstdint>

#include "flux/ag_gemm.h"

namespace flux::ops {

// SMs of fused_ce's GEMM: the rank's share (gemm + gather) when ranks share a GPU (fused_ce is refused
// there anyway), else every SM but one, which the one-CTA wait / flag kernels of the side stream use.
int ag_gemm_ce_gemm_sms(int sm_count, bool shares_gpu, int gemm_sms, int gather_sms);

AgGemmLayout plan_ag_gemm(int64_t m, const AgGemmDesc& desc, int world_size, int rank, bool shares_gpu,
                          int ranks_on_gpu, int sm_count, int gather_sms, AgGemmImpl forced);

}  // namespace flux::ops
