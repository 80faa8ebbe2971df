// tests/ops/ag_gemm_probe.cu — one rank of an AG+GEMM test job (flux-run -n W [--mps] -- ag_gemm_probe MODE).
//   correctness  random M (multiple of W), N/W, K; both layouts; bias or not; bf16 and fp16; every path
//                that runs here; out against fp64 from every rank's shards (regenerated from their seeds);
//                the gathered A bitwise equal to the concatenation of the shards; outputs poisoned first
//   loop         1000 back-to-back AG+GEMM calls on changing inputs, interleaved with GEMM+RS calls on the
//                same communicator (their flags and workspaces must not collide), checked at random steps
//   bad          differing plans, wrong dtype, misaligned pointer, wrong out shape: clear errors
//   small        one call per path on a small shape (for compute-sanitizer)
//   graph        every path that runs here captured once into a CUDA graph (global capture mode) on one
//                stream and replayed 1000 times on another, inputs rewritten in place before each replay,
//                every 7th step an eager call instead; out and the gathered A checked at 8 random steps
//   wrap         the fused path from epoch 2^32 - 20 across the 32-bit wrap: 40 calls, each checked
//   concurrent   an AG+GEMM plan and a GEMM+RS plan with their fused ops in flight at once on two
//                streams, 200 calls each; AG checked against fp64, RS bitwise against a lone run
//   concurrent_busy  the same while rank 0 keeps a third of the SMs busy with a spinning kernel
// Prints "ag_gemm probe PASSED: rank r of W"; failures print "ag_gemm probe FAIL ..." (exit 1).
#include <cuda_runtime_api.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <random>
#include <string>
#include <vector>

#include "flux/ag_gemm.h"
#include "flux/error.h"
#include "flux/gemm_rs.h"
#include "src/common/check.h"
#include "tests/support/graph_replay.h"
#include "tools/common/device_tools.h"

