// src/runtime/signal_set.cu — flags in symmetric memory: the per-call device epoch, the device barrier
// across ranks, epoch signals / waits on a stream, and stream-ordered writes.
//
// Layout of each rank's symmetric buffer: [count user flags][world barrier slots]. Barrier slot p on
// rank r holds the last epoch rank p has reached. The epoch itself is a local device word that only the
// barrier kernel advances (one per call of a plan), so it lives on the device: a CUDA graph replay runs
// the captured barrier kernel, which advances the epoch exactly as an eager call does, and every kernel
// of the call reads the epoch from that word. Nothing is decided per call on the host.
//
// Every wait here is a kernel wait (src/device/signal.cuh): bounded from when the GPU reaches it, its
// failure recorded in the communicator's fault domain (and so poisoning every rank). Nothing writes a
// flag it waits on, or a peer's, to unblock itself.
#include <cuda.h>
#include <cuda_runtime_api.h>

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

constexpr int kBarrierThreads = 256;
constexpr int kMaxRefresh = 4;

struct RefreshList {
  FlagRange range[kMaxRefresh];
  int count = 0;
};

// One CTA. Thread 0 advances the epoch; the CTA refreshes the plan's flags to e - 1; then raise my
// slot on every rank and wait for every rank's slot here.
__global__ void __launch_bounds__(kBarrierThreads) barrier_kernel(uint32_t* const* peers, int world, int rank,
                                                                 int slot_base, uint32_t* epoch, RefreshList refresh,
                                                                 device::WaitContext ctx) {
  __shared__ uint32_t e_shared;
  if (threadIdx.x == 0) {
    if (device::status_failed(ctx.status)) device::mirror_status(ctx);  // tell the host of a peer's poison
    e_shared = *epoch + 1u;
    *epoch = e_shared;
  }
  __syncthreads();
  const uint32_t e = e_shared;
  for (int r = 0; r < refresh.count; ++r) {
    for (int64_t i = threadIdx.x; i < refresh.range[r].count; i += blockDim.x) refresh.range[r].flags[i] = e - 1u;
  }
  __threadfence_system();  // refreshed flags are visible before any peer can pass the barrier
  if (threadIdx.x == 0) device::chaos_delay(ctx.chaos_seed, e);
  __syncthreads();
  for (int p = threadIdx.x; p < world; p += blockDim.x) device::st_release_sys(peers[p] + slot_base + rank, e);
  for (int p = threadIdx.x; p < world; p += blockDim.x) {
    device::WaitContext c = ctx;
    c.peer = p;
    device::wait_flag_geq(peers[rank] + slot_base + p, e, slot_base + p, c);
  }
}

__global__ void set_epoch_kernel(uint32_t* const* peers, int world, int index, const uint32_t* epoch,
                                 uint32_t chaos_seed) {
  const uint32_t e = *epoch;
  if (threadIdx.x == 0) device::chaos_delay(chaos_seed, e * 13u + uint32_t(index));
  __syncwarp();
  for (int p = threadIdx.x; p < world; p += blockDim.x) device::st_release_sys(peers[p] + index, e);
}

// value_ptr null: wait for `value`; else for *value_ptr.
__global__ void wait_kernel(const uint32_t* flag, uint32_t value, const uint32_t* value_ptr, int index,
                            device::WaitContext ctx) {
  device::wait_flag_geq(flag, value_ptr != nullptr ? *value_ptr : value, index, ctx);
}

__global__ void fill_kernel(uint32_t* flags, int64_t count, uint32_t value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    flags[i] = value;
  }
}

}  // namespace

struct SignalSet::Impl {
  Communicator* comm = nullptr;
  std::unique_ptr<SymmetricBuffer> buffer;
  int count = 0, world = 1, rank = 0, device = 0;
  uint64_t timeout_ns = 0;
  uint32_t* epoch = nullptr;  // local device word: the current call's epoch
  uint32_t chaos_seed = 0;    // knob FLUX_CHAOS_SEED
  StreamValue32 write32 = nullptr;

  uint32_t* flags(int r) const { return static_cast<uint32_t*>(buffer->peer(r)); }
  device::WaitContext ctx(int peer) const {
    return device::make_wait_context(comm->fault_domain(), timeout_ns, WaitSite::kSignalWait, peer, chaos_seed);
  }
  ~Impl() {
    if (epoch) cudaFree(epoch);
  }
};

