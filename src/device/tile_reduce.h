// src/device/tile_reduce.h — the tile reduction of GEMM+RS and GEMM+AR, and GEMM+AR two-shot's gather (launch
// interfaces, plain data): the fused ops' side kernels, with the other device pieces.
//
// Rank r owns output rows [r * segment_rows, (r + 1) * segment_rows). Every rank s has written its
// partial C_s [m, n] into its symmetric buffer P_s and released, per tile (i, j) of a tile_m x tile_n
// grid, flags_s[i * tiles_n + j] = epoch (read from device memory: the call's epoch). The reduction on rank r walks the tiles that intersect its
// rows, column band by column band (the GEMM's outermost order), and for each band takes the sources
// in ring order s = r-1, r-2, ..., r (the order in which the rank-rotated GEMMs produce segment r):
//   step 0: acc = P_s;  steps 1..W-2: acc += P_s;  step W-1 (s = r): out = acc + P_r + bias
// in fp32, so the sum has one fixed order (bitwise reproducible). A tile is read only after its flag
// (acquire, system scope, bounded: a timeout names the rank, the peer and the tile). Each tile is
// always handled by the same CTA and the same threads, so acc needs no synchronization across steps.
// bands [band_begin, band_end) of col_bands select a sub-range (the decomposed path reduces one
// column chunk at a time).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "flux/types.h"
#include "src/device/wait_context.h"

namespace flux::device {

struct RsReduceParams {
  int64_t m = 0, n = 0, segment_rows = 0;
  int32_t rank = 0, world = 1;
  int32_t tile_m = 128, tile_n = 128;   // the grid the flags index
  int32_t tiles_m = 0, tiles_n = 0;
  int32_t cluster_n = 1;                // tiles per unit column (bands are in unit columns)
  int32_t units_n = 0;                  // unit columns
  int32_t col_bands = 1;
  int32_t band_begin = 0, band_end = 1;
  void* const* partials = nullptr;      // [world] P_s; this reduction reads P_s + partial_offset as [m, n]
  int64_t partial_offset = 0;           // elements
  uint32_t* const* flags = nullptr;     // [world] tile flags of each rank, from flags_s + flag_offset
  int64_t flag_offset = 0;              // entries
  const uint32_t* epoch = nullptr;      // device word: the call's epoch (the flags' awaited value)
  float* acc = nullptr;                 // [segment_rows, n] fp32, local
  void* out = nullptr;                  // [segment_rows, n] of dtype, rows out_ld elements apart
  int64_t out_ld = 0;                   // 0: n
  const void* bias = nullptr;           // [n] of dtype or null
  device::WaitContext ctx{};
};

// Launches `ctas` CTAs of the reduction on `stream` (throws CudaError on a launch failure).
void launch_gemm_rs_reduce(DType dtype, const RsReduceParams& params, int ctas, cudaStream_t stream);

// GEMM+AR two-shot, the second shot. The first is the reduction above run as GEMM+RS (rank r sums the
// W partials of its segment r of segment_rows rows) into its symmetric buffer R_r, at the segment's own
// rows, after which flags_r[flag_index] = epoch. This kernel copies every segment s, once
// flags_s[flag_index] has the epoch (acquire, system scope, bounded: a timeout names the rank, the peer
// and the flag), from R_s into out [m, n]: every rank gets the same bits (each segment was summed by one
// rank only). Segments are taken in ring order from this rank's own; the CTAs split each segment.
struct ArGatherParams {
  int64_t m = 0, n = 0, segment_rows = 0;
  int32_t rank = 0, world = 1;
  int32_t elem_bytes = 2;
  void* const* reduced = nullptr;    // [world] R_s [m, n] of dtype
  uint32_t* const* flags = nullptr;  // [world] each rank's flag words
  int64_t flag_index = 0;            // the "segment reduced" flag among them
  const uint32_t* epoch = nullptr;   // device word: the call's epoch
  void* out = nullptr;               // [m, n] of dtype, local
  device::WaitContext ctx{};
};
void launch_ar_gather(const ArGatherParams& params, int ctas, cudaStream_t stream);

// flags[i] = *epoch for i < count (the unfused paths publish a whole GEMM at once).
void launch_fill_flags(uint32_t* flags, int64_t count, const uint32_t* epoch, cudaStream_t stream);

}  // namespace flux::device
