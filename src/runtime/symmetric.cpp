// src/runtime/symmetric.cpp — collective allocations every rank can reach, through CUDA IPC.
//
// Why CUDA IPC (cudaIpcGetMemHandle / cudaIpcOpenMemHandle) rather than VMM with shareable file
// descriptors: an IPC handle is 64 opaque bytes that travel over the rendezvous's authenticated TCP
// connection like any other blob, so no Unix-socket fd passing (SCM_RIGHTS) is needed; it maps a peer's
// buffer whether the peer is on this GPU (another process, measured working on the H200) or on another
// GPU (peer access over NVLink, enabled lazily by the open). VMM would add multicast objects, which
// this project must not create on shared machines anyway. Handles are never written anywhere but the
// rendezvous socket: nothing world-readable.
#include <cuda_runtime_api.h>

#include <cstring>

#include "flux/runtime.h"
#include "src/common/check.h"

namespace flux {

namespace {
constexpr size_t kAlignment = 256;  // every buffer base is at least 256-byte aligned (cudaMalloc gives more)
}

SymmetricBuffer::SymmetricBuffer(Communicator& comm, size_t bytes, const std::string& label)
    : comm_(&comm), label_(label), bytes_(bytes), rank_(comm.rank()), device_(comm.device()) {
  FLUX_CHECK_ARG(comm.device() >= 0, "flux symmetric buffer '", label, "': the communicator has no GPU");
  FLUX_CHECK_ARG(bytes > 0, "flux symmetric buffer '", label, "': 0 bytes (expected > 0)");
  comm.check_same(detail::cat("symmetric buffer '", label, "' size"), std::to_string(bytes));
  const int world = comm.world_size();
  peers_.assign(static_cast<size_t>(world), nullptr);
  FLUX_CUDA_CHECK(cudaSetDevice(device_));
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  try {
    FLUX_CUDA_CHECK(cudaMalloc(&peers_[static_cast<size_t>(rank_)], rounded));
    FLUX_CUDA_CHECK(cudaMemset(peers_[static_cast<size_t>(rank_)], 0, rounded));
    cudaIpcMemHandle_t handle{};
    FLUX_CUDA_CHECK(cudaIpcGetMemHandle(&handle, peers_[static_cast<size_t>(rank_)]));
    std::vector<std::string> handles = comm.all_gather(
        std::string(reinterpret_cast<const char*>(&handle), sizeof(handle)), "symmetric buffer '" + label + "' handles");
    for (int r = 0; r < world; ++r) {
      if (r == rank_) continue;
      cudaIpcMemHandle_t peer_handle{};
      std::memcpy(&peer_handle, handles[static_cast<size_t>(r)].data(), sizeof(peer_handle));
      cudaError_t err = cudaIpcOpenMemHandle(&peers_[static_cast<size_t>(r)], peer_handle, cudaIpcMemLazyEnablePeerAccess);
      if (err != cudaSuccess) {
        (void)cudaGetLastError();
        throw CudaError(detail::cat("flux symmetric buffer '", label, "': rank ", rank_, " cannot map rank ", r,
                                    "'s buffer (cudaIpcOpenMemHandle: ", cudaGetErrorString(err),
                                    "); peers on other GPUs need peer access (NVLink / PCIe P2P)"));
      }
    }
    FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&device_peers_), sizeof(void*) * world));
    FLUX_CUDA_CHECK(cudaMemcpy(device_peers_, peers_.data(), sizeof(void*) * world, cudaMemcpyHostToDevice));
    // Nobody writes into a peer's buffer before every rank has mapped (and zeroed) it.
    comm.barrier("symmetric buffer '" + label + "' mapped");
  } catch (...) {
    free_local();
    throw;
  }
}

void* SymmetricBuffer::peer(int rank) const {
  FLUX_CHECK_ARG(rank >= 0 && rank < static_cast<int>(peers_.size()), "flux symmetric buffer '", label_, "': peer ",
                 rank, " (expected 0..", peers_.size() - 1, ")");
  return peers_[static_cast<size_t>(rank)];
}

// Unmaps the peers' buffers (close_peers) and/or frees this rank's own (free_own), on this buffer's device.
static void unmap_and_free(int device, int rank, std::vector<void*>& peers, void** device_peers, bool close_peers,
                           bool free_own) {
  int previous = 0;
  bool restore = cudaGetDevice(&previous) == cudaSuccess;
  (void)cudaSetDevice(device);
  for (size_t r = 0; r < peers.size(); ++r) {
    if (peers[r] == nullptr) continue;
    bool own = static_cast<int>(r) == rank;
    if (own && free_own) {
      (void)cudaFree(peers[r]);
      peers[r] = nullptr;
    } else if (!own && close_peers) {
      (void)cudaIpcCloseMemHandle(peers[r]);
      peers[r] = nullptr;
    }
  }
  if (free_own && device_peers) (void)cudaFree(device_peers);
  if (restore) (void)cudaSetDevice(previous);
}

void SymmetricBuffer::free_local() {
  unmap_and_free(device_, rank_, peers_, device_peers_, true, true);
  device_peers_ = nullptr;
}

void SymmetricBuffer::release() {
  if (released_) return;
  released_ = true;
  // Every rank is done with every peer's buffer, then every rank unmaps its peers' buffers, and only
  // then does each free its own (an exporter never frees memory a peer still maps).
  FLUX_CUDA_CHECK(cudaDeviceSynchronize());
  comm_->barrier("symmetric buffer '" + label_ + "' release");
  unmap_and_free(device_, rank_, peers_, nullptr, true, false);
  comm_->barrier("symmetric buffer '" + label_ + "' unmapped");
  free_local();
}

SymmetricBuffer::~SymmetricBuffer() { free_local(); }

}  // namespace flux