SignalSet::SignalSet(Communicator& comm, int count, const std::string& label, uint32_t initial_epoch)
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
  p.chaos_seed = static_cast<uint32_t>(knobs::get_int("FLUX_CHAOS_SEED"));
  comm.check_same("signals '" + label + "' initial epoch", std::to_string(initial_epoch));
  p.buffer = std::make_unique<SymmetricBuffer>(comm, sizeof(uint32_t) * size_t(count + p.world), "signals " + label);
  FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.epoch), sizeof(uint32_t)));
  const uint32_t before = initial_epoch - 1u;
  FLUX_CUDA_CHECK(cudaMemcpy(p.epoch, &before, sizeof(before), cudaMemcpyHostToDevice));
  fill_kernel<<<1, 256>>>(local(), count + p.world, before);
  FLUX_CUDA_CHECK_LAUNCH("flux signals fill_kernel");
  FLUX_CUDA_CHECK(cudaDeviceSynchronize());
  comm.barrier("signals '" + label + "' initialized");  // no peer raises a slot here before it is initialized
  p.write32 = driver_entry("cuStreamWriteValue32");
}

SignalSet::~SignalSet() = default;

void SignalSet::release() { impl_->buffer->release(); }

uint32_t* SignalSet::local() const { return impl_->flags(impl_->rank); }
uint32_t* SignalSet::peer(int rank) const { return impl_->flags(rank); }
uint32_t* const* SignalSet::device_peers() const {
  return reinterpret_cast<uint32_t* const*>(impl_->buffer->device_peers());
}
const uint32_t* SignalSet::epoch() const { return impl_->epoch; }
DeviceStatus* SignalSet::device_status() const { return impl_->comm->fault_domain().local; }
FaultDomain SignalSet::fault_domain() const { return impl_->comm->fault_domain(); }
uint64_t SignalSet::wait_timeout_ns() const { return impl_->timeout_ns; }

void SignalSet::barrier_on_stream(cudaStream_t stream, const FlagRange* refresh, int refresh_count) {
  Impl& p = *impl_;
  FLUX_CHECK_ARG(refresh_count >= 0 && refresh_count <= kMaxRefresh, "flux signals: ", refresh_count,
                 " refresh ranges (expected 0..", kMaxRefresh, ")");
  RefreshList list;
  for (int i = 0; i < refresh_count; ++i) {
    FLUX_CHECK_ARG(refresh[i].count >= 0 && (refresh[i].count == 0 || refresh[i].flags != nullptr),
                   "flux signals: refresh range ", i, " has ", refresh[i].count, " flags at ", refresh[i].flags);
    list.range[list.count++] = refresh[i];
  }
  barrier_kernel<<<1, kBarrierThreads, 0, stream>>>(device_peers(), p.world, p.rank, count_, p.epoch, list, p.ctx(-1));
  FLUX_CUDA_CHECK_LAUNCH("flux signals barrier_kernel");
}

void SignalSet::set_epoch_on_stream(int index, cudaStream_t stream) {
  FLUX_CHECK_ARG(index >= 0 && index < count_, "flux signals: index ", index, " (expected 0..", count_ - 1, ")");
  set_epoch_kernel<<<1, 32, 0, stream>>>(device_peers(), impl_->world, index, impl_->epoch, impl_->chaos_seed);
  FLUX_CUDA_CHECK_LAUNCH("flux signals set_epoch_kernel");
}

void SignalSet::wait_epoch_on_stream(int index, int expected_from_peer, cudaStream_t stream) {
  FLUX_CHECK_ARG(index >= 0 && index < count_, "flux signals: index ", index, " (expected 0..", count_ - 1, ")");
  wait_kernel<<<1, 1, 0, stream>>>(local() + index, 0u, impl_->epoch, index, impl_->ctx(expected_from_peer));
  FLUX_CUDA_CHECK_LAUNCH("flux signals wait_kernel");
}

void SignalSet::set_on_stream(int peer, int index, uint32_t value, cudaStream_t stream) {
  FLUX_CHECK_ARG(peer >= 0 && peer < impl_->world, "flux signals: peer ", peer, " (expected 0..", impl_->world - 1, ")");
  FLUX_CHECK_ARG(index >= 0 && index < count_, "flux signals: index ", index, " (expected 0..", count_ - 1, ")");
  write_on_stream(impl_->flags(peer) + index, value, stream);
}

void SignalSet::wait_on_stream(int index, uint32_t value, int expected_from_peer, cudaStream_t stream) {
  FLUX_CHECK_ARG(index >= 0 && index < count_, "flux signals: index ", index, " (expected 0..", count_ - 1, ")");
  wait_kernel<<<1, 1, 0, stream>>>(local() + index, value, nullptr, index, impl_->ctx(expected_from_peer));
  FLUX_CUDA_CHECK_LAUNCH("flux signals wait_kernel");
}

void SignalSet::write_on_stream(uint32_t* address, uint32_t value, cudaStream_t stream) {
  CUresult r = impl_->write32(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(address), value,
                              CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS) throw CudaError(detail::cat("flux signals: cuStreamWriteValue32 failed with CUresult ", r));
}

void SignalSet::check_status() { impl_->comm->sync_fault(); }

}  // namespace flux
