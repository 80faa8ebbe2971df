// src/runtime/rendezvous.cpp — see rendezvous.h. POSIX sockets, poll() with deadlines everywhere.
#include "src/runtime/rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "src/common/check.h"
#include "src/runtime/hmac_sha256.h"

namespace flux::runtime {

namespace {

constexpr uint32_t kMagic = 0x52584c46u;  // "FLXR"
constexpr uint64_t kMaxMessage = uint64_t(64) << 20;  // from an authenticated peer
constexpr uint64_t kMaxPreAuthMessage = 512;          // before the peer has proved it holds the token
constexpr int kMaxPendingHandshakes = 64;             // unauthenticated connections rank 0 holds at once
constexpr int64_t kHandshakeMs = 5000;                // each connection's time to authenticate
constexpr size_t kNonceBytes = 16;
enum MsgType : uint32_t {
  kHello = 1, kWelcome = 2, kReject = 3, kContrib = 4, kResult = 5, kAbort = 6, kChallenge = 7, kProof = 8
};

using Clock = std::chrono::steady_clock;

struct Deadline {
  Clock::time_point at;
  static Deadline in_ms(int64_t ms) { return {Clock::now() + std::chrono::milliseconds(ms)}; }
  int remaining_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(left > 1000000 ? 1000000 : left);
  }
  bool expired() const { return Clock::now() >= at; }
};

std::string errno_text() { return std::strerror(errno); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Waits for `events` on fd until the deadline. Returns false on timeout or error (text in *err).
bool wait_fd(int fd, short events, const Deadline& d, std::string* err) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, d.remaining_ms());
    if (rc > 0) return true;
    if (rc == 0) {
      *err = "timed out";
      return false;
    }
    if (errno != EINTR) {
      *err = errno_text();
      return false;
    }
  }
}

bool send_all(int fd, const char* data, size_t n, const Deadline& d, std::string* err) {
  while (n > 0) {
    if (!wait_fd(fd, POLLOUT, d, err)) return false;
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *err = errno_text();
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool recv_all(int fd, char* data, size_t n, const Deadline& d, std::string* err) {
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, d, err)) return false;
    ssize_t r = ::recv(fd, data, n, 0);
    if (r == 0) {
      *err = "connection closed";
      return false;
    }
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *err = errno_text();
      return false;
    }
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

struct Header {
  uint32_t magic;
  uint32_t type;
  uint64_t length;
};

bool send_msg(int fd, uint32_t type, const std::string& payload, const Deadline& d, std::string* err) {
  Header h{kMagic, type, payload.size()};
  return send_all(fd, reinterpret_cast<const char*>(&h), sizeof(h), d, err) &&
         send_all(fd, payload.data(), payload.size(), d, err);
}

bool recv_msg(int fd, uint32_t* type, std::string* payload, const Deadline& d, std::string* err,
              uint64_t max_length = kMaxMessage) {
  Header h{};
  if (!recv_all(fd, reinterpret_cast<char*>(&h), sizeof(h), d, err)) return false;
  if (h.magic != kMagic || h.length > max_length) {
    *err = "not a flux rendezvous message";
    return false;
  }
  payload->assign(h.length, '\0');
  if (!recv_all(fd, payload->data(), h.length, d, err)) return false;
  *type = h.type;
  return true;
}

// Length-prefixed encoding of the payloads.
void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}
class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  bool u64(uint64_t* v) {
    if (pos_ + sizeof(*v) > s_.size()) return false;
    std::memcpy(v, s_.data() + pos_, sizeof(*v));
    pos_ += sizeof(*v);
    return true;
  }
  bool str(std::string* v) {
    uint64_t n = 0;
    if (!u64(&n) || pos_ + n > s_.size()) return false;
    v->assign(s_.data() + pos_, n);
    pos_ += n;
    return true;
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

// Mutual challenge-response (the token never crosses the wire): rank 0 sends a fresh nonce n0 with
// every accepted connection; the joining rank answers with its own nonce n1 and
// HMAC(token, "hello" | n0 | n1 | rank | world); rank 0 checks it and proves itself with
// HMAC(token, "server" | n1 | n0 | rank | world), which the joining rank checks before it trusts rank 0.
// A recorded hello is useless on another connection (n0 differs), and so is a recorded proof (n1).
std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  FILE* f = std::fopen("/dev/urandom", "rb");
  const bool ok = f != nullptr && std::fread(out.data(), 1, n, f) == n;
  if (f) std::fclose(f);
  if (!ok) throw Error("flux rendezvous: cannot read /dev/urandom for a handshake nonce");
  return out;
}

