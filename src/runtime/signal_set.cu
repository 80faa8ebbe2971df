// src/runtime/signal_set.cu — flags in symmetric memory: stream-ordered set / wait (copy engine, with a
// watchdog that bounds the wait) and a device barrier across ranks.
//
// Layout of the symmetric buffer of each rank: [count user flags][world barrier slots]. Barrier slot p
// on rank r holds the last barrier epoch rank p has reached; epochs only grow, so nothing is reset.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "flux/knobs.h"
#include "flux/runtime.h"
#include "src/common/check.h"
#include "src/device/signal.cuh"

namespace flux {

namespace {

using StreamValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

StreamValue32 driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult result{};
  FLUX_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &result));
  if (result != cudaDriverEntryPointSuccess || fn == nullptr) {
    throw Unsupported(detail::cat("flux signals: the driver has no ", name));
  }
  return reinterpret_cast<StreamValue32>(fn);
}

__global__ void barrier_kernel(uint32_t* const* peers, int world, int rank, int slot_base, uint32_t epoch,
                               device::WaitContext ctx) {
  // Raise my slot on every rank, then wait until every rank has raised its slot on mine.
  for (int p = threadIdx.x; p < world; p += blockDim.x) {
    device::st_release_sys(peers[p] + slot_base + rank, epoch);
  }
  for (int p = threadIdx.x; p < world; p += blockDim.x) {
    device::WaitContext c = ctx;
    c.peer = p;
    device::wait_flag_geq(peers[rank] + slot_base + p, epoch, slot_base + p, c);
  }
}

}  // namespace

struct SignalSet::Impl {
  Communicator* comm = nullptr;
  std::unique_ptr<SymmetricBuffer> buffer;
  int count = 0, world = 1, rank = 0, device = 0;
  DeviceStatus* status = nullptr;
  uint64_t timeout_ns = 0;
  uint32_t barrier_epoch = 0;
  StreamValue32 write32 = nullptr, wait32 = nullptr;

  // Watchdog of stream-ordered waits: a wait not passed by its deadline is released by writing the
  // awaited value (from a stream of its own), and the failure is reported by check_status().
  struct Pending {
    cudaEvent_t passed;
    uint32_t* flag;  // the awaited word (this rank's or a peer's)
    int index;
    uint32_t value;
    int peer;
    std::chrono::steady_clock::time_point deadline;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Pending> pending;
  std::thread watchdog;
  bool stopping = false;
  std::string host_failure;
  cudaStream_t watchdog_stream = nullptr;
  uint32_t* pinned = nullptr;  // [0]: value to write, [1]: value read

  uint32_t* flags(int r) const { return static_cast<uint32_t*>(buffer->peer(r)); }

  void watch() {
    (void)cudaSetDevice(device);
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::milliseconds(5));
      auto now = std::chrono::steady_clock::now();
      for (size_t i = 0; i < pending.size();) {
        Pending& w = pending[i];
        cudaError_t q = cudaEventQuery(w.passed);
        if (q == cudaSuccess) {
          cudaEventDestroy(w.passed);
          pending.erase(pending.begin() + static_cast<long>(i));
          continue;
        }
        if (now > w.deadline) {
          uint32_t* flag = w.flag;
          pinned[0] = w.value;
          pinned[1] = 0;
          (void)cudaMemcpyAsync(&pinned[1], flag, sizeof(uint32_t), cudaMemcpyDeviceToHost, watchdog_stream);
          (void)cudaStreamSynchronize(watchdog_stream);
          uint32_t seen = pinned[1];
          (void)cudaMemcpyAsync(flag, &pinned[0], sizeof(uint32_t), cudaMemcpyHostToDevice, watchdog_stream);
          (void)cudaStreamSynchronize(watchdog_stream);
          if (host_failure.empty()) {
            host_failure = detail::cat("flux signal: rank ", rank, " timed out after ", timeout_ns / 1000000,
                                       " ms waiting on a stream for peer ", w.peer, " on signal ", w.index,
                                       " (expected >= ", w.value, ", last seen ", seen,
                                       "); the watchdog released the stream, whose later work is invalid");
          }
          cudaEventDestroy(w.passed);
          pending.erase(pending.begin() + static_cast<long>(i));
          continue;
        }
        ++i;
      }
    }
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_all();
    if (watchdog.joinable()) watchdog.join();
    for (Pending& w : pending) cudaEventDestroy(w.passed);
    if (watchdog_stream) cudaStreamDestroy(watchdog_stream);
    if (pinned) cudaFreeHost(pinned);
    if (status) cudaFree(status);
  }
};

SignalSet::SignalSet(Communicator& comm, int count, const std::string& label)
    : impl_(std::make_unique<Impl>()), count_(count) {
  FLUX_CHECK_ARG(count >= 1, "flux signals '", label, "': count ", count, " (expected >= 1)");
  Impl& p = *impl_;
  p.comm = &comm;
  p.count = count;
  p.world = comm.world_size();
  p.rank = comm.rank();
  p.device = comm.device();
  int64_t ms = knobs::get_int("FLUX_WAIT_TIMEOUT_MS");
  FLUX_CHECK_ARG(ms > 0, "flux signals: FLUX_WAIT_TIMEOUT_MS=", ms, " (expected > 0)");
  p.timeout_ns = static_cast<uint64_t>(ms) * 1000000ull;
  p.buffer = std::make_unique<SymmetricBuffer>(comm, sizeof(uint32_t) * size_t(count + p.world), "signals " + label);
  FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.status), sizeof(DeviceStatus)));
  FLUX_CUDA_CHECK(cudaMemset(p.status, 0, sizeof(DeviceStatus)));
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&p.watchdog_stream, cudaStreamNonBlocking));
  FLUX_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p.pinned), 2 * sizeof(uint32_t)));
  p.write32 = driver_entry("cuStreamWriteValue32");
  p.wait32 = driver_entry("cuStreamWaitValue32");
}

