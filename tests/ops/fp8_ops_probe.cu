// tests/ops/fp8_ops_probe.cu — one rank of an FP8 fused-op test job (flux-run -n W [--mps] -- fp8_ops_probe MODE).
// Every op with e4m3 A and B (values drawn so that e4m3 rounding is exercised), scales never 1 (per tensor,
// and per row of A / column of B), bf16 and fp16 out, bias or not; outputs poisoned first; each rank's out
// against an fp64 reference built from the dequantized inputs of every rank (regenerated from their seeds).
//   correctness  M in {1, 7, 127, 1000, 3000} (AG+GEMM and GEMM+RS: rounded up to a multiple of W) with
//                random N, K (K a multiple of 16, N not a multiple of 64), every path that runs here:
//                AG+GEMM (the gathered FP8 A and its gathered row scales bitwise equal to every rank's
//                shards), GEMM+RS, GEMM+AR (out bitwise equal on every rank)
//   graph        the fused paths of the three ops captured once into a CUDA graph and replayed 200 times
//                with A, B and the scales rewritten in place before each replay (every 7th step eager),
//                checked at 4 random steps
//   small        one per-row-scaled case per op (M / W = 200, blocks straddling ranks), every path (for
//                compute-sanitizer)
//   bad          mismatched scale shapes and types, missing scales, scales on a bf16 plan, [K, N] weights,
//                the decomposed path's per-row scales at M / W not a multiple of 4: clear InvalidArguments
// Prints "fp8_ops probe PASSED: rank r of W"; failures print "fp8_ops probe FAIL ..." (exit 1).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flux/ag_gemm.h"
#include "flux/error.h"
#include "flux/gemm_ar.h"
#include "flux/gemm_rs.h"
#include "src/common/check.h"
#include "tests/support/graph_replay.h"
#include "tools/common/device_tools.h"

namespace {

using flux::DType;
using flux::ScaleKind;
using flux::TensorRef;
using Buffer = flux::tools::DeviceBuffer;

int g_rank = 0;
bool g_ok = true;

void check(bool cond, const std::string& what) {
  if (!cond) {
    std::printf("fp8_ops probe FAIL rank %d: %s\n", g_rank, what.c_str());
    g_ok = false;
  }
}

__global__ void add_into(double* acc, const double* x, int64_t count, bool first) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    acc[i] = first ? x[i] : acc[i] + x[i];
  }
}

uint64_t seed_of(uint64_t base, int rank, int what) { return base * 1000003ull + uint64_t(rank) * 7919ull + uint64_t(what); }

enum class Op { kAg, kRs, kAr };
const char* op_name(Op op) { return op == Op::kAg ? "ag_gemm" : op == Op::kRs ? "gemm_rs" : "gemm_ar"; }

struct Case {
  Op op;
  int64_t m, n, k;  // m: all rows of out (AG: W x shard rows); n: this rank's B rows (AG: N / W)
  DType out;
  ScaleKind scale;
  bool bias;
  uint64_t seed;
};

std::string name(const Case& c) {
  return flux::detail::cat(op_name(c.op), " M=", c.m, " N=", c.n, " K=", c.k, " e4m3->", flux::to_string(c.out), " ",
                           flux::to_string(c.scale), c.bias ? " +bias" : "");
}

bool vectors(const Case& c) { return c.scale == ScaleKind::kPerRowCol; }