std::string handshake_mac(const std::string& token, const char* role, const std::string& a, const std::string& b,
                          uint64_t rank, uint64_t world) {
  std::string msg = std::string("flux-rdzv ") + role + "|" + a + "|" + b + "|" + std::to_string(rank) + "|" +
                    std::to_string(world);
  Digest d = hmac_sha256(token, msg);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

bool macs_equal(const std::string& a, const std::string& b) {
  if (a.size() != 32 || b.size() != 32) return false;
  Digest x{}, y{};
  std::memcpy(x.data(), a.data(), 32);
  std::memcpy(y.data(), b.data(), 32);
  return digests_equal(x, y);
}

sockaddr_in resolve(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) return addr;
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw InvalidArgument(detail::cat("flux rendezvous: cannot resolve MASTER_ADDR '", host, "': ", gai_strerror(rc)));
  }
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  ::freeaddrinfo(res);
  return addr;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += detail::cat(out.empty() ? "" : ", ", r);
  return out.empty() ? "none" : out;
}

}  // namespace

struct Rendezvous::Impl {
  RendezvousOptions opt;
  int listen_fd = -1;
  int server_fd = -1;       // rank > 0: connection to rank 0
  std::vector<int> client;  // rank 0: connection to each rank (index = rank)
  uint64_t step = 0;        // collective sequence number

  ~Impl() {
    close_fd(listen_fd);
    close_fd(server_fd);
    for (int& fd : client) close_fd(fd);
  }

  std::string where() const { return detail::cat(opt.host, ":", opt.port); }

  // Rank 0: tell every connected rank, then throw.
  [[noreturn]] void fail_all(const std::string& why, bool timeout) {
    Deadline d = Deadline::in_ms(1000);
    std::string ignored;
    for (int& fd : client) {
      if (fd >= 0) send_msg(fd, kAbort, why, d, &ignored);
    }
    if (timeout) throw TimeoutError(why);
    throw Error(why);
  }

  // Rank 0: accept and authenticate the other ranks, every handshake concurrently with its own deadline
  // (a silent, slow or flooding connection costs a slot for at most kHandshakeMs and never delays a real
  // rank), reading at most kMaxPreAuthMessage bytes from a connection before it has proved the token.
  struct Pending {
    int fd = -1;
    std::string nonce;  // n0 sent to it
    std::string buf;    // bytes of its hello so far
    Deadline deadline;
  };

