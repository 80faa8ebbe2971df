// src/runtime/rendezvous.h — the ranks of a job find each other over TCP and exchange small blobs.
//
// Topology: a star. Rank 0 listens on host:port (loopback by default), or on a socket it inherited
// already listening (flux-run's: no window in which another process could take the port); every other
// rank connects, retrying until the deadline. Handshake: a mutual challenge-response with the job's
// secret token (HMAC-SHA-256 over fresh nonces of both sides, rendezvous.cpp): the token never crosses
// the wire, a recorded handshake cannot be replayed, and a joining rank trusts rank 0 only once rank 0
// has proved it holds the token too. Rank 0 authenticates connections concurrently, each with its own
// deadline, at most 64 at once, reading at most 512 bytes from one before it is authenticated: a wrong
// token, a silent connection or a flood of them lets no stranger in and delays no real rank. A wrong
// token is rejected (the job goes on waiting for the real rank); a misconfiguration of an authenticated
// rank (world size mismatch, rank out of range or duplicated) fails the whole rendezvous, telling
// every connected rank why.
//
// Collectives (all_gather, broadcast, barrier) go through rank 0 and carry a label; ranks that call
// different collectives at the same step (e.g. plans that differ) fail with both labels named.
// Every step is bounded by the timeout: a rank that never arrives, never contributes, or closes its
// connection is named in the error every rank throws (TimeoutError for expiry, Error otherwise).
// Not thread-safe: one thread per rank drives it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flux::runtime {

struct RendezvousOptions {
  int rank = 0;
  int world_size = 1;
  std::string host = "127.0.0.1";  // where rank 0 listens (and the others connect)
  int port = 0;                    // 1..65535
  std::string token;               // the job's shared secret; must be non-empty
  int64_t timeout_ms = 60000;      // bound on connecting and on every collective
  int listen_fd = -1;              // rank 0: a socket already bound to `port` and listening (else it binds)
};

class Rendezvous {
 public:
  explicit Rendezvous(const RendezvousOptions& options);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int rank() const;
  int world_size() const;

  // Every rank's blob, indexed by rank.
  std::vector<std::string> all_gather(const std::string& mine, const std::string& label);
  // Root's `value` on every rank (other ranks' `value` is ignored).
  std::string broadcast(const std::string& value, int root, const std::string& label);
  void barrier(const std::string& label);

  // Fail the job: every rank's next (or current) collective throws an error carrying `why`; this
  // rank throws it now.
  [[noreturn]] void abort(const std::string& why);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flux::runtime
