// tests/runtime/test_host_exchange.cpp — a Communicator on a caller-supplied HostExchange (what
// flux_torch does with a process group's store), CPU only: ranks are threads of this process sharing an
// in-memory exchange. The collectives reach every rank through it, check_same names the rank that
// differs, the default broadcast / barrier are built on all_gather, and a missing rank or world size
// is an argument error.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flux/error.h"
#include "flux/runtime.h"

namespace {

// All ranks' blobs per step, with the label each rank used (a step completes once every rank arrived).
struct SharedSteps {
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, std::vector<std::pair<std::string, std::string>>> steps;  // step -> (label, blob) by rank
  int world = 0;
};

class ThreadExchange final : public flux::HostExchange {
 public:
  ThreadExchange(SharedSteps* shared, int rank) : shared_(shared), rank_(rank) {}
  std::vector<std::string> all_gather(const std::string& mine, const std::string& label) override {
    std::unique_lock<std::mutex> lock(shared_->mu);
    auto& step = shared_->steps[next_step_++];
    if (step.empty()) step.resize(static_cast<size_t>(shared_->world), {"", "<missing>"});
    step[static_cast<size_t>(rank_)] = {label, mine};
    shared_->cv.notify_all();
    shared_->cv.wait(lock, [&] {
      for (auto& e : step) {
        if (e.second == "<missing>") return false;
      }
      return true;
    });
    std::vector<std::string> out;
    for (auto& e : step) {
      if (e.first != label) throw flux::Error("labels differ: '" + e.first + "' vs '" + label + "'");
      out.push_back(e.second);
    }
    return out;
  }

 private:
  SharedSteps* shared_;
  int rank_;
  int next_step_ = 0;
};

flux::CommunicatorOptions options(SharedSteps* shared, int rank, int world) {
  flux::CommunicatorOptions o;
  o.exchange = std::make_shared<ThreadExchange>(shared, rank);
  o.rank = rank;
  o.world_size = world;
  o.use_gpu = false;
  return o;
}

TEST(HostExchange, CommunicatorCollectivesRunOnTheSuppliedExchange) {
  constexpr int kWorld = 3;
  SharedSteps shared;
  shared.world = kWorld;
  std::vector<std::string> errors(kWorld);
  std::vector<std::vector<std::string>> gathered(kWorld);
  std::vector<std::string> broadcasts(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      try {
        flux::Communicator comm(options(&shared, r, kWorld));
        EXPECT_EQ(comm.rank(), r);
        EXPECT_EQ(comm.world_size(), kWorld);
        gathered[r] = comm.all_gather("blob" + std::to_string(r * 7), "test gather");
        broadcasts[r] = comm.broadcast(r == 1 ? "from one" : "ignored", 1, "test broadcast");
        comm.barrier("test barrier");
        comm.check_same("plan", "same on all");
        comm.check_same("shape", r == 2 ? "64x128" : "64x256");
      } catch (const flux::InvalidArgument& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_EQ(gathered[r].size(), static_cast<size_t>(kWorld));
    for (int s = 0; s < kWorld; ++s) EXPECT_EQ(gathered[r][s], "blob" + std::to_string(s * 7));
    EXPECT_EQ(broadcasts[r], "from one");
    // Every rank fails the differing check, naming rank 2 and its value.
    EXPECT_NE(errors[r].find("ranks disagree on shape"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("rank 2 has '64x128'"), std::string::npos) << errors[r];
  }
}

TEST(HostExchange, RankAndWorldMustBeGiven) {
  SharedSteps shared;
  shared.world = 2;
  flux::CommunicatorOptions o = options(&shared, 0, 2);
  o.rank = -1;
  try {
    flux::Communicator comm(o);
    FAIL() << "expected an argument error";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank and world_size must be set"), std::string::npos) << e.what();
  }
}

TEST(HostExchange, DefaultAbortThrowsTheReason) {
  SharedSteps shared;
  shared.world = 1;
  ThreadExchange ex(&shared, 0);
  try {
    ex.abort("peer 3 is gone");
    FAIL() << "abort returned";
  } catch (const flux::Error& e) {
    EXPECT_STREQ(e.what(), "peer 3 is gone");
  }
  EXPECT_EQ(ex.broadcast("only", 0, "b"), "only");
}

}  // namespace
