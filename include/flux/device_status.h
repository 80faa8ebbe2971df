// flux/device_status.h — how a kernel reports a failed bounded wait, and the fail-stop fault domain.
//
// Every bounded device wait (the GEMM core's wait-before-load, the runtime's signal waits) takes a
// DeviceStatus* in device memory. On expiry the first waiter to fail records what it waited for
// (atomically: later failures keep the first record), sets `failed`, and every other wait that polls
// the record returns at once, so kernels finish instead of hanging. Their outputs are then undefined.
//
// Fail-stop across ranks (FaultDomain): a communicator's records live in symmetric memory. The waiter
// that fails first writes its record into its own rank's record and into every peer's (first record
// wins on each), and into a host-mapped mirror of its process; every wait polls its rank's record, so
// every rank's waits stop within microseconds of the first failure, and each host sees the failure in
// its mirror without synchronizing (Communicator::check_fault, which every plan's run() calls first).
// The host turns a record into flux::TimeoutError with the text of describe_device_status().
#pragma once

#include <cstdint>
#include <string>

namespace flux {

enum class WaitSite : uint32_t {
  kNone = 0,
  kGemmWaitBeforeLoad = 1,  // GEMM producer waiting on an M-block ready flag
  kSignalWait = 2,          // runtime signal wait (rank, peer, signal index)
  kGemmStreamKFixup = 3,    // GEMM stream-K: a unit's final piece waiting for a later worker's partials
};

struct DeviceStatus {
  uint32_t failed;    // 0 while all waits succeeded; a WaitSite otherwise
  uint32_t expected;  // value waited for (flag >= expected)
  uint32_t seen;      // last value read before giving up
  int32_t index;      // M-block (kGemmWaitBeforeLoad), signal index (kSignalWait) or partials slot (kGemmStreamKFixup)
  int32_t rank;       // waiting rank, -1 where not multi-rank
  int32_t peer;       // rank expected to set the flag, -1 where unknown
  uint64_t waited_ns; // how long the waiter spun
  uint64_t flag_addr; // device address of the flag
};

// The device side of a fault domain (plain data, passed to kernels by value).
struct FaultDomain {
  DeviceStatus* local = nullptr;         // this rank's record, device memory (null: no domain)
  DeviceStatus* const* peers = nullptr;  // device array [world] of every rank's record as mapped here, or null
  int32_t world = 0;
  int32_t rank = -1;
  DeviceStatus* mirror = nullptr;        // device address of a host-mapped pinned copy, or null
};

// Human-readable description of a failed status ("" when status.failed == 0).
std::string describe_device_status(const DeviceStatus& status);

}  // namespace flux
