// src/device/signal.cuh — device building blocks: flag set / wait with release / acquire semantics.
//
// Assumptions: flags are 32-bit words in device memory (local, or a peer's mapped through CUDA IPC /
// peer access), written and read at system scope so that peers on other GPUs and other processes
// on the same GPU observe them. Flags are epoch counters: a waiter asks for `flag >= value`, so
// nothing needs resetting between calls as long as each call raises the value it waits for.
//
// Every wait is bounded: wait_flag_geq() gives up after `timeout_ns` of %globaltimer time, records
// what it waited for in the DeviceStatus (first failure wins) and returns false. Once a status has
// failed, every later wait returns false at once, so a kernel whose peer never arrives finishes.
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

__device__ __forceinline__ bool status_failed(const DeviceStatus* status) {
  return *reinterpret_cast<volatile const uint32_t*>(&status->failed) != 0u;
}

__device__ __noinline__ inline void record_timeout(WaitContext const& ctx, const uint32_t* flag, int32_t index,
                                                   uint32_t expected, uint32_t seen, uint64_t waited_ns) {
  DeviceStatus* s = ctx.status;
  // First failure wins: claim the record through flag_addr, then fill it; `failed` is set last
  // (after a fence) so a host that sees failed != 0 sees the whole record.
  if (atomicCAS(reinterpret_cast<unsigned long long*>(&s->flag_addr), 0ull,
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(flag))) == 0ull) {
    s->expected = expected;
    s->seen = seen;
    s->index = index;
    s->rank = ctx.rank;
    s->peer = ctx.peer;
    s->waited_ns = waited_ns;
    __threadfence_system();
    atomicExch(&s->failed, static_cast<uint32_t>(ctx.site));
  } else {
    // Someone else is recording; make sure every other wait stops even before it finishes.
    atomicCAS(&s->failed, 0u, static_cast<uint32_t>(ctx.site));
  }
}

// Spin (one thread) until *flag >= value. Returns true on success; false on timeout or when the
// status already records a failure (the caller then skips the guarded work's dependency but must
// keep the kernel's own pipelines flowing so that it finishes).
__device__ __forceinline__ bool wait_flag_geq(const uint32_t* flag, uint32_t value, int32_t index,
                                              WaitContext const& ctx) {
  uint32_t seen = ld_acquire_sys(flag);
  if (seen >= value) return true;  // fast path: one load
  if (status_failed(ctx.status)) return false;
  uint64_t start = globaltimer_ns();
  uint32_t spins = 0;
  while (true) {
    seen = ld_acquire_sys(flag);
    if (seen >= value) return true;
    if ((++spins & 63u) == 0u) {
      uint64_t waited = globaltimer_ns() - start;
      if (status_failed(ctx.status)) return false;
      if (waited > ctx.timeout_ns) {
        record_timeout(ctx, flag, index, value, seen, waited);
        return false;
      }
      if (spins > 4096u) __nanosleep(256);
    }
  }
}

}  // namespace flux::device
