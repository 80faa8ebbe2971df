// python/csrc/flux_torch.cpp — the flux_torch extension: Flux's plans behind torch custom ops.
//
//   torch.ops.flux.gemm(a, b, bias, layout)                            out [M, N]
//   torch.ops.flux.gemm_rs(a, b, bias, group_name, layout, path)       out [M/W, N]
//   torch.ops.flux.ag_gemm(a, b, bias, group_name, layout, path, return_gathered)
//                                                                      (out [M, N/W], gathered A [M, K] or [0, K])
// Shapes and semantics are the C++ API's (flux/gemm.h, flux/gemm_rs.h, flux/ag_gemm.h); W is the size of
// the process group. The ops run on the current CUDA stream, allocate their outputs with torch's caching
// allocator and copy nothing (the gathered A, when asked for, is one device-to-device copy out of the
// plan's workspace, which the next call reuses). Fake (meta) kernels live in flux_torch/_ops.py.
//
// Groups and plans. A torch.distributed group is registered from Python (flux_torch.distributed) with an
// exchange object that runs Flux's host collectives on the group's store. Its Communicator is built on
// the group's first op (a collective: every rank of the group calls the same ops in the same order, as
// tensor parallelism does), and plans are cached per (group, op, N, K, dtype, layout, path) — M varies
// per call: a plan is rebuilt, larger, when a call's M exceeds the M it was built for (max_m rounded up
// to a power of two). The cache is LRU per group with a limit; eviction and release are collective and
// deterministic, since every rank of a group sees the same sequence of calls. Building or evicting a plan
// needs the host and synchronizes the device, so it is refused inside CUDA-graph capture (error: call the
// op once eagerly first); plans used by a capture are never evicted (release_plans() still frees them —
// a graph must not be replayed after that).
//
// Errors: flux::InvalidArgument -> ValueError, flux::Unsupported -> NotImplementedError, other flux
// errors (timeouts, a poisoned communicator) -> RuntimeError, each with the library's message.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "flux/ag_gemm.h"
#include "flux/error.h"
#include "flux/gemm.h"
#include "flux/gemm_rs.h"
#include "flux/knobs.h"
#include "flux/runtime.h"

namespace py = pybind11;

namespace flux_torch {
namespace {

// ------------------------------------------------------------------------------------------------
// Errors: the library's message, as the Python exception that fits.
template <typename F>
auto translate(const char* op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const flux::InvalidArgument& e) {
    TORCH_CHECK_VALUE(false, e.what());
  } catch (const flux::Unsupported& e) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, e.what());
  } catch (const flux::Error& e) {
    TORCH_CHECK(false, e.what());
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "flux ", op, ": ", e.what());
  }
}

// ------------------------------------------------------------------------------------------------
// Host collectives on a Python object (flux_torch.distributed.StoreExchange): all_gather(label, bytes)
// -> list of bytes, abort(why). Python exceptions come back as flux errors (TimeoutError stays one).
class PyExchange final : public flux::HostExchange {
 public:
  explicit PyExchange(py::object impl) : impl_(std::move(impl)) {}
  ~PyExchange() override {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      impl_ = py::object();
    } else {
      impl_.release();  // the interpreter is gone: leak the reference rather than touch it
    }
  }
  std::vector<std::string> all_gather(const std::string& mine, const std::string& label) override {
    py::gil_scoped_acquire gil;
    try {
      py::list blobs = impl_.attr("all_gather")(label, py::bytes(mine));
      std::vector<std::string> out;
      out.reserve(blobs.size());
      for (auto b : blobs) out.push_back(b.cast<std::string>());
      return out;
    } catch (py::error_already_set& e) {
      rethrow(e);
    }
  }
  [[noreturn]] void abort(const std::string& why) override {
    py::gil_scoped_acquire gil;
    try {
      impl_.attr("abort")(why);
    } catch (py::error_already_set& e) {
      rethrow(e);
    }
    throw flux::Error(why);
  }

 private:
  [[noreturn]] static void rethrow(py::error_already_set& e) {
    const bool timeout = e.matches(PyExc_TimeoutError);
    std::string what = e.what();
    if (timeout) throw flux::TimeoutError(what);
    throw flux::Error(what);
  }
  py::object impl_;
};

