// flux/runtime.h — the multi-rank runtime: who the ranks are, memory every rank can reach, and flags.
//
//   Communicator  ranks, world, local rank/size, its GPU; a TCP rendezvous carrying a per-job secret
//                 token; bounded host all-gather / broadcast / barrier; the NCCL communicator the
//                 baselines use when every rank has its own GPU (when two ranks share a GPU NCCL
//                 refuses them, and nccl_unavailable_reason() says so).
//   SymmetricBuffer a collective allocation: the same number of bytes on every rank, every peer's
//                 buffer mapped into every rank through CUDA IPC (peers on the same GPU or on other
//                 GPUs over NVLink), plus a device array of the peer pointers.
//   SignalSet     `count` 32-bit flags per rank in a SymmetricBuffer: device set (release, system
//                 scope) / wait (acquire, bounded), a per-call epoch that advances on the device (CUDA
//                 graph replays advance it too), epoch signals and waits on a stream, a device barrier.
//
// Fail-stop: a communicator is one fault domain (flux/device_status.h). The first failure — a device
// wait of any of its plans that expired here or on a peer, or a host-side failure such as an NCCL error
// — poisons it: every rank's waits stop, and check_fault(), which every plan's run() calls first,
// throws that first failure on every later call until the communicator is rebuilt.
//
// W ranks are W processes (flux-run or torchrun starts them). They may share a GPU (several ranks per
// GPU run concurrently under MPS; DESIGN.md). Every wait on another rank is bounded: by
// FLUX_RDZV_TIMEOUT_MS on the host, by FLUX_WAIT_TIMEOUT_MS on the device, and the error names the
// rank, the peer and what was awaited.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flux/device_status.h"
#include "flux/error.h"

struct ncclComm;  // from nccl.h

namespace flux {

namespace runtime {
class Rendezvous;
}

// The host collectives a Communicator runs on: bootstrap (device UUIDs, the NCCL id), the exchange of
// IPC handles of symmetric memory, and plans' agreement checks. Default: Flux's TCP rendezvous
// (src/runtime/rendezvous.h). A framework that already connects its ranks supplies its own — flux_torch
// runs them on a torch.distributed group's store, so no extra port or token is needed under torchrun.
// Every rank calls the same collectives in the same order with the same labels. An implementation must
// bound every call (throw TimeoutError naming the ranks that did not arrive) and fail, naming both
// labels, when ranks call different collectives at the same step.
class HostExchange {
 public:
  virtual ~HostExchange() = default;
  // Every rank's blob, indexed by rank.
  virtual std::vector<std::string> all_gather(const std::string& mine, const std::string& label) = 0;
  // Root's value on every rank (default: an all_gather).
  virtual std::string broadcast(const std::string& value, int root, const std::string& label);
  virtual void barrier(const std::string& label);  // default: an all_gather of nothing
  // Fail the job: this rank throws Error(why); peers' current or next collective should fail too
  // (the default only throws here: peers then fail by their own deadline).
  [[noreturn]] virtual void abort(const std::string& why);
};

struct CommunicatorOptions {
  // Host collectives to use instead of the TCP rendezvous (then rank and world_size must be set, and
  // master_addr / master_port / token are not used).
  std::shared_ptr<HostExchange> exchange;
  // -1 / empty: from torchrun's variables RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
  // MASTER_ADDR (default 127.0.0.1), MASTER_PORT.
  int rank = -1;
  int world_size = -1;
  int local_rank = -1;
  int local_world_size = -1;
  std::string master_addr;
  int master_port = -1;
  std::string token;       // "": FLUX_RDZV_TOKEN
  int64_t timeout_ms = 0;  // 0: FLUX_RDZV_TIMEOUT_MS
  // GPU of this rank: -1 = FLUX_DEVICE if set, else local_rank % (visible devices). use_gpu = false
  // makes a host-only communicator (rendezvous and host collectives only; CPU tests use it).
  int device = -1;
  bool use_gpu = true;
  bool init_nccl = true;  // create the NCCL communicator when every rank has its own GPU
};

class Communicator {
 public:
  explicit Communicator(const CommunicatorOptions& options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int world_size() const;
  int local_rank() const;
  int local_world_size() const;
  int device() const;  // -1 for a host-only communicator

  // Bounded host collectives (every rank calls them in the same order with the same labels).
  std::vector<std::string> all_gather(const std::string& mine, const std::string& label);
  std::string broadcast(const std::string& value, int root, const std::string& label);
  void barrier(const std::string& label);
  [[noreturn]] void abort(const std::string& why);
  // Throws InvalidArgument on every rank, naming the ranks that differ, unless all ranks pass the
  // same `description` (e.g. a plan's shapes, dtype and options).
  void check_same(const std::string& what, const std::string& description);

  // Topology, from the device UUIDs every rank reported.
  const std::vector<std::string>& device_uuids() const;  // by rank
  int peer_device_ordinal(int peer) const;                // peer's device as seen by this process, -1 if none
  bool shares_gpu() const;                                // some two ranks on one GPU

  bool nccl_available() const;
  const std::string& nccl_unavailable_reason() const;
  ncclComm* nccl() const;  // throws Unsupported with the reason when unavailable
  // Waits, against FLUX_RDZV_TIMEOUT_MS, until the NCCL call that returned `result` has completed
  // (non-blocking communicator: see communicator.cpp for NCCL's rules); on an error or the deadline it
  // records the failure (check_fault) and throws it. `what` names the call.
  void nccl_complete(int result, const char* what);

  // Fail-stop (see above). check_fault() throws the first failure (TimeoutError for an expired wait,
  // Error otherwise) and returns quietly while there is none; it reads a host-mapped mirror of the
  // device record and never synchronizes. After a stream synchronize, sync_fault() also reads the
  // device record itself (a peer's poison that no wait of this rank has seen yet), then check_fault().
  void check_fault() const;
  void sync_fault();
  bool has_fault() const;
  void set_fault(const std::string& what, bool timeout = false);  // first failure wins
  FaultDomain fault_domain() const;  // the device side (local == nullptr for a host-only communicator)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class SymmetricBuffer {
 public:
  // Collective: every rank asks for the same `bytes` (checked) with the same label.
  SymmetricBuffer(Communicator& comm, size_t bytes, const std::string& label);
  // Collective: a barrier, then each rank unmaps its peers' buffers and frees its own. Destroying a
  // buffer that was not released does the local part only (for error paths).
  void release();
  ~SymmetricBuffer();
  SymmetricBuffer(const SymmetricBuffer&) = delete;
  SymmetricBuffer& operator=(const SymmetricBuffer&) = delete;

  size_t bytes() const { return bytes_; }
  void* local() const { return peers_[static_cast<size_t>(rank_)]; }
  void* peer(int rank) const;
  void* const* device_peers() const { return device_peers_; }  // device array [world_size]

 private:
  Communicator* comm_ = nullptr;
  std::string label_;
  size_t bytes_ = 0;
  int rank_ = 0;
  int device_ = 0;
  std::vector<void*> peers_;         // host copy; peers_[rank_] is the local allocation
  void** device_peers_ = nullptr;    // device copy
  bool released_ = false;
  void free_local();
};

// A range of 32-bit device flags (see SignalSet::barrier_on_stream).
struct FlagRange {
  uint32_t* flags = nullptr;
  int64_t count = 0;
};

class SignalSet {
 public:
  // Collective: `count` flags per rank. The per-call epoch starts at initial_epoch - 1 (the first
  // barrier_on_stream makes it initial_epoch) and every flag holds initial_epoch - 1; tests start near
  // 2^32 to check the wrap (flags compare wrap-safe, src/device/signal.cuh).
  SignalSet(Communicator& comm, int count, const std::string& label, uint32_t initial_epoch = 1);
  ~SignalSet();
  void release();  // collective