SignalSet::~SignalSet() = default;

void SignalSet::release() { impl_->buffer->release(); }

uint32_t* SignalSet::local() const { return impl_->flags(impl_->rank); }
uint32_t* SignalSet::peer(int rank) const { return impl_->flags(rank); }
uint32_t* const* SignalSet::device_peers() const {
  return reinterpret_cast<uint32_t* const*>(impl_->buffer->device_peers());
}
DeviceStatus* SignalSet::device_status() const { return impl_->status; }
uint64_t SignalSet::wait_timeout_ns() const { return impl_->timeout_ns; }

void SignalSet::set_on_stream(int peer, int index, uint32_t value, cudaStream_t stream) {
  FLUX_CHECK_ARG(peer >= 0 && peer < impl_->world, "flux signals: peer ", peer, " (expected 0..", impl_->world - 1, ")");
  FLUX_CHECK_ARG(index >= 0 && index < count_, "flux signals: index ", index, " (expected 0..", count_ - 1, ")");
  CUresult r = impl_->write32(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(impl_->flags(peer) + index),
                              value, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS) throw CudaError(detail::cat("flux signals: cuStreamWriteValue32 failed with CUresult ", r));
}

namespace {
void stream_wait_with_watchdog(SignalSet::Impl& p, uint32_t* flag, int index, uint32_t value, int peer,
                               cudaStream_t stream);
}

void SignalSet::wait_on_stream(int index, uint32_t value, int expected_from_peer, cudaStream_t stream) {
  FLUX_CHECK_ARG(index >= 0 && index < count_, "flux signals: index ", index, " (expected 0..", count_ - 1, ")");
  stream_wait_with_watchdog(*impl_, local() + index, index, value, expected_from_peer, stream);
}

void SignalSet::wait_peer_on_stream(int peer, int index, uint32_t value, cudaStream_t stream) {
  FLUX_CHECK_ARG(peer >= 0 && peer < impl_->world, "flux signals: peer ", peer, " (expected 0..", impl_->world - 1, ")");
  FLUX_CHECK_ARG(index >= 0 && index < count_, "flux signals: index ", index, " (expected 0..", count_ - 1, ")");
  stream_wait_with_watchdog(*impl_, impl_->flags(peer) + index, index, value, peer, stream);
}

void SignalSet::write_on_stream(uint32_t* address, uint32_t value, cudaStream_t stream) {
  CUresult r = impl_->write32(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(address), value,
                              CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS) throw CudaError(detail::cat("flux signals: cuStreamWriteValue32 failed with CUresult ", r));
}

namespace {
void stream_wait_with_watchdog(SignalSet::Impl& p, uint32_t* flag, int index, uint32_t value, int peer,
                               cudaStream_t stream) {
  CUresult r = p.wait32(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(flag), value,
                        CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) throw CudaError(detail::cat("flux signals: cuStreamWaitValue32 failed with CUresult ", r));
  cudaEvent_t passed = nullptr;
  FLUX_CUDA_CHECK(cudaEventCreateWithFlags(&passed, cudaEventDisableTiming));
  FLUX_CUDA_CHECK(cudaEventRecord(passed, stream));
  std::lock_guard<std::mutex> lock(p.mu);
  p.pending.push_back({passed, flag, index, value, peer,
                       std::chrono::steady_clock::now() + std::chrono::nanoseconds(p.timeout_ns)});
  if (!p.watchdog.joinable()) p.watchdog = std::thread([&p] { p.watch(); });
}
}  // namespace

void SignalSet::barrier_on_stream(cudaStream_t stream) {
  Impl& p = *impl_;
  device::WaitContext ctx;
  ctx.status = p.status;
  ctx.timeout_ns = p.timeout_ns;
  ctx.site = WaitSite::kSignalWait;
  ctx.rank = p.rank;
  barrier_kernel<<<1, 32, 0, stream>>>(device_peers(), p.world, p.rank, count_, ++p.barrier_epoch, ctx);
  FLUX_CUDA_CHECK_LAUNCH("flux signals barrier_kernel");
}

void SignalSet::check_status() {
  Impl& p = *impl_;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    failure.swap(p.host_failure);
  }
  DeviceStatus host{};
  FLUX_CUDA_CHECK(cudaMemcpy(&host, p.status, sizeof(host), cudaMemcpyDeviceToHost));
  if (host.failed != 0) {
    FLUX_CUDA_CHECK(cudaMemset(p.status, 0, sizeof(DeviceStatus)));
    throw TimeoutError(describe_device_status(host));
  }
  if (!failure.empty()) throw TimeoutError(failure);
}

}  // namespace flux