// ------------------------------------------------------------------------------------------------
// Plans and groups.
int64_t round_up_pow2(int64_t m) {
  int64_t p = 1;
  while (p < m) p <<= 1;
  return p;
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

struct CachedPlan {
  int64_t max_m = 0;
  bool pinned = false;  // used inside a CUDA-graph capture: never evicted
  std::unique_ptr<flux::GemmRsPlan> rs;
  std::unique_ptr<flux::AgGemmPlan> ag;
  std::function<void()> on_release;  // tests (plan_cache_trace) record releases here
  void release() {
    if (rs) rs->release();
    if (ag) ag->release();
    if (on_release) on_release();
  }
};

// An LRU of plans. For a group's plans every rank performs the same sequence of lookups, so evictions
// (collective releases) happen at the same step everywhere.
class PlanCache {
 public:
  using Builder = std::function<void(CachedPlan&, int64_t max_m)>;

  // `in_capture`: the call's stream is being captured into a CUDA graph (no build, no eviction, and
  // the plan is pinned).
  CachedPlan& get(const std::string& key, int64_t m, bool in_capture, const Builder& build) {
    auto it = index_.find(key);
    if (it != index_.end() && it->second->second.max_m >= m) {
      lru_.splice(lru_.begin(), lru_, it->second);
    } else {
      if (in_capture) {
        throw flux::InvalidArgument(
            "flux_torch: no plan for " + key + " at M = " + std::to_string(m) +
            " yet, and a plan cannot be built inside CUDA-graph capture (it allocates symmetric memory and "
            "synchronizes); call the op once eagerly with this shape (or a larger M) before capturing");
      }
      int64_t max_m = round_up_pow2(m);
      if (it != index_.end()) {  // too small: rebuild it larger (every rank sees the same M)
        max_m = std::max(max_m, it->second->second.max_m);
        if (it->second->second.pinned) {
          retired_.push_back(std::move(it->second->second));  // a captured graph still uses it: keep it
        } else {
          it->second->second.release();
        }
        lru_.erase(it->second);
        index_.erase(it);
      }
      lru_.emplace_front(key, CachedPlan{});
      index_[key] = lru_.begin();
      try {
        lru_.front().second.max_m = max_m;
        build(lru_.front().second, max_m);
      } catch (...) {
        index_.erase(key);
        lru_.pop_front();
        throw;
      }
      evict_beyond(limit_);
    }
    CachedPlan& plan = lru_.front().second;
    if (in_capture) plan.pinned = true;
    return plan;
  }

  void set_limit(size_t limit) {
    limit_ = limit;
    evict_beyond(limit_);
  }
  size_t limit() const { return limit_; }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& e : lru_) out.push_back(e.first + " max_m=" + std::to_string(e.second.max_m));
    return out;
  }
  void release_all() {
    for (auto& e : lru_) e.second.release();
    for (auto& p : retired_) p.release();
    lru_.clear();
    index_.clear();
    retired_.clear();
  }

 private:
  // From the least recently used end; never the most recent entry (the plan the current call is about
  // to use) and never a pinned one, so the cache may stay above the limit while graphs hold plans.
  void evict_beyond(size_t limit) {
    auto it = lru_.end();
    while (lru_.size() > limit && it != lru_.begin()) {
      --it;
      if (it == lru_.begin()) break;
      if (it->second.pinned) continue;
      it->second.release();
      index_.erase(it->first);
      it = lru_.erase(it);
    }
  }
  std::list<std::pair<std::string, CachedPlan>> lru_;
  std::map<std::string, std::list<std::pair<std::string, CachedPlan>>::iterator> index_;
  std::vector<CachedPlan> retired_;  // pinned plans replaced by larger ones (graphs may replay them)
  size_t limit_ = 32;
};

struct Group {
  std::string name;
  int rank = 0, world = 1;
  std::shared_ptr<PyExchange> exchange;
  std::unique_ptr<flux::Communicator> comm;  // built on the group's first op
  PlanCache plans;

  flux::Communicator& communicator(int device, cudaStream_t stream) {
    if (!comm) {
      if (capturing(stream)) {
        throw flux::InvalidArgument("flux_torch: the first op on group '" + name +
                                    "' builds its communicator, which cannot happen inside CUDA-graph capture; "
                                    "call the op once eagerly before capturing");
      }
      flux::CommunicatorOptions o;
      o.exchange = exchange;
      o.rank = rank;
      o.world_size = world;
      o.local_rank = rank;
      o.local_world_size = world;
      o.device = device;
      comm = std::make_unique<flux::Communicator>(o);
    }
    if (comm->device() != device) {
      throw flux::InvalidArgument("flux_torch: group '" + name + "' is on cuda:" + std::to_string(comm->device()) +
                                  " on this rank, but the op's tensors are on cuda:" + std::to_string(device));
    }
    return *comm;
  }
};

std::mutex g_mu;  // one op at a time per process (plans are collective; ranks drive them in order)

// Holds g_mu with the GIL released (where this thread held it): a thread inside g_mu may need the GIL
// for its group's Python exchange, so no thread may wait for g_mu while holding the GIL. The GIL comes
// back after g_mu is released.
class FluxLock {
 public:
  FluxLock() {
    if (Py_IsInitialized() && PyGILState_Check()) saved_ = PyEval_SaveThread();
    lock_ = std::unique_lock<std::mutex>(g_mu);
  }
  ~FluxLock() {
    lock_.unlock();
    if (saved_ != nullptr) PyEval_RestoreThread(saved_);
  }
  FluxLock(const FluxLock&) = delete;
  FluxLock& operator=(const FluxLock&) = delete;

 private:
  PyThreadState* saved_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};
std::map<std::string, std::unique_ptr<Group>>& groups() {
  static auto* g = new std::map<std::string, std::unique_ptr<Group>>();  // never destroyed (exit order)
  return *g;
}
std::map<std::string, std::unique_ptr<flux::GemmPlan>>& gemm_plans() {
  static auto* g = new std::map<std::string, std::unique_ptr<flux::GemmPlan>>();
  return *g;
}

Group& find_group(const std::string& name) {
  auto it = groups().find(name);
  if (it == groups().end()) {
    throw flux::InvalidArgument("flux_torch: process group '" + name +
                                "' is not registered with Flux; call flux_torch.register_group(group) (the layers "
                                "and the Python wrappers do it) before using its name in an op");
  }
  return *it->second;
}

// ------------------------------------------------------------------------------------------------
// Tensors.
flux::DType dtype_of(const char* op, const char* name, const at::Tensor& t) {
  if (t.scalar_type() == at::kBFloat16) return flux::DType::kBF16;
  if (t.scalar_type() == at::kHalf) return flux::DType::kFP16;
  throw flux::InvalidArgument(std::string("flux ") + op + ": " + name + " is " + std::string(c10::toString(t.scalar_type())) +
                              "; expected bfloat16 or float16");
}

