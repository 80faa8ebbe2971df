// src/common/error.cpp — error text for CUDA / cuBLAS failures and device wait records.
#include <cinttypes>
#include <cstdio>

#include "flux/device_status.h"
#include "flux/types.h"
#include "src/common/check.h"

namespace flux {
namespace detail {

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  throw CudaError(cat(file, ":", line, ": ", call, " failed: ", cudaGetErrorName(error), " (",
                      cudaGetErrorString(error), ")"));
}

void throw_cublas_error(int status, const char* call, const char* file, int line) {
  throw CudaError(cat(file, ":", line, ": ", call, " failed with cuBLAS status ", status));
}

}  // namespace detail

std::string describe_device_status(const DeviceStatus& status) {
  if (status.failed == 0) return "";
  char addr[32];
  std::snprintf(addr, sizeof(addr), "0x%" PRIx64, status.flag_addr);
  double ms = static_cast<double>(status.waited_ns) / 1e6;
  switch (static_cast<WaitSite>(status.failed)) {
    case WaitSite::kGemmWaitBeforeLoad:
      return detail::cat("flux gemm: wait-before-load timed out after ", ms, " ms on M-block ", status.index,
                         " (flag at ", addr, ": expected >= ", status.expected, ", last seen ", status.seen,
                         (status.rank >= 0 ? detail::cat("; rank ", status.rank) : std::string()),
                         (status.peer >= 0 ? detail::cat(", waiting for peer ", status.peer) : std::string()),
                         "); the kernel stopped waiting and its output is undefined");
    case WaitSite::kGemmStreamKFixup:
      return detail::cat("flux gemm: stream-K fixup timed out after ", ms, " ms waiting for the partials of slot ",
                         status.index, " (flag at ", addr, ": expected >= ", status.expected, ", last seen ",
                         status.seen, (status.rank >= 0 ? detail::cat("; rank ", status.rank) : std::string()),
                         "): a CTA of the GEMM's persistent grid never ran its piece (not resident?); the output "
                         "is undefined");
    case WaitSite::kSignalWait:
      return detail::cat("flux signal: rank ", status.rank, " timed out after ", ms, " ms waiting for peer ",
                         status.peer, " on signal ", status.index, " (flag at ", addr, ": expected >= ",
                         status.expected, ", last seen ", status.seen, ")");
    default:
      return detail::cat("flux: device wait failed with unknown site ", status.failed);
  }
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "bf16";
    case DType::kFP16:
      return "fp16";
    case DType::kE4M3:
      return "e4m3";
    case DType::kFP32:
      return "fp32";
  }
  return "unknown-dtype";
}
const char* to_string(WeightLayout layout) { return layout == WeightLayout::kNK ? "nk" : "kn"; }

DType parse_dtype(const std::string& text) {
  if (text == "bf16") return DType::kBF16;
  if (text == "fp16") return DType::kFP16;
  if (text == "e4m3" || text == "fp8") return DType::kE4M3;
  throw InvalidArgument(detail::cat("flux: unknown dtype '", text, "' (expected bf16, fp16 or e4m3 (alias fp8))"));
}

const char* to_string(ScaleKind scale) {
  switch (scale) {
    case ScaleKind::kNone:
      return "none";
    case ScaleKind::kPerTensor:
      return "per-tensor";
    case ScaleKind::kPerRowCol:
      return "per-row-col";
  }
  return "unknown-scale";
}

ScaleKind parse_scale_kind(const std::string& text) {
  if (text == "none") return ScaleKind::kNone;
  if (text == "per-tensor") return ScaleKind::kPerTensor;
  if (text == "per-row-col") return ScaleKind::kPerRowCol;
  throw InvalidArgument(detail::cat("flux: unknown scale kind '", text, "' (expected none, per-tensor or per-row-col)"));
}

WeightLayout parse_weight_layout(const std::string& text) {
  if (text == "nk") return WeightLayout::kNK;
  if (text == "kn") return WeightLayout::kKN;
  throw InvalidArgument(detail::cat("flux: unknown weight layout '", text,
                                    "' (expected nk for B [N, K] as torch.nn.Linear, or kn for B [K, N])"));
}

}  // namespace flux
