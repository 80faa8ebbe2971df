// flux/error.h — the exceptions the public API throws.
//
// Every failure reaches the caller as a flux::Error (a std::runtime_error) whose what() says what was
// wrong and what was expected. Subclasses let callers tell classes of failure apart:
//   InvalidArgument — a bad shape, alignment, dtype, pointer or option (nothing was launched);
//   Unsupported     — valid input this build or device cannot run (wrong GPU architecture, ...);
//   CudaError       — a CUDA / cuBLAS / NCCL call failed (file, line and the call are in the text);
//   TimeoutError    — a bounded device or host wait expired (which wait, index, expected, seen).
#pragma once

#include <stdexcept>
#include <string>

namespace flux {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what) : Error(what) {}
};

class Unsupported : public Error {
 public:
  explicit Unsupported(const std::string& what) : Error(what) {}
};

class CudaError : public Error {
 public:
  explicit CudaError(const std::string& what) : Error(what) {}
};

class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& what) : Error(what) {}
};

}  // namespace flux