void check_cuda_2d(const char* op, const char* name, const at::Tensor& t, int dim) {
  if (!t.is_cuda()) {
    throw flux::InvalidArgument(std::string("flux ") + op + ": " + name + " is on " + t.device().str() +
                                "; expected a CUDA tensor");
  }
  if (t.dim() != dim) {
    throw flux::InvalidArgument(std::string("flux ") + op + ": " + name + " has " + std::to_string(t.dim()) +
                                " dimensions; expected " + std::to_string(dim));
  }
  if (!t.is_contiguous()) {
    throw flux::InvalidArgument(std::string("flux ") + op + ": " + name +
                                " is not contiguous; expected a contiguous (row-major) tensor (call .contiguous())");
  }
}

struct Operands {
  flux::DType dtype;
  flux::WeightLayout layout;
  int64_t n = 0, k = 0;  // B's GEMM dims
  flux::TensorRef a, b, bias;
};

Operands operands(const char* op, const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& bias,
                  const std::string& layout) {
  Operands o;
  o.layout = flux::parse_weight_layout(layout);
  check_cuda_2d(op, "a", a, 2);
  check_cuda_2d(op, "b", b, 2);
  o.dtype = dtype_of(op, "a", a);
  if (dtype_of(op, "b", b) != o.dtype) {
    throw flux::InvalidArgument(std::string("flux ") + op + ": b is " + std::string(c10::toString(b.scalar_type())) +
                                "; expected a's dtype " + std::string(c10::toString(a.scalar_type())));
  }
  if (b.device() != a.device()) {
    throw flux::InvalidArgument(std::string("flux ") + op + ": b is on " + b.device().str() + "; expected a's device " +
                                a.device().str());
  }
  o.k = o.layout == flux::WeightLayout::kNK ? b.size(1) : b.size(0);
  o.n = o.layout == flux::WeightLayout::kNK ? b.size(0) : b.size(1);
  o.a = flux::TensorRef(a.data_ptr(), a.size(0), a.size(1), o.dtype);
  o.b = flux::TensorRef(b.data_ptr(), b.size(0), b.size(1), o.dtype);
  if (bias.has_value() && bias->defined()) {
    check_cuda_2d(op, "bias", *bias, 1);
    if (dtype_of(op, "bias", *bias) != o.dtype || bias->device() != a.device()) {
      throw flux::InvalidArgument(std::string("flux ") + op + ": bias is " +
                                  std::string(c10::toString(bias->scalar_type())) + " on " + bias->device().str() +
                                  "; expected a's dtype and device");
    }
    o.bias = flux::TensorRef(bias->data_ptr(), 1, bias->size(0), o.dtype);
  }
  return o;
}

// A plan serves every M up to its max_m, so M is not in the key.
std::string plan_key(const std::string& op, int64_t n, int64_t k, flux::DType dtype, flux::WeightLayout layout,
                     const std::string& path) {
  std::ostringstream s;
  s << op << " n=" << n << " k=" << k << " " << flux::to_string(dtype) << " " << flux::to_string(layout)
    << " path=" << path;
  return s.str();
}
std::string plan_key(const char* op, const Operands& o, const std::string& path) {
  return plan_key(op, o.n, o.k, o.dtype, o.layout, path);
}

// ------------------------------------------------------------------------------------------------
// The ops.
// Each op's body takes an optional preallocated output (`into`, checked): the ops pass none and allocate;
// flux_torch.bench's "plan" rows (_C.run_into) pass one, to time the plan call without the dispatcher and
// the allocation, next to the op, in one process.
void check_into(const char* op, const at::Tensor& into, const at::Tensor& a, int64_t rows, int64_t cols) {
  check_cuda_2d(op, "out", into, 2);
  if (into.size(0) != rows || into.size(1) != cols || into.scalar_type() != a.scalar_type() ||
      into.device() != a.device()) {
    throw flux::InvalidArgument(std::string("flux ") + op + ": out is " + std::to_string(into.size(0)) + " x " +
                                std::to_string(into.size(1)) + " " + std::string(c10::toString(into.scalar_type())) +
                                " on " + into.device().str() + "; expected " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " " + std::string(c10::toString(a.scalar_type())) + " on " +
                                a.device().str());
  }
}

at::Tensor output(const char* op, const at::Tensor* into, const at::Tensor& a, int64_t rows, int64_t cols) {
  if (into == nullptr) return at::empty({rows, cols}, a.options());
  check_into(op, *into, a, rows, cols);
  return *into;
}

// The GEMM core's plan for `key` on `device` (g_mu held): found, or built outside CUDA-graph capture (a plan
// allocates), else an error saying to call the op once eagerly first.
std::map<std::string, std::unique_ptr<flux::GemmPlan>>::iterator core_plan(const std::string& op_key,
                                                                           const flux::GemmDesc& desc, int device,
                                                                           cudaStream_t stream) {
  const std::string key = op_key + " device=" + std::to_string(device);
  auto it = gemm_plans().find(key);
  if (it != gemm_plans().end()) return it;
  if (capturing(stream)) {
    throw flux::InvalidArgument("flux_torch: no plan for " + key +
                                " yet, and a plan cannot be built inside CUDA-graph capture (it allocates); call "
                                "the op once eagerly with this shape before capturing");
  }
  flux::GemmOptions go;
  go.device = device;
  return gemm_plans().emplace(key, std::make_unique<flux::GemmPlan>(desc, go)).first;
}