// One rank's inputs of a case. A: AG+GEMM the rank's shard [M/W, K], the others [M, K]. Per-tensor
// scale_a of AG+GEMM is the scale of the whole gathered A: the same on every rank (seeded by rank 0).
struct Inputs {
  int64_t a_rows;
  Buffer a, b, sa, sb, bias;
  Inputs(const Case& c, int world)
      : a_rows(c.op == Op::kAg ? c.m / world : c.m), a(size_t(a_rows * c.k)), b(size_t(c.n * c.k)),
        sa(size_t(std::max<int64_t>(a_rows, 4)) * 4), sb(size_t(std::max<int64_t>(c.n, 4)) * 4), bias(size_t(c.n) * 2) {}
  void fill(const Case& c, int rank, cudaStream_t stream) {
    flux::tools::fill_random(a.ptr, a_rows * c.k, DType::kE4M3, seed_of(c.seed, rank, 1), 4.0f, stream);
    flux::tools::fill_random(b.ptr, c.n * c.k, DType::kE4M3, seed_of(c.seed, rank, 2), 1.0f, stream);
    const int sa_rank = c.op == Op::kAg && !vectors(c) ? 0 : rank;
    flux::tools::fill_scales(sa.as<float>(), vectors(c) ? a_rows : 1, seed_of(c.seed, sa_rank, 4), 0.5f, 2.0f, stream);
    flux::tools::fill_scales(sb.as<float>(), vectors(c) ? c.n : 1, seed_of(c.seed, rank, 5), 0.01f, 0.03f, stream);
    flux::tools::fill_random(bias.ptr, c.n, c.out, seed_of(c.seed, 0, 3), 1.0f, stream);
  }
  TensorRef a_ref(const Case& c) const { return TensorRef(a.ptr, a_rows, c.k, DType::kE4M3); }
  TensorRef b_ref(const Case& c) const { return TensorRef(b.ptr, c.n, c.k, DType::kE4M3); }
  TensorRef bias_ref(const Case& c) const { return c.bias ? TensorRef(bias.ptr, 1, c.n, c.out) : TensorRef(); }
  TensorRef sa_ref(const Case& c) const { return TensorRef(sa.ptr, 1, vectors(c) ? a_rows : 1, DType::kFP32); }
  TensorRef sb_ref(const Case& c) const { return TensorRef(sb.ptr, 1, vectors(c) ? c.n : 1, DType::kFP32); }
};

int64_t out_rows(const Case& c, int world) { return c.op == Op::kRs ? c.m / world : c.m; }

