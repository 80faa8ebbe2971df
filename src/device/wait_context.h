// src/device/wait_context.h — what a bounded device wait needs to know (plain data, host-visible).
#pragma once

#include <cstdint>

#include "flux/device_status.h"

namespace flux::device {

struct WaitContext {
  DeviceStatus* status = nullptr;  // where a timeout is recorded; never null when a wait can happen
  uint64_t timeout_ns = 0;         // bound on each wait
  WaitSite site = WaitSite::kNone;
  int32_t rank = -1;               // waiting rank, -1 where not multi-rank
  int32_t peer = -1;               // rank expected to set the flag, -1 where unknown
};

}  // namespace flux::device