at::Tensor gemm_impl(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& bias,
                     const std::string& layout, const at::Tensor* into) {
  return translate("gemm", [&] {
    Operands o = operands("gemm", a, b, bias, layout);
    if (a.size(1) != o.k) {
      throw flux::InvalidArgument("flux gemm: a is " + std::to_string(a.size(0)) + " x " + std::to_string(a.size(1)) +
                                  "; expected K = " + std::to_string(o.k) + " columns (b is " +
                                  std::to_string(b.size(0)) + " x " + std::to_string(b.size(1)) + ", layout " + layout +
                                  ")");
    }
    if (o.bias.data != nullptr && o.bias.cols != o.n) {
      throw flux::InvalidArgument("flux gemm: bias has " + std::to_string(o.bias.cols) + " elements; expected N = " +
                                  std::to_string(o.n));
    }
    c10::cuda::CUDAGuard guard(a.device());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
    FluxLock lock;
    auto it = core_plan(plan_key("gemm", o, "core"), flux::GemmDesc{o.n, o.k, o.dtype, o.layout},
                        a.device().index(), stream);
    at::Tensor out = output("gemm", into, a, a.size(0), o.n);
    flux::GemmArgs args;
    args.m = a.size(0);
    args.a = o.a.data;
    args.b = o.b.data;
    args.bias = o.bias.data;
    args.c = out.data_ptr();
    // Split-K partials in memory from torch's caching allocator on this stream: right under CUDA-graph
    // capture (the graph's private pool) and never shared with a call on another stream.
    at::Tensor workspace;
    if (args.m > 0) {
      const int64_t bytes = it->second->workspace_bytes(args.m);
      if (bytes > 0) {
        workspace = at::empty({bytes}, a.options().dtype(at::kByte));
        args.workspace = workspace.data_ptr();
        args.workspace_bytes = bytes;
      }
      it->second->run(args, stream);
    }
    return out;
  });
}

// FP8 operands: a [rows, K] and b [N, K] in float8_e4m3fn, fp32 scales (one element each: per tensor; a's
// rows and N: per row of a and column of b), bias and the output in out_dtype (bfloat16 or float16; default
// bfloat16). Written once for gemm_fp8, gemm_rs_fp8 and ag_gemm_fp8.
struct Fp8Operands {
  int64_t m = 0, n = 0, k = 0;
  at::ScalarType out_type = at::kBFloat16;
  flux::DType out = flux::DType::kBF16;
  flux::ScaleKind scale = flux::ScaleKind::kPerTensor;
  flux::TensorRef a, b, bias, scale_a, scale_b;
  std::string key() const { return std::string(flux::to_string(out)) + " " + flux::to_string(scale); }
};

Fp8Operands fp8_operands(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a,
                         const at::Tensor& scale_b, const c10::optional<at::Tensor>& bias,
                         c10::optional<at::ScalarType> out_dtype) {
  const std::string name = std::string("flux ") + op;
  check_cuda_2d(op, "a", a, 2);
  check_cuda_2d(op, "b", b, 2);
  for (const at::Tensor* t : {&a, &b}) {
    if (t->scalar_type() != at::kFloat8_e4m3fn) {
      throw flux::InvalidArgument(name + ": " + (t == &a ? "a" : "b") + " is " + std::string(c10::toString(t->scalar_type())) +
                                  "; expected float8_e4m3fn");
    }
  }
  Fp8Operands o;
  o.out_type = out_dtype.value_or(at::kBFloat16);
  if (o.out_type != at::kBFloat16 && o.out_type != at::kHalf) {
    throw flux::InvalidArgument(name + ": out_dtype " + std::string(c10::toString(o.out_type)) +
                                "; expected bfloat16 or float16");
  }
  o.m = a.size(0);
  o.k = a.size(1);
  o.n = b.size(0);
  if (b.size(1) != o.k || b.device() != a.device()) {
    throw flux::InvalidArgument(name + ": b is " + std::to_string(b.size(0)) + " x " + std::to_string(b.size(1)) + " on " +
                                b.device().str() + "; expected [N, K] with K = " + std::to_string(o.k) +
                                " (a's columns) on a's device (the weight as [N, K], as torch.nn.Linear)");
  }
  for (const at::Tensor* t : {&scale_a, &scale_b}) {
    if (!t->is_cuda() || t->device() != a.device() || t->scalar_type() != at::kFloat || !t->is_contiguous()) {
      throw flux::InvalidArgument(name + ": " + (t == &scale_a ? "scale_a" : "scale_b") + " is " +
                                  std::string(c10::toString(t->scalar_type())) + " on " + t->device().str() +
                                  "; expected a contiguous float32 CUDA tensor on a's device");
    }
  }
  if (scale_a.numel() == 1 && scale_b.numel() == 1) {
    o.scale = flux::ScaleKind::kPerTensor;
  } else if (scale_a.numel() == o.m && scale_b.numel() == o.n) {
    o.scale = flux::ScaleKind::kPerRowCol;
  } else {
    throw flux::InvalidArgument(name + ": scale_a has " + std::to_string(scale_a.numel()) + " and scale_b " +
                                std::to_string(scale_b.numel()) + " elements; expected 1 and 1 (per tensor) or M = " +
                                std::to_string(o.m) + " and N = " + std::to_string(o.n) + " (per row of a, column of b)");
  }
  o.out = o.out_type == at::kBFloat16 ? flux::DType::kBF16 : flux::DType::kFP16;
  o.a = flux::TensorRef(a.data_ptr(), o.m, o.k, flux::DType::kE4M3);
  o.b = flux::TensorRef(b.data_ptr(), o.n, o.k, flux::DType::kE4M3);
  o.scale_a = flux::TensorRef(scale_a.data_ptr(), 1, scale_a.numel(), flux::DType::kFP32);
  o.scale_b = flux::TensorRef(scale_b.data_ptr(), 1, scale_b.numel(), flux::DType::kFP32);
  if (bias.has_value() && bias->defined()) {
    check_cuda_2d(op, "bias", *bias, 1);
    if (bias->scalar_type() != o.out_type || bias->size(0) != o.n || bias->device() != a.device()) {
      throw flux::InvalidArgument(name + ": bias is " + std::to_string(bias->size(0)) + " " +
                                  std::string(c10::toString(bias->scalar_type())) + "; expected N = " + std::to_string(o.n) +
                                  " elements of out_dtype " + std::string(c10::toString(o.out_type)));
    }
    o.bias = flux::TensorRef(bias->data_ptr(), 1, o.n, o.out);
  }
  return o;
}

