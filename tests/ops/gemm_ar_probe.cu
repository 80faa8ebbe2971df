// tests/ops/gemm_ar_probe.cu — one rank of a GEMM+AR test job (flux-run -n W [--mps] -- gemm_ar_probe MODE).
//   correctness  random M (any, also not a multiple of W or of a tile), N, K; both layouts; bias or not;
//                bf16 and fp16; every path; out [M, N] against an fp64 reference built from every rank's
//                inputs (regenerated from the same seeds); outputs poisoned first; and every rank's out
//                bitwise equal to every other rank's (a hash of the bits, all-gathered)
//   determinism  every path twice on the same inputs: bitwise equal run to run
//   loop         1000 one-shot calls interleaved with GEMM+RS calls on the same communicator, alternating
//                M, checked at 12 random steps (the same on every rank)
//   bad          wrong out shape, wrong dtype, M beyond max_m, differing plans: InvalidArgument on every rank
//   graph        every path captured once and replayed 200 times on another stream with the inputs
//                rewritten in place, every 7th step an eager call; checked at 8 random steps
//   small        one call per path on a small shape (for compute-sanitizer)
// Prints "gemm_ar probe PASSED: rank r of W" at the end; failures print "gemm_ar probe FAIL ..." (exit 1).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "flux/ag_gemm.h"
#include "flux/error.h"
#include "flux/gemm_ar.h"
#include "flux/gemm_rs.h"
#include "flux/runtime.h"
#include "src/common/check.h"
#include "tests/support/graph_replay.h"
#include "tools/common/device_tools.h"