  void listen_socket() {
    if (opt.listen_fd >= 0) {  // a socket bound and listening already (flux-run's, inherited: no port race)
      listen_fd = opt.listen_fd;
      sockaddr_in bound{};
      socklen_t len = sizeof(bound);
      if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0 ||
          ntohs(bound.sin_port) != opt.port) {
        throw Error(detail::cat("flux rendezvous: FLUX_RDZV_LISTEN_FD=", opt.listen_fd,
                                " is not a socket listening on MASTER_PORT ", opt.port));
      }
      return;
    }
    listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FLUX_CHECK(listen_fd >= 0, "socket(): ", errno_text());
    int one = 1;
    ::setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr = resolve(opt.host, opt.port);
    if (::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd, 128) != 0) {
      throw Error(detail::cat("flux rendezvous: rank 0 cannot listen on ", where(), ": ", errno_text(),
                              " (is MASTER_PORT in use by another job?)"));
    }
  }

  // Feeds what `p` sent; returns true once its hello is complete and checked (then *rank is set), and
  // closes it (fd = -1) on garbage, a wrong MAC or a misconfiguration (which fails the whole job).
  bool take_hello(Pending& p, int* rank_out, int* rejected) {
    char chunk[256];
    ssize_t r = ::recv(p.fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      close_fd(p.fd);
      return false;
    }
    if (r > 0) p.buf.append(chunk, static_cast<size_t>(r));
    if (p.buf.size() < sizeof(Header)) return false;
    Header h{};
    std::memcpy(&h, p.buf.data(), sizeof(h));
    if (h.magic != kMagic || h.type != kHello || h.length > kMaxPreAuthMessage ||
        p.buf.size() > sizeof(Header) + h.length) {
      close_fd(p.fd);
      return false;
    }
    if (p.buf.size() < sizeof(Header) + h.length) return false;
    const std::string payload = p.buf.substr(sizeof(Header));
    Reader in(payload);
    uint64_t rank = 0, world = 0;
    std::string nonce1, mac;
    std::string err;
    Deadline d = Deadline::in_ms(1000);
    if (!in.u64(&rank) || !in.u64(&world) || !in.str(&nonce1) || !in.str(&mac) || nonce1.size() != kNonceBytes ||
        !macs_equal(mac, handshake_mac(opt.token, "hello", p.nonce, nonce1, rank, world))) {
      send_msg(p.fd, kReject, "wrong rendezvous token (FLUX_RDZV_TOKEN differs from rank 0's)", d, &err);
      close_fd(p.fd);
      ++*rejected;
      return false;
    }
    std::string problem;
    if (static_cast<int64_t>(world) != opt.world_size) {
      problem = detail::cat("rank ", rank, " has world size ", world, " but rank 0 has ", opt.world_size,
                            " (expected the same WORLD_SIZE on every rank)");
    } else if (rank == 0 || rank >= static_cast<uint64_t>(opt.world_size)) {
      problem = detail::cat("a peer claims rank ", rank, " (expected 1..", opt.world_size - 1, ")");
    } else if (client[rank] >= 0) {
      problem = detail::cat("two processes claim rank ", rank);
    }
    if (!problem.empty()) {  // an authenticated rank, misconfigured: the job cannot run
      std::string why = "flux rendezvous: " + problem;
      send_msg(p.fd, kReject, why, d, &err);
      close_fd(p.fd);
      fail_all(why, false);
    }
    std::string proof;
    put_str(proof, handshake_mac(opt.token, "server", nonce1, p.nonce, rank, world));
    if (!send_msg(p.fd, kProof, proof, d, &err)) {
      close_fd(p.fd);
      return false;
    }
    *rank_out = static_cast<int>(rank);
    return true;
  }

  void serve_hellos() {
    listen_socket();
    // Non-blocking: the loop below accepts until the queue is empty, and must never block in accept().
    ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL, 0) | O_NONBLOCK);
    client.assign(static_cast<size_t>(opt.world_size), -1);
    const Deadline deadline = Deadline::in_ms(opt.timeout_ms);
    int arrived = 1, rejected = 0;
    std::vector<Pending> pending;
    auto drop_all_pending = [&] {
      for (Pending& p : pending) close_fd(p.fd);
      pending.clear();
    };
    while (arrived < opt.world_size) {
      if (deadline.expired()) {
        drop_all_pending();
        std::vector<int> missing, present = {0};
        for (int r = 1; r < opt.world_size; ++r) (client[r] < 0 ? missing : present).push_back(r);
        fail_all(detail::cat("flux rendezvous: rank(s) ", rank_list(missing), " did not arrive within ", opt.timeout_ms,
                             " ms (world size ", opt.world_size, ", arrived: ", rank_list(present), ", listening on ",
                             where(), rejected ? detail::cat(", rejected ", rejected, " connection(s) with a wrong token")
                                               : std::string(),
                             ")"),
                 true);
      }
      std::vector<pollfd> fds = {{listen_fd, POLLIN, 0}};
      for (const Pending& p : pending) fds.push_back({p.fd, POLLIN, 0});
      int wait_ms = std::min(deadline.remaining_ms(), 50);
      int rc = ::poll(fds.data(), fds.size(), wait_ms);
      if (rc < 0 && errno != EINTR) fail_all(detail::cat("flux rendezvous: poll(): ", errno_text()), false);
      for (size_t i = 1; i < fds.size(); ++i) {
        Pending& p = pending[i - 1];
        if (p.fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        int rank = -1;
        if (take_hello(p, &rank, &rejected)) {
          client[static_cast<size_t>(rank)] = p.fd;
          p.fd = -1;  // now a rank's connection, no longer pending
          ++arrived;
        }
      }
      for (int k = 0; k < 16 && (fds[0].revents & POLLIN); ++k) {
        int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        if (static_cast<int>(pending.size()) >= kMaxPendingHandshakes) {
          // A flood: the oldest unauthenticated connection makes room, so a real rank arriving now is
          // handled at once (one evicted mid-handshake retries).
          close_fd(pending.front().fd);
          pending.erase(pending.begin());
        }
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        Pending p;
        p.fd = fd;
        p.nonce = random_bytes(kNonceBytes);
        p.deadline = Deadline::in_ms(kHandshakeMs);
        std::string challenge, err;
        put_str(challenge, p.nonce);
        if (send_msg(fd, kChallenge, challenge, Deadline::in_ms(1000), &err)) {
          pending.push_back(std::move(p));
        } else {
          ::close(fd);
        }
      }
      // Drop connections that are closed, or silent past their own deadline.
      for (Pending& p : pending) {
        if (p.fd >= 0 && p.deadline.expired()) close_fd(p.fd);
      }
      pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return p.fd < 0; }),
                    pending.end());
    }
    drop_all_pending();
    close_fd(listen_fd);
    std::string welcome;
    put_u64(welcome, static_cast<uint64_t>(opt.world_size));
    Deadline d = Deadline::in_ms(opt.timeout_ms);
    for (int r = 1; r < opt.world_size; ++r) {
      std::string err;
      if (!send_msg(client[r], kWelcome, welcome, d, &err)) {
        fail_all(detail::cat("flux rendezvous: lost rank ", r, " while starting the job: ", err), false);
      }
    }
  }

  // Ranks > 0 wait a little longer than rank 0 for the job to assemble and for each collective, so that
  // rank 0, which knows who is missing, fails first and tells them.
  static constexpr int64_t kFollowerGraceMs = 2000;

  void join() {
    const Deadline deadline = Deadline::in_ms(opt.timeout_ms);
    const Deadline welcome_deadline = Deadline::in_ms(opt.timeout_ms + kFollowerGraceMs);
    sockaddr_in addr = resolve(opt.host, opt.port);
    std::string last_error = "no attempt";
    std::string err, payload;
    uint32_t type = 0;
    // Connect and receive rank 0's challenge; retried until the deadline (rank 0 not listening yet, or
    // it closed us because a flood of connections held every handshake slot).
    while (true) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      FLUX_CHECK(fd >= 0, "socket(): ", errno_text());
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        Deadline attempt = Deadline::in_ms(std::min<int64_t>(3000, deadline.remaining_ms() + 1));
        // Everything until rank 0 has proved itself is small and checked.
        if (recv_msg(fd, &type, &payload, attempt, &err, kMaxPreAuthMessage) && type == kChallenge) {
          server_fd = fd;
          break;
        }
        last_error = err.empty() ? detail::cat("unexpected message ", type, " instead of a handshake challenge") : err;
      } else {
        last_error = errno_text();
      }
      close_fd(fd);
      if (deadline.expired()) {
        throw TimeoutError(detail::cat("flux rendezvous: rank ", opt.rank, " could not reach rank 0 at ", where(),
                                       " within ", opt.timeout_ms, " ms (last error: ", last_error, ")"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::string nonce0;
    Reader challenge(payload);
    if (!challenge.str(&nonce0) || nonce0.size() != kNonceBytes) {
      throw Error(detail::cat("flux rendezvous: rank ", opt.rank, ": malformed handshake challenge from ", where()));
    }
    const std::string nonce1 = random_bytes(kNonceBytes);
    std::string hello;
    put_u64(hello, static_cast<uint64_t>(opt.rank));
    put_u64(hello, static_cast<uint64_t>(opt.world_size));
    put_str(hello, nonce1);
    put_str(hello, handshake_mac(opt.token, "hello", nonce0, nonce1, uint64_t(opt.rank), uint64_t(opt.world_size)));
    if (!send_msg(server_fd, kHello, hello, deadline, &err)) {
      throw Error(detail::cat("flux rendezvous: rank ", opt.rank, " lost rank 0 at ", where(), ": ", err));
    }
    if (!recv_msg(server_fd, &type, &payload, deadline, &err, kMaxPreAuthMessage)) {
      throw Error(detail::cat("flux rendezvous: rank ", opt.rank, " lost rank 0 at ", where(), " during the handshake: ",
                              err));
    }
    if (type == kProof) {
      Reader in(payload);
      std::string mac;
      if (!in.str(&mac) ||
          !macs_equal(mac, handshake_mac(opt.token, "server", nonce1, nonce0, uint64_t(opt.rank), uint64_t(opt.world_size)))) {
        throw Error(detail::cat("flux rendezvous: rank ", opt.rank, ": the process at ", where(),
                                " did not prove it holds the job's token: not this job's rank 0 (refusing it)"));
      }
      if (!recv_msg(server_fd, &type, &payload, welcome_deadline, &err)) {
        if (welcome_deadline.expired()) {
          throw TimeoutError(detail::cat("flux rendezvous: rank ", opt.rank, " reached rank 0 at ", where(),
                                         " but the job did not assemble within ", opt.timeout_ms,
                                         " ms (rank 0 is still waiting for other ranks)"));
        }
        throw Error(detail::cat("flux rendezvous: rank ", opt.rank, " lost rank 0 at ", where(), ": ", err));
      }
    }
    if (type == kReject) throw Error(detail::cat("flux rendezvous: rank 0 rejected rank ", opt.rank, ": ", payload));
    if (type == kAbort) throw Error(payload);
    FLUX_CHECK(type == kWelcome, "unexpected rendezvous message ", type);
  }

  std::vector<std::string> gather(const std::string& mine, const std::string& label) {
    const uint64_t my_step = step++;
    const Deadline deadline = Deadline::in_ms(opt.timeout_ms);
    std::vector<std::string> blobs(static_cast<size_t>(opt.world_size));
    if (opt.world_size == 1) {
      blobs[0] = mine;
      return blobs;
    }
    std::string err;
    if (opt.rank != 0) {
      const Deadline follower_deadline = Deadline::in_ms(opt.timeout_ms + kFollowerGraceMs);
      std::string msg;
      put_u64(msg, my_step);
      put_str(msg, label);
      put_str(msg, mine);
      uint32_t type = 0;
      std::string payload;
      if (!send_msg(server_fd, kContrib, msg, deadline, &err) ||
          !recv_msg(server_fd, &type, &payload, follower_deadline, &err)) {
        if (follower_deadline.expired()) {
          throw TimeoutError(detail::cat("flux rendezvous: rank ", opt.rank, ": '", label, "' did not complete within ",
                                         opt.timeout_ms, " ms (waiting for rank 0 and the others)"));
        }
        throw Error(detail::cat("flux rendezvous: rank ", opt.rank, " lost rank 0 during '", label, "': ", err,
                                " (did rank 0 exit?)"));
      }
      if (type == kAbort) throw Error(payload);
      Reader in(payload);
      uint64_t s = 0, count = 0;
      FLUX_CHECK(type == kResult && in.u64(&s) && s == my_step && in.u64(&count) &&
                     count == static_cast<uint64_t>(opt.world_size),
                 "malformed rendezvous result for '", label, "'");
      for (auto& b : blobs) FLUX_CHECK(in.str(&b), "malformed rendezvous result for '", label, "'");
      return blobs;
    }
    blobs[0] = mine;
    std::vector<bool> have(static_cast<size_t>(opt.world_size), false);
    have[0] = true;
    int pending = opt.world_size - 1;
    while (pending > 0) {
      std::vector<pollfd> fds;
      std::vector<int> ranks;
      for (int r = 1; r < opt.world_size; ++r) {
        if (!have[r]) {
          fds.push_back({client[r], POLLIN, 0});
          ranks.push_back(r);
        }
      }
      int rc = ::poll(fds.data(), fds.size(), deadline.remaining_ms());
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) {
        fail_all(detail::cat("flux rendezvous: '", label, "' timed out after ", opt.timeout_ms, " ms: rank(s) ",
                             rank_list(ranks), " did not take part"),
                 true);
      }
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const int r = ranks[i];
        uint32_t type = 0;
        std::string payload;
        if (!recv_msg(client[r], &type, &payload, deadline, &err)) {
          fail_all(detail::cat("flux rendezvous: rank ", r, " ", err == "connection closed" ? "closed its connection" : err,
                               " during '", label, "' (did it exit or crash?)"),
                   false);
        }
        if (type == kAbort) fail_all(payload, false);
        Reader in(payload);
        uint64_t s = 0;
        std::string their_label;
        if (type != kContrib || !in.u64(&s) || !in.str(&their_label) || !in.str(&blobs[r])) {
          fail_all(detail::cat("flux rendezvous: malformed message from rank ", r, " during '", label, "'"), false);
        }
        if (s != my_step || their_label != label) {
          fail_all(detail::cat("flux rendezvous: ranks disagree: rank ", r, " called '", their_label, "' (step ", s,
                               ") while rank 0 called '", label, "' (step ", my_step,
                               "); every rank must make the same collective calls in the same order"),
                   false);
        }
        have[r] = true;
        --pending;
      }
    }
    std::string result;
    put_u64(result, my_step);
    put_u64(result, static_cast<uint64_t>(opt.world_size));
    for (const auto& b : blobs) put_str(result, b);
    for (int r = 1; r < opt.world_size; ++r) {
      if (!send_msg(client[r], kResult, result, deadline, &err)) {
        fail_all(detail::cat("flux rendezvous: lost rank ", r, " while finishing '", label, "': ", err), false);
      }
    }
    return blobs;
  }
};

