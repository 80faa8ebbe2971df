// src/runtime/communicator.cpp — ranks from torchrun's environment, rendezvous, GPU choice, topology
// and the NCCL communicator of the baselines.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "flux/knobs.h"
#include "flux/runtime.h"
#include "src/common/check.h"
#include "src/common/nccl_check.h"
#include "src/runtime/rendezvous.h"

namespace flux {

namespace {

int env_int(const char* name, int fallback, bool required, const char* hint) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    FLUX_CHECK_ARG(!required, "flux communicator: ", name, " is not set (", hint, ")");
    return fallback;
  }
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  FLUX_CHECK_ARG(end != v && *end == '\0', "flux communicator: ", name, "='", v, "' is not an integer");
  return static_cast<int>(x);
}

std::string uuid_hex(const cudaUUID_t& uuid) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : uuid.bytes) {
    auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

// The default exchange: the TCP rendezvous.
class TcpExchange final : public HostExchange {
 public:
  explicit TcpExchange(const runtime::RendezvousOptions& o) : rdzv_(o) {}
  std::vector<std::string> all_gather(const std::string& mine, const std::string& label) override {
    return rdzv_.all_gather(mine, label);
  }
  std::string broadcast(const std::string& value, int root, const std::string& label) override {
    return rdzv_.broadcast(value, root, label);
  }
  void barrier(const std::string& label) override { rdzv_.barrier(label); }
  [[noreturn]] void abort(const std::string& why) override { rdzv_.abort(why); }

 private:
  runtime::Rendezvous rdzv_;
};

}  // namespace

std::string HostExchange::broadcast(const std::string& value, int root, const std::string& label) {
  std::vector<std::string> all = all_gather(value, label);
  FLUX_CHECK_ARG(root >= 0 && static_cast<size_t>(root) < all.size(), "flux host exchange: broadcast root ", root,
                 " (expected 0..", all.size() - 1, ")");
  return all[static_cast<size_t>(root)];
}
void HostExchange::barrier(const std::string& label) { (void)all_gather(std::string(), label); }
void HostExchange::abort(const std::string& why) { throw Error(why); }

struct Communicator::Impl {
  int rank = 0, world = 1, local_rank = 0, local_world = 1, device = -1;
  int64_t timeout_ms = 0;
  std::shared_ptr<HostExchange> rdzv;  // the host collectives (TCP rendezvous by default)
  std::vector<std::string> uuids;
  std::vector<int> peer_ordinals;
  bool shares_gpu = false;
  ncclComm_t nccl = nullptr;
  std::string nccl_reason = "the communicator was built without NCCL (CommunicatorOptions::init_nccl = false)";
  // Fault domain: every rank's DeviceStatus in symmetric memory, and a host-mapped mirror of this rank's.
  std::unique_ptr<SymmetricBuffer> fault_records;
  DeviceStatus* mirror = nullptr;         // host address (cudaHostAllocMapped)
  DeviceStatus* mirror_device = nullptr;  // its device address
  mutable std::mutex mu;
  std::string host_fault;  // first host-side failure (or a device one already turned into text)
  bool host_fault_is_timeout = false;

  ~Impl() {
    fault_records.reset();
    if (mirror) cudaFreeHost(mirror);
    if (nccl) ncclCommDestroy(nccl);
  }

  // The first failure, as text ("" while there is none), from the host record or the mirror.
  std::string first_fault(bool* timeout) const {
    std::lock_guard<std::mutex> lock(mu);
    if (!host_fault.empty()) {
      *timeout = host_fault_is_timeout;
      return host_fault;
    }
    if (mirror != nullptr) {
      DeviceStatus copy{};
      const volatile DeviceStatus* m = mirror;
      if (m->failed != 0u) {
        std::atomic_thread_fence(std::memory_order_acquire);
        copy.failed = m->failed;
        copy.expected = m->expected;
        copy.seen = m->seen;
        copy.index = m->index;
        copy.rank = m->rank;
        copy.peer = m->peer;
        copy.waited_ns = m->waited_ns;
        copy.flag_addr = m->flag_addr;
        *timeout = true;
        return describe_device_status(copy);
      }
    }
    return "";
  }

