// flux/device_status.h — how a kernel reports a failed bounded wait to the host.
//
// Every bounded device wait (the GEMM core's wait-before-load, the runtime's signal waits) takes a
// DeviceStatus* in device memory. On expiry the first waiter to fail records what it waited for
// (atomically: later failures keep the first record), sets `failed`, and every other wait of the
// kernel returns at once, so the kernel finishes instead of hanging. Its outputs are then undefined.
// The host reads the record after the stream has been synchronized (GemmPlan::check_status) and
// throws flux::TimeoutError with the text of describe_device_status().
#pragma once

#include <cstdint>
#include <string>

namespace flux {

enum class WaitSite : uint32_t {
  kNone = 0,
  kGemmWaitBeforeLoad = 1,  // GEMM producer waiting on an M-block ready flag
  kSignalWait = 2,          // runtime signal wait (rank, peer, signal index)
};

struct DeviceStatus {
  uint32_t failed;    // 0 while all waits succeeded; a WaitSite otherwise
  uint32_t expected;  // value waited for (flag >= expected)
  uint32_t seen;      // last value read before giving up
  int32_t index;      // M-block (kGemmWaitBeforeLoad) or signal index (kSignalWait)
  int32_t rank;       // waiting rank, -1 where not multi-rank
  int32_t peer;       // rank expected to set the flag, -1 where unknown
  uint64_t waited_ns; // how long the waiter spun
  uint64_t flag_addr; // device address of the flag
};

// Human-readable description of a failed status ("" when status.failed == 0).
std::string describe_device_status(const DeviceStatus& status);

}  // namespace flux
