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

// Rows [r0, r1) of rank s's shard into this rank's buffer, and their FP8 row scales.
__device__ __forceinline__ void copy_rows(const AgGatherParams& p, int32_t s, int64_t r0, int64_t r1, int64_t row_bytes) {
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
  if (p.scale_offset >= 0) {  // the rows' scales (a piece is at most one block: <= 256 rows)
    const float* ssrc = reinterpret_cast<const float*>(static_cast<const char*>(p.buffers[s]) + p.scale_offset);
    float* sdst = reinterpret_cast<float*>(static_cast<char*>(p.buffers[p.rank]) + p.scale_offset);
    for (int64_t i = r0 + threadIdx.x; i < r1; i += kThreads) sdst[i] = ssrc[i];
  }
}

// How many row chunks each piece of shard s is cut into: one piece per CTA when the shard has at least as
// many blocks as there are CTAs, else ceil(CTAs / blocks), so that a short shard is still copied by every
// CTA. (Always one chunk per CTA, measured on the H200 with `flux-bench model`: a 3 MB shard went from 39
// to 125 GB/s on 8 SMs but shards of 8 blocks and more fell from ~240 to ~145 GB/s, the per-chunk wait,
// barriers and count outweighing 16-row copies.)
__device__ __forceinline__ int32_t chunks_of(const RowSegments& shards, const RowSegments& blocks, int32_t s) {
  const int64_t s0 = shards.begin(s), s1 = shards.end(s);
  if (s1 <= s0) return 1;
  const int32_t nb = blocks.touched(s0, s1);
  const int32_t ctas = static_cast<int32_t>(gridDim.x);
  return nb >= ctas ? 1 : (ctas + nb - 1) / nb;
}

__global__ void __launch_bounds__(kThreads, 1) ag_gather_kernel(AgGatherParams p) {
  const uint32_t epoch = *p.epoch;
  if (p.all_ready_first) {
    // Ranks share this GPU: every peer's shard is in place (its barrier, copy and ready kernels have run)
    // before the GEMM's waiting CTAs may take SMs; thread s waits for ready[s].
    if (threadIdx.x < p.world && int32_t(threadIdx.x) != p.rank) {
      WaitContext ctx = p.ctx;
      ctx.peer = static_cast<int32_t>(threadIdx.x);
      wait_flag_geq(p.ready + threadIdx.x, epoch, static_cast<int32_t>(threadIdx.x), ctx);  // a timeout is recorded
    }
    __syncthreads();
  }
  // This CTA is resident: the GEMM, launched as our programmatic dependent, may start once every CTA
  // of the gather has said so (it never starts before: the guarantee its waits rely on).
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int64_t row_bytes = p.k * p.elem_bytes;
  const RowSegments shards{p.m, p.segment_rows}, blocks{p.m, p.block_rows};
  int64_t unit = 0;  // running index of (shard, block, chunk); CTA c takes units c, c + gridDim.x, ...
  for (int32_t t = 0; t < p.world; ++t) {
    const int32_t s = (p.rank + t) % p.world;
    const int64_t s0 = shards.begin(s), s1 = shards.end(s);
    if (s1 <= s0) continue;
    const int32_t chunks = chunks_of(shards, blocks, s);
    bool ready = s == p.rank || p.all_ready_first;  // this CTA has seen ready[s] (once per shard)
    for (int32_t b = blocks.first(s0); b <= blocks.last(s1); ++b) {
      const int64_t p0 = blocks.begin(b) > s0 ? blocks.begin(b) : s0;  // the piece: rows [p0, p1)
      const int64_t p1 = blocks.end(b) < s1 ? blocks.end(b) : s1;
      for (int32_t c = 0; c < chunks; ++c, ++unit) {
        if (unit % gridDim.x != blockIdx.x) continue;
        if (!ready) {
          if (threadIdx.x == 0) {
            chaos_delay(p.ctx.chaos_seed, uint32_t(unit) * 17u + 3u);
            WaitContext ctx = p.ctx;
            ctx.peer = s;
            wait_flag_geq(p.ready + s, epoch, s, ctx);  // a timeout is recorded; the kernel goes on
          }
          __syncthreads();
          ready = true;
        }
        if (s != p.rank) {
          copy_rows(p, s, p0 + (p1 - p0) * c / chunks, p0 + (p1 - p0) * (c + 1) / chunks, row_bytes);  // may be empty
        }
        __syncthreads();  // the chunk is written (by every thread) before thread 0 counts it
        if (threadIdx.x == 0) {
          chaos_delay(p.ctx.chaos_seed, uint32_t(b) * 29u + 5u);
          // Every chunk of every shard the block's rows touch.
          uint32_t needed = 0;
          for (int32_t q = shards.first(blocks.begin(b)); q <= shards.last(blocks.end(b)); ++q) {
            if (shards.end(q) > shards.begin(q)) needed += uint32_t(chunks_of(shards, blocks, q));
          }
          if (atom_add_acq_rel_gpu(p.parts + b, 1u) + 1u == needed) st_release_sys(p.flags + b, epoch);
        }
      }
    }
  }
}

__global__ void ag_release_blocks_kernel(AgGatherParams p, int step) {
  const uint32_t epoch = *p.epoch;
  for (int32_t b = threadIdx.x; b < p.num_blocks; b += blockDim.x) {
    const RowSegments shards{p.m, p.segment_rows}, blocks{p.m, p.block_rows};
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
  FLUX_CHECK(params.world >= 1 && params.segment_rows >= 1 && (params.k * params.elem_bytes) % 16 == 0 &&
                 (params.scale_offset < 0 || params.scale_offset % 16 == 0),
             "ag gather: world ", params.world, " shard_rows ", params.segment_rows, " k ", params.k, " elem_bytes ",
             params.elem_bytes, " scale_offset ", params.scale_offset);
  ag_gather_kernel<<<ctas, kThreads, 0, stream>>>(params);
  FLUX_CUDA_CHECK_LAUNCH("ag_gather_kernel");
}

}  // namespace flux::device
