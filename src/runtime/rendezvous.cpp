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

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "src/common/check.h"

namespace flux::runtime {

namespace {

constexpr uint32_t kMagic = 0x52584c46u;  // "FLXR"
constexpr uint64_t kMaxMessage = uint64_t(64) << 20;
enum MsgType : uint32_t { kHello = 1, kWelcome = 2, kReject = 3, kContrib = 4, kResult = 5, kAbort = 6 };

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

bool recv_msg(int fd, uint32_t* type, std::string* payload, const Deadline& d, std::string* err) {
  Header h{};
  if (!recv_all(fd, reinterpret_cast<char*>(&h), sizeof(h), d, err)) return false;
  if (h.magic != kMagic || h.length > kMaxMessage) {
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

bool tokens_equal(const std::string& a, const std::string& b) {
  unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
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

  void serve_hellos() {
    listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FLUX_CHECK(listen_fd >= 0, "socket(): ", errno_text());
    int one = 1;
    ::setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr = resolve(opt.host, opt.port);
    if (::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd, opt.world_size + 16) != 0) {
      throw Error(detail::cat("flux rendezvous: rank 0 cannot listen on ", where(), ": ", errno_text(),
                              " (is MASTER_PORT in use by another job?)"));
    }
    client.assign(static_cast<size_t>(opt.world_size), -1);
    const Deadline deadline = Deadline::in_ms(opt.timeout_ms);
    int arrived = 1, rejected = 0;
    while (arrived < opt.world_size) {
      std::string err;
      if (!wait_fd(listen_fd, POLLIN, deadline, &err)) {
        std::vector<int> missing, present = {0};
        for (int r = 1; r < opt.world_size; ++r) (client[r] < 0 ? missing : present).push_back(r);
        fail_all(detail::cat("flux rendezvous: rank(s) ", rank_list(missing), " did not arrive within ", opt.timeout_ms,
                             " ms (world size ", opt.world_size, ", arrived: ", rank_list(present), ", listening on ",
                             where(), rejected ? detail::cat(", rejected ", rejected, " connection(s) with a wrong token")
                                               : std::string(),
                             ")"),
                 true);
      }
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      // A peer gets a few seconds to introduce itself; a silent or garbled connection is dropped.
      Deadline hello_deadline = Deadline::in_ms(std::min<int64_t>(5000, deadline.remaining_ms() + 1));
      uint32_t type = 0;
      std::string payload;
      uint64_t rank = 0, world = 0;
      std::string token;
      Reader in(payload);
      if (!recv_msg(fd, &type, &payload, hello_deadline, &err) || type != kHello || !in.str(&token) ||
          !in.u64(&rank) || !in.u64(&world)) {
        close_fd(fd);
        continue;
      }
      if (!tokens_equal(token, opt.token)) {
        send_msg(fd, kReject, "wrong rendezvous token (FLUX_RDZV_TOKEN differs from rank 0's)", hello_deadline, &err);
        close_fd(fd);
        ++rejected;
        continue;
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
      if (!problem.empty()) {
        std::string why = "flux rendezvous: " + problem;
        send_msg(fd, kReject, why, hello_deadline, &err);
        close_fd(fd);
        fail_all(why, false);
      }
      client[rank] = fd;
      ++arrived;
    }
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
    while (true) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      FLUX_CHECK(fd >= 0, "socket(): ", errno_text());
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        server_fd = fd;
        break;
      }
      last_error = errno_text();
      close_fd(fd);
      if (deadline.expired()) {
        throw TimeoutError(detail::cat("flux rendezvous: rank ", opt.rank, " could not reach rank 0 at ", where(),
                                       " within ", opt.timeout_ms, " ms (last error: ", last_error, ")"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    int one = 1;
    ::setsockopt(server_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::string hello, err;
    put_str(hello, opt.token);
    put_u64(hello, static_cast<uint64_t>(opt.rank));
    put_u64(hello, static_cast<uint64_t>(opt.world_size));
    if (!send_msg(server_fd, kHello, hello, deadline, &err)) {
      throw Error(detail::cat("flux rendezvous: rank ", opt.rank, " lost rank 0 at ", where(), ": ", err));
    }
    uint32_t type = 0;
    std::string payload;
    if (!recv_msg(server_fd, &type, &payload, welcome_deadline, &err)) {
      if (welcome_deadline.expired()) {
        throw TimeoutError(detail::cat("flux rendezvous: rank ", opt.rank, " reached rank 0 at ", where(),
                                       " but the job did not assemble within ", opt.timeout_ms,
                                       " ms (rank 0 is still waiting for other ranks)"));
      }
      throw Error(detail::cat("flux rendezvous: rank ", opt.rank, " lost rank 0 at ", where(), ": ", err));
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
