// tests/runtime/test_rendezvous.cpp — the rendezvous and the launcher, with real processes (CPU only):
// W in {1, 2, 3, 4, 8}; a wrong token is rejected; mismatched world sizes; a rank that never arrives
// (error within the timeout, no hang); collectives that differ across ranks; a rank that leaves;
// flux-run propagates a failing rank and stops the others. The handshake against strangers, with a
// client written here from the wire format: the token never crosses the wire; a replayed hello, a
// silent connection, an oversized pre-authentication message and a flood of connections let nobody in
// and do not stall the job; a rank 0 that cannot prove the token is refused. HMAC-SHA-256 test vectors.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/runtime/hmac_sha256.h"
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
  EXPECT_FALSE(contains(results[1].output, "the-job-secret")) << results[1].output;
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

// --- the handshake, against a client that speaks the wire format (src/runtime/rendezvous.cpp) ---------

TEST(Hmac, Rfc4231AndFipsVectors) {
  using flux::runtime::hmac_sha256;
  using flux::runtime::sha256;
  using flux::runtime::to_hex;
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),  // two blocks
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
  EXPECT_EQ(to_hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(to_hex(hmac_sha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

struct WireHeader {
  uint32_t magic;
  uint32_t type;
  uint64_t length;
};
constexpr uint32_t kWireMagic = 0x52584c46u;

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  for (int attempt = 0; attempt < 250; ++attempt) {
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd);
  return -1;
}

void send_raw(int fd, uint32_t type, const std::string& payload, uint64_t claimed_length = UINT64_MAX) {
  WireHeader h{kWireMagic, type, claimed_length == UINT64_MAX ? payload.size() : claimed_length};
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof(h));
  bytes += payload;
  ssize_t ignored = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  (void)ignored;
}

// Reads one message within `ms`; false on timeout or a closed connection.
bool recv_raw(int fd, uint32_t* type, std::string* payload, int ms) {
  std::string buf;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (true) {
    if (buf.size() >= sizeof(WireHeader)) {
      WireHeader h{};
      std::memcpy(&h, buf.data(), sizeof(h));
      if (buf.size() >= sizeof(h) + h.length) {
        *type = h.type;
        *payload = buf.substr(sizeof(h), h.length);
        return true;
      }
    }
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count());
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    char chunk[4096];
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

std::string challenge_nonce(const std::string& payload) {
  uint64_t n = 0;
  if (payload.size() < 8) return "";
  std::memcpy(&n, payload.data(), 8);
  return payload.substr(8, n);
}

std::string hello_for(const std::string& token, const std::string& nonce0, uint64_t rank, uint64_t world) {
  std::string nonce1(16, 'n');
  std::string msg = "flux-rdzv hello|" + nonce0 + "|" + nonce1 + "|" + std::to_string(rank) + "|" + std::to_string(world);
  flux::runtime::Digest mac = flux::runtime::hmac_sha256(token, msg);
  std::string hello;
  put_u64(hello, rank);
  put_u64(hello, world);
  put_str(hello, nonce1);
  put_str(hello, std::string(reinterpret_cast<const char*>(mac.data()), mac.size()));
  return hello;
}

TEST(RendezvousHandshake, TokenNeverOnTheWireAndStrangersStayOut) {
  const int port = next_port();
  const std::string token = "secret-token-that-must-not-travel";
  // Rank 0 and rank 1 of a 2-rank job; rank 1 starts after the strangers below have had their go.
  std::vector<ProcessResult> rank0;
  std::thread job0([&] { rank0 = flux::testing::run_processes({{probe()}}, {rank_env(0, 2, port, token, 8000)}, 30); });
  // 1. A silent connection and an oversized pre-authentication message.
  int silent = connect_to(port);
  ASSERT_GE(silent, 0);
  uint32_t type = 0;
  std::string challenge;
  ASSERT_TRUE(recv_raw(silent, &type, &challenge, 3000)) << "no challenge from rank 0";
  EXPECT_EQ(type, 7u);
  EXPECT_EQ(challenge.find(token), std::string::npos) << "the token crossed the wire";
  int big = connect_to(port);
  std::string payload;
  ASSERT_TRUE(recv_raw(big, &type, &payload, 3000));
  send_raw(big, 1, "", uint64_t(64) << 20);  // claims a 64 MiB hello before authenticating
  std::string none;
  EXPECT_FALSE(recv_raw(big, &type, &none, 2000)) << "rank 0 should close, not read 64 MiB";
  // 2. A replayed hello: valid for connection A's nonce, sent on connection B.
  int a = connect_to(port), b = connect_to(port);
  std::string ca, cb;
  ASSERT_TRUE(recv_raw(a, &type, &ca, 3000));
  ASSERT_TRUE(recv_raw(b, &type, &cb, 3000));
  ASSERT_NE(challenge_nonce(ca), challenge_nonce(cb)) << "nonces must be fresh per connection";
  send_raw(b, 1, hello_for(token, challenge_nonce(ca), 1, 2));
  std::string reply;
  ASSERT_TRUE(recv_raw(b, &type, &reply, 3000));
  EXPECT_EQ(type, 3u) << "a replayed hello must be rejected";
  EXPECT_NE(reply.find("wrong rendezvous token"), std::string::npos) << reply;
  ::close(a);
  // 3. A flood of silent connections.
  std::vector<int> flood;
  for (int i = 0; i < 150; ++i) flood.push_back(connect_to(port));
  // The real rank 1 still gets in well before the 8 s deadline.
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r1 = flux::testing::run_process({probe()}, rank_env(1, 2, port, token, 8000), 30);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  job0.join();
  for (int fd : flood) ::close(fd);
  ::close(silent);
  ::close(big);
  ::close(b);
  EXPECT_EQ(r1.exit_code, 0) << r1.output;
  ASSERT_EQ(rank0.size(), 1u);
  EXPECT_EQ(rank0[0].exit_code, 0) << rank0[0].output;
  EXPECT_NE(r1.output.find("probe ok rank 1 of 2"), std::string::npos) << r1.output;
  EXPECT_LT(seconds, 7.0) << "strangers delayed the real rank";
}

TEST(RendezvousHandshake, RankZeroWithoutTheTokenIsRefused) {
  const int port = next_port();
  // A fake rank 0: challenges, then answers any hello with a made-up proof.
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  std::thread fake([&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) return;
    std::string c;
    put_str(c, std::string(16, 'x'));
    send_raw(fd, 7, c);
    uint32_t type = 0;
    std::string hello;
    if (recv_raw(fd, &type, &hello, 5000)) {
      EXPECT_EQ(hello.find("the-real-token"), std::string::npos) << "the token crossed the wire";
      std::string proof;
      put_str(proof, std::string(32, 'p'));
      send_raw(fd, 8, proof);
      send_raw(fd, 2, std::string(8, '\0'));  // and a welcome, which must never be believed
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::close(fd);
  });
  ProcessResult r1 = flux::testing::run_process({probe()}, rank_env(1, 2, port, "the-real-token", 5000), 30);
  fake.join();
  ::close(lfd);
  EXPECT_EQ(r1.exit_code, 3) << r1.output;
  EXPECT_NE(r1.output.find("did not prove it holds the job's token"), std::string::npos) << r1.output;
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
