// src/runtime/communicator.cpp — ranks from torchrun's environment, rendezvous, GPU choice, topology
// and the NCCL communicator of the baselines.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
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

}  // namespace

struct Communicator::Impl {
  int rank = 0, world = 1, local_rank = 0, local_world = 1, device = -1;
  int64_t timeout_ms = 0;
  std::unique_ptr<runtime::Rendezvous> rdzv;
  std::vector<std::string> uuids;
  std::vector<int> peer_ordinals;
  bool shares_gpu = false;
  ncclComm_t nccl = nullptr;
  std::string nccl_reason = "the communicator was built without NCCL (CommunicatorOptions::init_nccl = false)";

  ~Impl() {
    if (nccl) ncclCommDestroy(nccl);
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
  p.world = o.world_size >= 0 ? o.world_size : env_int("WORLD_SIZE", 1, false, hint);
  p.rank = o.rank >= 0 ? o.rank : env_int("RANK", 0, p.world > 1, hint);
  p.local_rank = o.local_rank >= 0 ? o.local_rank : env_int("LOCAL_RANK", p.rank, false, hint);
  p.local_world = o.local_world_size >= 0 ? o.local_world_size : env_int("LOCAL_WORLD_SIZE", p.world, false, hint);
  FLUX_CHECK_ARG(p.world >= 1, "flux communicator: world size ", p.world, " (expected >= 1)");
  FLUX_CHECK_ARG(p.rank >= 0 && p.rank < p.world, "flux communicator: rank ", p.rank, " (expected 0..", p.world - 1, ")");
  FLUX_CHECK_ARG(p.local_world >= 1 && p.local_rank >= 0 && p.local_rank < p.local_world, "flux communicator: local rank ",
                 p.local_rank, " of ", p.local_world, " (expected 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE)");

  runtime::RendezvousOptions r;
  r.rank = p.rank;
  r.world_size = p.world;
  const char* addr = std::getenv("MASTER_ADDR");
  r.host = !o.master_addr.empty() ? o.master_addr : (addr && *addr ? addr : "127.0.0.1");
  r.port = o.master_port > 0 ? o.master_port : env_int("MASTER_PORT", 0, p.world > 1, hint);
  r.token = !o.token.empty() ? o.token : knobs::get_string("FLUX_RDZV_TOKEN");
  if (p.world == 1 && r.token.empty()) r.token = "single-rank";
  r.timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : knobs::get_int("FLUX_RDZV_TIMEOUT_MS");
  p.timeout_ms = r.timeout_ms;
  p.rdzv = std::make_unique<runtime::Rendezvous>(r);

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
void Communicator::abort(const std::string& why) { impl_->rdzv->abort(why); }

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

}  // namespace flux