  int count() const { return count_; }
  uint32_t* local() const;          // this rank's flags
  uint32_t* peer(int rank) const;   // `rank`'s flags, mapped here
  uint32_t* const* device_peers() const;

  // The per-call epoch, a device word: barrier_on_stream() advances it; every kernel of the call reads
  // it there (never a host copy), so CUDA-graph replays, eager calls and replays on other streams all
  // see the epoch of their own call.
  const uint32_t* epoch() const;

  // Device barrier across ranks on `stream` (one CTA): advances the epoch to e, sets every flag of
  // `refresh` to e - 1 (a plan's flags are then never more than one call behind, which keeps the
  // wrap-safe compare exact forever), raises this rank's slot on every peer to e and waits, bounded,
  // until every peer has raised its slot here to e. The plan's flags for call e must be read by peers
  // only after their barrier of call e (true of every op: the barrier is the first thing of a call).
  void barrier_on_stream(cudaStream_t stream, const FlagRange* refresh = nullptr, int refresh_count = 0);
  // Epoch signals (one small kernel each, after prior work on `stream`): set flag[index] = epoch on
  // every rank (this one included; the consumer then polls its own memory); wait until this rank's
  // flag[index] has reached the epoch, bounded from when the GPU reaches the wait (a timeout names
  // this rank, `expected_from_peer` and the signal, and poisons the fault domain).
  void set_epoch_on_stream(int index, cudaStream_t stream);
  void wait_epoch_on_stream(int index, int expected_from_peer, cudaStream_t stream);

  // With caller-chosen values (not per-call state: a captured value replays unchanged):
  // peer's flag[index] = value (cuStreamWriteValue32, no SM); wait until this rank's flag[index] has
  // reached value (a one-thread kernel, bounded from when the GPU reaches it).
  void set_on_stream(int peer, int index, uint32_t value, cudaStream_t stream);
  void wait_on_stream(int index, uint32_t value, int expected_from_peer, cudaStream_t stream);
  // Stream-ordered write of any device word (cuStreamWriteValue32), after prior work on `stream`.
  void write_on_stream(uint32_t* address, uint32_t value, cudaStream_t stream);

  // The communicator's fault record (device waits record rank, peer, signal, expected and seen there).
  DeviceStatus* device_status() const;
  FaultDomain fault_domain() const;
  uint64_t wait_timeout_ns() const;
  // After the stream has been synchronized: throws the communicator's first failure, if any.
  void check_status();

  struct Impl;  // (src/runtime/signal_set.cu)

 private:
  std::unique_ptr<Impl> impl_;
  int count_ = 0;
};

}  // namespace flux
