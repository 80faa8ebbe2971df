// tests/runtime/test_rendezvous.cpp — the rendezvous and the launcher, with real processes (CPU only):
// W in {1, 2, 3, 4, 8}; a wrong token is rejected; mismatched world sizes; a rank that never arrives
// (error within the timeout, no hang); collectives that differ across ranks; a rank that leaves;
// flux-run propagates a failing rank and stops the others.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/process.h"

namespace {

using flux::testing::ProcessResult;
using Env = std::vector<std::pair<std::string, std::string>>;

std::string flux_run() { return flux::testing::sibling_binary("flux-run", FLUX_RUN_PATH); }
std::string probe() { return flux::testing::sibling_binary("flux_rdzv_probe", FLUX_RDZV_PROBE_PATH); }

int next_port() { return flux::testing::free_tcp_port(); }

Env rank_env(int rank, int world, int port, const std::string& token, int timeout_ms) {
  return {{"RANK", std::to_string(rank)},          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)},    {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"MASTER_ADDR", "127.0.0.1"},            {"MASTER_PORT", std::to_string(port)},
          {"FLUX_RDZV_TOKEN", token},              {"FLUX_RDZV_TIMEOUT_MS", std::to_string(timeout_ms)}};
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(Rendezvous, CollectivesUnderFluxRunForSeveralWorldSizes) {
  for (int w : {1, 2, 3, 4, 8}) {
    ProcessResult r = flux::testing::run_process({flux_run(), "-n", std::to_string(w), "--", probe()}, {}, 60);
    ASSERT_EQ(r.exit_code, 0) << "W=" << w << "\n" << r.output;
    for (int rank = 0; rank < w; ++rank) {
      EXPECT_TRUE(contains(r.output, "[rank " + std::to_string(rank) + "] probe ok rank " + std::to_string(rank) +
                                         " of " + std::to_string(w)))
          << r.output;
    }
  }
}

TEST(Rendezvous, WrongTokenIsRejected) {
  int port = next_port();
  auto results = flux::testing::run_processes({{probe()}, {probe()}},
                                              {rank_env(0, 2, port, "the-job-secret", 1500),
                                               rank_env(1, 2, port, "a-guess", 1500)},
                                              20);
  EXPECT_NE(results[1].exit_code, 0) << results[1].output;
  EXPECT_TRUE(contains(results[1].output, "rejected rank 1: wrong rendezvous token")) << results[1].output;
  EXPECT_EQ(results[0].exit_code, 4) << results[0].output;  // rank 0 times out waiting for the real rank 1
  EXPECT_TRUE(contains(results[0].output, "rank(s) 1 did not arrive")) << results[0].output;
  EXPECT_TRUE(contains(results[0].output, "rejected 1 connection(s) with a wrong token")) << results[0].output;
}

TEST(Rendezvous, MismatchedWorldSizeFailsEveryRank) {
  int port = next_port();
  auto results = flux::testing::run_processes({{probe()}, {probe()}},
                                              {rank_env(0, 3, port, "t", 5000), rank_env(1, 2, port, "t", 5000)}, 20);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].exit_code, 3) << results[r].output;
    EXPECT_TRUE(contains(results[r].output, "rank 1 has world size 2 but rank 0 has 3")) << results[r].output;
  }
}

TEST(Rendezvous, RankThatNeverArrivesIsNamedWithinTheTimeout) {
  int port = next_port();
  auto results = flux::testing::run_processes({{probe()}, {probe()}},
                                              {rank_env(0, 3, port, "t", 1500), rank_env(1, 3, port, "t", 1500)}, 20);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(results[r].exit_code, 0) << results[r].output;
    EXPECT_TRUE(contains(results[r].output, "rank(s) 2 did not arrive within 1500 ms")) << results[r].output;
    EXPECT_LT(results[r].seconds, 10.0) << "must fail within about the timeout";
  }
}

TEST(Rendezvous, PeerThatNeverListensIsNamed) {
  int port = next_port();
  ProcessResult r = flux::testing::run_process({probe()}, rank_env(2, 3, port, "t", 800), 20);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 2 could not reach rank 0 at 127.0.0.1:" + std::to_string(port))) << r.output;
}

TEST(Rendezvous, DifferingPlansAndCollectivesAreNamed) {
  ProcessResult differ = flux::testing::run_process({flux_run(), "-n", "3", "--", probe(), "differ"}, {}, 30);
  EXPECT_EQ(differ.exit_code, 0) << differ.output;
  EXPECT_TRUE(contains(differ.output, "ranks disagree on plan: rank 0 has 'm=4096 fp16'; rank 1 has 'm=4096 bf16'"))
      << differ.output;
  ProcessResult mismatch = flux::testing::run_process({flux_run(), "-n", "3", "--", probe(), "mismatch"}, {}, 30);
  EXPECT_NE(mismatch.exit_code, 0) << mismatch.output;
  EXPECT_TRUE(contains(mismatch.output, "rank 1 called 'barrier step B'")) << mismatch.output;
}

TEST(Rendezvous, RankThatLeavesIsNamed) {
  ProcessResult r = flux::testing::run_process({flux_run(), "-n", "3", "--", probe(), "exit1"}, {}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 1 closed its connection during 'barrier after rank 1 left'")) << r.output;
}

TEST(Launcher, FailingRankStopsTheOthersAndSetsTheExitCode) {
  ProcessResult r = flux::testing::run_process(
      {flux_run(), "-n", "3", "--", "sh", "-c", "echo hello from $RANK of $WORLD_SIZE; if [ $RANK = 1 ]; then sleep 1; exit 7; fi; sleep 60"},
      {}, 30);
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_LT(r.seconds, 20.0) << "the sleeping ranks must be stopped";
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(contains(r.output, "[rank " + std::to_string(rank) + "] hello from " + std::to_string(rank) + " of 3"))
        << r.output;
  }
  EXPECT_TRUE(contains(r.output, "rank 1 exited with status 7")) << r.output;
}

TEST(Launcher, PassesTheJobEnvironment) {
  ProcessResult r = flux::testing::run_process(
      {flux_run(), "-n", "2", "--", "sh", "-c", "echo env $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR ${#FLUX_RDZV_TOKEN}"},
      {}, 30);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 1] env 1 2 127.0.0.1 32")) << r.output;
  ProcessResult bad = flux::testing::run_process({flux_run(), "-n", "0", "--", "true"}, {}, 10);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

}  // namespace
