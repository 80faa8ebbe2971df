// src/device/wait_context.h — what a bounded device wait needs to know (plain data, host-visible).
#pragma once

#include <cstdint>

#include "flux/device_status.h"

namespace flux::device {

struct WaitContext {
  DeviceStatus* status = nullptr;         // where a timeout is recorded; never null when a wait can happen
  DeviceStatus* const* peers = nullptr;   // every rank's record (fault domain), poisoned on a timeout; or null
  int32_t world = 0;                      // entries of peers
  DeviceStatus* mirror = nullptr;         // host-mapped copy the host polls without synchronizing; or null
  uint64_t timeout_ns = 0;                // bound on each wait, counted from when the waiting thread starts
  WaitSite site = WaitSite::kNone;
  int32_t rank = -1;                      // waiting rank, -1 where not multi-rank
  int32_t peer = -1;                      // rank expected to set the flag, -1 where unknown
  uint32_t chaos_seed = 0;                // FLUX_CHAOS_SEED: random delays at the protocol's steps (0: off)
};

inline WaitContext make_wait_context(const FaultDomain& fault, uint64_t timeout_ns, WaitSite site, int32_t peer = -1,
                                     uint32_t chaos_seed = 0) {
  WaitContext ctx;
  ctx.status = fault.local;
  ctx.peers = fault.peers;
  ctx.world = fault.world;
  ctx.mirror = fault.mirror;
  ctx.timeout_ns = timeout_ns;
  ctx.site = site;
  ctx.rank = fault.rank;
  ctx.peer = peer;
  ctx.chaos_seed = chaos_seed;
  return ctx;
}

}  // namespace flux::device
