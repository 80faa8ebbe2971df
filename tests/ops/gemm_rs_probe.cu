// tests/ops/gemm_rs_probe.cu — one rank of a GEMM+RS test job (flux-run -n W [--mps] -- gemm_rs_probe MODE).
//   correctness  random M (multiple of W, also not of W x tile), N, K; both layouts; bias or not;
//                bf16 and fp16; every path; each rank's out against an fp64 reference built from every
//                rank's inputs (regenerated from the same seeds); outputs poisoned first
//   determinism  the fused path twice on the same inputs: bitwise equal
//   loop         1000 back-to-back fused calls on changing inputs and alternating M, checked at 12
//                random steps (the same on every rank): no stale flag, no missed reset
//   bad          differing plans, wrong dtype, misaligned pointer, wrong out shape, M not a multiple of W:
//                each a clear InvalidArgument on every rank, no hang
//   small        one call per path on a small shape (for compute-sanitizer)
//   graph        every path captured once into a CUDA graph (global capture mode) on one stream and
//                replayed 1000 times on another, inputs rewritten in place before each replay, every 7th
//                step an eager call instead; checked against fp64 at 8 random steps
//   wrap         the fused path from epoch 2^32 - 20 across the 32-bit wrap: 40 calls, each checked
//   fault        rank 1 skips a call: every rank's later check_status() and run() of any plan on the
//                communicator throw the first failure, which names the missing peer (fail-stop)
//   kill         (started without flux-run) 1000 fused calls; the last rank SIGKILLs itself at call 300;
//                every other rank stops with an error naming it, printing "stopped at <ms>"
// Prints "gemm_rs probe PASSED: rank r of W" at the end; failures print "gemm_rs probe FAIL ..." (exit 1).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <tuple>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "flux/error.h"
#include "flux/gemm_rs.h"
#include "flux/knobs.h"
#include "flux/runtime.h"
#include "src/common/check.h"
#include "tests/support/graph_replay.h"
#include "tools/common/device_tools.h"

namespace {

int g_rank = 0;
bool g_ok = true;

void check(bool cond, const std::string& what) {
  if (!cond) {
    std::printf("gemm_rs probe FAIL rank %d: %s\n", g_rank, what.c_str());
    g_ok = false;
  }
}

using Buffer = flux::tools::DeviceBuffer;

__global__ void add_into(double* acc, const double* x, int64_t count, bool first) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    acc[i] = first ? x[i] : acc[i] + x[i];
  }
}

uint64_t seed_of(uint64_t base, int rank, int what) { return base * 1000003ull + uint64_t(rank) * 7919ull + uint64_t(what); }

struct Case {
  int64_t m, n, k;
  flux::DType dtype;
  flux::WeightLayout layout;
  bool bias;
  uint64_t seed;
};

// The inputs of `rank` for a case, regenerated from its seed (any rank can make any rank's inputs).
void make_inputs(const Case& c, int rank, void* a, void* b, cudaStream_t stream) {
  flux::tools::fill_random(a, c.m * c.k, c.dtype, seed_of(c.seed, rank, 1), 1.0f, stream);
  flux::tools::fill_random(b, c.n * c.k, c.dtype, seed_of(c.seed, rank, 2), 1.0f, stream);
}

