// tools/bench/bench_p2p.cu — `flux-bench p2p`, run as W ranks (flux-run -n W [--mps] -- flux-bench p2p):
// rank 0 against rank 1 through the symmetric heap:
//   memcpy_async  cudaMemcpyAsync from rank 1's buffer into rank 0's (peer on another GPU: the copy
//                 engine over NVLink; peer on the same GPU: the driver's device-to-device copy)
//   sm_store      a kernel on rank 0 writing rank 1's buffer with 16-byte stores
//   sm_load       a kernel on rank 0 reading rank 1's buffer with 16-byte loads
//   signal_roundtrip  rank 0 raises a flag on rank 1, rank 1 answers; time per round trip
// Medians over --iters timed runs (CUDA events) after warm-up; copies are checked word by word.
// Rank 0 prints the table and writes the JSON lines (op "p2p").
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "flux/runtime.h"
#include "src/common/check.h"
#include "src/device/signal.cuh"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_p2p.h"
#include "tools/common/json.h"
#include "tools/common/timing.h"

namespace flux::bench {

namespace {

__global__ void fill_words(uint32_t* p, int64_t n, uint32_t salt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    p[i] = uint32_t(i) * 2654435761u ^ salt;
  }
}

__global__ void count_mismatch(const uint32_t* p, int64_t n, uint32_t salt, unsigned long long* bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (p[i] != (uint32_t(i) * 2654435761u ^ salt)) atomicAdd(bad, 1ull);
  }
}

__global__ void copy_vec(uint4* dst, const uint4* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__global__ void pingpong_kernel(uint32_t* const* peers, int rank, uint32_t base, int rounds, device::WaitContext ctx) {
  const int other = 1 - rank;
  ctx.peer = other;
  for (int i = 1; i <= rounds; ++i) {
    uint32_t v = base + uint32_t(i);
    if (rank == 0) {
      device::st_release_sys(peers[other], v);
      if (!device::wait_flag_geq(peers[rank], v, 0, ctx)) return;
    } else {
      if (!device::wait_flag_geq(peers[rank], v, 0, ctx)) return;
      device::st_release_sys(peers[other], v);
    }
  }
}

}  // namespace