Rendezvous::Rendezvous(const RendezvousOptions& options) : impl_(std::make_unique<Impl>()) {
  const RendezvousOptions& o = options;
  FLUX_CHECK_ARG(o.world_size >= 1, "flux rendezvous: world size ", o.world_size, " (expected >= 1)");
  FLUX_CHECK_ARG(o.rank >= 0 && o.rank < o.world_size, "flux rendezvous: rank ", o.rank, " (expected 0..",
                 o.world_size - 1, ")");
  FLUX_CHECK_ARG(o.world_size == 1 || (o.port >= 1 && o.port <= 65535), "flux rendezvous: port ", o.port,
                 " (expected 1..65535: set MASTER_PORT)");
  FLUX_CHECK_ARG(o.listen_fd < 0 || o.rank == 0, "flux rendezvous: a listening socket was given to rank ", o.rank,
                 " (only rank 0 listens)");
  FLUX_CHECK_ARG(!o.token.empty(), "flux rendezvous: no token: set FLUX_RDZV_TOKEN to the same secret on every rank "
                                   "(flux-run does this)");
  FLUX_CHECK_ARG(o.timeout_ms > 0, "flux rendezvous: timeout ", o.timeout_ms, " ms (expected > 0)");
  impl_->opt = options;
  if (o.world_size == 1) return;
  if (o.rank == 0) {
    impl_->serve_hellos();
  } else {
    impl_->join();
  }
}

Rendezvous::~Rendezvous() = default;

int Rendezvous::rank() const { return impl_->opt.rank; }
int Rendezvous::world_size() const { return impl_->opt.world_size; }

std::vector<std::string> Rendezvous::all_gather(const std::string& mine, const std::string& label) {
  return impl_->gather(mine, "all_gather " + label);
}

std::string Rendezvous::broadcast(const std::string& value, int root, const std::string& label) {
  FLUX_CHECK_ARG(root >= 0 && root < world_size(), "flux rendezvous: broadcast root ", root, " (expected 0..",
                 world_size() - 1, ")");
  return impl_->gather(rank() == root ? value : std::string(), detail::cat("broadcast ", label, " from ", root))[root];
}

void Rendezvous::barrier(const std::string& label) { impl_->gather(std::string(), "barrier " + label); }

void Rendezvous::abort(const std::string& why) {
  Impl& p = *impl_;
  if (p.opt.world_size > 1) {
    if (p.opt.rank == 0) p.fail_all(why, false);
    std::string err;
    send_msg(p.server_fd, kAbort, why, Deadline::in_ms(1000), &err);
  }
  throw Error(why);
}

}  // namespace flux::runtime
