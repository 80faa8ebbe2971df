// src/device/block_gather.cu — see block_gather.h.
#include "src/device/block_gather.h"

#include "flux/tile_order.h"
#include "src/common/check.h"
#include "src/device/signal.cuh"

namespace flux::device {

namespace {

constexpr int kThreads = int(kAgGatherThreads);       // one CTA per SM, `ctas` CTAs take exactly that many SMs
constexpr int kUnroll = int(kAgGatherLoadsInFlight);  // 16-byte loads in flight per thread

// acq_rel: releases this piece's copies and, for the last arriver, acquires the other pieces' before it
// publishes the block (a release-only add would let the last arriver publish copies it has not seen).
__device__ __forceinline__ uint32_t atom_add_acq_rel_gpu(uint32_t* p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

__global__ void __launch_bounds__(kThreads, 1) ag_gather_kernel(AgGatherParams p) {
  // This CTA is resident: the GEMM, launched as our programmatic dependent, may start once every CTA
  // of the gather has said so (it never starts before: the guarantee its waits rely on).
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int64_t row_bytes = p.k * p.elem_bytes;
  const uint32_t epoch = *p.epoch;
  const RowSegments shards{p.m, p.shard_rows}, blocks{p.m, p.block_rows};
  int64_t unit = 0;  // running index of (shard, block) pieces; CTA c takes pieces c, c + gridDim.x, ...
  for (int32_t t = 0; t < p.world; ++t) {
    const int32_t s = (p.rank + t) % p.world;
    const int64_t s0 = shards.begin(s), s1 = shards.end(s);
    if (s1 <= s0) continue;
    for (int32_t b = blocks.first(s0); b <= blocks.last(s1); ++b, ++unit) {
      if (unit % gridDim.x != blockIdx.x) continue;
      const int64_t r0 = blocks.begin(b) > s0 ? blocks.begin(b) : s0;
      const int64_t r1 = blocks.end(b) < s1 ? blocks.end(b) : s1;
      if (s != p.rank) {
        if (threadIdx.x == 0) {
          chaos_delay(p.ctx.chaos_seed, uint32_t(unit) * 17u + 3u);
          WaitContext ctx = p.ctx;
          ctx.peer = s;
          wait_flag_geq(p.ready + s, epoch, s, ctx);  // a timeout is recorded; the kernel goes on
        }
        __syncthreads();
        const uint4* src = reinterpret_cast<const uint4*>(static_cast<const char*>(p.buffers[s]) + r0 * row_bytes);
        uint4* dst = reinterpret_cast<uint4*>(static_cast<char*>(p.buffers[p.rank]) + r0 * row_bytes);
        const int64_t vecs = (r1 - r0) * row_bytes / 16;
        for (int64_t v0 = threadIdx.x; v0 < vecs; v0 += int64_t(kThreads) * kUnroll) {
          uint4 x[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            if (v0 + int64_t(u) * kThreads < vecs) x[u] = src[v0 + int64_t(u) * kThreads];
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            if (v0 + int64_t(u) * kThreads < vecs) dst[v0 + int64_t(u) * kThreads] = x[u];
          }
        }
        if (p.scale_offset >= 0) {  // the piece's row scales (a piece is at most one block: <= 256 rows)
          const float* ssrc = reinterpret_cast<const float*>(static_cast<const char*>(p.buffers[s]) + p.scale_offset);
          float* sdst = reinterpret_cast<float*>(static_cast<char*>(p.buffers[p.rank]) + p.scale_offset);
          for (int64_t i = r0 + threadIdx.x; i < r1; i += kThreads) sdst[i] = ssrc[i];
        }
      }
      __syncthreads();  // the piece is written (by every thread) before thread 0 counts it
      if (threadIdx.x == 0) {
        chaos_delay(p.ctx.chaos_seed, uint32_t(b) * 29u + 5u);
        const uint32_t needed = uint32_t(shards.touched(blocks.begin(b), blocks.end(b)));
        if (atom_add_acq_rel_gpu(p.parts + b, 1u) + 1u == needed) st_release_sys(p.flags + b, epoch);
      }
    }
  }
}

__global__ void ag_release_blocks_kernel(AgGatherParams p, int step) {
  const uint32_t epoch = *p.epoch;
  for (int32_t b = threadIdx.x; b < p.num_blocks; b += blockDim.x) {
    const RowSegments shards{p.m, p.shard_rows}, blocks{p.m, p.block_rows};
    const int64_t r0 = blocks.begin(b), r1 = blocks.end(b);
    int done_at = 0;  // the last ring step among the shards the block's rows touch
    for (int32_t s = shards.first(r0); s <= shards.last(r1); ++s) {
      const int t = int((s - p.rank + p.world) % p.world);
      done_at = t > done_at ? t : done_at;
    }
    if (done_at == step) st_release_sys(p.flags + b, epoch);
  }
}

}  // namespace

void launch_ag_release_blocks(const AgGatherParams& params, int step, cudaStream_t stream) {
  ag_release_blocks_kernel<<<1, 256, 0, stream>>>(params, step);
  FLUX_CUDA_CHECK_LAUNCH("ag_release_blocks_kernel");
}

void launch_ag_gather(const AgGatherParams& params, int ctas, cudaStream_t stream) {
  FLUX_CHECK(params.world >= 1 && params.shard_rows >= 1 && (params.k * params.elem_bytes) % 16 == 0 &&
                 (params.scale_offset < 0 || params.scale_offset % 16 == 0),
             "ag gather: world ", params.world, " shard_rows ", params.shard_rows, " k ", params.k, " elem_bytes ",
             params.elem_bytes, " scale_offset ", params.scale_offset);
  ag_gather_kernel<<<ctas, kThreads, 0, stream>>>(params);
  FLUX_CUDA_CHECK_LAUNCH("ag_gather_kernel");
}

}  // namespace flux::device