namespace {

int g_rank = 0;
bool g_ok = true;

void check(bool cond, const std::string& what) {
  if (!cond) {
    std::printf("ag_gemm probe FAIL rank %d: %s\n", g_rank, what.c_str());
    g_ok = false;
  }
}

using Buffer = flux::tools::DeviceBuffer;

struct Case {
  int64_t m, n, k;  // m: all ranks' rows; n: per rank
  flux::DType dtype;
  flux::WeightLayout layout;
  bool bias;
  uint64_t seed;
};

uint64_t seed_of(uint64_t base, int rank, int what) { return base * 1000003ull + uint64_t(rank) * 7919ull + uint64_t(what); }

std::string name(const Case& c) {
  return flux::detail::cat("M=", c.m, " N/W=", c.n, " K=", c.k, " ", flux::to_string(c.dtype), " ", flux::to_string(c.layout),
                           c.bias ? " +bias" : "");
}

// Shard s of A, regenerated from its seed, written at rows s*M/W of `full` (any rank can build A).
void make_shard(const Case& c, int world, int s, void* dst, cudaStream_t stream) {
  flux::tools::fill_random(dst, (c.m / world) * c.k, c.dtype, seed_of(c.seed, s, 1), 1.0f, stream);
}

struct Job {
  Case c;
  int w, r;
  Buffer shard, b, bias, out, full, ref, rows;
  Job(const Case& c_, int w_, int r_, cudaStream_t stream)
      : c(c_), w(w_), r(r_), shard(size_t(c_.m / w_ * c_.k) * 2), b(size_t(c_.n * c_.k) * 2), bias(size_t(c_.n) * 2),
        out(size_t(c_.m * c_.n) * 2), full(size_t(c_.m * c_.k) * 2), ref(size_t(c_.m * c_.n) * sizeof(double)),
        rows(size_t(c_.m) * sizeof(int32_t)) {
    std::vector<int32_t> idx(static_cast<size_t>(c.m));
    for (int64_t i = 0; i < c.m; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    FLUX_CUDA_CHECK(cudaMemcpyAsync(rows.ptr, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice, stream));
    refill(c.seed, stream);
    reference(stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  // This rank's inputs for `seed`, rewritten in place (the buffers a captured call reads).
  void refill(uint64_t seed, cudaStream_t stream) {
    c.seed = seed;
    make_shard(c, w, r, shard.ptr, stream);
    flux::tools::fill_random(b.ptr, c.n * c.k, c.dtype, seed_of(c.seed, r, 2), 1.0f, stream);
    flux::tools::fill_random(bias.ptr, c.n, c.dtype, seed_of(c.seed, r, 3), 1.0f, stream);
  }
  // The gathered A and the fp64 reference for the current seed.
  void reference(cudaStream_t stream) {
    for (int s = 0; s < w; ++s) make_shard(c, w, s, static_cast<char*>(full.ptr) + size_t(s * (c.m / w) * c.k) * 2, stream);
    flux::tools::reference_gemm_rows(c.dtype, c.layout, c.n, c.k, full.ptr, b.ptr, c.bias ? bias.ptr : nullptr,
                                     static_cast<int32_t*>(rows.ptr), c.m, static_cast<double*>(ref.ptr), stream);
  }
  flux::AgGemmArgs args() const {
    flux::AgGemmArgs g;
    g.a_shard = flux::TensorRef(shard.ptr, c.m / w, c.k, c.dtype);
    g.b = c.layout == flux::WeightLayout::kNK ? flux::TensorRef(b.ptr, c.n, c.k, c.dtype) : flux::TensorRef(b.ptr, c.k, c.n, c.dtype);
    if (c.bias) g.bias = flux::TensorRef(bias.ptr, 1, c.n, c.dtype);
    g.out = flux::TensorRef(out.ptr, c.m, c.n, c.dtype);
    return g;
  }
  void verify(const flux::TensorRef& gathered, const std::string& what, cudaStream_t stream) {
    auto cr = flux::tools::compare_rows(c.dtype, c.n, out.ptr, static_cast<int32_t*>(rows.ptr), c.m,
                                        static_cast<double*>(ref.ptr), stream);
    check(cr.nonfinite == 0 && cr.global_rel < flux::tools::tolerance(c.dtype) && cr.max_row_rel < flux::tools::tolerance(c.dtype),
          what + ": " + flux::tools::describe(cr));
    std::vector<char> got(full.bytes), want(full.bytes);
    FLUX_CUDA_CHECK(cudaMemcpy(got.data(), gathered.data, full.bytes, cudaMemcpyDeviceToHost));
    FLUX_CUDA_CHECK(cudaMemcpy(want.data(), full.ptr, full.bytes, cudaMemcpyDeviceToHost));
    check(gathered.rows == c.m && gathered.cols == c.k && got == want, what + ": gathered A differs from the shards");
  }
};

std::vector<Case> make_cases(int world, uint64_t seed, int count, bool small) {
  std::mt19937_64 rng(seed);
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) {
    Case c;
    int64_t rows = small ? 96 : std::uniform_int_distribution<int64_t>(1, 400)(rng);
    if (i % 3 == 0 && !small) rows = 128 * std::uniform_int_distribution<int64_t>(1, 3)(rng);
    c.m = rows * world;
    c.n = small ? 256 : 8 * std::uniform_int_distribution<int64_t>(2, 160)(rng);
    c.k = small ? 128 : 8 * std::uniform_int_distribution<int64_t>(1, 128)(rng);
    c.dtype = (i % 2) ? flux::DType::kFP16 : flux::DType::kBF16;
    c.layout = (i % 4 < 2) ? flux::WeightLayout::kNK : flux::WeightLayout::kKN;
    c.bias = (i % 3) != 1;
    c.seed = rng();
    cases.push_back(c);
  }
  return cases;
}

std::vector<flux::AgGemmImpl> paths(flux::Communicator& comm) {
  std::vector<flux::AgGemmImpl> p = {flux::AgGemmImpl::kFused, flux::AgGemmImpl::kSequential, flux::AgGemmImpl::kDecomposed};
  if (!comm.shares_gpu()) p.push_back(flux::AgGemmImpl::kFusedCopyEngine);
  return p;
}

void correctness(flux::Communicator& comm, const std::vector<Case>& cases, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  for (const Case& c : cases) {
    Job job(c, w, r, stream);
    flux::AgGemmPlan plan(comm, flux::AgGemmDesc{c.m, c.n, c.k, c.dtype, c.layout});
    for (flux::AgGemmImpl impl : paths(comm)) {
      flux::tools::poison(job.out.ptr, c.m * c.n, stream);
      flux::TensorRef gathered = plan.run(job.args(), stream, impl);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      plan.check_status();
      job.verify(gathered, name(c) + " " + flux::to_string(impl), stream);
    }
    plan.release();
  }
}

void loop(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  Case base{int64_t(256) * w, 384, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 0};
  flux::AgGemmPlan ag(comm, flux::AgGemmDesc{base.m, base.n, base.k, base.dtype, base.layout});
  flux::GemmRsPlan rs(comm, flux::GemmRsDesc{base.m, 512, 128, base.dtype, base.layout});
  Buffer rs_a(size_t(base.m * 128) * 2), rs_b(size_t(512 * 128) * 2), rs_out(size_t(base.m / w * 512) * 2);
  flux::tools::fill_random(rs_a.ptr, base.m * 128, base.dtype, 11 + r, 1.0f, stream);
  flux::tools::fill_random(rs_b.ptr, 512 * 128, base.dtype, 13 + r, 1.0f, stream);
  flux::GemmRsArgs rs_args;
  rs_args.a = flux::TensorRef(rs_a.ptr, base.m, 128, base.dtype);
  rs_args.b = flux::TensorRef(rs_b.ptr, 512, 128, base.dtype);
  rs_args.out = flux::TensorRef(rs_out.ptr, base.m / w, 512, base.dtype);
  std::mt19937_64 rng(77);
  std::vector<int> check_steps;
  for (int i = 0; i < 10; ++i) check_steps.push_back(static_cast<int>(rng() % 1000));
  int checked = 0;
  Buffer shard(size_t(base.m / w * base.k) * 2), b(size_t(base.n * base.k) * 2), out(size_t(base.m * base.n) * 2);
  flux::tools::fill_random(b.ptr, base.n * base.k, base.dtype, 3, 1.0f, stream);
  for (int step = 0; step < 1000; ++step) {
    Case c = base;
    c.seed = uint64_t(5000 + step);
    const bool do_check = std::find(check_steps.begin(), check_steps.end(), step) != check_steps.end();
    if (do_check) {
      Job job(c, w, r, stream);
      flux::tools::poison(job.out.ptr, c.m * c.n, stream);
      flux::TensorRef gathered = ag.run(job.args(), stream, flux::AgGemmImpl::kFused);
      rs.run(rs_args, stream, flux::GemmRsImpl::kFused);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      ag.check_status();
      rs.check_status();
      job.verify(gathered, flux::detail::cat("loop step ", step), stream);
      ++checked;
    } else {
      // Changing inputs without the reference: refill this rank's shard in place.
      make_shard(c, w, r, shard.ptr, stream);
      flux::AgGemmArgs g;
      g.a_shard = flux::TensorRef(shard.ptr, base.m / w, base.k, base.dtype);
      g.b = flux::TensorRef(b.ptr, base.n, base.k, base.dtype);
      g.out = flux::TensorRef(out.ptr, base.m, base.n, base.dtype);
      ag.run(g, stream, flux::AgGemmImpl::kFused);
      rs.run(rs_args, stream, flux::GemmRsImpl::kFused);
    }
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  ag.check_status();
  rs.check_status();
  ag.release();
  rs.release();
  if (g_ok) std::printf("ag_gemm probe loop: ok (1000 AG+GEMM calls interleaved with GEMM+RS, %d checked)\n", checked);
}

void graph(flux::Communicator& comm, cudaStream_t stream, int steps) {
  const int w = comm.world_size(), r = comm.rank();
  cudaStream_t capture = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  // M / W = 200 rows: blocks straddle shards.
  Job job(Case{int64_t(200) * w, 384, 256, flux::DType::kFP16, flux::WeightLayout::kNK, true, 1}, w, r, stream);
  flux::AgGemmPlan plan(comm, flux::AgGemmDesc{job.c.m, job.c.n, job.c.k, job.c.dtype, job.c.layout});
  const std::vector<int> check_at = flux::testing::check_steps(78, 8, steps);  // the same on every rank
  for (flux::AgGemmImpl impl : paths(comm)) {
    const std::string path = flux::to_string(impl);
    flux::TensorRef gathered;
    auto seed = [&](int step) { return uint64_t(60000 + step + 7919 * int(impl)); };
    int checked = flux::testing::capture_and_replay(
        capture, stream, steps, check_at, 7,
        [&](int step, cudaStream_t s) {
          job.refill(seed(step), s);
          if (std::find(check_at.begin(), check_at.end(), step) != check_at.end()) {
            flux::tools::poison(job.out.ptr, job.c.m * job.c.n, s);
          }
        },
        [&](cudaStream_t s) { gathered = plan.run(job.args(), s, impl); },
        [&](int step) {
          plan.check_status();
          job.reference(stream);
          FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          job.verify(gathered, flux::detail::cat("graph ", path, " replay ", step), stream);
        });
    check(checked >= 1, "graph " + path + ": nothing checked");
  }
  plan.release();
  cudaStreamDestroy(capture);
  if (g_ok) std::printf("ag_gemm probe graph: ok (%zu paths x %d replays / eager calls)\n", paths(comm).size(), steps);
}

void wrap(flux::Communicator& comm, cudaStream_t stream) {
  const int w = comm.world_size(), r = comm.rank();
  Job job(Case{int64_t(136) * w, 256, 192, flux::DType::kBF16, flux::WeightLayout::kKN, true, 2}, w, r, stream);
  flux::AgGemmOptions o;
  o.initial_epoch = 0xFFFFFFFFu - 19u;
  flux::AgGemmPlan plan(comm, flux::AgGemmDesc{job.c.m, job.c.n, job.c.k, job.c.dtype, job.c.layout}, o);
  for (int call = 0; call < 40; ++call) {
    job.refill(uint64_t(700 + call), stream);
    flux::tools::poison(job.out.ptr, job.c.m * job.c.n, stream);
    flux::TensorRef gathered = plan.run(job.args(), stream, flux::AgGemmImpl::kFused);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    plan.check_status();
    job.reference(stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    job.verify(gathered, flux::detail::cat("wrap call ", call), stream);
  }
  plan.release();
  if (g_ok) std::printf("ag_gemm probe wrap: ok (40 fused calls across the 32-bit epoch wrap)\n");
}

// Holds one SM per CTA (its shared memory leaves room for no other CTA) until *stop, at most limit_ns.
__global__ void occupy_sms(const volatile uint32_t* stop, uint64_t limit_ns) {
  extern __shared__ char smem[];
  uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  smem[threadIdx.x] = 1;
  do {
    __nanosleep(2000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*stop == 0u && now - start < limit_ns);
}

// `ag_gemm_probe occupy`: holds a third of the SMs with one never-ending kernel until its stdin closes
// (at most 120 s); prints "occupying N SMs" once the kernel runs.
int occupy_mode() {
  int device = 0;
  if (const char* d = std::getenv("FLUX_DEVICE")) device = std::atoi(d);
  FLUX_CUDA_CHECK(cudaSetDevice(device));
  const flux::DeviceLimits limits = flux::query_device_limits(device);
  uint32_t* stop_host = nullptr;
  uint32_t* stop_dev = nullptr;
  FLUX_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&stop_host), sizeof(uint32_t), cudaHostAllocMapped));
  *stop_host = 0;
  FLUX_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&stop_dev), stop_host, 0));
  const int ctas = limits.sm_count / 3, smem = static_cast<int>(limits.smem_per_block_optin);
  FLUX_CUDA_CHECK(cudaFuncSetAttribute(occupy_sms, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaStream_t s = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  occupy_sms<<<ctas, 64, smem, s>>>(stop_dev, 120ull * 1000 * 1000 * 1000);
  FLUX_CUDA_CHECK_LAUNCH("occupy_sms");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::printf("occupying %d SMs\n", ctas);
  std::fflush(stdout);
  char c = 0;
  while (::read(0, &c, 1) > 0) {
  }
  *reinterpret_cast<volatile uint32_t*>(stop_host) = 1u;
  FLUX_CUDA_CHECK(cudaStreamSynchronize(s));
  return 0;
}

// Starts `<this probe> occupy` (same environment: it joins the job's MPS daemon) and returns once its
// kernel runs; *in is the write end of its stdin (closing it stops the occupier).
pid_t start_occupier(int* in) {
  int to_child[2], from_child[2];
  if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) throw flux::Error("occupier: pipe failed");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    ::close(to_child[1]);
    ::close(from_child[0]);
    ::execl("/proc/self/exe", "ag_gemm_probe", "occupy", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  std::string line;
  char c = 0;
  while (line.find('\n') == std::string::npos && ::read(from_child[0], &c, 1) == 1) line += c;
  ::close(from_child[0]);
  check(line.find("occupying") != std::string::npos, "occupier did not start: '" + line + "'");
  std::printf("ag_gemm probe: another process is %s", line.c_str());
  *in = to_child[1];
  return pid;
}

void stop_occupier(pid_t pid, int in) {
  ::close(in);
  int status = 0;
  ::waitpid(pid, &status, 0);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "occupier failed");
}

void concurrent(flux::Communicator& comm, cudaStream_t stream, bool busy) {
  const int w = comm.world_size(), r = comm.rank();
  cudaStream_t rs_stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&rs_stream, cudaStreamNonBlocking));
  Job job(Case{int64_t(512) * w, 512, 384, flux::DType::kBF16, flux::WeightLayout::kNK, true, 41}, w, r, stream);
  flux::AgGemmPlan ag(comm, flux::AgGemmDesc{job.c.m, job.c.n, job.c.k, job.c.dtype, job.c.layout});
  const int64_t rs_m = int64_t(512) * w, rs_n = 768, rs_k = 256;
  flux::GemmRsPlan rs(comm, flux::GemmRsDesc{rs_m, rs_n, rs_k, flux::DType::kBF16, flux::WeightLayout::kNK});
  Buffer rs_a(size_t(rs_m * rs_k) * 2), rs_b(size_t(rs_n * rs_k) * 2), rs_out(size_t(rs_m / w * rs_n) * 2);
  flux::tools::fill_random(rs_a.ptr, rs_m * rs_k, flux::DType::kBF16, 21 + r, 1.0f, stream);
  flux::tools::fill_random(rs_b.ptr, rs_n * rs_k, flux::DType::kBF16, 23 + r, 1.0f, stream);
  flux::GemmRsArgs rs_args;
  rs_args.a = flux::TensorRef(rs_a.ptr, rs_m, rs_k, flux::DType::kBF16);
  rs_args.b = flux::TensorRef(rs_b.ptr, rs_n, rs_k, flux::DType::kBF16);
  rs_args.out = flux::TensorRef(rs_out.ptr, rs_m / w, rs_n, flux::DType::kBF16);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  // The RS result alone (the fused path sums in a fixed order: bitwise reproducible).
  rs.run(rs_args, rs_stream, flux::GemmRsImpl::kFused);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(rs_stream));
  rs.check_status();
  std::vector<char> golden(rs_out.bytes), got(rs_out.bytes);
  FLUX_CUDA_CHECK(cudaMemcpy(golden.data(), rs_out.ptr, rs_out.bytes, cudaMemcpyDeviceToHost));
  // The busy kernel runs in another process (an MPS client of its own, like NCCL's kernels of another
  // job or a neighbour's): inside this one a never-ending kernel could share a hardware queue with the
  // op's streams and block them for a reason that has nothing to do with the op.
  int occupier_in = -1;
  pid_t occupier = -1;
  if (busy && r == 0) occupier = start_occupier(&occupier_in);
  comm.barrier("concurrent: start");
  flux::TensorRef gathered;
  for (int i = 0; i < 200; ++i) {
    gathered = ag.run(job.args(), stream, flux::AgGemmImpl::kFused);
    rs.run(rs_args, rs_stream, flux::GemmRsImpl::kFused);
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  FLUX_CUDA_CHECK(cudaStreamSynchronize(rs_stream));
  if (occupier > 0) stop_occupier(occupier, occupier_in);
  ag.check_status();
  rs.check_status();
  job.verify(gathered, "concurrent AG+GEMM", stream);
  FLUX_CUDA_CHECK(cudaMemcpy(got.data(), rs_out.ptr, rs_out.bytes, cudaMemcpyDeviceToHost));
  check(got == golden, "concurrent GEMM+RS: result differs from the lone run");
  comm.barrier("concurrent: done");
  ag.release();
  rs.release();
  cudaStreamDestroy(rs_stream);
  if (g_ok) {
    std::printf("ag_gemm probe concurrent: ok (200 AG+GEMM and 200 GEMM+RS fused calls in flight on two streams%s)\n",
                busy ? ", a third of the SMs held by another process's kernel" : "");
  }
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
  std::string e = invalid_argument_of([&] {
    flux::AgGemmPlan plan(comm, flux::AgGemmDesc{int64_t(128) * w, 256, r == 1 ? 512 : 256, flux::DType::kBF16,
                                                 flux::WeightLayout::kNK});
  });
  check(e.find("ranks disagree on ag_gemm plan") != std::string::npos, "differing plans: '" + e + "'");
  Case c{int64_t(128) * w, 256, 256, flux::DType::kBF16, flux::WeightLayout::kNK, true, 9};
  Job job(c, w, r, stream);
  flux::AgGemmPlan plan(comm, flux::AgGemmDesc{c.m, c.n, c.k, c.dtype, c.layout});
  auto good = job.args();
  auto g = good;
  g.b.dtype = flux::DType::kFP16;
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("B is ") != std::string::npos && e.find("fp16; expected") != std::string::npos, "wrong dtype: '" + e + "'");
  g = good;
  g.a_shard.data = static_cast<const char*>(job.shard.ptr) + 8;
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("not 16-byte aligned") != std::string::npos, "misaligned: '" + e + "'");
  g = good;
  g.out.rows = c.m / w;
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("out is ") != std::string::npos && e.find("expected " + std::to_string(c.m) + " x 256") != std::string::npos,
        "wrong out shape: '" + e + "'");
  g = good;
  g.a_shard.rows = c.m;  // M = W x rows > max_m
  e = invalid_argument_of([&] { plan.run(g, stream); });
  check(e.find("max_m") != std::string::npos, "too many rows: '" + e + "'");
  flux::tools::poison(job.out.ptr, c.m * c.n, stream);
  flux::TensorRef gathered = plan.run(good, stream);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  plan.check_status();
  job.verify(gathered, "after rejected calls", stream);
  plan.release();
  if (g_ok) std::printf("ag_gemm probe bad: ok\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correctness";
  if (mode == "occupy") {
    try {
      return occupy_mode();
    } catch (const std::exception& e) {
      std::printf("occupier failed: %s\n", e.what());
      return 1;
    }
  }
  try {
    flux::Communicator comm;
    g_rank = comm.rank();
    cudaStream_t stream = nullptr;
    FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (mode == "correctness") {
      correctness(comm, make_cases(comm.world_size(), 31337, 12, false), stream);
      if (g_ok) std::printf("ag_gemm probe correctness: ok (12 cases x %zu paths)\n", paths(comm).size());
    } else if (mode == "small") {
      correctness(comm, make_cases(comm.world_size(), 8, 1, true), stream);
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
    } else if (mode == "concurrent" || mode == "concurrent_busy") {
      concurrent(comm, stream, mode == "concurrent_busy");
    } else {
      std::printf("ag_gemm probe FAIL: unknown mode %s\n", mode.c_str());
      return 2;
    }
    cudaStreamDestroy(stream);
    std::printf("ag_gemm probe %s: rank %d of %d\n", g_ok ? "PASSED" : "FAILED", comm.rank(), comm.world_size());
    return g_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("ag_gemm probe FAIL rank %d: %s\n", g_rank, e.what());
    return 1;
  }
}
