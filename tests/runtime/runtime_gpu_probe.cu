// tests/runtime/runtime_gpu_probe.cu — one rank of a GPU runtime test job (run under flux-run -n W,
// with or without --mps). Checks, printing "probe <check>: ok" for each:
//   heap        all-to-all peer writes and remote reads of a symmetric buffer, element by element;
//   pingpong    signal ping-pong between ranks 0 and 1 (1000 round trips, device set/wait);
//   barrier     200 device barriers across all ranks, with a per-rank counter checked after each;
//   stream      stream-ordered set (copy engine) / wait (one-thread kernel, bounded) in a ring, and
//               epoch signals: 100 barriers each followed by set_epoch / wait_epoch around the ring;
//   sleep       every rank's stream first runs a kernel busy for 1.5x the wait timeout, then a stream
//               wait whose peer signals promptly: no false timeout (deadlines count from when the GPU
//               reaches a wait, not from when the host enqueued it);
//   timeout     rank 0 waits for a signal nobody sets: the error names rank 0, peer 1 and the signal;
//               fail-stop: every rank's communicator then reports that same first failure, a later
//               wait returns at once, and the host collectives still work;
//   cycles      1000 allocate / free cycles of a symmetric buffer without device memory growth;
//   nccl        with ranks sharing a GPU, NCCL is unavailable and says why.
// Exit 0 when every check passed; a failure prints "probe FAIL ..." and exits 1.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "flux/error.h"
#include "flux/runtime.h"
#include "src/common/check.h"
#include "src/device/signal.cuh"

namespace {

int g_rank = 0;
bool g_ok = true;

void check(bool cond, const std::string& what) {
  if (!cond) {
    std::printf("probe FAIL rank %d: %s\n", g_rank, what.c_str());
    g_ok = false;
  }
}

// Value rank `src` writes at element i of its slot in rank `dst`'s buffer.
__host__ __device__ uint32_t pattern(int src, int dst, int64_t i) {
  return 0x9e3779b9u * uint32_t(src + 1) ^ (0x85ebca6bu * uint32_t(dst + 7)) ^ uint32_t(i * 2654435761ull);
}

// Rank `rank` writes its slot (slot_elems words) in every peer's buffer, with 16-byte stores.
__global__ void write_peers(void* const* peers, int world, int rank, int64_t slot_elems) {
  for (int dst = 0; dst < world; ++dst) {
    uint32_t* slot = static_cast<uint32_t*>(peers[dst]) + int64_t(rank) * slot_elems;
    for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * 4; i < slot_elems;
         i += int64_t(gridDim.x) * blockDim.x * 4) {
      uint4 v = make_uint4(pattern(rank, dst, i), pattern(rank, dst, i + 1), pattern(rank, dst, i + 2),
                           pattern(rank, dst, i + 3));
      *reinterpret_cast<uint4*>(slot + i) = v;
    }
  }
}

// Counts elements of `buf` (world slots) that differ from what their writer should have written.
__global__ void verify_slots(const uint32_t* buf, int world, int me, int64_t slot_elems, unsigned long long* bad) {
  for (int src = 0; src < world; ++src) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < slot_elems; i += int64_t(gridDim.x) * blockDim.x) {
      if (buf[int64_t(src) * slot_elems + i] != pattern(src, me, i)) atomicAdd(bad, 1ull);
    }
  }
}

// Remote reads: rank `me` reads what rank `me` wrote into peer `peer`'s buffer.
__global__ void verify_remote(const uint32_t* peer_buf, int me, int peer, int64_t slot_elems, unsigned long long* bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < slot_elems; i += int64_t(gridDim.x) * blockDim.x) {
    if (peer_buf[int64_t(me) * slot_elems + i] != pattern(me, peer, i)) atomicAdd(bad, 1ull);
  }
}

__global__ void pingpong(uint32_t* const* peers, int rank, int rounds, flux::device::WaitContext ctx) {
  // Rank 0 raises flag 0 on rank 1 to `i`; rank 1 answers on flag 0 of rank 0.
  const int other = 1 - rank;
  ctx.peer = other;
  for (int i = 1; i <= rounds; ++i) {
    if (rank == 0) {
      flux::device::st_release_sys(peers[other], uint32_t(i));
      if (!flux::device::wait_flag_geq(peers[rank], uint32_t(i), 0, ctx)) return;
    } else {
      if (!flux::device::wait_flag_geq(peers[rank], uint32_t(i), 0, ctx)) return;
      flux::device::st_release_sys(peers[other], uint32_t(i));
    }
  }
}

__global__ void bump(uint32_t* counter) { atomicAdd(counter, 1u); }

__global__ void wait_one(const uint32_t* flag, uint32_t value, int index, flux::device::WaitContext ctx) {
  flux::device::wait_flag_geq(flag, value, index, ctx);
}