int run_p2p_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  Args args(argv, {"--bytes", "--iters", "--warmup", "--rounds", "--json"}, {});
  const int iters = static_cast<int>(args.get_int("--iters", 20));
  const int warmup = static_cast<int>(args.get_int("--warmup", 3));
  const int rounds = static_cast<int>(args.get_int("--rounds", 2000));
  FLUX_CHECK_ARG(iters >= 20, "flux-bench p2p: --iters ", iters, " (the project reports medians of >= 20)");
  std::vector<int64_t> sizes;
  for (const std::string& s : args.get_list("--bytes", "65536,1048576,16777216,268435456")) {
    sizes.push_back(std::stoll(s));
    FLUX_CHECK_ARG(sizes.back() >= 16 && sizes.back() % 16 == 0, "flux-bench p2p: --bytes ", s,
                   " (expected multiples of 16)");
  }
  Communicator comm;
  const int r = comm.rank(), w = comm.world_size();
  FLUX_CHECK_ARG(w >= 2, "flux-bench p2p: needs at least 2 ranks (run it as flux-run -n 2 -- flux-bench p2p)");
  const bool mps = std::getenv("CUDA_MPS_PIPE_DIRECTORY") != nullptr;
  cudaDeviceProp prop{};
  FLUX_CUDA_CHECK(cudaGetDeviceProperties(&prop, comm.device()));
  const std::string date = tools::utc_now_iso8601();
  std::unique_ptr<std::ofstream> json;
  if (r == 0 && !args.get("--json", "").empty()) {
    json = std::make_unique<std::ofstream>(args.get("--json", ""), std::ios::out | std::ios::trunc);
    FLUX_CHECK_ARG(json->good(), "flux-bench p2p: cannot write --json ", args.get("--json", ""));
  }
  cudaStream_t stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long* bad = nullptr;
  FLUX_CUDA_CHECK(cudaMalloc(&bad, sizeof(*bad)));
  auto row = [&](const char* impl, int64_t bytes, double ms, double gbps, double us, std::optional<double> err) {
    if (!json) return;
    tools::JsonLine line;
    line.add("op", "p2p").add("impl", impl).add("dtype", "u8").add("m", bytes).add("n", int64_t(1)).add("k", int64_t(1))
        .add("world_size", w).add("median_ms", ms).add_null("tflops").add("max_rel_err", err).add("bytes", bytes);
    if (gbps > 0) line.add("gbps", gbps);
    if (us > 0) line.add("us", us);
    line.add("mps", mps).add("same_gpu", comm.shares_gpu()).add("iters", iters).add("gpu", prop.name).add("date", date)
        .add("command", command_line);
    *json << line.str() << "\n";
    json->flush();
  };
  if (r == 0) {
    std::printf("flux-bench p2p: %d ranks on %s, %s, peers %s\n", w, prop.name, mps ? "MPS" : "no MPS",
                comm.shares_gpu() ? "on the same GPU" : "on distinct GPUs");
    std::printf("%-18s %12s %10s %10s %8s\n", "impl", "bytes", "ms", "GB/s", "errors");
  }

  for (int64_t bytes : sizes) {
    SymmetricBuffer src(comm, size_t(bytes), "p2p src");
    SymmetricBuffer dst(comm, size_t(bytes), "p2p dst");
    const int64_t words = bytes / 4;
    const uint32_t salt = 0xabc00000u + uint32_t(r);
    fill_words<<<264, 256, 0, stream>>>(static_cast<uint32_t*>(src.local()), words, salt);
    FLUX_CUDA_CHECK_LAUNCH("fill_words");
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    comm.barrier("p2p filled");
    if (r == 0) {
      const uint32_t peer_salt = 0xabc00000u + 1u;
      auto* local_dst = static_cast<uint4*>(dst.local());
      auto* peer_src = static_cast<const uint4*>(src.peer(1));
      auto* peer_dst = static_cast<uint4*>(dst.peer(1));
      auto* local_src = static_cast<const uint4*>(src.local());
      std::vector<tools::TimedRun> runs = {
          {"memcpy_async",
           [&](int) {
             FLUX_CUDA_CHECK(cudaMemcpyAsync(local_dst, peer_src, size_t(bytes), cudaMemcpyDeviceToDevice, stream));
           }},
          {"sm_load",
           [&](int) {
             copy_vec<<<264, 512, 0, stream>>>(local_dst, peer_src, bytes / 16);
             FLUX_CUDA_CHECK_LAUNCH("copy_vec");
           }},
          {"sm_store",
           [&](int) {
             copy_vec<<<264, 512, 0, stream>>>(peer_dst, local_src, bytes / 16);
             FLUX_CUDA_CHECK_LAUNCH("copy_vec");
           }},
      };
      auto times = tools::time_interleaved(runs, stream, warmup, iters);
      // Check: local dst holds rank 1's source (after sm_load, the last writer of local dst).
      FLUX_CUDA_CHECK(cudaMemsetAsync(bad, 0, sizeof(*bad), stream));
      count_mismatch<<<264, 256, 0, stream>>>(static_cast<uint32_t*>(dst.local()), words, peer_salt, bad);
      count_mismatch<<<264, 256, 0, stream>>>(static_cast<uint32_t*>(dst.peer(1)), words, salt, bad);
      unsigned long long host_bad = 0;
      FLUX_CUDA_CHECK(cudaMemcpyAsync(&host_bad, bad, sizeof(host_bad), cudaMemcpyDeviceToHost, stream));
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (size_t i = 0; i < runs.size(); ++i) {
        double ms = tools::median(times[i]);
        double gbps = double(bytes) / (ms * 1e-3) / 1e9;
        row(runs[i].name.c_str(), bytes, ms, gbps, 0, host_bad == 0 ? 0.0 : 1.0);
        std::printf("%-18s %12lld %10.4f %10.1f %8llu\n", runs[i].name.c_str(), (long long)bytes, ms, gbps, host_bad);
      }
    }
    FLUX_CUDA_CHECK(cudaDeviceSynchronize());
    comm.barrier("p2p size done");
    dst.release();
    src.release();
  }

  // Signal round trips between ranks 0 and 1.
  SignalSet flags(comm, 1, "p2p pingpong");
  device::WaitContext ctx;
  ctx.status = flags.device_status();
  ctx.timeout_ns = flags.wait_timeout_ns();
  ctx.site = WaitSite::kSignalWait;
  ctx.rank = r;
  std::vector<float> per_trip_us;
  uint32_t base = 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  FLUX_CUDA_CHECK(cudaEventCreate(&start));
  FLUX_CUDA_CHECK(cudaEventCreate(&stop));
  for (int it = 0; it < warmup + iters; ++it) {
    comm.barrier("pingpong start");
    if (r < 2) {
      FLUX_CUDA_CHECK(cudaEventRecord(start, stream));
      pingpong_kernel<<<1, 1, 0, stream>>>(flags.device_peers(), r, base, rounds, ctx);
      FLUX_CUDA_CHECK_LAUNCH("pingpong_kernel");
      FLUX_CUDA_CHECK(cudaEventRecord(stop, stream));
      FLUX_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      FLUX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (it >= warmup) per_trip_us.push_back(ms * 1000.0f / float(rounds));
    }
    base += uint32_t(rounds);
  }
  flags.check_status();
  if (r == 0) {
    double us = tools::median(per_trip_us);
    row("signal_roundtrip", 4, us * rounds / 1000.0, 0, us, std::nullopt);
    std::printf("%-18s %12s %10s %10s    %.2f us per round trip (median of %d runs of %d)\n", "signal_roundtrip", "-",
                "-", "-", us, iters, rounds);
  }
  comm.barrier("p2p end");
  flags.release();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(bad);
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace flux::bench