at::Tensor gemm_fp8_impl(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a, const at::Tensor& scale_b,
                         const c10::optional<at::Tensor>& bias, c10::optional<at::ScalarType> out_dtype) {
  return translate("gemm_fp8", [&] {
    const Fp8Operands o = fp8_operands("gemm_fp8", a, b, scale_a, scale_b, bias, out_dtype);
    c10::cuda::CUDAGuard guard(a.device());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
    FluxLock lock;
    auto it = core_plan(plan_key("gemm_fp8", o.n, o.k, o.out, flux::WeightLayout::kNK, flux::to_string(o.scale)),
                        flux::GemmDesc{o.n, o.k, flux::DType::kE4M3, flux::WeightLayout::kNK, o.out, o.scale},
                        a.device().index(), stream);
    at::Tensor result = at::empty({o.m, o.n}, a.options().dtype(o.out_type));
    if (o.m > 0) {
      flux::GemmArgs args;
      args.m = o.m;
      args.a = o.a.data;
      args.b = o.b.data;
      args.bias = o.bias.data;
      args.c = result.data_ptr();
      args.scale_a = static_cast<const float*>(o.scale_a.data);
      args.scale_b = static_cast<const float*>(o.scale_b.data);
      it->second->run(args, stream);
    }
    return result;
  });
}

// What every op on a group does first (under g_mu): check the operands, find the group, build its
// communicator on first use. The caller holds the device guard's scope through `guard`.
struct GroupOp {
  Operands o;
  std::unique_ptr<c10::cuda::CUDAGuard> guard;
  cudaStream_t stream = nullptr;
  Group* group = nullptr;
  flux::Communicator* comm = nullptr;
};

// The device guard, stream, group and communicator of a group op whose operands are on a's device.
void attach_group(GroupOp& c, const at::Tensor& a, const std::string& group_name) {
  c.guard = std::make_unique<c10::cuda::CUDAGuard>(a.device());
  c.stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  c.group = &find_group(group_name);
  c.comm = &c.group->communicator(a.device().index(), c.stream);
}

GroupOp begin_group_op(const char* op, const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& bias,
                       const std::string& layout, const std::string& group_name) {
  GroupOp c;
  c.o = operands(op, a, b, bias, layout);
  attach_group(c, a, group_name);
  return c;
}

at::Tensor gemm_rs_impl(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& bias,
                        const std::string& group_name, const std::string& layout, const std::string& path,
                        const at::Tensor* into) {
  return translate("gemm_rs", [&] {
    flux::GemmRsImpl impl = flux::parse_gemm_rs_impl(path);
    FluxLock lock;
    GroupOp c = begin_group_op("gemm_rs", a, b, bias, layout, group_name);
    const Operands& o = c.o;
    Group& g = *c.group;
    flux::Communicator& comm = *c.comm;
    cudaStream_t stream = c.stream;
    const int64_t m = a.size(0);
    if (m % g.world != 0) {
      throw flux::InvalidArgument("flux gemm_rs: a has " + std::to_string(m) + " rows; expected a multiple of the group size " +
                                  std::to_string(g.world));
    }
    CachedPlan& plan = g.plans.get(plan_key("gemm_rs", o, path), m, capturing(stream), [&](CachedPlan& p, int64_t max_m) {
      flux::GemmRsDesc d;
      d.max_m = max_m;
      d.n = o.n;
      d.k_per_rank = o.k;
      d.dtype = o.dtype;
      d.layout = o.layout;
      flux::GemmRsOptions opt;
      opt.impl = impl;
      p.rs = std::make_unique<flux::GemmRsPlan>(comm, d, opt);
    });
    at::Tensor out = output("gemm_rs", into, a, m / g.world, o.n);
    flux::GemmRsArgs args;
    args.a = o.a;
    args.b = o.b;
    args.bias = o.bias;
    args.out = flux::TensorRef(out.data_ptr(), out.size(0), out.size(1), o.dtype);
    if (m > 0) plan.rs->run(args, stream);
    return out;
  });
}