// One rank's job: its inputs, its out, the fp64 reference of its out rows and (AG+GEMM) the gathered A
// and row scales every rank should hold.
struct Job {
  Case c;
  int w, r;
  Inputs in;
  Buffer out, ref, rows, full_a, full_sa;
  Job(const Case& c_, int w_, int r_, cudaStream_t stream)
      : c(c_), w(w_), r(r_), in(c_, w_), out(size_t(out_rows(c_, w_) * c_.n) * 2),
        ref(size_t(out_rows(c_, w_) * c_.n) * sizeof(double)), rows(size_t(c_.m) * sizeof(int32_t)),
        full_a(size_t(c_.m * c_.k)), full_sa(size_t(c_.m) * 4) {
    refill(c.seed, stream);
    reference(stream);
  }
  void refill(uint64_t seed, cudaStream_t stream) {
    c.seed = seed;
    in.fill(c, r, stream);
  }
  int64_t rows_out() const { return out_rows(c, w); }
  void reference(cudaStream_t stream) {
    const int64_t count = rows_out(), first = c.op == Op::kRs ? r * count : 0;
    std::vector<int32_t> idx(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(first + i);
    FLUX_CUDA_CHECK(cudaMemcpyAsync(rows.ptr, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice, stream));
    double* refp = static_cast<double*>(ref.ptr);
    if (c.op == Op::kAg) {  // every rank's shard (and row scales) concatenated, times this rank's B
      const int64_t shard = c.m / w;
      for (int s = 0; s < w; ++s) {
        Inputs other(c, w);
        other.fill(c, s, stream);
        FLUX_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(full_a.ptr) + size_t(s * shard * c.k), other.a.ptr,
                                        size_t(shard * c.k), cudaMemcpyDeviceToDevice, stream));
        FLUX_CUDA_CHECK(cudaMemcpyAsync(full_sa.as<float>() + s * shard, other.sa.ptr, size_t(vectors(c) ? shard : 1) * 4,
                                        cudaMemcpyDeviceToDevice, stream));
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      flux::tools::reference_fp8_gemm_rows(c.out, c.n, c.k, full_a.ptr, in.b.ptr, c.bias ? in.bias.ptr : nullptr,
                                           full_sa.as<float>(), in.sb.as<float>(), vectors(c),
                                           static_cast<int32_t*>(rows.ptr), count, refp, stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      return;
    }
    // GEMM+RS / GEMM+AR: sum over ranks s of (A_s B_s^T) sa_s sb_s, bias once.
    Buffer part(size_t(count * c.n) * sizeof(double));
    for (int s = 0; s < w; ++s) {
      Inputs other(c, w);
      other.fill(c, s, stream);
      flux::tools::reference_fp8_gemm_rows(c.out, c.n, c.k, other.a.ptr, other.b.ptr,
                                           c.bias && s == 0 ? other.bias.ptr : nullptr, other.sa.as<float>(),
                                           other.sb.as<float>(), vectors(c), static_cast<int32_t*>(rows.ptr), count,
                                           part.as<double>(), stream);
      add_into<<<256, 256, 0, stream>>>(refp, part.as<double>(), count * c.n, s == 0);
      FLUX_CUDA_CHECK_LAUNCH("add_into");
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }
  void poison(cudaStream_t stream) { flux::tools::poison(out.ptr, rows_out() * c.n, stream); }
  TensorRef out_ref() const { return TensorRef(out.ptr, rows_out(), c.n, c.out); }
  // out against the reference: compare_rows reads rows[i] of out, so index the out rows 0..count-1.
  void verify(const std::string& what, cudaStream_t stream) {
    const int64_t count = rows_out();
    Buffer local(size_t(count) * 4);
    std::vector<int32_t> idx(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    FLUX_CUDA_CHECK(cudaMemcpy(local.ptr, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
    auto cr = flux::tools::compare_rows(c.out, c.n, out.ptr, static_cast<int32_t*>(local.ptr), count,
                                        static_cast<double*>(ref.ptr), stream);
    check(cr.nonfinite == 0 && cr.global_rel < flux::tools::tolerance(c.out) && cr.max_row_rel < flux::tools::tolerance(c.out),
          what + ": " + flux::tools::describe(cr));
  }
  void verify_gathered(const TensorRef& a, const TensorRef* sa, const std::string& what) {
    std::vector<char> got(full_a.bytes), want(full_a.bytes);
    FLUX_CUDA_CHECK(cudaMemcpy(got.data(), a.data, full_a.bytes, cudaMemcpyDeviceToHost));
    FLUX_CUDA_CHECK(cudaMemcpy(want.data(), full_a.ptr, full_a.bytes, cudaMemcpyDeviceToHost));
    check(a.rows == c.m && a.cols == c.k && a.dtype == DType::kE4M3 && got == want,
          what + ": gathered FP8 A differs from the shards");
    if (sa) {
      std::vector<char> gs(full_sa.bytes), ws(full_sa.bytes);
      FLUX_CUDA_CHECK(cudaMemcpy(gs.data(), sa->data, full_sa.bytes, cudaMemcpyDeviceToHost));
      FLUX_CUDA_CHECK(cudaMemcpy(ws.data(), full_sa.ptr, full_sa.bytes, cudaMemcpyDeviceToHost));
      check(sa->rows == 1 && sa->cols == c.m && sa->dtype == DType::kFP32 && gs == ws,
            what + ": gathered scale_a differs from the shards' row scales");
    }
  }
  // AR: every rank's out is the same bits (FNV-1a of the bytes, compared across ranks).
  void verify_same_on_every_rank(flux::Communicator& comm, const std::string& what) {
    std::vector<unsigned char> host(size_t(rows_out() * c.n) * 2);
    FLUX_CUDA_CHECK(cudaMemcpy(host.data(), out.ptr, host.size(), cudaMemcpyDeviceToHost));
    uint64_t h = 1469598103934665603ull;
    for (unsigned char x : host) h = (h ^ x) * 1099511628211ull;
    try {
      comm.check_same(what, std::to_string(h));
    } catch (const flux::Error& e) {
      check(false, what + ": out differs across ranks: " + e.what());
    }
  }
};

// The three ops behind one interface: plan built once per case, run(path) on the job's tensors.
struct OpPlan {
  Case c;
  std::unique_ptr<flux::AgGemmPlan> ag;
  std::unique_ptr<flux::GemmRsPlan> rs;
  std::unique_ptr<flux::GemmArPlan> ar;
  TensorRef gathered;
  OpPlan(flux::Communicator& comm, const Case& c_) : c(c_) {
    if (c.op == Op::kAg) {
      ag = std::make_unique<flux::AgGemmPlan>(
          comm, flux::AgGemmDesc{c.m, c.n, c.k, DType::kE4M3, flux::WeightLayout::kNK, c.out, c.scale});
    } else if (c.op == Op::kRs) {
      rs = std::make_unique<flux::GemmRsPlan>(
          comm, flux::GemmRsDesc{c.m, c.n, c.k, DType::kE4M3, flux::WeightLayout::kNK, c.out, c.scale});
    } else {
      ar = std::make_unique<flux::GemmArPlan>(
          comm, flux::GemmArDesc{c.m, c.n, c.k, DType::kE4M3, flux::WeightLayout::kNK, c.out, c.scale});
    }
  }
  // Every path of the op that runs here (by name), for this case.
  static std::vector<std::string> paths(Op op, const flux::Communicator& comm) {
    if (op == Op::kAg) {
      std::vector<std::string> p = {"fused", "sequential", "decomposed"};
      if (!comm.shares_gpu() && comm.world_size() > 1) p.push_back("fused_ce");
      return p;
    }
    if (op == Op::kRs) return {"fused", "sequential", "decomposed"};
    return {"one_shot", "two_shot", "rs_ag", "sequential", "decomposed"};
  }
  void run(Job& job, const std::string& path, cudaStream_t stream) {
    const Inputs& in = job.in;
    if (ag) {
      flux::AgGemmArgs a;
      a.a_shard = in.a_ref(c);
      a.b = in.b_ref(c);
      a.bias = in.bias_ref(c);
      a.out = job.out_ref();
      a.scale_a = in.sa_ref(c);
      a.scale_b = in.sb_ref(c);
      gathered = ag->run(a, stream, flux::parse_ag_gemm_impl(path));
    } else if (rs) {
      rs->run(flux::GemmRsArgs{in.a_ref(c), in.b_ref(c), in.bias_ref(c), job.out_ref(), in.sa_ref(c), in.sb_ref(c)}, stream,
              flux::parse_gemm_rs_impl(path));
    } else {
      ar->run(flux::GemmArArgs{in.a_ref(c), in.b_ref(c), in.bias_ref(c), job.out_ref(), in.sa_ref(c), in.sb_ref(c)}, stream,
              flux::parse_gemm_ar_path(path));
    }
  }
  void check_status() {
    if (ag) ag->check_status();
    if (rs) rs->check_status();
    if (ar) ar->check_status();
  }
  void release() {
    if (ag) ag->release();
    if (rs) rs->release();
    if (ar) ar->release();
  }
};

void verify_all(flux::Communicator& comm, Job& job, OpPlan& plan, const std::string& what, cudaStream_t stream) {
  job.verify(what, stream);
  if (job.c.op == Op::kAg) {
    TensorRef sa;
    if (vectors(job.c)) sa = plan.ag->gathered_scale_a();
    job.verify_gathered(plan.gathered, vectors(job.c) ? &sa : nullptr, what);
  }
  if (job.c.op == Op::kAr) job.verify_same_on_every_rank(comm, what);
}

// M targets {1, 7, 127, 1000, 3000}: AG+GEMM and GEMM+RS rounded up to a multiple of W.
std::vector<Case> make_cases(Op op, int world, uint64_t seed) {
  std::mt19937_64 rng(seed);  // the same on every rank
  std::vector<Case> cases;
  int i = 0;
  for (int64_t target : {1, 7, 127, 1000, 3000}) {
    Case c;
    c.op = op;
    c.m = op == Op::kAr ? target : (target + world - 1) / world * world;
    do {
      c.n = 8 * std::uniform_int_distribution<int64_t>(2, 192)(rng);
    } while (c.n % 64 == 0);
    c.k = 16 * std::uniform_int_distribution<int64_t>(1, 128)(rng);
    c.out = (i % 2) ? DType::kFP16 : DType::kBF16;
    c.scale = (i % 4 < 2) ? ScaleKind::kPerRowCol : ScaleKind::kPerTensor;
    c.bias = (i % 3) != 1;
    c.seed = rng();
    cases.push_back(c);
    ++i;
  }
  return cases;
}

// The decomposed AG+GEMM path runs per-row scales only for M / W a multiple of 4.
bool runs_here(const Case& c, int world, const std::string& path) {
  return !(c.op == Op::kAg && path == "decomposed" && vectors(c) && (c.m / world) % 4 != 0);
}

void correctness(flux::Communicator& comm, cudaStream_t stream, bool small) {
  const int w = comm.world_size(), r = comm.rank();
  int runs = 0;
  for (Op op : {Op::kAg, Op::kRs, Op::kAr}) {
    std::vector<Case> cases = make_cases(op, w, 4242 + int(op));
    if (small) cases = {Case{op, int64_t(200) * w, 264, 192, DType::kBF16, ScaleKind::kPerRowCol, true, 3}};
    for (const Case& c : cases) {
      Job job(c, w, r, stream);
      OpPlan plan(comm, c);
      for (const std::string& path : OpPlan::paths(op, comm)) {
        if (!runs_here(c, w, path)) continue;
        job.poison(stream);
        plan.run(job, path, stream);
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        plan.check_status();
        verify_all(comm, job, plan, name(c) + " " + path, stream);
        ++runs;
      }
      plan.release();
    }
  }
  if (g_ok) std::printf("fp8_ops probe correctness: ok (%d runs: 3 ops x %d cases x their paths)\n", runs, small ? 1 : 5);
}

void graph(flux::Communicator& comm, cudaStream_t stream, int steps) {
  const int w = comm.world_size(), r = comm.rank();
  cudaStream_t capture = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  const std::vector<int> check_at = flux::testing::check_steps(91, 4, steps);  // the same on every rank
  int checked = 0;
  for (Op op : {Op::kAg, Op::kRs, Op::kAr}) {
    for (ScaleKind scale : {ScaleKind::kPerRowCol, ScaleKind::kPerTensor}) {
      // M / W = 200 rows: AG blocks and RS tiles straddle ranks.
      Case c{op, int64_t(200) * w, 392, 256, scale == ScaleKind::kPerRowCol ? DType::kBF16 : DType::kFP16, scale, true, 7};
      Job job(c, w, r, stream);
      OpPlan plan(comm, c);
      const std::string path = op == Op::kAr ? "one_shot" : "fused";
      auto seed = [&](int step) { return uint64_t(90000 + step + 7919 * int(op) + 131 * int(scale)); };
      checked += flux::testing::capture_and_replay(
          capture, stream, steps, check_at, 7,
          [&](int step, cudaStream_t s) {
            job.refill(seed(step), s);
            if (std::find(check_at.begin(), check_at.end(), step) != check_at.end()) {
              flux::tools::poison(job.out.ptr, job.rows_out() * c.n, s);
            }
          },
          [&](cudaStream_t s) { plan.run(job, path, s); },
          [&](int step) {
            plan.check_status();
            job.reference(stream);
            FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
            verify_all(comm, job, plan, flux::detail::cat("graph ", name(job.c), " ", path, " replay ", step), stream);
          });
      plan.release();
    }
  }
  check(checked >= 6, "graph: fewer checks than expected");
  cudaStreamDestroy(capture);
  if (g_ok) std::printf("fp8_ops probe graph: ok (3 ops x 2 scale kinds x %d replays / eager calls, %d checked)\n", steps, checked);
}

template <class Fn>
std::string invalid_argument_of(Fn&& fn) {
  try {
    fn();
  } catch (const flux::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& e, const std::vector<std::string>& parts, const std::string& what) {
  bool ok = !e.empty();
  for (const std::string& p : parts) ok = ok && e.find(p) != std::string::npos;
  check(ok, what + ": '" + e + "'");
}

void bad_inputs(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  // A plan: e4m3 with [K, N] weights, or without a scale kind, or e4m3 output.
  expect_error(invalid_argument_of([&] {
                 flux::GemmRsPlan p(comm, flux::GemmRsDesc{int64_t(64) * w, 256, 256, DType::kE4M3, flux::WeightLayout::kKN,
                                                           DType::kBF16, ScaleKind::kPerTensor});
               }),
               {"flux gemm_rs", "[N, K]"}, "e4m3 with [K, N] weights");
  expect_error(invalid_argument_of([&] {
                 flux::AgGemmPlan p(comm, flux::AgGemmDesc{int64_t(64) * w, 256, 256, DType::kE4M3, flux::WeightLayout::kNK,
                                                           DType::kBF16, ScaleKind::kNone});
               }),
               {"flux ag_gemm", "scale"}, "e4m3 without scales");
  expect_error(invalid_argument_of([&] {
                 flux::GemmArPlan p(comm, flux::GemmArDesc{64, 256, 256, DType::kE4M3, flux::WeightLayout::kNK, DType::kE4M3,
                                                           ScaleKind::kPerTensor});
               }),
               {"flux gemm_ar", "output dtype"}, "e4m3 out");
  expect_error(invalid_argument_of([&] {
                 flux::GemmRsPlan p(comm, flux::GemmRsDesc{int64_t(64) * w, 256, 200, DType::kE4M3, flux::WeightLayout::kNK,
                                                           DType::kBF16, ScaleKind::kPerTensor});
               }),
               {"flux gemm_rs", "multiple of 16"}, "e4m3 K not a multiple of 16");
  // Calls: per-row plans given per-tensor scales, wrong types, missing scales, a bf16 plan given scales.
  for (Op op : {Op::kAg, Op::kRs}) {
    Case c{op, int64_t(66) * w, 264, 128, DType::kBF16, ScaleKind::kPerRowCol, true, 12};
    Job job(c, w, r, stream);
    OpPlan plan(comm, c);
    const char* opn = op == Op::kAg ? "flux ag_gemm" : "flux gemm_rs";
    auto call = [&](const TensorRef& sa, const TensorRef& sb) {
      return invalid_argument_of([&] {
        if (op == Op::kAg) {
          flux::AgGemmArgs a;
          a.a_shard = job.in.a_ref(c);
          a.b = job.in.b_ref(c);
          a.out = job.out_ref();
          a.scale_a = sa;
          a.scale_b = sb;
          plan.ag->run(a, stream);
        } else {
          plan.rs->run(flux::GemmRsArgs{job.in.a_ref(c), job.in.b_ref(c), TensorRef(), job.out_ref(), sa, sb}, stream);
        }
      });
    };
    const TensorRef sa = job.in.sa_ref(c), sb = job.in.sb_ref(c);
    expect_error(call(TensorRef(sa.data, 1, 1, DType::kFP32), sb), {opn, "scale_a is 1 x 1", "expected 1 x"},
                 "per-row plan, per-tensor scale_a");
    expect_error(call(sa, TensorRef(sb.data, 1, c.n - 8, DType::kFP32)), {opn, "scale_b is 1 x", "expected 1 x 264"},
                 "scale_b one per column short");
    expect_error(call(TensorRef(sa.data, sa.rows, sa.cols, DType::kBF16), sb), {opn, "scale_a", "bf16", "fp32"},
                 "bf16 scale_a");
    expect_error(call(TensorRef(), sb), {opn, "needs scale_a"}, "missing scale_a");
    expect_error(call(TensorRef(static_cast<const char*>(sa.data) + 4, sa.rows, sa.cols, DType::kFP32), sb),
                 {opn, "not 16-byte aligned"}, "misaligned scale vector");
    // The decomposed AG+GEMM path with row scales at M / W = 66 (not a multiple of 4).
    if (op == Op::kAg && w > 1) {
      flux::AgGemmArgs a;
      a.a_shard = job.in.a_ref(c);
      a.b = job.in.b_ref(c);
      a.bias = job.in.bias_ref(c);
      a.out = job.out_ref();
      a.scale_a = sa;
      a.scale_b = sb;
      expect_error(invalid_argument_of([&] { plan.ag->run(a, stream, flux::AgGemmImpl::kDecomposed); }),
                   {"flux ag_gemm", "decomposed", "multiple of 4"}, "decomposed with row scales at M / W = 66");
    }
    // After the rejected calls the plan still runs right.
    job.poison(stream);
    plan.run(job, "fused", stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    plan.check_status();
    verify_all(comm, job, plan, flux::detail::cat(op_name(op), " after rejected calls"), stream);
    plan.release();
  }
  {  // bf16 plan given FP8 scales.
    const int64_t m = int64_t(64) * w;
    flux::GemmRsPlan plan(comm, flux::GemmRsDesc{m, 256, 128, DType::kBF16, flux::WeightLayout::kNK});
    Buffer a(size_t(m * 128) * 2), b(size_t(256 * 128) * 2), out(size_t(m / w * 256) * 2), s(16);
    flux::GemmRsArgs g{TensorRef(a.ptr, m, 128, DType::kBF16), TensorRef(b.ptr, 256, 128, DType::kBF16), TensorRef(),
                       TensorRef(out.ptr, m / w, 256, DType::kBF16), TensorRef(s.ptr, 1, 1, DType::kFP32), TensorRef()};
    expect_error(invalid_argument_of([&] { plan.run(g, stream); }), {"flux gemm_rs", "scales are for e4m3"},
                 "bf16 plan given scales");
    plan.release();
  }
  if (g_ok) std::printf("fp8_ops probe bad: ok\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correctness";
  try {
    flux::Communicator comm;
    g_rank = comm.rank();
    cudaStream_t stream = nullptr;
    FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (mode == "correctness" || mode == "small") {
      correctness(comm, stream, mode == "small");
    } else if (mode == "graph") {
      graph(comm, stream, 200);
    } else if (mode == "bad") {
      bad_inputs(comm, stream);
    } else {
      std::printf("fp8_ops probe FAIL: unknown mode %s\n", mode.c_str());
      return 2;
    }
    cudaStreamDestroy(stream);
    std::printf("fp8_ops probe %s: rank %d of %d\n", g_ok ? "PASSED" : "FAILED", comm.rank(), comm.world_size());
    return g_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("fp8_ops probe FAIL rank %d: %s\n", g_rank, e.what());
    return 1;
  }
}
