// tests/runtime/rdzv_probe.cpp — one rank of a host-only job (no GPU), for the rendezvous tests.
//   rdzv_probe [collectives|differ|mismatch|exit1]
// collectives: all-gather, broadcast and barrier, checked; differ: check_same with a different value
// on rank 1 (every rank must throw naming it); mismatch: rank 1 calls a different collective;
// exit1: rank 1 exits after the rendezvous without a word (the others must fail, naming it).
// Prints "probe ok" on success; errors go to stderr with exit 3 (Error) or 4 (TimeoutError).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "flux/error.h"
#include "flux/runtime.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "collectives";
  try {
    flux::CommunicatorOptions o;
    o.use_gpu = false;
    flux::Communicator comm(o);
    const int r = comm.rank(), w = comm.world_size();
    if (mode == "collectives") {
      for (int round = 0; round < 20; ++round) {
        std::string mine = "rank" + std::to_string(r) + std::string(static_cast<size_t>(round) * 4096 * (r + 1), 'x');
        auto all = comm.all_gather(mine, "round " + std::to_string(round));
        for (int p = 0; p < w; ++p) {
          std::string want = "rank" + std::to_string(p) + std::string(static_cast<size_t>(round) * 4096 * (p + 1), 'x');
          if (all[p] != want) {
            std::fprintf(stderr, "probe: all_gather round %d: wrong blob from rank %d\n", round, p);
            return 5;
          }
        }
        std::string b = comm.broadcast(r == w - 1 ? "from-last-" + std::to_string(round) : "", w - 1, "bcast");
        if (b != "from-last-" + std::to_string(round)) {
          std::fprintf(stderr, "probe: broadcast round %d got '%s'\n", round, b.c_str());
          return 5;
        }
        comm.barrier("round end");
      }
      comm.check_same("plan", "m=4096 n=12288 k=6144 bf16");
    } else if (mode == "differ") {
      try {
        comm.check_same("plan", r == 1 ? "m=4096 bf16" : "m=4096 fp16");
        std::fprintf(stderr, "probe: differing plans were accepted\n");
        return 5;
      } catch (const flux::InvalidArgument& e) {
        std::printf("probe: caught: %s\n", e.what());
      }
    } else if (mode == "mismatch") {
      comm.barrier(r == 1 ? "step B" : "step A");
    } else if (mode == "exit1") {
      if (r == 1) std::_Exit(0);
      comm.barrier("after rank 1 left");
    }
    std::printf("probe ok rank %d of %d\n", r, w);
    return 0;
  } catch (const flux::TimeoutError& e) {
    std::fprintf(stderr, "probe timeout: %s\n", e.what());
    return 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe error: %s\n", e.what());
    return 3;
  }
}