namespace {

int g_rank = 0;
bool g_ok = true;

void check(bool cond, const std::string& what) {
  if (!cond) {
    std::printf("gemm_ar probe FAIL rank %d: %s\n", g_rank, what.c_str());
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

std::string name(const Case& c) {
  return flux::detail::cat("M=", c.m, " N=", c.n, " K/W=", c.k, " ", flux::to_string(c.dtype), " ", flux::to_string(c.layout),
                           c.bias ? " +bias" : "");
}

const flux::GemmArPath kPaths[] = {flux::GemmArPath::kOneShot, flux::GemmArPath::kTwoShot, flux::GemmArPath::kRsAg,
                                   flux::GemmArPath::kSequential,
                                   flux::GemmArPath::kDecomposed};

// One rank's buffers for a case, the reference of every row, and the checks.
struct Fixture {
  Case c;
  int w, r;
  Buffer a, b, bias, out, ref, rows;
  Fixture(const Case& c_, int w_, int r_)
      : c(c_), w(w_), r(r_), a(size_t(c_.m * c_.k) * 2), b(size_t(c_.n * c_.k) * 2), bias(size_t(c_.n) * 2),
        out(size_t(c_.m * c_.n) * 2), ref(size_t(c_.m * c_.n) * sizeof(double)), rows(size_t(c_.m) * sizeof(int32_t)) {
    std::vector<int32_t> idx(static_cast<size_t>(c.m));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>(i);
    FLUX_CUDA_CHECK(cudaMemcpy(rows.ptr, idx.data(), idx.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  }
  void make_inputs(uint64_t seed, int rank, void* pa, void* pb, cudaStream_t s) const {
    flux::tools::fill_random(pa, c.m * c.k, c.dtype, seed_of(seed, rank, 1), 1.0f, s);
    flux::tools::fill_random(pb, c.n * c.k, c.dtype, seed_of(seed, rank, 2), 1.0f, s);
  }
  void fill(uint64_t seed, bool poison, cudaStream_t s) {
    make_inputs(seed, r, a.ptr, b.ptr, s);
    flux::tools::fill_random(bias.ptr, c.n, c.dtype, seed_of(seed, 0, 3), 1.0f, s);
    if (poison) flux::tools::poison(out.ptr, c.m * c.n, s);
  }
  // fp64: sum over ranks s of A_s B_s^T (+ bias once), every row.
  void reference(uint64_t seed, cudaStream_t s) {
    Buffer pa(size_t(c.m * c.k) * 2), pb(size_t(c.n * c.k) * 2), part(size_t(c.m * c.n) * sizeof(double));
    for (int src = 0; src < w; ++src) {
      make_inputs(seed, src, pa.ptr, pb.ptr, s);
      flux::tools::reference_gemm_rows(c.dtype, c.layout, c.n, c.k, pa.ptr, pb.ptr, (src == 0 && c.bias) ? bias.ptr : nullptr,
                                       static_cast<int32_t*>(rows.ptr), c.m, static_cast<double*>(part.ptr), s);
      add_into<<<256, 256, 0, s>>>(static_cast<double*>(ref.ptr), static_cast<double*>(part.ptr), c.m * c.n, src == 0);
      FLUX_CUDA_CHECK_LAUNCH("add_into");
    }
    FLUX_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  bool verify(uint64_t seed, const std::string& what, cudaStream_t s) {
    reference(seed, s);
    auto cr = flux::tools::compare_rows(c.dtype, c.n, out.ptr, static_cast<int32_t*>(rows.ptr), c.m,
                                        static_cast<double*>(ref.ptr), s);
    bool ok = cr.nonfinite == 0 && cr.max_row_rel < flux::tools::tolerance(c.dtype) &&
              cr.global_rel < flux::tools::tolerance(c.dtype);
    check(ok, what + ": " + flux::tools::describe(cr));
    return ok;
  }
  // FNV-1a of out's bits (host copy).
  std::string bits_hash() const {
    std::vector<unsigned char> host(out.bytes);
    FLUX_CUDA_CHECK(cudaMemcpy(host.data(), out.ptr, host.size(), cudaMemcpyDeviceToHost));
    uint64_t h = 1469598103934665603ull;
    for (unsigned char x : host) h = (h ^ x) * 1099511628211ull;
    return std::to_string(h);
  }
  flux::GemmArArgs args() const {
    flux::GemmArArgs g;
    g.a = flux::TensorRef(a.ptr, c.m, c.k, c.dtype);
    g.b = c.layout == flux::WeightLayout::kNK ? flux::TensorRef(b.ptr, c.n, c.k, c.dtype) : flux::TensorRef(b.ptr, c.k, c.n, c.dtype);
    if (c.bias) g.bias = flux::TensorRef(bias.ptr, 1, c.n, c.dtype);
    g.out = flux::TensorRef(out.ptr, c.m, c.n, c.dtype);
    return g;
  }
};

// Every rank's hash equal (the same bits on every rank).
void check_same_bits(flux::Communicator& comm, const Fixture& f, const std::string& what) {
  std::vector<std::string> all = comm.all_gather(f.bits_hash(), "gemm_ar bits " + what);
  for (size_t s = 1; s < all.size(); ++s) check(all[s] == all[0], what + ": rank " + std::to_string(s) + "'s out differs from rank 0's");
}

std::vector<Case> make_cases(uint64_t seed, int count, bool small) {
  std::mt19937_64 rng(seed);  // the same on every rank
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) {
    Case c;
    const int64_t ms[] = {1, 2, 7, 64, 127, 333, 1000};
    c.m = small ? 64 : ms[size_t(i) % 7];
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

void run_cases(flux::Communicator& comm, const std::vector<Case>& cases, cudaStream_t stream) {
  for (const Case& c : cases) {
    Fixture f(c, comm.world_size(), comm.rank());
    flux::GemmArPlan plan(comm, flux::GemmArDesc{c.m, c.n, c.k, c.dtype, c.layout});
    std::string two_shot_bits, rs_ag_bits;
    for (flux::GemmArPath path : kPaths) {
      f.fill(c.seed, true, stream);
      plan.run(f.args(), stream, path);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      plan.check_status();
      const std::string what = name(c) + " " + flux::to_string(path);
      f.verify(c.seed, what, stream);
      check_same_bits(comm, f, what);
      if (path == flux::GemmArPath::kTwoShot) two_shot_bits = f.bits_hash();
      if (path == flux::GemmArPath::kRsAg) rs_ag_bits = f.bits_hash();
    }
    // rs_ag is two-shot's first shot and an all-gather of its reduced rows: the same sums, the same bits.
    check(two_shot_bits == rs_ag_bits, name(c) + ": rs_ag's bits differ from two_shot's");
    plan.release();
  }
}

void determinism(flux::Communicator& comm, cudaStream_t stream) {
  Fixture f(Case{300, 1000, 512, flux::DType::kBF16, flux::WeightLayout::kNK, true, 99}, comm.world_size(), comm.rank());
  flux::GemmArPlan plan(comm, flux::GemmArDesc{f.c.m, f.c.n, f.c.k, f.c.dtype, f.c.layout});
  for (flux::GemmArPath path : kPaths) {
    std::string first;
    for (int run = 0; run < 3; ++run) {
      f.fill(f.c.seed, true, stream);
      plan.run(f.args(), stream, path);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::string h = f.bits_hash();
      if (run == 0) first = h;
      check(h == first, std::string("determinism ") + flux::to_string(path) + ": run " + std::to_string(run) + " differs");
    }
    check_same_bits(comm, f, std::string("determinism ") + flux::to_string(path));
  }
  plan.release();
}

void loop(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  Fixture big(Case{256, 768, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 0}, w, r);
  Fixture tiny(Case{8, 768, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 0}, w, r);
  flux::GemmArPlan ar(comm, flux::GemmArDesc{256, 768, 256, flux::DType::kBF16, flux::WeightLayout::kNK});
  // A GEMM+RS plan on the same communicator, called between the all-reduces.
  const int64_t rs_m = 64 * w;
  flux::GemmRsPlan rs(comm, flux::GemmRsDesc{rs_m, 512, 128, flux::DType::kBF16, flux::WeightLayout::kNK});
  Buffer ra(size_t(rs_m * 128) * 2), rb(size_t(512 * 128) * 2), rout(size_t(64 * 512) * 2);
  flux::tools::fill_random(ra.ptr, rs_m * 128, flux::DType::kBF16, 5 + r, 1.0f, stream);
  flux::tools::fill_random(rb.ptr, 512 * 128, flux::DType::kBF16, 50 + r, 1.0f, stream);
  flux::GemmRsArgs rargs;
  rargs.a = flux::TensorRef(ra.ptr, rs_m, 128, flux::DType::kBF16);
  rargs.b = flux::TensorRef(rb.ptr, 512, 128, flux::DType::kBF16);
  rargs.out = flux::TensorRef(rout.ptr, 64, 512, flux::DType::kBF16);
  // And an AG+GEMM plan: shards of 32 x 128 (rank s's filled with seed 300 + s); its gathered A is checked
  // bitwise against every rank's shard at the checked steps.
  const int64_t shard = 32, ag_k = 128, ag_n = 256;
  flux::AgGemmPlan ag(comm, flux::AgGemmDesc{shard * w, ag_n, ag_k, flux::DType::kBF16, flux::WeightLayout::kNK});
  Buffer ga(size_t(shard * ag_k) * 2), gb(size_t(ag_n * ag_k) * 2), gout(size_t(shard * w * ag_n) * 2),
      want(size_t(shard * w * ag_k) * 2);
  flux::tools::fill_random(ga.ptr, shard * ag_k, flux::DType::kBF16, 300 + r, 1.0f, stream);
  flux::tools::fill_random(gb.ptr, ag_n * ag_k, flux::DType::kBF16, 400, 1.0f, stream);
  for (int s = 0; s < w; ++s) {
    flux::tools::fill_random(static_cast<char*>(want.ptr) + size_t(s * shard * ag_k) * 2, shard * ag_k, flux::DType::kBF16,
                             300 + s, 1.0f, stream);
  }
  flux::AgGemmArgs gargs;
  gargs.a_shard = flux::TensorRef(ga.ptr, shard, ag_k, flux::DType::kBF16);
  gargs.b = flux::TensorRef(gb.ptr, ag_n, ag_k, flux::DType::kBF16);
  gargs.out = flux::TensorRef(gout.ptr, shard * w, ag_n, flux::DType::kBF16);
  std::vector<char> got(want.bytes), expected(want.bytes);
  FLUX_CUDA_CHECK(cudaMemcpyAsync(expected.data(), want.ptr, want.bytes, cudaMemcpyDeviceToHost, stream));
  const std::vector<int> check_at = flux::testing::check_steps(31, 12, 1000);
  for (int step = 0; step < 1000; ++step) {
    Fixture& f = (step % 3 == 2) ? tiny : big;
    const bool checked = std::find(check_at.begin(), check_at.end(), step) != check_at.end();
    f.fill(uint64_t(7000 + step), checked, stream);
    // Every GEMM+AR path in turn, between the other two ops' calls.
    const flux::GemmArPath path = kPaths[step % (sizeof(kPaths) / sizeof(kPaths[0]))];
    ar.run(f.args(), stream, path);
    rs.run(rargs, stream, flux::GemmRsImpl::kFused);
    const flux::TensorRef gathered = ag.run(gargs, stream, flux::AgGemmImpl::kFused);
    if (checked) {
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      ar.check_status();
      ag.check_status();
      f.verify(uint64_t(7000 + step), "loop step " + std::to_string(step) + " " + flux::to_string(path), stream);
      FLUX_CUDA_CHECK(cudaMemcpy(got.data(), gathered.data, got.size(), cudaMemcpyDeviceToHost));
      check(got == expected, "loop step " + std::to_string(step) + ": AG+GEMM's gathered A differs from the ranks' shards");
    }
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  rs.check_status();
  ag.check_status();
  ag.release();
  rs.release();
  ar.release();
  if (g_ok) std::printf("gemm_ar probe loop: ok (1000 all-reduces over every path interleaved with GEMM+RS and AG+GEMM)\n");
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
  // Plans that differ across ranks fail on every rank, naming the difference.
  std::string e = invalid_argument_of([&] {
    flux::GemmArPlan plan(comm, flux::GemmArDesc{128, r == 1 ? 1024 : 512, 256, flux::DType::kBF16, flux::WeightLayout::kNK});
  });
  check(e.find("ranks disagree") != std::string::npos, "differing plans: '" + e + "'");
  Fixture f(Case{100, 512, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 3}, w, r);
  flux::GemmArPlan plan(comm, flux::GemmArDesc{100, 512, 256, flux::DType::kBF16, flux::WeightLayout::kNK});
  flux::GemmArArgs g = f.args();
  g.out.rows = 100 / (w > 1 ? w : 2);  // the GEMM+RS shape, not [M, N]
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("out") != std::string::npos && e.find("expected 100 x 512") != std::string::npos, "wrong out: '" + e + "'");
  g = f.args();
  g.a.dtype = flux::DType::kFP16;
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("A") != std::string::npos, "wrong dtype: '" + e + "'");
  Fixture big(Case{101, 512, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 3}, w, r);
  e = invalid_argument_of([&] { plan.run(big.args(), stream); });
  check(e.find("max_m") != std::string::npos, "M beyond max_m: '" + e + "'");
  f.fill(3, true, stream);
  plan.run(f.args(), stream);  // the plan still works after the refused calls
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  f.verify(3, "after bad inputs", stream);
  plan.release();
}

void graph(flux::Communicator& comm, cudaStream_t stream, int steps) {
  cudaStream_t capture = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  Fixture f(Case{77, 640, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 0}, comm.world_size(), comm.rank());
  flux::GemmArPlan plan(comm, flux::GemmArDesc{f.c.m, f.c.n, f.c.k, f.c.dtype, f.c.layout});
  const std::vector<int> check_at = flux::testing::check_steps(77, 8, steps);  // the same on every rank
  for (flux::GemmArPath path : kPaths) {
    auto seed = [&](int step) { return uint64_t(50000 + step + 7919 * int(path)); };
    int checked = flux::testing::capture_and_replay(
        capture, stream, steps, check_at, 7,
        [&](int step, cudaStream_t s) {
          f.fill(seed(step), std::find(check_at.begin(), check_at.end(), step) != check_at.end(), s);
        },
        [&](cudaStream_t s) { plan.run(f.args(), s, path); },
        [&](int step) {
          plan.check_status();
          f.verify(seed(step), flux::detail::cat("graph ", flux::to_string(path), " replay ", step), stream);
        });
    check(checked >= 1, std::string("graph ") + flux::to_string(path) + ": nothing checked");
  }
  plan.release();
  cudaStreamDestroy(capture);
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
      run_cases(comm, make_cases(515151, 14, false), stream);
    } else if (mode == "small") {
      run_cases(comm, make_cases(5, 1, true), stream);
    } else if (mode == "determinism") {
      determinism(comm, stream);
    } else if (mode == "loop") {
      loop(comm, stream);
    } else if (mode == "bad") {
      bad_inputs(comm, stream);
    } else if (mode == "graph") {
      graph(comm, stream, 200);
    } else {
      std::printf("gemm_ar probe FAIL: unknown mode %s\n", mode.c_str());
      return 2;
    }
    cudaStreamDestroy(stream);
    std::printf("gemm_ar probe %s: rank %d of %d\n", g_ok ? "PASSED" : "FAILED", comm.rank(), comm.world_size());
    return g_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("gemm_ar probe FAIL rank %d: %s\n", g_rank, e.what());
    return 1;
  }
}