  void init_nccl() {
    if (shares_gpu) {
      for (int a = 0; a < world; ++a) {
        for (int b = a + 1; b < world; ++b) {
          if (uuids[a] == uuids[b]) {
            nccl_reason = detail::cat("ranks ", a, " and ", b, " share GPU ", uuids[a],
                                      ": NCCL refuses two ranks on one GPU, so the NCCL baselines need one GPU per rank");
            return;
          }
        }
      }
    }
    int runtime_version = 0;
    FLUX_NCCL_CHECK(ncclGetVersion(&runtime_version));
    if (runtime_version / 100 != NCCL_VERSION_CODE / 100) {
      throw Unsupported(detail::cat("flux communicator: the NCCL library is version code ", runtime_version,
                                    " but Flux was built with headers of version code ", NCCL_VERSION_CODE,
                                    " (expected the same major.minor)"));
    }
    ncclUniqueId id{};
    if (rank == 0) FLUX_NCCL_CHECK(ncclGetUniqueId(&id));
    std::string blob = rdzv->broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof(id)), 0, "nccl unique id");
    std::memcpy(&id, blob.data(), sizeof(id));
    // Non-blocking init, polled against the deadline: a peer that never joins gives an error, not a hang.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    FLUX_NCCL_CHECK(ncclCommInitRankConfig(&nccl, world, id, rank, &config));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    ncclResult_t state = ncclInProgress;
    while (true) {
      FLUX_NCCL_CHECK(ncclCommGetAsyncError(nccl, &state));
      if (state != ncclInProgress) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ncclCommAbort(nccl);
        nccl = nullptr;
        throw TimeoutError(detail::cat("flux communicator: rank ", rank, ": NCCL initialization did not finish within ",
                                       timeout_ms, " ms"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (state != ncclSuccess) {
      throw CudaError(detail::cat("flux communicator: rank ", rank, ": NCCL initialization failed: ",
                                  ncclGetErrorString(state)));
    }
    nccl_reason.clear();
  }
};

Communicator::Communicator(const CommunicatorOptions& o) : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  const char* hint = "run under flux-run or torchrun, or set it in CommunicatorOptions";
  FLUX_CHECK_ARG(!o.exchange || (o.rank >= 0 && o.world_size >= 1), "flux communicator: with a custom HostExchange, ",
                 "rank and world_size must be set in CommunicatorOptions (got rank ", o.rank, ", world size ",
                 o.world_size, ")");
  p.world = o.world_size >= 0 ? o.world_size : env_int("WORLD_SIZE", 1, false, hint);
  p.rank = o.rank >= 0 ? o.rank : env_int("RANK", 0, p.world > 1, hint);
  p.local_rank = o.local_rank >= 0 ? o.local_rank : env_int("LOCAL_RANK", p.rank, false, hint);
  p.local_world = o.local_world_size >= 0 ? o.local_world_size : env_int("LOCAL_WORLD_SIZE", p.world, false, hint);
  FLUX_CHECK_ARG(p.world >= 1, "flux communicator: world size ", p.world, " (expected >= 1)");
  FLUX_CHECK_ARG(p.rank >= 0 && p.rank < p.world, "flux communicator: rank ", p.rank, " (expected 0..", p.world - 1, ")");
  FLUX_CHECK_ARG(p.local_world >= 1 && p.local_rank >= 0 && p.local_rank < p.local_world, "flux communicator: local rank ",
                 p.local_rank, " of ", p.local_world, " (expected 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE)");

  if (o.exchange) {
    p.timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : knobs::get_int("FLUX_RDZV_TIMEOUT_MS");
    p.rdzv = o.exchange;
  } else {
    runtime::RendezvousOptions r;
    r.rank = p.rank;
    r.world_size = p.world;
    const char* addr = std::getenv("MASTER_ADDR");
    r.host = !o.master_addr.empty() ? o.master_addr : (addr && *addr ? addr : "127.0.0.1");
    r.port = o.master_port > 0 ? o.master_port : env_int("MASTER_PORT", 0, p.world > 1, hint);
    r.token = !o.token.empty() ? o.token : knobs::get_string("FLUX_RDZV_TOKEN");
    if (p.world == 1 && r.token.empty()) r.token = "single-rank";
    r.timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : knobs::get_int("FLUX_RDZV_TIMEOUT_MS");
    if (p.rank == 0 && p.world > 1) r.listen_fd = static_cast<int>(knobs::get_int("FLUX_RDZV_LISTEN_FD"));
    p.timeout_ms = r.timeout_ms;
    p.rdzv = std::make_shared<TcpExchange>(r);
  }

  if (!o.use_gpu) {
    p.nccl_reason = "host-only communicator (CommunicatorOptions::use_gpu = false)";
    return;
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    p.rdzv->abort(detail::cat("flux communicator: rank ", p.rank, " sees no CUDA device (",
                              err == cudaSuccess ? "0 devices" : cudaGetErrorString(err), ")"));
  }
  int knob_device = static_cast<int>(knobs::get_int("FLUX_DEVICE"));
  p.device = o.device >= 0 ? o.device : (knob_device >= 0 ? knob_device : p.local_rank % count);
  if (p.device >= count) {
    p.rdzv->abort(detail::cat("flux communicator: rank ", p.rank, " was given device ", p.device, " but sees ", count,
                              " device(s)"));
  }
  FLUX_CUDA_CHECK(cudaSetDevice(p.device));
  cudaDeviceProp prop{};
  FLUX_CUDA_CHECK(cudaGetDeviceProperties(&prop, p.device));
  p.uuids = p.rdzv->all_gather(uuid_hex(prop.uuid), "device uuids");
  std::vector<std::string> local_uuids(static_cast<size_t>(count));
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp q{};
    FLUX_CUDA_CHECK(cudaGetDeviceProperties(&q, d));
    local_uuids[static_cast<size_t>(d)] = uuid_hex(q.uuid);
  }
  p.peer_ordinals.assign(static_cast<size_t>(p.world), -1);
  for (int peer = 0; peer < p.world; ++peer) {
    for (int d = 0; d < count; ++d) {
      if (local_uuids[static_cast<size_t>(d)] == p.uuids[static_cast<size_t>(peer)]) p.peer_ordinals[peer] = d;
    }
    for (int other = 0; other < peer; ++other) {
      if (p.uuids[other] == p.uuids[peer]) p.shares_gpu = true;
    }
  }
  // The fault domain (before NCCL, whose failures it records).
  p.fault_records = std::make_unique<SymmetricBuffer>(*this, sizeof(DeviceStatus), "fault records");
  FLUX_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&p.mirror), sizeof(DeviceStatus), cudaHostAllocMapped));
  std::memset(static_cast<void*>(p.mirror), 0, sizeof(DeviceStatus));
  FLUX_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&p.mirror_device), p.mirror, 0));
  if (o.init_nccl && p.world > 1) {
    p.nccl_reason.clear();
    p.init_nccl();
  } else if (o.init_nccl) {
    p.nccl_reason = "single rank: no collective needed";
  }
}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank; }
int Communicator::world_size() const { return impl_->world; }
int Communicator::local_rank() const { return impl_->local_rank; }
int Communicator::local_world_size() const { return impl_->local_world; }
int Communicator::device() const { return impl_->device; }

