// src/device/signal.cuh — device building blocks: flag set / wait with release / acquire semantics.
//
// Assumptions: flags are 32-bit words in device memory (local, or a peer's mapped through CUDA IPC /
// peer access), written and read at system scope so that peers on other GPUs and other processes
// on the same GPU observe them. Flags are epoch counters: a waiter asks for "flag has reached value",
// compared wrap-safe (int32(flag - value) >= 0), so 32-bit epochs may wrap: that is exact as long as
// no flag lags the awaited value by 2^31 or more, which the ops guarantee by refreshing every flag of a
// plan once per call (SignalSet::barrier_on_stream).
//
// Every wait is bounded: wait_flag_geq() gives up after `timeout_ns` of %globaltimer time counted from
// when the waiting thread starts to wait (not from when the host enqueued it), records what it waited
// for in its rank's DeviceStatus and every peer's (first failure wins on each: the fault domain,
// flux/device_status.h) and in the host-mapped mirror, and returns false. Once a status has failed,
// every later wait returns false at once, so a kernel whose peer never arrives finishes. No wait ever
// writes the flag it waits on (or a peer's) to unblock itself.
#pragma once

#include <cstdint>

#include "flux/device_status.h"
#include "src/device/wait_context.h"

namespace flux::device {

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t* ptr) {
  uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(ptr) : "memory");
  return value;
}

__device__ __forceinline__ uint32_t ld_relaxed_sys(const uint32_t* ptr) {
  uint32_t value;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(ptr) : "memory");
  return value;
}

__device__ __forceinline__ void st_release_sys(uint32_t* ptr, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(ptr), "r"(value) : "memory");
}

__device__ __forceinline__ void red_add_release_sys(uint32_t* ptr, uint32_t value) {
  asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(ptr), "r"(value) : "memory");
}

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Orders this thread's earlier generic-proxy global accesses (e.g. an acquire of a flag) before its
// later async-proxy accesses (TMA loads of the data the flag guards), and the completion of its
// async-proxy writes (TMA stores, after cp.async.bulk.wait_group) before later generic accesses.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// Waits until every TMA (bulk async) store this thread committed has completed its global writes,
// not only its shared-memory reads (cp.async.bulk.wait_group without .read).
__device__ __forceinline__ void bulk_store_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Chaos mode (FLUX_CHAOS_SEED != 0): a delay of 0..kChaosMaxNs at a step of the protocol (a publish,
// a gather piece, a reduction tile, a barrier), pseudo-random from the seed, the step (`salt`), the CTA
// and the clock, so that orderings one fast GPU never produces (a late flag, a slow peer) happen in
// tests. Off, it is one predicated branch.
constexpr uint64_t kChaosMaxNs = 20000;
__device__ __forceinline__ void chaos_delay(uint32_t seed, uint32_t salt) {
  if (seed == 0u) return;
  uint64_t t0 = globaltimer_ns();
  uint32_t x = seed ^ (salt * 0x9e3779b9u) ^ (blockIdx.x * 0x85ebca6bu) ^ uint32_t(t0 >> 10);
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  if ((x & 3u) != 0u) return;  // a quarter of the steps are delayed
  const uint64_t ns = uint64_t(x >> 8) % kChaosMaxNs;
  while (globaltimer_ns() - t0 < ns) {
  }
}

// True once `seen` has reached `value` (wrap-safe: see the file comment).
__device__ __forceinline__ bool flag_reached(uint32_t seen, uint32_t value) {
  return static_cast<int32_t>(seen - value) >= 0;
}

__device__ __forceinline__ bool status_failed(const DeviceStatus* status) {
  return *reinterpret_cast<volatile const uint32_t*>(&status->failed) != 0u;
}

// Claims `s` for the failure described by `r` (first failure wins, through flag_addr) and fills it;
// `failed` is set last, after a system fence, so whoever sees failed != 0 sees the whole record. `s` may
// be a peer's record (mapped through CUDA IPC): system-scope atomics.
__device__ __forceinline__ void claim_and_fill(DeviceStatus* s, const DeviceStatus& r) {
  if (atomicCAS_system(reinterpret_cast<unsigned long long*>(&s->flag_addr), 0ull,
                       static_cast<unsigned long long>(r.flag_addr)) == 0ull) {
    volatile DeviceStatus* v = s;
    v->expected = r.expected;
    v->seen = r.seen;
    v->index = r.index;
    v->rank = r.rank;
    v->peer = r.peer;
    v->waited_ns = r.waited_ns;
    __threadfence_system();
    atomicExch_system(&s->failed, r.failed);
  }
  // else: an earlier failure owns the record and sets `failed` once it is complete.
}

// Copies the rank's (final) record into the host-mapped mirror once. Plain stores: host memory may not
// support device atomics; every writer copies the same final record, so concurrent copies agree.
__device__ __forceinline__ void mirror_status(WaitContext const& ctx) {
  if (ctx.mirror == nullptr) return;
  volatile DeviceStatus* m = ctx.mirror;
  if (m->failed != 0u) return;
  volatile const DeviceStatus* s = ctx.status;  // failed != 0 implies a complete record (claim_and_fill)
  if (s->failed == 0u) return;
  m->flag_addr = s->flag_addr;
  m->expected = s->expected;
  m->seen = s->seen;
  m->index = s->index;
  m->rank = s->rank;
  m->peer = s->peer;
  m->waited_ns = s->waited_ns;
  __threadfence_system();
  m->failed = s->failed;
}

__device__ __forceinline__ void record_timeout_inline(WaitContext const& ctx, const uint32_t* flag, int32_t index,
                                                      uint32_t expected, uint32_t seen, uint64_t waited_ns) {
  DeviceStatus r{};
  r.failed = static_cast<uint32_t>(ctx.site);
  r.expected = expected;
  r.seen = seen;
  r.index = index;
  r.rank = ctx.rank;
  r.peer = ctx.peer;
  r.waited_ns = waited_ns;
  r.flag_addr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(flag));
  claim_and_fill(ctx.status, r);
  // Poison every peer's record of the fault domain, so its waits stop now rather than at their own
  // timeouts (and its later calls fail with this first failure).
  if (ctx.peers != nullptr) {
    for (int32_t p = 0; p < ctx.world; ++p) {
      if (ctx.peers[p] != nullptr && ctx.peers[p] != ctx.status) claim_and_fill(ctx.peers[p], r);
    }
  }
  mirror_status(ctx);
}

