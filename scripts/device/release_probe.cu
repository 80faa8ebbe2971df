// scripts/device/release_probe.cu — a diagnosis aid (not part of the library): what one tile's publish costs on the
// critical path, by memory-model flavour. The GEMM core's publish (src/gemm/kernel/hooked_collectives.cuh) is, per
// tile, `fence.proxy.async.global` then `st.release.sys` (or `red.release.sys.add`) by one thread after the tile's
// stores; flux_hooks / flux is ~0.93 at 2048 x 7168 x 2048 (s22d, ~1 us per tile) and moving the store wait off the
// path changed nothing (s22d), so the release itself is the suspect.
// Each of `ctas` CTAs (256 threads) runs `tiles` rounds of: every thread stores `bytes_per_tile / 256` bytes (a
// tile's output), __syncthreads, thread 0 publishes the round's flag with the variant's instructions, __syncthreads.
// Timed with CUDA events (median of 20 after 3 warm-ups); per-publish cost = (variant - none) / tiles. The acquire
// side likewise: thread 0 loads an already-set flag before each round's stores (the wait-before-load fast path).
// Usage: release_probe [ctas tiles bytes_per_tile]   (build: nvcc -O3 -arch=sm_90a -std=c++17 release_probe.cu)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.h"

enum Variant : int {
  kNone, kRelaxedGpu, kReleaseGpu, kReleaseSys, kProxyReleaseSys, kRedReleaseSys, kFenceSysRelaxed,
  kAcquireSys, kAcquireGpu, kRelaxedSysLoad, kNumVariants
};
const char* kNames[kNumVariants] = {"none", "st.relaxed.gpu", "st.release.gpu", "st.release.sys",
                                    "fence.proxy.async+st.release.sys", "red.release.sys.add",
                                    "fence.acq_rel.sys+st.relaxed.sys", "ld.acquire.sys (set flag)",
                                    "ld.acquire.gpu (set flag)", "ld.relaxed.sys (set flag)"};

__global__ void probe(int variant, int tiles, int words_per_thread, uint4* out, uint32_t* flags, uint32_t* sink) {
  uint4* mine = out + (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * words_per_thread;
  uint32_t* flag = flags + blockIdx.x * 32;
  uint32_t acc = 0;
  for (int t = 0; t < tiles; ++t) {
    if (threadIdx.x == 0 && variant >= kAcquireSys) {
      uint32_t v;
      if (variant == kAcquireSys) asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag + 1) : "memory");
      else if (variant == kAcquireGpu) asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag + 1) : "memory");
      else asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag + 1) : "memory");
      acc += v;
    }
    __syncthreads();
    for (int w = 0; w < words_per_thread; ++w) mine[w] = make_uint4(t, w, threadIdx.x, blockIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint32_t v = uint32_t(t + 1);
      switch (variant) {
        case kRelaxedGpu: asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(v) : "memory"); break;
        case kReleaseGpu: asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(v) : "memory"); break;
        case kReleaseSys: asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(v) : "memory"); break;
        case kProxyReleaseSys:
          asm volatile("fence.proxy.async.global;" ::: "memory");
          asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(v) : "memory");
          break;
        case kRedReleaseSys: asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(flag), "r"(1u) : "memory"); break;
        case kFenceSysRelaxed:
          asm volatile("fence.acq_rel.sys;" ::: "memory");
          asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(v) : "memory");
          break;
        default: break;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && acc == 0xffffffffu) sink[0] = acc;
}

int main(int argc, char** argv) {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int ctas = argc > 1 ? std::atoi(argv[1]) : sms;
  const int tiles = argc > 2 ? std::atoi(argv[2]) : 64;
  const int bytes = argc > 3 ? std::atoi(argv[3]) : 32768;  // a 128 x 128 bf16 tile
  const int threads = 256, words = std::max(1, bytes / 16 / threads);
  uint4* out;
  uint32_t *flags, *sink;
  CK(cudaMalloc(&out, size_t(ctas) * threads * words * 16));
  CK(cudaMalloc(&flags, size_t(ctas) * 32 * 4));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(flags, 1, size_t(ctas) * 32 * 4));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::printf("ctas %d, tiles %d, bytes per tile %d\n", ctas, tiles, words * 16 * threads);
  double base = 0;
  for (int v = 0; v < kNumVariants; ++v) {
    std::vector<float> ms;
    for (int i = 0; i < 23; ++i) {
      CK(cudaEventRecord(e0));
      probe<<<ctas, threads>>>(v, tiles, words, out, flags, sink);
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      if (i >= 3) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2] * 1e3;
    if (v == kNone) base = med;
    std::printf("%-36s %9.2f us  per tile vs none %+7.3f us\n", kNames[v], med, (med - base) / tiles);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