std::tuple<at::Tensor, at::Tensor> ag_gemm_impl(const at::Tensor& a, const at::Tensor& b,
                                                const c10::optional<at::Tensor>& bias, const std::string& group_name,
                                                const std::string& layout, const std::string& path,
                                                bool return_gathered, const at::Tensor* into) {
  return translate("ag_gemm", [&] {
    flux::AgGemmImpl impl = flux::parse_ag_gemm_impl(path);
    FluxLock lock;
    GroupOp c = begin_group_op("ag_gemm", a, b, bias, layout, group_name);
    const Operands& o = c.o;
    Group& g = *c.group;
    flux::Communicator& comm = *c.comm;
    cudaStream_t stream = c.stream;
    const int64_t m = a.size(0) * g.world;
    CachedPlan& plan = g.plans.get(plan_key("ag_gemm", o, path), m, capturing(stream), [&](CachedPlan& p, int64_t max_m) {
      flux::AgGemmDesc d;
      d.max_m = max_m;
      d.n_per_rank = o.n;
      d.k = o.k;
      d.dtype = o.dtype;
      d.layout = o.layout;
      flux::AgGemmOptions opt;
      opt.impl = impl;
      p.ag = std::make_unique<flux::AgGemmPlan>(comm, d, opt);
    });
    at::Tensor out = output("ag_gemm", into, a, m, o.n);
    at::Tensor gathered = at::empty({return_gathered ? m : 0, a.size(1)}, a.options());
    flux::AgGemmArgs args;
    args.a_shard = o.a;
    args.b = o.b;
    args.bias = o.bias;
    args.out = flux::TensorRef(out.data_ptr(), out.size(0), out.size(1), o.dtype);
    if (m > 0) {
      flux::TensorRef full = plan.ag->run(args, stream);
      if (return_gathered) {
        C10_CUDA_CHECK(cudaMemcpyAsync(gathered.data_ptr(), full.data, static_cast<size_t>(full.bytes()),
                                       cudaMemcpyDeviceToDevice, stream));
      }
    }
    return std::make_tuple(out, gathered);
  });
}

