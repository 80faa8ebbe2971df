// src/runtime/hmac_sha256.h — SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the rendezvous's
// challenge-response: each side proves it holds the job token without the token crossing the wire.
// Host code, no dependency; checked against the RFC 4231 / FIPS test vectors (tests/runtime).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace flux::runtime {

using Digest = std::array<uint8_t, 32>;

Digest sha256(const std::string& data);
Digest hmac_sha256(const std::string& key, const std::string& message);
// Constant-time comparison (the time does not depend on where the digests differ).
bool digests_equal(const Digest& a, const Digest& b);
std::string to_hex(const Digest& d);

}  // namespace flux::runtime
