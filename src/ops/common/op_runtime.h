// src/ops/common/op_runtime.h — what every fused op's plan shares, written once: the communicator and
// its device, the per-call protocol and the streams and cuBLAS workspaces of the unfused paths.
//
// The per-call protocol (every path of every op, W > 1):
//   begin()  throws the communicator's first failure (fail-stop: no call runs after a fault); orders
//            this call's stream after the previous call of the plan, whatever stream that ran on
//            (eager calls; see below for graphs); then the device barrier (SignalSet), which advances
//            the per-call epoch on the device and refreshes the plan's flags to epoch - 1. Every
//            kernel of the call reads the epoch from the device (epoch()), never a host copy, so a CUDA
//            graph that captured a call replays it right any number of times, mixed with eager calls.
//   fork() / join()  a side stream for the kernels that run beside the GEMM, forked from and joined
//            back into the call's stream.
//   end()    marks the call complete for the next call's ordering.
// Graphs: a captured call is ordered by the replay's stream like any CUDA graph work: replays must be
// ordered (on one stream, or by events) after the plan's previous eager call or replay, as every
// graph's work must be ordered after the work it depends on.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "flux/baseline/cublas_gemm.h"
#include "flux/gemm.h"
#include "flux/runtime.h"
#include "src/device/wait_context.h"

namespace flux::ops {

struct OpRuntimeOptions {
  int signal_count = 1;        // the op's own flags in its SignalSet (AG+GEMM: one "shard ready" per source)
  uint32_t initial_epoch = 1;  // the first call's epoch (tests start near 2^32 to cross the wrap)
};

class OpRuntime {
 public:
  OpRuntime(Communicator& comm, const std::string& op, const OpRuntimeOptions& options);
  ~OpRuntime();
  OpRuntime(const OpRuntime&) = delete;
  OpRuntime& operator=(const OpRuntime&) = delete;

  SignalSet& signals() const { return *signals_; }  // W > 1 only
  cudaStream_t side() const { return side_; }
  // cuBLAS handles + workspace per stream: 0 for the call's stream, 1 for the side stream.
  const CublasWorkspace& cublas(int slot) const { return *cublas_[slot]; }

  // The per-call protocol (see the file comment). `refresh`: the plan's flags (symmetric or local)
  // the barrier sets to epoch - 1.
  void begin(cudaStream_t stream, const FlagRange* refresh, int refresh_count);
  void fork(cudaStream_t stream);
  void join(cudaStream_t stream);
  void end(cudaStream_t stream);

  const uint32_t* epoch() const { return signals_->epoch(); }
  // The fields every side kernel's parameters share (tile reduce, block gather, GEMM+AR's gather): the
  // call's M in segments of `segment_rows` (one per rank), this rank of W, the call's device epoch and the
  // bounded-wait context.
  template <typename Params>
  void set_ring(Params& p, int64_t m, int64_t segment_rows, int rank, int world) const {
    p.m = m;
    p.segment_rows = segment_rows;
    p.rank = rank;
    p.world = world;
    p.epoch = epoch();
    p.ctx = wait_context(-1);
  }
  FaultDomain fault() const { return comm_->fault_domain(); }
  device::WaitContext wait_context(int peer) const;

  void release();  // collective: frees the signals (the plan frees its own buffers)

 private:
  Communicator* comm_ = nullptr;
  uint32_t chaos_seed_ = 0;  // knob FLUX_CHAOS_SEED, read once
  std::unique_ptr<SignalSet> signals_;
  std::unique_ptr<CublasWorkspace> cublas_[2];
  cudaStream_t side_ = nullptr;
  cudaEvent_t fork_ = nullptr, join_ = nullptr, done_ = nullptr;
  cudaStream_t last_stream_ = nullptr;
  bool has_last_ = false;  // done_ marks the end of the previous (eager) call
};

// True while `stream` is being captured into a CUDA graph.
bool stream_is_capturing(cudaStream_t stream);

}  // namespace flux::ops