std::vector<std::string> Communicator::all_gather(const std::string& mine, const std::string& label) {
  return impl_->rdzv->all_gather(mine, label);
}
std::string Communicator::broadcast(const std::string& value, int root, const std::string& label) {
  return impl_->rdzv->broadcast(value, root, label);
}
void Communicator::barrier(const std::string& label) { impl_->rdzv->barrier(label); }
void Communicator::abort(const std::string& why) {
  impl_->rdzv->abort(why);
  throw Error(why);  // an exchange whose abort() returned (it must not)
}

void Communicator::check_same(const std::string& what, const std::string& description) {
  std::vector<std::string> all = all_gather(description, "check_same " + what);
  std::string differ;
  for (int r = 0; r < world_size(); ++r) {
    if (all[r] != all[0]) differ += detail::cat(differ.empty() ? "" : "; ", "rank ", r, " has '", all[r], "'");
  }
  if (!differ.empty()) {
    throw InvalidArgument(detail::cat("flux: ranks disagree on ", what, ": rank 0 has '", all[0], "'; ", differ,
                                      " (expected the same on every rank)"));
  }
}

const std::vector<std::string>& Communicator::device_uuids() const { return impl_->uuids; }
int Communicator::peer_device_ordinal(int peer) const {
  FLUX_CHECK_ARG(peer >= 0 && peer < world_size(), "flux communicator: peer ", peer, " (expected 0..", world_size() - 1, ")");
  return impl_->peer_ordinals.empty() ? -1 : impl_->peer_ordinals[static_cast<size_t>(peer)];
}
bool Communicator::shares_gpu() const { return impl_->shares_gpu; }
bool Communicator::nccl_available() const { return impl_->nccl != nullptr; }
const std::string& Communicator::nccl_unavailable_reason() const { return impl_->nccl_reason; }
ncclComm* Communicator::nccl() const {
  if (!impl_->nccl) throw Unsupported("flux communicator: NCCL is unavailable: " + impl_->nccl_reason);
  return impl_->nccl;
}