// Out of line for most waits (the timeout path is cold); inlined where a call cannot be afforded: a call
// site in a math warp group holding a whole tile of accumulators breaks its register budget (the stream-K
// fixup: ptxas fails at 232 registers, or with the call out of line ignores setmaxnreg and spills).
__device__ __noinline__ inline void record_timeout(WaitContext const& ctx, const uint32_t* flag, int32_t index,
                                                   uint32_t expected, uint32_t seen, uint64_t waited_ns) {
  record_timeout_inline(ctx, flag, index, expected, seen, waited_ns);
}

// Spin (one thread) until *flag has reached value (wrap-safe). Returns true on success; false on
// timeout or when the fault domain already records a failure (the caller then skips the guarded work's
// dependency but must keep the kernel's own pipelines flowing so that it finishes).
// kInlineRecord: the timeout's record inlined (no call; see record_timeout).
template <bool kInlineRecord = false>
__device__ __forceinline__ bool wait_flag_geq(const uint32_t* flag, uint32_t value, int32_t index,
                                              WaitContext const& ctx) {
  uint32_t seen = ld_acquire_sys(flag);
  if (flag_reached(seen, value)) return true;  // fast path: one load
  if (status_failed(ctx.status)) {
    mirror_status(ctx);
    return false;
  }
  uint64_t start = globaltimer_ns();
  uint32_t spins = 0;
  while (true) {
    seen = ld_acquire_sys(flag);
    if (flag_reached(seen, value)) return true;
    if ((++spins & 63u) == 0u) {
      uint64_t waited = globaltimer_ns() - start;
      if (status_failed(ctx.status)) {
        mirror_status(ctx);  // poisoned by a peer (or another wait here): stop, and tell the host
        return false;
      }
      if (waited > ctx.timeout_ns) {
        if constexpr (kInlineRecord) {
          record_timeout_inline(ctx, flag, index, value, seen, waited);
        } else {
          record_timeout(ctx, flag, index, value, seen, waited);
        }
        return false;
      }
      if (spins > 4096u) __nanosleep(256);
    }
  }
}

}  // namespace flux::device