// FP8 on a group: e4m3 a and b ([N, K]) with fp32 scales (fp8_operands), out in out_dtype. GEMM+RS: a
// [M, K/W] with scale_a [M] per row (this rank's); AG+GEMM: a [M/W, K] with scale_a [M/W] per row, or one
// per-tensor scale that is the whole gathered A's (the same on every rank).
at::Tensor gemm_rs_fp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a, const at::Tensor& scale_b,
                       const c10::optional<at::Tensor>& bias, const std::string& group_name,
                       c10::optional<at::ScalarType> out_dtype, const std::string& path) {
  return translate("gemm_rs_fp8", [&] {
    flux::GemmRsImpl impl = flux::parse_gemm_rs_impl(path);
    FluxLock lock;
    const Fp8Operands o = fp8_operands("gemm_rs_fp8", a, b, scale_a, scale_b, bias, out_dtype);
    GroupOp c;
    attach_group(c, a, group_name);
    Group& g = *c.group;
    if (o.m % g.world != 0) {
      throw flux::InvalidArgument("flux gemm_rs_fp8: a has " + std::to_string(o.m) +
                                  " rows; expected a multiple of the group size " + std::to_string(g.world));
    }
    const std::string key = plan_key("gemm_rs_fp8", o.n, o.k, flux::DType::kE4M3, flux::WeightLayout::kNK, path) + " " + o.key();
    CachedPlan& plan = g.plans.get(key, o.m, capturing(c.stream), [&](CachedPlan& p, int64_t max_m) {
      flux::GemmRsOptions opt;
      opt.impl = impl;
      p.rs = std::make_unique<flux::GemmRsPlan>(
          *c.comm, flux::GemmRsDesc{max_m, o.n, o.k, flux::DType::kE4M3, flux::WeightLayout::kNK, o.out, o.scale}, opt);
    });
    at::Tensor out = at::empty({o.m / g.world, o.n}, a.options().dtype(o.out_type));
    const flux::GemmRsArgs args{o.a, o.b, o.bias, flux::TensorRef(out.data_ptr(), out.size(0), out.size(1), o.out),
                                o.scale_a, o.scale_b};
    if (o.m > 0) plan.rs->run(args, c.stream);
    return out;
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> ag_gemm_fp8(const at::Tensor& a, const at::Tensor& b,
                                                           const at::Tensor& scale_a, const at::Tensor& scale_b,
                                                           const c10::optional<at::Tensor>& bias,
                                                           const std::string& group_name,
                                                           c10::optional<at::ScalarType> out_dtype,
                                                           const std::string& path, bool return_gathered) {
  return translate("ag_gemm_fp8", [&] {
    flux::AgGemmImpl impl = flux::parse_ag_gemm_impl(path);
    FluxLock lock;
    const Fp8Operands o = fp8_operands("ag_gemm_fp8", a, b, scale_a, scale_b, bias, out_dtype);
    GroupOp c;
    attach_group(c, a, group_name);
    Group& g = *c.group;
    const int64_t m = o.m * g.world;
    const std::string key = plan_key("ag_gemm_fp8", o.n, o.k, flux::DType::kE4M3, flux::WeightLayout::kNK, path) + " " + o.key();
    CachedPlan& plan = g.plans.get(key, m, capturing(c.stream), [&](CachedPlan& p, int64_t max_m) {
      flux::AgGemmOptions opt;
      opt.impl = impl;
      p.ag = std::make_unique<flux::AgGemmPlan>(
          *c.comm, flux::AgGemmDesc{max_m, o.n, o.k, flux::DType::kE4M3, flux::WeightLayout::kNK, o.out, o.scale}, opt);
    });
    const bool rows = o.scale == flux::ScaleKind::kPerRowCol;
    at::Tensor out = at::empty({m, o.n}, a.options().dtype(o.out_type));
    at::Tensor gathered = at::empty({return_gathered ? m : 0, o.k}, a.options());
    at::Tensor gathered_scale = at::empty({return_gathered && rows ? m : 0}, a.options().dtype(at::kFloat));
    flux::AgGemmArgs args;
    args.a_shard = o.a;
    args.b = o.b;
    args.bias = o.bias;
    args.out = flux::TensorRef(out.data_ptr(), out.size(0), out.size(1), o.out);
    args.scale_a = o.scale_a;
    args.scale_b = o.scale_b;
    if (m > 0) {
      const flux::TensorRef full = plan.ag->run(args, c.stream);
      if (return_gathered) {
        C10_CUDA_CHECK(cudaMemcpyAsync(gathered.data_ptr(), full.data, static_cast<size_t>(full.bytes()),
                                       cudaMemcpyDeviceToDevice, c.stream));
        if (rows) {
          const flux::TensorRef sa = plan.ag->gathered_scale_a();
          C10_CUDA_CHECK(cudaMemcpyAsync(gathered_scale.data_ptr(), sa.data, static_cast<size_t>(sa.bytes()),
                                         cudaMemcpyDeviceToDevice, c.stream));
        }
      }
    }
    return std::make_tuple(out, gathered, gathered_scale);
  });
}

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& bias,
                const std::string& layout) {
  return gemm_impl(a, b, bias, layout, nullptr);
}
at::Tensor gemm_fp8(const at::Tensor& a, const at::Tensor& b, const at::Tensor& scale_a, const at::Tensor& scale_b,
                    const c10::optional<at::Tensor>& bias, c10::optional<at::ScalarType> out_dtype) {
  return gemm_fp8_impl(a, b, scale_a, scale_b, bias, out_dtype);
}
at::Tensor gemm_rs(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& bias,
                   const std::string& group_name, const std::string& layout, const std::string& path) {
  return gemm_rs_impl(a, b, bias, group_name, layout, path, nullptr);
}
std::tuple<at::Tensor, at::Tensor> ag_gemm(const at::Tensor& a, const at::Tensor& b,
                                           const c10::optional<at::Tensor>& bias, const std::string& group_name,
                                           const std::string& layout, const std::string& path, bool return_gathered) {
  return ag_gemm_impl(a, b, bias, group_name, layout, path, return_gathered, nullptr);
}

// The plan call alone (flux_torch.bench ops, "plan" rows): the op's body into a preallocated output,
// from pybind (no dispatcher, no output allocation); the gathered A is never copied out.
void run_into(const std::string& op, const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& bias,
              const at::Tensor& out, const std::string& group_name, const std::string& layout,
              const std::string& path) {
  if (op == "gemm") {
    gemm_impl(a, b, bias, layout, &out);
  } else if (op == "gemm_rs") {
    gemm_rs_impl(a, b, bias, group_name, layout, path, &out);
  } else if (op == "ag_gemm") {
    ag_gemm_impl(a, b, bias, group_name, layout, path, false, &out);
  } else {
    TORCH_CHECK_VALUE(false, "flux_torch.run_into: unknown op '", op, "'; expected gemm, gemm_rs or ag_gemm");
  }
}

// ------------------------------------------------------------------------------------------------
// Registration from Python (flux_torch.distributed).
void register_group(const std::string& name, int rank, int world, py::object exchange) {
  FluxLock lock;
  TORCH_CHECK_VALUE(world >= 1 && rank >= 0 && rank < world, "flux_torch.register_group: rank ", rank, " of ", world,
                    " (expected 0 <= rank < world)");
  auto it = groups().find(name);
  if (it != groups().end()) {
    TORCH_CHECK_VALUE(it->second->rank == rank && it->second->world == world, "flux_torch.register_group: group '", name,
                      "' is already registered as rank ", it->second->rank, " of ", it->second->world);
    return;
  }
  auto g = std::make_unique<Group>();
  g->name = name;
  g->rank = rank;
  g->world = world;
  g->exchange = std::make_shared<PyExchange>(std::move(exchange));
  groups()[name] = std::move(g);
}

// Collective over the group: frees its plans (symmetric memory) and, with communicator = true, the
// communicator too (the group must be registered again before further use).
void release_group(const std::string& name, bool communicator) {
  translate("release", [&] {
    FluxLock lock;
    auto it = groups().find(name);
    if (it == groups().end()) return;
    it->second->plans.release_all();
    if (communicator) {
      it->second->comm.reset();
      groups().erase(it);
    }
  });
}

void set_plan_cache_limit(const std::string& name, int64_t limit) {
  translate("set_plan_cache_limit", [&] {
    if (limit < 1) throw flux::InvalidArgument("flux_torch: plan cache limit " + std::to_string(limit) + " (expected >= 1)");
    FluxLock lock;
    find_group(name).plans.set_limit(static_cast<size_t>(limit));
  });
}

std::vector<std::string> cached_plans(const std::string& name) {
  return translate("cached_plans", [&] {
    FluxLock lock;
    return find_group(name).plans.keys();
  });
}

std::string check_status(const std::string& name) {
  FluxLock lock;
  Group& g = find_group(name);
  return translate("check_status", [&] {
    if (g.comm) g.comm->sync_fault();
    return std::string("ok");
  });
}

// The group's exchange driven from C++ the way a plan build drives it (under FluxLock, the GIL released
// and taken back by the exchange), on a host-only communicator: the CPU tests' check of that path.
std::vector<std::string> host_exchange_selftest(const std::string& name, const std::string& payload) {
  return translate("host_exchange_selftest", [&] {
    FluxLock lock;
    Group& g = find_group(name);
    flux::CommunicatorOptions o;
    o.exchange = g.exchange;
    o.rank = g.rank;
    o.world_size = g.world;
    o.use_gpu = false;
    flux::Communicator comm(o);
    comm.check_same("selftest", "the same on every rank");
    return comm.all_gather(payload, "selftest gather");
  });
}

// The cache's policy without a GPU (CPU tests): builds and releases are recorded instead of made. Each
// step is (key, M, in_capture); returns the log of "build KEY max_m", "release KEY", "hit KEY", "error ..."
// and, last, the cache's keys.
std::vector<std::string> plan_cache_trace(const std::vector<std::tuple<std::string, int64_t, bool>>& steps,
                                          int64_t limit) {
  std::vector<std::string> log;
  PlanCache cache;
  cache.set_limit(static_cast<size_t>(limit));
  for (const auto& [key, m, in_capture] : steps) {
    bool built = false;
    try {
      CachedPlan& p = cache.get(key, m, in_capture, [&](CachedPlan& plan, int64_t max_m) {
        built = true;
        log.push_back("build " + key + " " + std::to_string(max_m));
        plan.on_release = [&log, k = key] { log.push_back("release " + k); };
      });
      if (!built) log.push_back("hit " + key + (p.pinned ? " pinned" : ""));
    } catch (const flux::InvalidArgument& e) {
      log.push_back(std::string("error ") + e.what());
    }
  }
  for (const std::string& k : cache.keys()) log.push_back("cached " + k);
  cache.release_all();
  return log;
}

}  // namespace
}  // namespace flux_torch