// The communicator is non-blocking (created with config.blocking = 0 so that initialization is bounded).
// NCCL's documented rules for such communicators ("Fault Tolerance" / non-blocking communicators in the
// NCCL user guide, 2.14 and later): any NCCL call on it may return ncclInProgress, which means the call
// has not finished (for a collective: it may not even be enqueued on the stream yet); the application
// must poll ncclCommGetAsyncError(comm, &state) until state is no longer ncclInProgress, and may make
// the next NCCL call on that communicator only once it is ncclSuccess; any other state is an error,
// after which the communicator must be aborted (ncclCommAbort). So every call here is polled to
// completion before run() goes on, which also keeps the stream order the caller expects (work queued
// after run() returns comes after the collective). Never run: NCCL refuses two ranks on one GPU.
void Communicator::nccl_complete(int result, const char* what) {
  Impl& p = *impl_;
  auto fail = [&](const std::string& why, bool timeout) {
    set_fault(why, timeout);
    if (p.nccl) {
      (void)ncclCommAbort(p.nccl);
      p.nccl = nullptr;
      p.nccl_reason = "aborted after: " + why;
    }
    check_fault();
    throw Error(why);  // unreachable: check_fault throws the fault just set (or an earlier one)
  };
  ncclResult_t state = static_cast<ncclResult_t>(result);
  if (state != ncclSuccess && state != ncclInProgress) {
    fail(detail::cat("flux communicator: rank ", p.rank, ": ", what, " failed: ", ncclGetErrorString(state)), false);
  }
  if (p.nccl == nullptr) return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(p.timeout_ms);
  while (true) {
    ncclResult_t q = ncclCommGetAsyncError(p.nccl, &state);
    if (q != ncclSuccess) state = q;
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      fail(detail::cat("flux communicator: rank ", p.rank, ": ", what, " failed asynchronously: ",
                       ncclGetErrorString(state)),
           false);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      fail(detail::cat("flux communicator: rank ", p.rank, ": ", what, " did not complete within ", p.timeout_ms,
                       " ms (NCCL still in progress; the communicator was aborted)"),
           true);
    }
    std::this_thread::yield();
  }
}

void Communicator::check_fault() const {
  bool timeout = false;
  std::string text = impl_->first_fault(&timeout);
  if (text.empty()) return;
  const std::string what = "flux: this communicator failed earlier and is stopped (rebuild it to go on): " + text;
  if (timeout) throw TimeoutError(what);
  throw Error(what);
}

void Communicator::sync_fault() {
  Impl& p = *impl_;
  if (p.fault_records) {
    DeviceStatus host{};
    FLUX_CUDA_CHECK(cudaMemcpy(&host, p.fault_records->local(), sizeof(host), cudaMemcpyDeviceToHost));
    if (host.failed != 0u) {
      std::lock_guard<std::mutex> lock(p.mu);
      if (p.host_fault.empty() && (p.mirror == nullptr || p.mirror->failed == 0u)) {
        p.host_fault = describe_device_status(host);
        p.host_fault_is_timeout = true;
      }
    }
  }
  check_fault();
}

bool Communicator::has_fault() const {
  bool timeout = false;
  return !impl_->first_fault(&timeout).empty();
}

void Communicator::set_fault(const std::string& what, bool timeout) {
  bool ignored = false;
  if (!impl_->first_fault(&ignored).empty()) return;  // first failure wins
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->host_fault.empty()) {
    impl_->host_fault = what;
    impl_->host_fault_is_timeout = timeout;
  }
}

FaultDomain Communicator::fault_domain() const {
  const Impl& p = *impl_;
  FaultDomain f;
  if (!p.fault_records) return f;
  f.local = static_cast<DeviceStatus*>(p.fault_records->local());
  f.peers = reinterpret_cast<DeviceStatus* const*>(p.fault_records->device_peers());
  f.world = p.world;
  f.rank = p.rank;
  f.mirror = p.mirror_device;
  return f;
}

}  // namespace flux