__global__ void busy_for(uint64_t ns) {
  const uint64_t start = flux::device::globaltimer_ns();
  while (flux::device::globaltimer_ns() - start < ns) {
  }
}

}  // namespace

int main() {
  try {
    flux::Communicator comm;
    g_rank = comm.rank();
    const int w = comm.world_size(), r = comm.rank();
    cudaStream_t stream = nullptr;
    FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned long long* bad = nullptr;
    FLUX_CUDA_CHECK(cudaMalloc(&bad, sizeof(*bad)));
    flux::SignalSet signals(comm, 16, "probe");

    {  // heap
      const int64_t slot = (int64_t(1) << 20) + 4 * r * 0;  // 4 MB per slot
      flux::SymmetricBuffer buf(comm, size_t(slot) * w * sizeof(uint32_t), "probe heap");
      write_peers<<<132, 256, 0, stream>>>(buf.device_peers(), w, r, slot);
      FLUX_CUDA_CHECK_LAUNCH("write_peers");
      signals.barrier_on_stream(stream);
      FLUX_CUDA_CHECK(cudaMemsetAsync(bad, 0, sizeof(*bad), stream));
      verify_slots<<<132, 256, 0, stream>>>(static_cast<uint32_t*>(buf.local()), w, r, slot, bad);
      for (int p = 0; p < w; ++p) {
        verify_remote<<<132, 256, 0, stream>>>(static_cast<uint32_t*>(buf.peer(p)), r, p, slot, bad);
      }
      FLUX_CUDA_CHECK_LAUNCH("verify");
      unsigned long long host_bad = 0;
      FLUX_CUDA_CHECK(cudaMemcpyAsync(&host_bad, bad, sizeof(host_bad), cudaMemcpyDeviceToHost, stream));
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      signals.check_status();
      check(host_bad == 0, "heap: " + std::to_string(host_bad) + " wrong elements");
      signals.barrier_on_stream(stream);  // nobody frees while a peer still reads
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      buf.release();
      if (g_ok) std::printf("probe heap: ok (%d ranks x %lld words checked locally and remotely)\n", w, (long long)slot);
    }

    if (w >= 2) {  // pingpong
      flux::SignalSet ping(comm, 1, "pingpong");
      flux::device::WaitContext ctx;
      ctx.status = ping.device_status();
      ctx.timeout_ns = ping.wait_timeout_ns();
      ctx.site = flux::WaitSite::kSignalWait;
      ctx.rank = r;
      if (r < 2) pingpong<<<1, 1, 0, stream>>>(ping.device_peers(), r, 1000, ctx);
      FLUX_CUDA_CHECK_LAUNCH("pingpong");
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      ping.check_status();
      uint32_t last = 0;
      FLUX_CUDA_CHECK(cudaMemcpy(&last, ping.local(), sizeof(last), cudaMemcpyDeviceToHost));
      check(r >= 2 || last == 1000u, "pingpong: last flag " + std::to_string(last));
      comm.barrier("pingpong done");
      ping.release();
      if (g_ok) std::printf("probe pingpong: ok\n");
    }

    {  // barrier: each rank bumps its counter, then after the barrier every peer's counter must be >= i
      flux::SymmetricBuffer counters(comm, sizeof(uint32_t), "probe counters");
      std::vector<uint32_t> seen(static_cast<size_t>(w));
      for (int i = 1; i <= 200; ++i) {
        bump<<<1, 1, 0, stream>>>(static_cast<uint32_t*>(counters.local()));
        signals.barrier_on_stream(stream);
        if (i % 50 == 0) {
          for (int p = 0; p < w; ++p) {
            FLUX_CUDA_CHECK(cudaMemcpyAsync(&seen[p], counters.peer(p), sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
          }
          FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          for (int p = 0; p < w; ++p) {
            check(seen[p] >= uint32_t(i), "barrier " + std::to_string(i) + ": rank " + std::to_string(p) +
                                              "'s counter is " + std::to_string(seen[p]));
          }
        }
      }
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      signals.check_status();
      signals.barrier_on_stream(stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      counters.release();
      if (g_ok) std::printf("probe barrier: ok\n");
    }

    {  // stream-ordered ring: set flag 1 on the next rank, wait for mine from the previous one
      for (uint32_t v = 1; v <= 100; ++v) {
        signals.set_on_stream((r + 1) % w, 1, v, stream);
        signals.wait_on_stream(1, v, (r + w - 1) % w, stream);
      }
      // Epoch signals: after each barrier (epoch e), rank r sets flag 2 + r = e on every rank and waits
      // for flag 2 + (r - 1) from the previous rank.
      flux::SignalSet epochs(comm, 2 + w, "probe epochs");
      for (int i = 0; i < 100; ++i) {
        epochs.barrier_on_stream(stream);
        epochs.set_epoch_on_stream(2 + r, stream);
        epochs.wait_epoch_on_stream(2 + (r + w - 1) % w, (r + w - 1) % w, stream);
      }
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      signals.check_status();
      uint32_t v = 0, e = 0;
      FLUX_CUDA_CHECK(cudaMemcpy(&v, signals.local() + 1, sizeof(v), cudaMemcpyDeviceToHost));
      check(v == 100u, "stream ring: flag is " + std::to_string(v));
      FLUX_CUDA_CHECK(cudaMemcpy(&e, epochs.local() + 2 + (r + w - 1) % w, sizeof(e), cudaMemcpyDeviceToHost));
      check(e == 100u, "epoch ring: flag is " + std::to_string(e) + " (expected the 100th epoch)");
      comm.barrier("stream ring done");
      epochs.release();
      if (g_ok) std::printf("probe stream: ok\n");
    }

    {  // sleep: the GPU reaches the wait 1.5 timeouts after the host enqueued it; the peer is prompt
      const uint64_t busy_ns = signals.wait_timeout_ns() * 3 / 2;
      busy_for<<<1, 1, 0, stream>>>(busy_ns);
      FLUX_CUDA_CHECK_LAUNCH("busy_for");
      signals.set_on_stream((r + 1) % w, 7, 1u, stream);
      signals.wait_on_stream(7, 1u, (r + w - 1) % w, stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::string text;
      try {
        signals.check_status();
      } catch (const flux::Error& ex) {
        text = ex.what();
      }
      check(text.empty(), "sleep: a wait the GPU reached late timed out: " + text);
      comm.barrier("sleep done");
      if (g_ok) std::printf("probe sleep: ok\n");
    }

    if (w >= 2) {  // timeout: rank 0 waits for signal 5 from rank 1, which never comes
      if (r == 0) {
        flux::device::WaitContext ctx =
            flux::device::make_wait_context(comm.fault_domain(), signals.wait_timeout_ns(), flux::WaitSite::kSignalWait, 1);
        wait_one<<<1, 1, 0, stream>>>(signals.local() + 5, 1u, 5, ctx);
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      comm.barrier("timeout happened");
      // Fail-stop: every rank (rank 1 was poisoned by rank 0's wait) reports the same first failure,
      // without synchronizing, and keeps reporting it.
      for (int rep = 0; rep < 2; ++rep) {
        std::string text;
        try {
          // rep 0 reads the device record (rank 1 ran no wait that could mirror the poison to its host);
          // rep 1 is the no-synchronization check every run() makes.
          if (rep == 0) comm.sync_fault(); else comm.check_fault();
        } catch (const flux::TimeoutError& ex) {
          text = ex.what();
        }
        check(text.find("rank 0 timed out") != std::string::npos && text.find("peer 1 on signal 5") != std::string::npos,
              "fail-stop text on rank " + std::to_string(r) + ": '" + text + "'");
      }
      // A later wait returns at once (the domain is poisoned) and the failure stays the first one.
      auto t0 = std::chrono::steady_clock::now();
      signals.wait_on_stream(6, 1u, 1, stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      check(s < 0.5 * double(signals.wait_timeout_ns()) / 1e9, "a wait after the failure took " + std::to_string(s) + " s");
      std::string text;
      try {
        signals.check_status();
      } catch (const flux::TimeoutError& ex) {
        text = ex.what();
      }
      check(text.find("signal 5") != std::string::npos, "later check: '" + text + "'");
      if (g_ok) std::printf("probe timeout: ok (%s)\n", text.c_str());
      comm.barrier("timeout done");
    }

    {  // cycles
      FLUX_CUDA_CHECK(cudaDeviceSynchronize());
      size_t free_before = 0, free_after = 0, total = 0;
      FLUX_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
      for (int i = 0; i < 1000; ++i) {
        flux::SymmetricBuffer b(comm, size_t(1) << 20, "cycle");
        b.release();
      }
      FLUX_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
      long long lost = (long long)free_before - (long long)free_after;
      check(lost < (16ll << 20), "cycles: free device memory dropped by " + std::to_string(lost) + " bytes");
      if (g_ok) std::printf("probe cycles: ok (free memory change %lld bytes)\n", -lost);
    }

    if (comm.shares_gpu()) {
      check(!comm.nccl_available() && comm.nccl_unavailable_reason().find("share GPU") != std::string::npos,
            "nccl: '" + comm.nccl_unavailable_reason() + "'");
      if (g_ok) std::printf("probe nccl: ok (%s)\n", comm.nccl_unavailable_reason().c_str());
    } else if (w > 1) {
      check(comm.nccl_available(), "nccl: unavailable on distinct GPUs: " + comm.nccl_unavailable_reason());
    }
    signals.release();
    cudaFree(bad);
    cudaStreamDestroy(stream);
    std::printf("probe %s: rank %d of %d\n", g_ok ? "PASSED" : "FAILED", r, w);
    return g_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("probe FAIL rank %d: %s\n", g_rank, e.what());
    return 1;
  }
}