TORCH_LIBRARY(flux, m) {
  m.def("gemm(Tensor a, Tensor b, Tensor? bias=None, str layout=\"nk\") -> Tensor");
  m.def("gemm_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, ScalarType? out_dtype=None) "
        "-> Tensor");
  m.def("gemm_rs(Tensor a, Tensor b, Tensor? bias, str group_name, str layout=\"nk\", str path=\"auto\") -> Tensor");
  m.def(
      "ag_gemm(Tensor a, Tensor b, Tensor? bias, str group_name, str layout=\"nk\", str path=\"auto\", "
      "bool return_gathered=False) -> (Tensor, Tensor)");
  m.def(
      "gemm_rs_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, str group_name, "
      "ScalarType? out_dtype=None, str path=\"auto\") -> Tensor");
  m.def(
      "ag_gemm_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, str group_name, "
      "ScalarType? out_dtype=None, str path=\"auto\", bool return_gathered=False) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(flux, CUDA, m) {
  m.impl("gemm", &flux_torch::gemm);
  m.impl("gemm_fp8", &flux_torch::gemm_fp8);
  m.impl("gemm_rs", &flux_torch::gemm_rs);
  m.impl("ag_gemm", &flux_torch::ag_gemm);
  m.impl("gemm_rs_fp8", &flux_torch::gemm_rs_fp8);
  m.impl("ag_gemm_fp8", &flux_torch::ag_gemm_fp8);
}
// CPU tensors get the library's error ("expected a CUDA tensor"), not the dispatcher's "no kernel".
TORCH_LIBRARY_IMPL(flux, CPU, m) {
  m.impl("gemm", &flux_torch::gemm);
  m.impl("gemm_fp8", &flux_torch::gemm_fp8);
  m.impl("gemm_rs", &flux_torch::gemm_rs);
  m.impl("ag_gemm", &flux_torch::ag_gemm);
  m.impl("gemm_rs_fp8", &flux_torch::gemm_rs_fp8);
  m.impl("ag_gemm_fp8", &flux_torch::ag_gemm_fp8);
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "flux_torch's extension: Flux plans behind torch.ops.flux.*";
  m.def("register_group", &flux_torch::register_group, py::arg("name"), py::arg("rank"), py::arg("world"),
        py::arg("exchange"));
  m.def("release_group", &flux_torch::release_group, py::arg("name"), py::arg("communicator") = false);
  m.def("set_plan_cache_limit", &flux_torch::set_plan_cache_limit, py::arg("name"), py::arg("limit"));
  m.def("cached_plans", &flux_torch::cached_plans, py::arg("name"));
  m.def("check_status", &flux_torch::check_status, py::arg("name"));
  m.def(
      "plan_key",
      [](const std::string& op, int64_t n, int64_t k, const std::string& dtype, const std::string& layout,
         const std::string& path) {
        return flux_torch::translate("plan_key", [&] {
          return flux_torch::plan_key(op, n, k, flux::parse_dtype(dtype), flux::parse_weight_layout(layout), path);
        });
      },
      "the plan cache's key (M is not part of it: a plan serves every M up to the one it was built for)");
  m.def(
      "knob_int", [](const std::string& name) { return flux_torch::translate("knob", [&] { return flux::knobs::get_int(name); }); },
      py::arg("name"), "an integer knob of the library (its registered default when unset)");
  m.def("run_into", &flux_torch::run_into, py::arg("op"), py::arg("a"), py::arg("b"), py::arg("bias"), py::arg("out"),
        py::arg("group_name"), py::arg("layout"), py::arg("path"),
        "the op's plan call into a preallocated out, without the dispatcher (flux_torch.bench ops: plan rows)");
  m.def("plan_max_m", &flux_torch::round_up_pow2, py::arg("m"), "the M a plan is built for, for a call's M");
  m.def("host_exchange_selftest", &flux_torch::host_exchange_selftest, py::arg("name"), py::arg("payload"),
        "a host-only communicator on the group's exchange: check_same, then all_gather(payload)");
  m.def("plan_cache_trace", &flux_torch::plan_cache_trace, py::arg("steps"), py::arg("limit"),
        "the plan cache's policy on (key, M, in_capture) steps, with builds and releases recorded, not made");
}
