// src/device/block_gather.h — the SM-driven block gather of AG+GEMM (launch interface, plain data): a fused
// op's side kernel, with the other device pieces.
//
// Every rank s has put its shard (rows [s * shard_rows, (s + 1) * shard_rows) of A) into its own
// symmetric buffer at those rows and raised ready[s] = epoch in every rank's memory (pushed). The gather
// on rank r visits the shards in ring order r, r+1, ..., r-1; the (shard, M-block) pieces of a shard with
// fewer blocks than the gather has CTAs are cut into ceil(CTAs / blocks) row chunks (else one chunk per
// piece), the chunks dealt round-robin to the CTAs; a CTA waits once per shard for its own ready[s]
// (acquire, system scope, bounded: a timeout names rank r, peer s and the shard), copies each chunk's rows
// from rank s's buffer into its own (16-byte vectors; nothing to copy for its own shard), and counts the
// chunk in parts[block] (acq_rel: the last arriver sees the other chunks' copies); the chunk that completes
// a block (every chunk of every shard its rows touch) releases flags[block] = epoch, which the GEMM core's
// producer waits for before loading the block. parts must be zero at entry. The
// epoch is read from device memory (the call's epoch). With FP8 row scales (scale_offset), a piece's
// scales travel with its rows, so a released block has its rows and their scales in place.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "src/device/wait_context.h"

namespace flux::device {

// Bytes one CTA (one SM) of the gather keeps in flight: 1024 threads x 8 loads of 16 bytes = 128 KB.
// Sized by Little's law: NVLink 4's 450 GB/s per direction at ~3 us of remote-load latency needs
// 450e9 x 3e-6 = 1.35 MB outstanding; on the default 8 gather SMs that is ~170 KB per SM. 8 loads per
// thread (1 MB on 8 SMs, 32 registers of loads; 64 is the limit at 1024 threads) is the most that fits
// without spills; until session 7 it was 2 (256 KB), a fifth of what the link needs. flux-bench model
// measures the kernel's own rate (local memory) and reports in-flight against need.
inline constexpr int64_t kAgGatherThreads = 1024;
inline constexpr int64_t kAgGatherLoadsInFlight = 8;
inline constexpr int64_t kAgGatherBytesInFlightPerSm = kAgGatherThreads * kAgGatherLoadsInFlight * 16;

struct AgGatherParams {
  int64_t m = 0, k = 0, segment_rows = 0;  // segment_rows: a shard's rows (M / W)
  int32_t rank = 0, world = 1;
  int32_t block_rows = 128;       // the GEMM core's tile_m
  int32_t num_blocks = 0;         // ceil(m / block_rows)
  int32_t elem_bytes = 2;                   // of A: 2 (bf16 / fp16) or 1 (e4m3)
  void* const* buffers = nullptr;           // [world] gathered buffers [m, k]
  // FP8 per-row scales: byte offset in every buffer of its fp32 row scales [m] (rank s's at rows of shard
  // s, in place with its rows), gathered with the rows of each piece before the piece is counted; -1: none.
  int64_t scale_offset = -1;
  const uint32_t* ready = nullptr;          // [world] this rank's "shard s ready" flags (pushed by rank s)
  // 1 (ranks sharing this GPU): every CTA waits for every shard's ready flag before it lets the dependent
  // GEMM start, so the GEMM's spinning CTAs never hold SMs that a peer's barrier, shard copy or ready
  // kernel still needs (those peers' kernels run on this GPU). 0 (one GPU per rank): the GEMM may start at
  // once, on the local shard. Reasons: docs/NOTES.md, co-residency.
  int32_t all_ready_first = 0;
  const uint32_t* epoch = nullptr;          // device word: the call's epoch
  uint32_t* flags = nullptr;                // [num_blocks], local
  uint32_t* parts = nullptr;                // [num_blocks], local scratch, zero at entry
  device::WaitContext ctx{};
};

void launch_ag_gather(const AgGatherParams& params, int ctas, cudaStream_t stream);

// fused_ce: one CTA releasing flags[block] = epoch for every block whose last shard, in ring order from
// this rank, is the one of ring step `step` (the copy engine has just brought it in).
void launch_ag_release_blocks(const AgGatherParams& params, int step, cudaStream_t stream);

}  // namespace flux::device