// fp64 reference of this rank's out rows: sum over ranks s of A_s B_s^T (+ bias once).
void reference(const Case& c, int world, int rank, void* bias, double* ref, cudaStream_t stream) {
  const int64_t seg = c.m / world;
  Buffer a(size_t(c.m * c.k) * 2), b(size_t(c.n * c.k) * 2), part(size_t(seg * c.n) * sizeof(double)),
      rows(size_t(seg) * sizeof(int32_t));
  std::vector<int32_t> r(static_cast<size_t>(seg));
  for (int64_t i = 0; i < seg; ++i) r[static_cast<size_t>(i)] = static_cast<int32_t>(rank * seg + i);
  FLUX_CUDA_CHECK(cudaMemcpyAsync(rows.ptr, r.data(), r.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
  for (int s = 0; s < world; ++s) {
    make_inputs(c, s, a.ptr, b.ptr, stream);
    flux::tools::reference_gemm_rows(c.dtype, c.layout, c.n, c.k, a.ptr, b.ptr, s == 0 ? bias : nullptr,
                                     static_cast<int32_t*>(rows.ptr), seg, static_cast<double*>(part.ptr), stream);
    add_into<<<256, 256, 0, stream>>>(ref, static_cast<double*>(part.ptr), seg * c.n, s == 0);
    FLUX_CUDA_CHECK_LAUNCH("add_into");
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::vector<Case> make_cases(int world, uint64_t seed, int count, bool small) {
  std::mt19937_64 rng(seed);  // the same on every rank
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) {
    Case c;
    int64_t rows_per_rank = small ? 96 : std::uniform_int_distribution<int64_t>(1, 520)(rng);
    if (i % 3 == 0 && !small) rows_per_rank = 128 * std::uniform_int_distribution<int64_t>(1, 3)(rng);  // tile multiple
    c.m = rows_per_rank * world;
    c.n = small ? 256 : 8 * std::uniform_int_distribution<int64_t>(2, 192)(rng);
    c.k = small ? 128 : 8 * std::uniform_int_distribution<int64_t>(1, 128)(rng);
    c.dtype = (i % 2) ? flux::DType::kFP16 : flux::DType::kBF16;
    c.layout = (i % 4 < 2) ? flux::WeightLayout::kNK : flux::WeightLayout::kKN;
    c.bias = (i % 3) != 1;
    c.seed = rng();
    cases.push_back(c);
  }
  return cases;
}

std::string name(const Case& c) {
  return flux::detail::cat("M=", c.m, " N=", c.n, " K/W=", c.k, " ", flux::to_string(c.dtype), " ", flux::to_string(c.layout),
                           c.bias ? " +bias" : "");
}

flux::GemmRsArgs args_for(const Case& c, int world, const Buffer& a, const Buffer& b, const Buffer& bias, const Buffer& out) {
  flux::GemmRsArgs g;
  g.a = flux::TensorRef(a.ptr, c.m, c.k, c.dtype);
  g.b = c.layout == flux::WeightLayout::kNK ? flux::TensorRef(b.ptr, c.n, c.k, c.dtype) : flux::TensorRef(b.ptr, c.k, c.n, c.dtype);
  if (c.bias) g.bias = flux::TensorRef(bias.ptr, 1, c.n, c.dtype);
  g.out = flux::TensorRef(out.ptr, c.m / world, c.n, c.dtype);
  return g;
}

void run_cases(flux::Communicator& comm, const std::vector<Case>& cases, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  for (const Case& c : cases) {
    const int64_t seg = c.m / w;
    Buffer a(size_t(c.m * c.k) * 2), b(size_t(c.n * c.k) * 2), bias(size_t(c.n) * 2), out(size_t(seg * c.n) * 2),
        ref(size_t(seg * c.n) * sizeof(double)), rows(size_t(seg) * sizeof(int32_t));
    make_inputs(c, r, a.ptr, b.ptr, stream);
    flux::tools::fill_random(bias.ptr, c.n, c.dtype, seed_of(c.seed, 0, 3), 1.0f, stream);
    reference(c, w, r, c.bias ? bias.ptr : nullptr, static_cast<double*>(ref.ptr), stream);
    std::vector<int32_t> idx(static_cast<size_t>(seg));
    for (int64_t i = 0; i < seg; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    FLUX_CUDA_CHECK(cudaMemcpy(rows.ptr, idx.data(), idx.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    flux::GemmRsDesc desc{c.m, c.n, c.k, c.dtype, c.layout};
    flux::GemmRsPlan plan(comm, desc);
    for (flux::GemmRsImpl impl : {flux::GemmRsImpl::kFused, flux::GemmRsImpl::kSequential, flux::GemmRsImpl::kDecomposed}) {
      flux::tools::poison(out.ptr, seg * c.n, stream);
      plan.run(args_for(c, w, a, b, bias, out), stream, impl);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      plan.check_status();
      flux::tools::CompareResult cr = flux::tools::compare_rows(c.dtype, c.n, out.ptr, static_cast<int32_t*>(rows.ptr), seg,
                                                                static_cast<double*>(ref.ptr), stream);
      bool ok = cr.nonfinite == 0 && cr.global_rel < flux::tools::tolerance(c.dtype) &&
                cr.max_row_rel < flux::tools::tolerance(c.dtype);
      check(ok, name(c) + " " + flux::to_string(impl) + ": " + flux::tools::describe(cr));
    }
    plan.release();
  }
}

void determinism(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size();
  Case c{int64_t(300) * w, 1000, 512, flux::DType::kBF16, flux::WeightLayout::kNK, true, 99};
  const int64_t seg = c.m / w;
  Buffer a(size_t(c.m * c.k) * 2), b(size_t(c.n * c.k) * 2), bias(size_t(c.n) * 2), out(size_t(seg * c.n) * 2);
  make_inputs(c, comm.rank(), a.ptr, b.ptr, stream);
  flux::tools::fill_random(bias.ptr, c.n, c.dtype, 5, 1.0f, stream);
  flux::GemmRsPlan plan(comm, flux::GemmRsDesc{c.m, c.n, c.k, c.dtype, c.layout});
  std::vector<std::vector<char>> results;
  for (int rep = 0; rep < 3; ++rep) {
    flux::tools::poison(out.ptr, seg * c.n, stream);
    plan.run(args_for(c, w, a, b, bias, out), stream, flux::GemmRsImpl::kFused);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    plan.check_status();
    results.emplace_back(out.bytes);
    FLUX_CUDA_CHECK(cudaMemcpy(results.back().data(), out.ptr, out.bytes, cudaMemcpyDeviceToHost));
  }
  check(results[0] == results[1] && results[1] == results[2], "determinism: fused outputs differ between runs");
  plan.release();
  if (g_ok) std::printf("gemm_rs probe determinism: ok (3 fused runs bitwise equal)\n");
}

void loop(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  const int64_t m_big = 384 * w, m_small = 136 * w;  // alternating M changes the tile grid
  flux::GemmRsDesc desc{m_big, 768, 256, flux::DType::kFP16, flux::WeightLayout::kNK};
  flux::GemmRsPlan plan(comm, desc);
  Buffer a(size_t(m_big * desc.k_per_rank) * 2), b(size_t(desc.n * desc.k_per_rank) * 2), bias(size_t(desc.n) * 2),
      out(size_t(m_big / w * desc.n) * 2), ref(size_t(m_big / w * desc.n) * sizeof(double)),
      rows(size_t(m_big / w) * sizeof(int32_t));
  std::vector<int32_t> idx(static_cast<size_t>(m_big / w));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>(i);
  FLUX_CUDA_CHECK(cudaMemcpy(rows.ptr, idx.data(), idx.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  std::mt19937_64 rng(2026);  // same check steps on every rank
  std::vector<int> check_steps;
  for (int i = 0; i < 12; ++i) check_steps.push_back(static_cast<int>(rng() % 1000));
  int checked = 0;
  for (int step = 0; step < 1000; ++step) {
    Case c{step % 2 ? m_small : m_big, desc.n, desc.k_per_rank, desc.dtype, desc.layout, step % 3 == 0, uint64_t(7000 + step)};
    make_inputs(c, r, a.ptr, b.ptr, stream);
    flux::tools::fill_random(bias.ptr, c.n, c.dtype, seed_of(c.seed, 0, 3), 1.0f, stream);
    bool do_check = std::find(check_steps.begin(), check_steps.end(), step) != check_steps.end();
    if (do_check) flux::tools::poison(out.ptr, c.m / w * c.n, stream);
    plan.run(args_for(c, w, a, b, bias, out), stream, flux::GemmRsImpl::kFused);
    if (do_check) {
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      plan.check_status();
      reference(c, w, r, c.bias ? bias.ptr : nullptr, static_cast<double*>(ref.ptr), stream);
      auto cr = flux::tools::compare_rows(c.dtype, c.n, out.ptr, static_cast<int32_t*>(rows.ptr), c.m / w,
                                          static_cast<double*>(ref.ptr), stream);
      check(cr.nonfinite == 0 && cr.max_row_rel < flux::tools::tolerance(c.dtype),
            flux::detail::cat("loop step ", step, ": ", flux::tools::describe(cr)));
      ++checked;
    }
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  plan.check_status();
  plan.release();
  if (g_ok) std::printf("gemm_rs probe loop: ok (1000 calls, %d checked)\n", checked);
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

void bad_inputs(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  // Plans that differ across ranks.
  std::string e = invalid_argument_of([&] {
    flux::GemmRsPlan plan(comm, flux::GemmRsDesc{int64_t(128) * w, r == 1 ? 1024 : 512, 256, flux::DType::kBF16,
                                                 flux::WeightLayout::kNK});
  });
  check(e.find("ranks disagree on flux gemm_rs plan") != std::string::npos && e.find("rank 1 has") != std::string::npos,
        "differing plans: '" + e + "'");
  // Plans are compared as resolved from the knobs: rank 1 with another FLUX_GEMM_CONFIG, then another
  // FLUX_GEMM_RS_REDUCE_SMS, gets a clear error on every rank.
  for (const auto& [knob, value, shows] :
       {std::make_tuple("FLUX_GEMM_CONFIG", "256x128x64_coop_c1x2", "config=256x128x64_coop_c1x2"),
        std::make_tuple("FLUX_GEMM_RS_REDUCE_SMS", "10", "reduce_sms=10")}) {
    if (r == 1) setenv(knob, value, 1);
    e = invalid_argument_of([&] {
      flux::GemmRsPlan plan(comm, flux::GemmRsDesc{int64_t(128) * w, 512, 256, flux::DType::kBF16, flux::WeightLayout::kNK});
    });
    if (r == 1) unsetenv(knob);
    check(e.find("ranks disagree on flux gemm_rs plan") != std::string::npos && e.find(shows) != std::string::npos,
          std::string("differing ") + knob + ": '" + e + "'");
  }
  Case c{int64_t(128) * w, 512, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 1};
  flux::GemmRsPlan plan(comm, flux::GemmRsDesc{c.m, c.n, c.k, c.dtype, c.layout});
  Buffer a(size_t(c.m * c.k) * 2), b(size_t(c.n * c.k) * 2), bias(size_t(c.n) * 2), out(size_t(c.m * c.n) * 2);
  auto good = args_for(c, w, a, b, bias, out);
  auto g = good;
  g.a.dtype = flux::DType::kFP16;
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("A is ") != std::string::npos && e.find("fp16; expected") != std::string::npos, "wrong dtype: '" + e + "'");
  g = good;
  g.b.data = static_cast<const char*>(b.ptr) + 2;
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("not 16-byte aligned") != std::string::npos, "misaligned: '" + e + "'");
  g = good;
  g.out.rows = c.m;
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("out is ") != std::string::npos && e.find("expected " + std::to_string(c.m / w) + " x 512") != std::string::npos,
        "wrong out shape: '" + e + "'");
  if (w > 1) {
    g = good;
    g.a.rows = c.m - 1;
    e = invalid_argument_of([&] { plan.run(g, stream); });
    check(e.find("is not a multiple of the world size") != std::string::npos, "M not multiple of W: '" + e + "'");
  }
  e = invalid_argument_of([&] {
    flux::GemmRsOptions o;
    o.reduce_sms = 1000;
    flux::GemmRsPlan p2(comm, flux::GemmRsDesc{c.m, c.n, c.k, c.dtype, c.layout}, o);
  });
  check(e.find("reduce_sms 1000") != std::string::npos, "reduce_sms: '" + e + "'");
  // The good call still works after the rejected ones.
  plan.run(good, stream);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  plan.check_status();
  plan.release();
  if (g_ok) std::printf("gemm_rs probe bad: ok\n");
}

// The output of case c on this rank, checked against fp64 from every rank's inputs.
bool check_against_reference(const Case& c, int w, int r, const Buffer& bias, const Buffer& out, const Buffer& ref,
                             const Buffer& rows, const std::string& what, cudaStream_t stream) {
  reference(c, w, r, c.bias ? bias.ptr : nullptr, static_cast<double*>(ref.ptr), stream);
  auto cr = flux::tools::compare_rows(c.dtype, c.n, out.ptr, static_cast<int32_t*>(rows.ptr), c.m / w,
                                      static_cast<double*>(ref.ptr), stream);
  bool ok = cr.nonfinite == 0 && cr.max_row_rel < flux::tools::tolerance(c.dtype) &&
            cr.global_rel < flux::tools::tolerance(c.dtype);
  check(ok, what + ": " + flux::tools::describe(cr));
  return ok;
}

struct Fixture {
  Case c;
  int w, r;
  Buffer a, b, bias, out, ref, rows;
  Fixture(const Case& c_, int w_, int r_)
      : c(c_), w(w_), r(r_), a(size_t(c_.m * c_.k) * 2), b(size_t(c_.n * c_.k) * 2), bias(size_t(c_.n) * 2),
        out(size_t(c_.m / w_ * c_.n) * 2), ref(size_t(c_.m / w_ * c_.n) * sizeof(double)),
        rows(size_t(c_.m / w_) * sizeof(int32_t)) {
    std::vector<int32_t> idx(static_cast<size_t>(c.m / w));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>(i);
    FLUX_CUDA_CHECK(cudaMemcpy(rows.ptr, idx.data(), idx.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  }
  Case at(uint64_t seed) const {
    Case x = c;
    x.seed = seed;
    return x;
  }
  void fill(uint64_t seed, bool poison, cudaStream_t stream) {
    Case x = at(seed);
    make_inputs(x, r, a.ptr, b.ptr, stream);
    flux::tools::fill_random(bias.ptr, x.n, x.dtype, seed_of(x.seed, 0, 3), 1.0f, stream);
    if (poison) flux::tools::poison(out.ptr, x.m / w * x.n, stream);
  }
  bool verify(uint64_t seed, const std::string& what, cudaStream_t stream) {
    return check_against_reference(at(seed), w, r, bias, out, ref, rows, what, stream);
  }
  flux::GemmRsArgs args() const { return args_for(c, w, a, b, bias, out); }
};

void graph(flux::Communicator& comm, cudaStream_t stream, int steps) {
  const int w = comm.world_size(), r = comm.rank();
  cudaStream_t capture = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  // M / W = 200 rows: not a multiple of any tile (straddling tiles are reduced by two ranks).
  Fixture f(Case{int64_t(200) * w, 640, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 0}, w, r);
  flux::GemmRsPlan plan(comm, flux::GemmRsDesc{f.c.m, f.c.n, f.c.k, f.c.dtype, f.c.layout});
  const std::vector<int> check_at = flux::testing::check_steps(77, 8, steps);  // the same on every rank
  for (flux::GemmRsImpl impl : {flux::GemmRsImpl::kFused, flux::GemmRsImpl::kSequential, flux::GemmRsImpl::kDecomposed}) {
    const std::string path = flux::to_string(impl);
    auto seed = [&](int step) { return uint64_t(50000 + step + 7919 * int(impl)); };
    int checked = flux::testing::capture_and_replay(
        capture, stream, steps, check_at, 7,
        [&](int step, cudaStream_t s) {
          f.fill(seed(step), std::find(check_at.begin(), check_at.end(), step) != check_at.end(), s);
        },
        [&](cudaStream_t s) { plan.run(f.args(), s, impl); },
        [&](int step) {
          plan.check_status();
          f.verify(seed(step), flux::detail::cat("graph ", path, " replay ", step), stream);
        });
    check(checked >= 1, "graph " + path + ": nothing checked");
  }
  plan.release();
  cudaStreamDestroy(capture);
  if (g_ok) std::printf("gemm_rs probe graph: ok (3 paths x %d replays / eager calls, checked at %zu steps)\n", steps, check_at.size());
}

void wrap(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  Fixture f(Case{int64_t(136) * w, 512, 192, flux::DType::kFP16, flux::WeightLayout::kKN, true, 0}, w, r);
  flux::GemmRsOptions o;
  o.initial_epoch = 0xFFFFFFFFu - 19u;  // calls 20.. have epochs past the wrap (0, 1, ...)
  flux::GemmRsPlan plan(comm, flux::GemmRsDesc{f.c.m, f.c.n, f.c.k, f.c.dtype, f.c.layout}, o);
  for (int call = 0; call < 40; ++call) {
    f.fill(uint64_t(900 + call), true, stream);
    plan.run(f.args(), stream, flux::GemmRsImpl::kFused);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    plan.check_status();
    f.verify(uint64_t(900 + call), flux::detail::cat("wrap call ", call, " (epoch ", uint32_t(o.initial_epoch + call), ")"),
             stream);
  }
  plan.release();
  if (g_ok) std::printf("gemm_rs probe wrap: ok (40 fused calls across the 32-bit epoch wrap)\n");
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const flux::Error& e) {
    return e.what();
  }
  return "";
}

void fault(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  Fixture f(Case{int64_t(128) * w, 512, 256, flux::DType::kBF16, flux::WeightLayout::kNK, false, 0}, w, r);
  flux::GemmRsPlan plan(comm, flux::GemmRsDesc{f.c.m, f.c.n, f.c.k, f.c.dtype, f.c.layout});
  flux::GemmRsPlan other(comm, flux::GemmRsDesc{f.c.m, f.c.n, f.c.k, f.c.dtype, f.c.layout});
  f.fill(1, true, stream);
  plan.run(f.args(), stream, flux::GemmRsImpl::kFused);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  plan.check_status();
  f.verify(1, "fault: the call before the fault", stream);
  comm.barrier("fault: first call done");
  const double timeout_s = double(flux::knobs::get_int("FLUX_WAIT_TIMEOUT_MS")) / 1e3;
  if (r == 1) {
    // Rank 1 skips the call; its GPU runs nothing, so only a peer's poison can tell it.
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout_s * 2.0));
  } else {
    f.fill(2, true, stream);
    plan.run(f.args(), stream, flux::GemmRsImpl::kFused);
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::string first = error_of([&] { plan.check_status(); });
  check(first.find("timed out") != std::string::npos && first.find("peer 1") != std::string::npos,
        "fault: check_status after the fault: '" + first + "'");
  // Every later call of any plan on this communicator throws that same first failure.
  for (int rep = 0; rep < 3; ++rep) {
    std::string e = error_of([&] { plan.run(f.args(), stream, flux::GemmRsImpl::kFused); });
    check(!first.empty() && e == first, "fault: run() after the fault: '" + e + "' (expected '" + first + "')");
    e = error_of([&] { other.run(f.args(), stream, flux::GemmRsImpl::kSequential); });
    check(e == first, "fault: another plan's run() after the fault: '" + e + "'");
  }
  comm.barrier("fault: checked");
  plan.release();
  other.release();
  if (g_ok) std::printf("gemm_rs probe fault: ok (%s)\n", first.c_str());
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Started without flux-run (plain torchrun-style variables): the last rank dies at call 300.
int kill_mode(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  Fixture f(Case{int64_t(128) * w, 256, 128, flux::DType::kBF16, flux::WeightLayout::kNK, false, 0}, w, r);
  flux::GemmRsPlan plan(comm, flux::GemmRsDesc{f.c.m, f.c.n, f.c.k, f.c.dtype, f.c.layout});
  f.fill(3, false, stream);
  try {
    for (int call = 0; call < 1000; ++call) {
      if (r == w - 1 && call == 300) {
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        std::printf("killing myself at %lld\n", now_ms());
        std::fflush(stdout);
        std::raise(SIGKILL);
      }
      plan.run(f.args(), stream, flux::GemmRsImpl::kFused);
    }
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    plan.check_status();
  } catch (const std::exception& e) {
    std::printf("stopped at %lld: %s\n", now_ms(), e.what());
    std::fflush(stdout);
    return 3;
  }
  std::printf("gemm_rs probe FAIL rank %d: 1000 calls finished although rank %d died\n", r, w - 1);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correctness";
  try {
    flux::Communicator comm;
    g_rank = comm.rank();
    cudaStream_t stream = nullptr;
    FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (mode == "correctness") {
      run_cases(comm, make_cases(comm.world_size(), 424242, 16, false), stream);
      if (g_ok) std::printf("gemm_rs probe correctness: ok (16 cases x 3 paths)\n");
    } else if (mode == "small") {
      run_cases(comm, make_cases(comm.world_size(), 5, 1, true), stream);
    } else if (mode == "determinism") {
      determinism(comm, stream);
    } else if (mode == "loop") {
      loop(comm, stream);
    } else if (mode == "bad") {
      bad_inputs(comm, stream);
    } else if (mode == "graph") {
      graph(comm, stream, 1000);
    } else if (mode == "graph_small") {  // for compute-sanitizer
      graph(comm, stream, 12);
    } else if (mode == "wrap") {
      wrap(comm, stream);
    } else if (mode == "fault") {
      fault(comm, stream);
    } else if (mode == "kill") {
      return kill_mode(comm, stream);
    } else {
      std::printf("gemm_rs probe FAIL: unknown mode %s\n", mode.c_str());
      return 2;
    }
    cudaStreamDestroy(stream);
    std::printf("gemm_rs probe %s: rank %d of %d\n", g_ok ? "PASSED" : "FAILED", comm.rank(), comm.world_size());
    return g_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("gemm_rs probe FAIL rank %d: %s\n", g_rank, e.what());
    return 1;
  }
}
