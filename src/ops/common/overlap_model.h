// src/ops/common/overlap_model.h — predicted time of each path of a fused op, from component rates.
//
// Host arithmetic only (CPU-tested). Inputs: the per-rank GEMM's time on all SMs and on the SMs the
// fused path leaves it (SMs - k), the side kernel's own copy rate on its k SMs and the bytes it keeps in
// flight, the unfused collective's bus bandwidth, the fused path's fixed cost per call, and the link
// (bandwidth per direction, latency). `flux-bench model` measures the GPU-side rates on the GPU it runs
// on and takes the link from LinkSpec's defaults or its flags; the multi-GPU measurement is what will
// check the model.
//
// Paths, for one rank of W, with C the bytes that rank must move (GEMM+RS: the W-1 peers' partial
// tiles of its M/W rows, (W-1) * M/W * N * 2; AG+GEMM: the W-1 peers' shards, (W-1) * M/W * K * 2;
// GEMM+AR one-shot: every peer's whole partial, (W-1) * M * N * 2):
//   sequential  G_all + C_seq / collective + latency             (cuBLAS/GEMM core, then NCCL; C_seq = C,
//               but for GEMM+AR the ring all-reduce's 2 (W-1)/W * M * N * 2)
//   fused       fixed + a two-stage pipeline of W GEMM steps (G_k / W each) and W-1 communication
//               steps (C / pull / (W-1) each, pull = min(kernel rate, link, in-flight / latency)):
//                 GEMM+RS  max(G_k + c, g + C)   (the last segment's pulls follow the GEMM's last step)
//                 AG+GEMM  max(G_k, C + g)       (the local shard first; the last shard's GEMM step last)
//                 GEMM+AR  one-shot as GEMM+RS with its C
//   two_shot    GEMM+AR only: fixed + GEMM+RS's pipeline over C1 = (W-1)/W * M * N * 2 (each rank sums
//               its segment), then the gather of the W-1 reduced segments, C1 / pull + latency, after it
//   rs_ag       GEMM+AR only: the composition of the two ops, GEMM+RS's fused path over C1 (as two-shot's
//               first shot), then the collective's all-gather of the reduced segments, C1 / collective +
//               latency, after it
//   decomposed  D chunks, each chunk's GEMM (G_c: its N / D columns, or AG+GEMM's one shard, on the SMs the
//               collective beside it leaves) pipelined with the collective per chunk (c = C_seq / D +
//               latency): max(D G_c + c, G_c + D c) plus a launch cost per chunk; G_c defaults to G_all / D
// hidden fraction = (sequential - the best fused path: fused; GEMM+AR also two_shot, rs_ag) / (sequential's
// communication time), clamped to [0, 1].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flux::ops {

// NVLink 4 on H100 / H200 SXM: 18 links x 25 GB/s per direction = 450 GB/s per GPU per direction
// (NVIDIA's H100 and H200 datasheets give "NVLink: 900 GB/s", both directions). The latency is an
// assumption (a remote load round trip over NVSwitch is a few microseconds); override both with
// `flux-bench model --link-gbps / --link-latency-us`.
struct LinkSpec {
  double bandwidth_gbps = 450.0;  // GB/s per direction, per GPU
  double latency_us = 3.0;
};

struct ComponentRates {
  double gemm_us_all_sms = 0;       // the per-rank GEMM on every SM
  double gemm_us_reduced_sms = 0;   // on SMs - k (the fused path's share)
  double pull_kernel_gbps = 0;      // the side kernel's own rate on its k SMs (local memory: no link)
  double pull_bytes_in_flight = 0;  // bytes it keeps outstanding across its SMs (Little's law)
  double collective_gbps = 0;       // the unfused collective's bus bandwidth; 0 = 80% of the link
  double fused_fixed_us = 0;        // barrier + side-kernel launch per call
  double chunk_launch_us = 5.0;     // decomposed: per-chunk launch and event cost
  double gemm_us_chunk = 0;         // decomposed: one chunk's GEMM beside the collective; 0 = G_all / D
  int elem_bytes = 2;               // bytes of an element moved: 2 (bf16 / fp16; every op's partials), 1 (AG+GEMM's e4m3 A)
};

enum class FusedOp { kGemmRs, kAgGemm, kGemmAr };

struct PathTimes {
  double sequential_us = 0, fused_us = 0, decomposed_us = 0;
  double two_shot_us = 0;         // GEMM+AR only (0 otherwise)
  double rs_ag_us = 0;            // GEMM+AR only (0 otherwise)
  double comm_bytes = 0;          // C
  double pull_gbps = 0;           // the fused path's effective rate
  double comm_fused_us = 0;       // C at that rate (+ latency)
  double comm_sequential_us = 0;  // C at the collective's rate (+ latency)
  double hidden_fraction = 0;
  std::string best;               // "sequential", "fused", "decomposed" or (GEMM+AR) "two_shot", "rs_ag"
  std::string limit;              // what bounds the fused path's pull rate: "kernel", "link" or "in-flight"
};

// The bytes rank r moves for the op (see the file comment); m, n, k are the per-rank GEMM's M, N, K.
double fused_op_comm_bytes(FusedOp op, int64_t m, int64_t n, int64_t k, int world, int elem_bytes = 2);

// Throws InvalidArgument on a negative or missing rate, W < 1, or a shape < 1.
PathTimes predict_paths(FusedOp op, int64_t m, int64_t n, int64_t k, int world, const ComponentRates& rates,
                        const LinkSpec& link = {}, int decomposed_chunks = 4);

// Every path of `op` with its time in `t`, in the order ties are broken by (the fused paths first: they take
// no extra memory; GEMM+AR's two_shot and rs_ag next; then sequential, decomposed). `overlapped`: the path
// hides communication behind the GEMM (what the hidden fraction compares with sequential).
struct PathTime {
  const char* name;  // as PathTimes::best
  double us;
  bool overlapped;
};
std::vector<PathTime> path_times(FusedOp op, const PathTimes& t);

// The bytes a kernel must keep in flight to reach `gbps` at `latency_us` (Little's law).
inline double bytes_in_flight_needed(double gbps, double latency_us) { return gbps * 1e9 * latency_us * 1e-6; }

}  // namespace flux::ops
