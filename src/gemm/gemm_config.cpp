// src/gemm/gemm_config.cpp — the config table and the one heuristic that picks among them.
//
// The heuristic is a pure function of (M, N, K) and the device limits, so CPU tests check it.
// Model: a persistent kernel runs ceil(work items / concurrent clusters) waves, each costing one
// item's k-steps at the slower of its MMA and its loads, bounded below by the bytes over HBM; split-K
// adds its reduction (predict(), below, with the reasons for each term). The (config, split) with the
// least predicted time wins; ties go to the earlier config and to no split. Device limits (SM count,
// cluster occupancy) come from the device.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "flux/gemm.h"
#include "src/common/check.h"
#include "src/gemm/gemm_config.h"
#include "src/gemm/stream_k.h"

namespace flux {

const std::vector<GemmConfigInfo>& gemm_configs() {
  static const std::vector<GemmConfigInfo> configs = [] {
    std::vector<GemmConfigInfo> out;
    for (const gemm::ConfigShape& s : gemm::kConfigShapes) {
      GemmConfigInfo info;
      info.id = static_cast<int>(s.id);
      info.name = s.name;
      info.tile_m = s.tile_m;
      info.tile_n = s.tile_n;
      info.tile_k = s.tile_k;
      info.cluster_m = s.cluster_m;
      info.cluster_n = s.cluster_n;
      info.pingpong = s.pingpong;
      info.split_k = s.split_k;
      info.swap_ab = s.swap_ab;
      info.skinny = s.skinny;
      info.fp8 = s.fp8;
      info.stream_k = s.stream_k;
      info.gemv = s.gemv;
      out.push_back(info);
    }
    return out;
  }();
  return configs;
}

namespace {

// Per-CTA throughput of each config on full waves, relative to 128x256 cooperative: two tables, one per M
// regime, each fitted on measurements of its own regime (the rates are effective: they absorb what the model
// does not spell out, e.g. the epilogue's overlap and L2 reuse at short K, so they do not carry from one regime
// to the other).
//
// M > kMidMaxM (kRelativeRate). Fitted to a config sweep on the H200 (15 per-rank shapes x 2 dtypes x 4
// configs x 2 rasters x 4 swizzles, timed side by side) and checked on a second one made with this heuristic
// (bench/results/gemm_sweep_h200_20261201.jsonl.gz): there the chosen variant is within 1% of the fastest of the
// 32 on 24 of 30 (shape, dtype) rows, within 2% on 29, worst 3.7%; median 0.6%.
//   128x256x64_coop_c2x1     1.00  reference; the epilogue is exposed (both math groups do it)
//   128x128x64_pingpong_c1x2 1.06  the other math group's MMA hides each tile's epilogue; finer
//                                  tiles also quantize better (it was best or within 0.5% on all 15). 1.04 -> 1.06
//                                  refitted 2026-12-04 (s18c) after the scheduler's per-tile step lost its 64-bit
//                                  divisions (src/gemm/fast_tile_order.h; it cost ping-pong most at short K):
//                                  --grid rates-large over `--corpus tune --corpus-min-m 4096 --corpus-max-m 8192
//                                  --corpus-every 10 --sweep --sweep-iters 10`, 16 shapes, geo best / picked 0.971 ->
//                                  0.979 (bench/results/
//                                  gemm_sweep_tune_m4096_8192_every10_h200_20261204_s18c.jsonl.gz);
//                                  ties with 256x128 go to it (the earlier config). The M <= 2048 table below was not
//                                  refitted: that sweep (every 10th row) held no M = 512 / 2048 rows.
//   256x128x64_coop_c1x2     1.06  same work per tile as 128x256, transposed. Refitted 2026-12-04 on the corpus's
//                                  tuning half (fit_heuristic.py --grid rates-large over `flux-bench gemm --corpus
//                                  tune --corpus-min-m 2049 --corpus-max-m 8192 --corpus-every 3 --sweep`, 13 shapes
//                                  (the step's time limit), bf16, H200: 1.00 -> 1.06, geo best / picked 0.977 ->
//                                  0.990); judged on the test half's M = 4096 rows (162, bf16 + fp16): the 110 rows
//                                  it moved from 128x128 ping-pong ran 1.032x (geometric mean), median 0.931 -> 0.939
//                                  (bench/results/gemm_corpus_test_m4096_h200_20261204_s16a.jsonl.gz; it loses up to 6%
//                                  at K >= 6144 and gains up to 34% at K <= 4096: a K term is the next lever)
//   64x256x64_pingpong_c1x2  1.00  (clustered 2x1 on that sweep: 1-2% behind 128x128 ping-pong; wins
//                                  where 64-row tiles waste fewer rows, M <= 64)
//   64x128x64_pingpong_swapab 1.00 a first estimate (a candidate up to kSwapAbMaxM only)
//   the skinny configs      (not used: their item time is a term of its own in predict())
//   the e4m3 configs        2.00 for 128x128x128 cooperative (and 128x112x128, held back: held_back() below)
//                                  (the tensor cores' FP8 rate is twice the 16-bit one: 1979 vs 989 dense
//                                  TFLOP/s on the H200); 2.10 for 128x144x128 cooperative above M = 2048 (2.00
//                                  at M <= 2048): fitted on an FP8 sweep of the suite (s24a, H100, 15 shapes,
//                                  the only FP8 sweep; the FP8 test half judges it): its best variant beat
//                                  128x128x128's on 9 of the 10 shapes with M = 4096 / 8192 (by 1-10%), lost on
//                                  the 5 with M = 1024; geometric mean of best / picked 0.958 without it, 0.981
//                                  at 2.00, 0.995 at 2.10-2.20 (0.972 at 2.30); 1.20 for 64x128x128
//                                  ping-pong: on an FP8 sweep of three suite shapes (1024x12288x12288,
//                                  4096x24576x12288, 8192x6144x12288; H200, 2026-12-02, promotion every 4
//                                  MMAs) its best variant ran at 0.43-0.51 of cuBLASLt FP8 where the
//                                  cooperative ones ran at 0.74-0.78 (64-row tiles: half the reuse of B)
//   128x128x64_coop_c1x2     1.00  a first estimate (the ping-pong tile without its epilogue overlap, which
//                                  kCoopEpilogueUs charges)
//   128x192x64_coop_c2x1     1.00  a first estimate (not measured above M = 2048): a tile width that quantizes
//                                  N = 2304 / 4608 / 5760 in fewer waves (gemm_config.h)
//   128x144x64_coop_c2x1     1.00  \ first estimates (picked above M = 2048 only where they quantize much better
//   128x112x64_coop_c2x1     1.00   | than ping-pong's 1.06). An H100's sweep (s23a, 8 shapes at M = 4096..8192)
//   128x176x64_coop_c2x1     1.00  /  fitted 1.00 / 0.80 / 1.10 (`--grid rates-large --only lrate15,lrate16,lrate17`),
//                                     which would hand 128x176 most large-M shapes, the suite's included, where the
//                                     H200 runs ping-pong at 0.96-0.99 of cuBLAS: not applied on 8 shapes of another
//                                     GPU; the next H200 sweep at M > 2048 fits them.
//
// M <= kMidMaxM (kRelativeRateMid). Fitted on the corpus's tuning half only, with scripts/corpus/fit_heuristic.py
// --grid rates (coordinate descent of these rates, kSwapAbMaxM, kReduceFixedUs, kStreamMaxM, kFillUs and
// kCoopEpilogueUs, maximizing the geometric mean over shapes of best variant / picked variant) and written here by
// scripts/corpus/apply_fit.py, over two sweeps of 2026-12-03 (H200, bf16, 245 shapes): `flux-bench gemm --corpus
// tune --corpus-min-m 128 --corpus-max-m 2048 --corpus-every 3 --sweep` (104 shapes,
// bench/results/gemm_sweep_tune_m128_2048_every3_h200_20261203_s13a.jsonl.gz) and `--corpus-max-m 64 --corpus-every 4
// --sweep` (141 shapes, gemm_sweep_tune_decode_every4_h200_20261203_s13c.jsonl.gz). What moved (from the one table of
// before): the cooperative 256x128, 128x128 and 128x192 configs 1.3 (they were the best variants on most of the
// M = 512..2048 rows, where ping-pong was picked), ping-pong 1.06, swap-AB 0.94 and a candidate up to M = 1024 (it
// was the best variant on most M = 128..512 rows, unsplit), the split-K fixed cost 2 -> 8 us, the fill 8 -> 12 us.
// Judged on the test half (every 3rd row: M = 1, 8, 64, 512, 4096; bf16 and fp16; 826 rows;
// bench/results/gemm_corpus_test_every3_h200_20261203_s13c.jsonl.gz) against the same rows of 2026-12-01
// (gemm_corpus_test_every3_skinny3_h200_20261201.jsonl.gz): median 0.849 (was 0.848); M = 512 0.887 (0.820: the 160
// changed picks 1.06x), M = 4096 0.936 (0.930), M < 128 0.816 (0.837: at M = 8 the 44 changed picks ran 0.91x,
// mostly split-K 2 of 64x256 given up for unsplit 128x128 ping-pong, which the tuning half's decode sweep had
// preferred; and rows whose pick did not change ran 0.96-0.99x of 2026-12-01's, at M = 64 0.964x).
// The 128x144 / 128x112 / 128x176 cooperative entries (1.20, 1.20, 1.30) were fitted alone (`--only
// rate15,rate16,rate17`, the rest as above) on an H100's tuning-half sweep, 2026-12-07 (s23a, M = 128..2048 every 3rd
// row, 78 shapes, bench/results/gemm_sweep_tune_m128_2048_every3_h100_20261207_s23a.jsonl.gz): geo best / picked
// 0.940 (without them) -> 0.956, picks vs cuBLAS median 0.897 -> 0.935 (M = 512 0.882 -> 0.949). They were the best
// variant on 32 of the 86 shapes of s23a's two sweeps (this one and M = 4096..8192; 112 on 15, 144 on 10, 176 on 7).
constexpr int64_t kMidMaxM = 2048;
constexpr double kRelativeRate[gemm::kNumConfigs] = {1.00, 1.06, 1.06, 1.00, 1.00, 1.00, 1.00,
                                                     2.00, 2.00, 1.20, 1.00, 1.00, 1.00, 1.00,
                                                     1.00, 1.00, 1.00, 1.00, 2.00, 2.10, 1.00};
// The large-M table of devices with less than kLowHbmBytesPerS of peak HBM bandwidth (DeviceLimits::hbm_bytes_per_s;
// the H100 SXM reports 3.35 TB/s, the H200 4.8): the entries above for the H200 (and for a device that reports no
// bandwidth), with 128x128 ping-pong 1.00 (1.06 above), 256x128 cooperative 1.30 (1.06), 128x192 cooperative 1.15 and
// 128x176 cooperative 1.06 (1.00). Why (s22q, H100; a reading, not measured with ncu): 128x128 ping-pong loads 1.33x
// the bytes per FLOP of 256x128 / 128x256, and at long K its L2 footprint spills to HBM; on the H100 (HBM 0.7x the
// H200's, its power cap active under load) it ran 0.53-0.75 of cuBLAS on the suite at M = 4096 / 8192 where the H200
// ran it at 0.96-0.99. Fitted on the H100's tuning-half sweeps at M = 4096 (`fit_heuristic.py --grid rates-large`, 11
// shapes, s22a + s23a: geo best / picked 0.847 -> 0.970, picks vs cuBLAS median 0.823 -> 0.984; 3-fold
// cross-validation: each held-out fold 0.84-0.85 -> 0.93-0.97). Judged on what it was not fitted on (H100): the test
// half's M > 2048 rows (every 3rd, 164, s24c, old and new binaries in one run): 148 picks changed (146 to 256x128),
// geometric mean 1.135x faster (min 0.868, 10 rows below 0.97), median vs cuBLAS 0.866 -> 0.958; 13 tuning-half shapes
// swept after the fit (s24d, M = 4096..16384): geo best / picked 0.826 -> 0.941. Between the two GPUs the split is a
// guess.
constexpr double kLowHbmBytesPerS = 4.0e12;
constexpr double kRelativeRateLowHbm[gemm::kNumConfigs] = {1.00, 1.00, 1.30, 1.00, 1.00, 1.00, 1.00,
                                                           2.00, 2.00, 1.20, 1.00, 1.15, 1.00, 1.00,
                                                           1.00, 1.00, 1.00, 1.06, 2.00, 2.10, 1.00};
constexpr double kRelativeRateMid[gemm::kNumConfigs] = {1.00, 1.06, 1.30, 1.00, 0.94, 1.00, 1.00,
                                                        2.00, 2.00, 1.20, 1.30, 1.30, 1.00, 1.00,
                                                        1.00, 1.20, 1.20, 1.30, 2.00, 2.00, 1.00};

// The time model (microseconds), for a config and a split factor S:
//   work items  = units x S (a unit is one cluster's tiles; each item runs K / S)
//   waves       = ceil(items / concurrent clusters)
//   item time   = k-steps x max(MMA time of a k-step, load time of a k-step on one SM)
//                 (+ the exposed epilogue of cooperative configs; ping-pong hides it behind the other
//                 math group)
//   GEMM        = max(fill + waves x item time, bytes of A, B, C (and the partials) / HBM bandwidth)
//   split-K     + the reduction: a second kernel (fixed cost) reading S fp32 partials per element.
// The MMA time of a k-step is the tile's full work even when M is smaller than the tile (WGMMA computes
// all 64-row groups), which is why small M is decided by the load and memory terms, and why splitting K
// pays there: S times the SMs stream B, each 1/S of it.
// Constants: the large-M terms keep the fitted relative rates above; the absolute MMA rate and the HBM
// bandwidth are H200 figures (989 TFLOP/s dense bf16 / fp16 peak over 132 SMs; HBM3e 4.8 TB/s peak),
// derated to what the core reaches (~700 TFLOP/s on the suite, ~4 TB/s streaming). The per-SM load
// rates, the fill and the reduction's fixed cost were fitted on the corpus's tune half (a grid search
// of scripts/corpus/fit_heuristic.py over `flux-bench gemm --corpus tune --corpus-every 5
// --corpus-max-m 2048 --sweep`, bf16, 193 shapes, H200, 2026-12-01: the picked variant is at a median
// 0.977 of the best of the ~40 measured per shape, 0.848 of cuBLAS, against 0.927 / 0.755 with the
// first estimates). Two load rates: for M <= kStreamMaxM, B is streamed from HBM with little reuse and
// one SM's loads wait on HBM (the fit: ~20 GB/s per SM, i.e. splitting K to put more SMs on the stream
// pays); for larger M, B is re-read from L2. (A first version switched on each config's own tile rows,
// <= 4: it made 128-row tiles look load-bound at M = 512 next to 64-row ones, and the test half's
// 128 <= M < 1024 rows fell from 0.818 to 0.642 of cuBLAS: a threshold on M alone is the same for
// every config.)
constexpr double kSmFlopsPerUs = 5.3e6;       // FLOP per microsecond per SM at rate 1.00
constexpr double kSmStreamBytesPerUs = 2.0e4; // bytes per microsecond one SM loads while B streams from HBM
// The FP8 (1-byte) warp-specialized configs' rate at M <= kStreamMaxM, fitted with the FP8 skinny config's term
// below (they compete for the same decode shapes; see there).
constexpr double kSmStreamBytesPerUsFp8 = 3.5e4;
constexpr double kSmL2BytesPerUs = 1.6e5;     // bytes per microsecond one SM loads when B is reused from L2
constexpr int64_t kStreamMaxM = 64;           // fitted 2026-12-03 (was 256: see kRelativeRateMid)
constexpr double kHbmBytesPerUs = 4.0e6;      // bytes per microsecond from HBM, whole GPU
constexpr double kFillUs = 12.0;              // per call: launch, prologue, first loads, last epilogue
                                              // (fitted 2026-12-03; was 8)
constexpr double kCoopEpilogueUs = 0.3;       // per item, cooperative configs only
constexpr double kReduceFixedUs = 8.0;        // launch and drain of the split-K reduction kernel, and the
                                              // partials' round trip the bytes term misses (fitted 2026-12-03; was 2)
// Stream-K (src/gemm/stream_k.h): each CTA of the grid moves at most one fp32 tile of partials out and its
// unit's final piece reads the later pieces' back (a few per unit), through L2. First estimate, not yet
// fitted: ~100 GB/s per SM for the fixup's striped 16-byte stores and loads, plus one flag round trip.
constexpr double kSmFixupBytesPerUs = 1.0e5;
constexpr double kFixupFlagUs = 1.0;
// Stream-K only when predicted this much faster than the same config whole-tile (its fixup cost is a first
// estimate: near-ties stay whole).
constexpr double kStreamKMinGain = 0.03;
// A stream-K k-iteration costs this many whole-tile ones. Measured (ncu, clocks untouched, H200, 2026-12-03,
// bench/results/logs/ncu_stream_k_h200_20261203_s12c.log): 128x128 cooperative at 2048 x 1152 x 3584, 80 units on
// 66 clusters, ran 68 stream-K iterations per cluster in 48.5 us against 112 whole-tile ones in 52.5 us (1.52x per
// iteration; why is not yet known: the fixup's stores and loads are a few us). Fitted on the tuning half
// (scripts/corpus/fit_stream_k.py over session12_a's forced-stream-K and off runs, bf16, M >= 128, every 4th row):
// 1.5 takes stream-K on 12 of 161 rows, 9 of them faster (geometric mean of the chosen rows 1.07x; median of all
// rows 0.829 -> 0.852 replaying the measured rows), where 1.0 (the first estimate) took it on 85 rows at a
// geometric mean 0.92x (0.808). On the test half (s12d) its 16 choices ran a geometric mean 1.006x: not enough
// for FLUX_GEMM_STREAM_K to default to auto.
constexpr double kStreamKIterCost = 1.5;
// The swap-AB config is a candidate for M <= this only (fitted 2026-12-03 with kRelativeRateMid; was 64).
constexpr int64_t kSwapAbMaxM = 1024;
// Up to this M the 128x128 ping-pong config yields to swap-AB (see select_gemm_config): the M range of the tuning
// half's decode sweeps that showed it, kept apart from kStreamMaxM (a fitted constant of the load model).
constexpr int64_t kSquarePingpongYieldMaxM = 64;
// Split whenever predicted faster (the fit found no margin that helps).
constexpr double kSplitMinGain = 0.0;

// Decode rule: up to kDecodeSwapMaxM rows, where swap-AB may run, the 16x64x128 swap-AB config (cuBLAS's decode
// structure: a 64-row tile of the weight's N along WGMMA's M, the few rows of A along its N, a deep TMA pipeline of
// 128-deep k-blocks), unsplit unless its units (64 columns of N each) fill less than 1 / kDecodeSplitUnitsDiv of the
// SMs; then split K into the most slices that keep units x S within 3/4 of the SMs. Not the time model: on the
// tuning half's decode sweep (M <= 64 every 3rd row, bf16, H200, 2026-12-04, s19c, bench/results/
// gemm_sweep_tune_m1_64_every3_h200_20261204_s19c.jsonl.gz) it was the best variant of all on 130 of the 133 shapes
// with M <= 16 (unsplit on all but those with N <= 1280), and the model, which rates every config's stream of B
// alike per SM, picked it on none at M = 1 (geometric mean of best / picked 0.89 there). This rule: 0.997 of the
// best variant (geometric mean over the 133 shapes, min 0.92), a median 1.016 of cuBLAS (scripts/corpus/
// fit_heuristic.py's model copy replays it). At M = 32 and 64 it re-streams B per 16 rows: 0.88 / 0.67 of the best
// variant there, so above kDecodeSwapMaxM it is not a candidate at all.
// From kDecodeWideMinM to kDecodeWideMaxM rows the same rule with the 64x64x128 swap-AB config (64 rows of A along
// WGMMA's N): on the tuning half's sweep at 17 <= M <= 256 (every 3rd row, bf16, H200, 2026-12-04, s19d,
// gemm_sweep_tune_m17_256_every3_h200_20261204_s19d.jsonl.gz) it took the M = 64 rows from 0.881 to 0.968 of the
// best variant (geometric mean, 26 shapes; 0.853 -> 0.969 of cuBLAS, median); at M = 17..32 the model's picks were
// as good (0.914 against 0.907) and at M = 128 it lost (0.79 of the best): not a candidate outside the rule.
constexpr int64_t kDecodeSwapMaxM = 16;
constexpr int64_t kDecodeWideMinM = 33;
constexpr int64_t kDecodeWideMaxM = 64;
constexpr int64_t kDecodeSplitUnitsDiv = 6;
// The decode rule's configs' time term (predict()): each CTA streams its unit's 64 columns of B (64 x K / S
// elements) at kDecodeCtaBytesPerUs after kDecodeFillUs, waves over the resident CTAs, the HBM bound; a split adds
// kDecodeReduceFixedUs and the partials' bytes at HBM speed. The rule decides without it; it is these picks'
// predicted_us, which the fused ops' overlap rule reads (the generic term ran 2.2-3.4x high on them). Fitted with
// scripts/corpus/fit_decode_time.py on the tuning half's sweeps s19c / s19d in the rule's M ranges (357 rows:
// median |error| 9.1%); on the test half's decode-rule picks of s20a (496 rows, never fitted on) the median |error|
// is 10.0% (predicted / measured 0.65-1.36, median 0.96).
constexpr double kDecodeFillUs = 7.0;
constexpr double kDecodeCtaBytesPerUs = 6.0e4;  // 60 GB/s per CTA, both configs
constexpr double kDecodeReduceFixedUs = 4.0;

// Tile order of ping-pong configs: the cooperative configs' orientation (walk the shorter dimension of units
// fastest: column-major when there are at least as many unit columns as rows) in bands of up to 8 units. Until
// 2026-12-07 it was row-major bands of 8 unit rows always, chosen on the 15 suite shapes (H200, 2026-12-01: 0.6%
// from each shape's best); on an H100 (2026-12-07, s22a) that order ran the 128x128 ping-pong config at 0.53-0.58
// of the same config walked column-major on 4096 x 16384 x 26624 and 4096 x 8192 x 29568 (long K, many unit
// columns; SW power cap active). Replayed for the 128x128 ping-pong config on every tuning-half sweep (the orders
// are keys of `--sweep` rows; this rule against the old one, geometric mean of the ratio): H200, M > 2048: s16a
// 1.000, s18c 0.991 (min 0.935); M <= 2048: s13a 1.033, s19a 1.021, s19d 1.019, s19c 1.012, s18c 1.010; H100:
// M > 2048 1.125 (s22a, 11 shapes, max 1.74), M = 128..2048 1.034 (121 shapes).
constexpr int32_t kPingpongSwizzle = 8;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Compiled, forceable (GemmOptions::config, FLUX_GEMM_CONFIG), swept (`flux-bench gemm --sweep`) and tuned
// (`flux-bench tune`), but not a candidate of the heuristic: the FP8 128x112x128 cooperative config. Measured
// (s24a, H100, FP8 sweep of the suite, bench/results/gemm_sweep_suite_e4m3_h100_20261207_s24a.jsonl.gz): the best
// variant on none of the 15 shapes swept, 0.68-0.91 of cuBLASLt FP8 where 128x128x128 ran 0.80-0.98 and 128x144x128
// 0.79-1.00 (why it trails 128x144 is not measured).
// (The FP8 skinny config, 16x64x256_skinny_e4m3, was held back too until its time term was fitted on an FP8 sweep of
// the tuning half: kSkinnyFp8LatencyUs. As a candidate timed by the 16-bit skinny term (same bytes per stage; built
// in session 25 before any FP8 decode measurement) it had been judged once, on the test half's FP8 rows at M <= 64 (every 3rd row, 191 rows, H100,
// s26b, bench/results/gemm_corpus_test_every3_e4m3_m64_{base,skinny}_h100_20261207_s26b.jsonl.gz): on the 111 rows it
// took, 1.051x faster than the 64x128 ping-pong pick (geometric mean; 1.09-4.44x on the 21 where N gives few units
// and it splits K 8-16 ways: 1 x 744 x 63200 4.44x, 4 x 1024 x 7168 1.71x), but down to 0.71x where N fills the GPU
// (16 x 9216 x 7168 unsplit; its 22 picks at M = 16: 0.958x); median of cuBLASLt FP8 at M = 1 0.791 -> 0.847, at
// M = 16 0.852 -> 0.800. Both terms are off: at M <= 16 the model predicted the FP8 64x128 ping-pong config 1.17-3.21x
// slower than it ran (median 2.14x: its per-SM stream rate is the 16-bit fit); the skinny config ran 0.50-2.25x its
// predicted time (median 0.83). Refitting either on those rows would have judged the fit on the rows it saw.)
bool held_back(const GemmConfigInfo& c) { return c.id == static_cast<int>(gemm::ConfigId::k128x112x128CoopC2x1E4m3); }

// The decode rule's two configs (kDecodeSwapMaxM above): picked by the rule only, timed by their own term.
bool is_decode_rule_config(const GemmConfigInfo& c) {
  return c.id == static_cast<int>(gemm::ConfigId::k16x64x128PingpongSwapC1x1) ||
         c.id == static_cast<int>(gemm::ConfigId::k64x64x128PingpongSwapC1x1);
}

int32_t pow2_at_most(int64_t limit, int32_t cap) {
  int32_t s = 1;
  while (s * 2 <= cap && s * 2 <= limit) s *= 2;
  return s;
}

// Work units (one cluster's tiles each) of config c for an M x N output.
int64_t units_of(const GemmConfigInfo& c, int64_t m, int64_t n) {
  return ceil_div(ceil_div(m, c.tile_m), c.cluster_m) * ceil_div(ceil_div(n, c.tile_n), c.cluster_n);
}

struct Prediction {
  double us = 0.0;
  int64_t units = 0, waves = 0, concurrent = 0;
};

// The skinny (decode) configs' item time, a term of their own: no clusters, each CTA streams its item's
// rows of B (tile_n x K / S) with a fixed number of bytes in flight (the pipeline's stages ahead,
// kSkinnyStages - 1 of tile_n x tile_k), so one item takes its bytes / (bytes in flight / latency), after
// a fill of their own; the waves, the HBM bound and split-K's reduction are predict()'s, as for the others.
// Constants fitted on the tune half's decode sweep (scripts/corpus/fit_heuristic.py --grid skinny over
// `flux-bench gemm --corpus tune --corpus-every 4 --corpus-max-m 64 --sweep`, bf16, 141 shapes, H200,
// 2026-12-01, 79aa052: the kernel with two warps per 16 columns splitting K, 1.14x faster than the first
// cp.async version), the 64-row config not a candidate (below): the picked variant at a median 0.970 of
// the best measured per shape (min 0.641), 0.877 of cuBLAS (min 0.566; with session 5's constants 7 / 4
// and both configs candidates, on the same sweep: 0.945, 0.856, min 0.528). The fitted "latency" (6 us per
// pipeline's worth of bytes) is a throughput, not a round trip: the kernel streams below HBM speed on
// large B, so it wins where its lower fixed cost matters (the best variant on 46 of the 141 shapes).
constexpr double kSkinnyLatencyUs = 6.0;
constexpr int32_t kSkinnyCandidateMaxTileM = 16;
constexpr double kSkinnyFillUs = 1.0;
// The FP8 skinny config's (16x64x256_skinny_e4m3) own, with kSmStreamBytesPerUsFp8: fitted on the tuning half's
// FP8 decode sweep (`fit_heuristic.py --grid fp8-decode --admit 20 --low-hbm` over
// bench/results/gemm_sweep_tune_m1_64_every3_e4m3_h100_20261207_s27b.jsonl.gz: M <= 64, every 3rd row, 186 shapes,
// H100, the lagged FP8 kernels; the 16-bit values were 2e4 / 6 / 1) and judged on the test half's
// (gemm_sweep_test_m1_64_every3_e4m3_h100_20261207_s28a.jsonl.gz, 191 shapes never fitted on, `--fix
// sm_bytes8=35000,sk8_lat=8,sk8_fill=8`): geometric mean of best / picked 0.958 -> 0.983, median of cuBLASLt FP8
// 0.874 -> 0.885, min 0.278 -> 0.667. The skinny term alone (kSmStreamBytesPerUsFp8 left at 2e4) scored 0.962: the
// two move together. Fitted on an H100: on the H200 both stream faster than these say.
constexpr double kSkinnyFp8LatencyUs = 8.0;
constexpr double kSkinnyFp8FillUs = 8.0;
// The GEMV config (8x16x512_gemv, src/gemm/kernel/gemv_kernel.cuh) in the same form: each CTA has tile_n rows
// of B x tile_k of K in flight (x 2 at M <= 2, where the kernel unrolls twice as far), streamed straight into
// registers; a candidate at M <= kGemvMaxM. First estimates (2026-12-04): a DRAM round trip under load for the
// latency, the skinny kernels' fill. Not refitted: where swap-AB may run the decode rule takes M = 1, and for plans
// without it (`fit_heuristic.py --grid gemv --no-swap` over s19c's decode sweep) no other value moved the
// geometric mean of best / picked by more than 0.1%.
constexpr double kGemvLatencyUs = 2.0;
constexpr double kGemvFillUs = 1.0;
constexpr int64_t kGemvMaxM = 1;

// large_rate: the device's large-M rate table (kRelativeRate, or kRelativeRateLowHbm: select_gemm_config picks it
// by DeviceLimits::hbm_bytes_per_s).
Prediction predict(const GemmConfigInfo& c, int64_t m, int64_t n, int64_t k, int32_t splits, int64_t concurrent,
                   const double* large_rate, bool stream_k = false) {
  Prediction p;
  p.units = units_of(c, m, n);
  p.concurrent = std::max<int64_t>(concurrent, 1);
  p.waves = ceil_div(p.units * splits, p.concurrent);
  const gemm::StreamKShape sk = gemm::stream_k_shape(p.units, p.concurrent, ceil_div(k, c.tile_k), stream_k);
  const double es = c.fp8 ? 1.0 : 2.0;  // bytes of an element of A and B (C: 2, bf16 / fp16)
  double compute_us = 0.0;
  const bool decode = is_decode_rule_config(c);
  if (decode) {  // the decode rule's configs (kDecodeFillUs above)
    const double item_bytes = double(c.tile_n) * double(k / splits) * es;
    compute_us = kDecodeFillUs + double(p.waves) * item_bytes / kDecodeCtaBytesPerUs;
  } else if (c.gemv) {
    const double in_flight = double(c.tile_n) * c.tile_k * es * (m <= 2 ? 2.0 : 1.0);  // bytes of B per CTA
    const double item_bytes = double(c.tile_n) * double(k / splits) * es;
    compute_us = kGemvFillUs + double(p.waves) * (item_bytes / (in_flight / kGemvLatencyUs));
  } else if (c.skinny) {
    const double in_flight = double(gemm::kSkinnyStages - 1) * c.tile_n * c.tile_k * es;  // bytes of B per CTA
    const double item_bytes = double(c.tile_n) * double(k / splits) * es;
    const double latency_us = c.fp8 ? kSkinnyFp8LatencyUs : kSkinnyLatencyUs;
    const double fill_us = c.fp8 ? kSkinnyFp8FillUs : kSkinnyFillUs;
    compute_us = fill_us + double(p.waves) * (item_bytes / (in_flight / latency_us));
  } else {
    const double ksteps = double(ceil_div(k / splits, c.tile_k));
    const double rate = m <= kMidMaxM ? kRelativeRateMid[c.id] : large_rate[c.id];
    const double mma_us = 2.0 * c.tile_m * c.tile_n * c.tile_k / (kSmFlopsPerUs * rate);
    const double rows = double(std::min<int64_t>(m, c.tile_m));
    const double stream_bytes_per_us = c.fp8 ? kSmStreamBytesPerUsFp8 : kSmStreamBytesPerUs;
    const double sm_bytes_per_us = m <= kStreamMaxM ? stream_bytes_per_us : kSmL2BytesPerUs;
    const double load_us = (rows + c.tile_n) * c.tile_k * es / sm_bytes_per_us;
    const double kstep_us = std::max(mma_us, load_us);
    const double epilogue_us = c.pingpong ? 0.0 : kCoopEpilogueUs;
    if (sk.active()) {
      // Stream-K: every worker runs dp_units / workers whole units and 1 / workers of the stream-K region's
      // k-tiles (+ its pieces' epilogues), then the fixup: one tile of partials stored, and the final piece's
      // reads of the later pieces (at most ceil(workers / sk_units) of them) after a flag round trip.
      const double whole = double(sk.dp_units / sk.workers);
      const double iters = whole * double(sk.k_tiles) +
                           kStreamKIterCost * std::ceil(double(sk.iterations()) / double(sk.sk_workers));
      const double pieces = double(ceil_div(sk.sk_units, sk.sk_workers)) + 1.0;
      const double peers = double(ceil_div(sk.sk_workers, sk.sk_units));
      const double tile_bytes = double(c.tile_m) * c.tile_n * 4.0;
      const double fixup_us = kFixupFlagUs + (1.0 + peers) * tile_bytes / kSmFixupBytesPerUs;
      compute_us = kFillUs + iters * kstep_us + (whole + pieces) * epilogue_us + fixup_us;
    } else {
      compute_us = kFillUs + double(p.waves) * (ksteps * kstep_us + epilogue_us);
    }
  }
  double bytes = (double(m) * k + double(n) * k) * es + double(m) * n * 2.0;
  if (splits > 1) bytes += double(splits) * m * n * 4.0;  // partials written
  p.us = std::max(compute_us, bytes / kHbmBytesPerUs);
  if (splits > 1) {
    p.us += (decode ? kDecodeReduceFixedUs : kReduceFixedUs) +
            (double(splits) * m * n * 4.0 + double(m) * n * 2.0) / kHbmBytesPerUs;
  }
  return p;
}

}  // namespace

bool split_k_divides(int64_t k, int32_t splits, DType dtype) {
  const int64_t vec = dtype == DType::kE4M3 ? 16 : 8;  // elements per 16 bytes
  return splits >= 1 && k % splits == 0 && (k / splits) % vec == 0;
}

bool split_k_within_waves(const GemmConfigInfo& c, int64_t m, int64_t n, int32_t splits, int64_t concurrent) {
  return units_of(c, m, n) * splits <= 2 * concurrent;
}

int64_t split_k_max_clusters(const GemmConfigInfo& c, int32_t sm_count) {
  return int64_t(sm_count) / (c.cluster_m * c.cluster_n) * (c.skinny ? gemm::kSkinnyMaxCtasPerSm : 1);
}

StreamKNeeds stream_k_needs(const GemmSelection& sel, int64_t m, int64_t n, int64_t k, int64_t workers) {
  StreamKNeeds needs;
  if (!sel.stream_k) return needs;
  const GemmConfigInfo& c = sel.config;
  const gemm::StreamKShape sk = gemm::stream_k_shape(units_of(c, m, n), workers, ceil_div(k, c.tile_k), true);
  if (!sk.active()) return needs;
  const int64_t ctas = sk.workers * c.cluster_m * c.cluster_n;
  needs.workers = sk.workers;
  needs.bytes = ctas * c.tile_m * c.tile_n * 4;
  needs.flags = ctas * 2;  // two math warp groups per CTA (the cooperative kernel)
  return needs;
}

int64_t split_k_workspace_bound(const DeviceLimits& limits) {
  int64_t bound = 0;
  for (const GemmConfigInfo& c : gemm_configs()) {
    // Stream-K: one fp32 tile per CTA of a full grid.
    if (c.stream_k) bound = std::max<int64_t>(bound, int64_t(limits.sm_count) * c.tile_m * c.tile_n * 4);
    // At most two waves of items: splits x units <= 2 x sm_count / cluster size (x kSkinnyMaxCtasPerSm for
    // the skinny configs, one-CTA items), and each unit covers cluster_m x cluster_n tiles of tile_m x
    // tile_n fp32 elements per slice.
    const int64_t per_sm = c.skinny ? gemm::kSkinnyMaxCtasPerSm : 1;
    if (c.split_k) bound = std::max<int64_t>(bound, int64_t(2) * limits.sm_count * per_sm * c.tile_m * c.tile_n * 4);
  }
  return bound;
}

GemmSelection select_gemm_config(int64_t m, int64_t n, int64_t k, const DeviceLimits& limits,
                                 const std::vector<int>& max_active_clusters, int32_t split_k, bool allow_swap_ab,
                                 DType dtype, StreamKMode stream_k) {
  FLUX_CHECK_ARG(stream_k == StreamKMode::kAuto || stream_k == StreamKMode::kOff || stream_k == StreamKMode::kOn,
                 "flux gemm: select_gemm_config stream_k mode ", static_cast<int>(stream_k),
                 " (expected kAuto, kOff or kOn)");
  FLUX_CHECK_ARG(m >= 1 && n >= 1 && k >= 1, "flux gemm: select_gemm_config needs m, n, k >= 1 (got m=", m,
                 " n=", n, " k=", k, ")");
  FLUX_CHECK_ARG(limits.sm_count > 0, "flux gemm: device limits have sm_count ", limits.sm_count,
                 " (expected the device's multiprocessor count)");
  FLUX_CHECK_ARG(split_k >= 0 && split_k <= kMaxSplitK, "flux gemm: split_k ", split_k, " (expected 0 = auto, 1 = off, or 2..",
                 kMaxSplitK, ")");
  FLUX_CHECK_ARG(split_k <= 1 || split_k_divides(k, split_k, dtype), "flux gemm: split_k ", split_k,
                 " does not divide K = ", k, " into slices of a multiple of 16 bytes (expected S with K % S == 0 and "
                 "(K / S) a multiple of ", dtype == DType::kE4M3 ? 16 : 8, ")");
  const auto& configs = gemm_configs();
  int best = -1;
  int32_t best_splits = 1;
  bool best_sk = false;
  Prediction best_p;
  double best_unsplit_us = 0.0;
  const bool fp8 = dtype == DType::kE4M3;
  const bool low_hbm = limits.hbm_bytes_per_s > 0 && double(limits.hbm_bytes_per_s) < kLowHbmBytesPerS;
  const double* large_rate = low_hbm ? kRelativeRateLowHbm : kRelativeRate;
  // A config without a kernel for the plan's dtype / layout (max_active_clusters < 0) is never a candidate.
  auto has_kernel = [&](const GemmConfigInfo& c) {
    return static_cast<size_t>(c.id) >= max_active_clusters.size() || max_active_clusters[c.id] >= 0;
  };
  // Clusters of config c resident at once: the plan's measurement where it has one, else the device's upper bound.
  auto concurrent_of = [&](const GemmConfigInfo& c) {
    const bool known = static_cast<size_t>(c.id) < max_active_clusters.size();
    return known && max_active_clusters[c.id] > 0 ? int64_t(max_active_clusters[c.id])
                                                  : split_k_max_clusters(c, limits.sm_count);
  };
  // Swap-AB: the weight's N along WGMMA's M (64-row groups), A's rows along its N; a candidate up to kSwapAbMaxM
  // (fitted), for plans that allow it (GemmOptions::allow_swap_ab; the extension points run on it in C's terms).
  const bool swap_ab_allowed = allow_swap_ab && m <= kSwapAbMaxM;
  bool swap_ab_candidate = false;
  for (const GemmConfigInfo& c : configs) {
    swap_ab_candidate = swap_ab_candidate || (c.swap_ab && c.fp8 == fp8 && swap_ab_allowed && has_kernel(c));
  }
  for (const GemmConfigInfo& c : configs) {
    if (c.fp8 != fp8) continue;  // compiled for the other input types
    // At decode M the 128x128 ping-pong config yields to the swap-AB one where that is a candidate: the time model
    // rates them alike there (the same bytes of B per column), but on the tuning half's decode sweeps (M <= 64,
    // 2026-12-03 s13c and 2026-12-01, 141 shapes each) every shape the model gave 128x128 ping-pong ran faster
    // on swap-AB 64x128: unsplit 1.28-1.34x (17 shapes each, min 1.11x), split 1.10x (6 shapes, min 1.07x);
    // geometric mean of best / picked over the decode shapes 0.925 -> 0.962 (s13c), 0.929 -> 0.961 (12-01).
    // Without swap-AB (plans built with allow_swap_ab = false) it stays a candidate: the next choice there,
    // 256x128, ran 0.6x of it on the same shapes.
    if (c.id == static_cast<int>(gemm::ConfigId::k128x128x64PingpongC1x2) && m <= kSquarePingpongYieldMaxM &&
        swap_ab_candidate) {
      continue;
    }
    if (c.swap_ab && !swap_ab_allowed) continue;
    if (is_decode_rule_config(c)) continue;  // the decode rule's, below
    if (held_back(c)) continue;              // not yet measured (held_back above)
    // The skinny configs are for M within one of their tiles (their purpose: decode; taller M re-streams B
    // once per 16 or 64 rows).
    if (c.skinny && m > c.tile_m) continue;
    // The 64-row skinny config is not a candidate: on the tune half's decode sweep (141 shapes, M 1..64,
    // 79aa052) it was the best variant on none, at a median 0.47-0.72 of the best per M (each warp's chain
    // of shared-memory loads and MMAs is 4x the 16-row config's: 8 n8 tiles per K chunk), and picking it
    // cost up to 1.6x on the test half. Forcing it (FLUX_GEMM_CONFIG / GemmOptions::config) still works.
    if (c.skinny && c.tile_m > kSkinnyCandidateMaxTileM) continue;
    // The GEMV config at M <= kGemvMaxM only: above it its FMAs fall behind the stream of B
    // (src/gemm/kernel/gemv_kernel.cuh).
    if (c.gemv && m > kGemvMaxM) continue;
    if (!has_kernel(c)) continue;
    const int64_t concurrent = concurrent_of(c);
    std::vector<int32_t> candidates;
    if (split_k > 1) {
      if (c.split_k) candidates.push_back(split_k);
    } else {
      candidates.push_back(1);
      if (split_k == 0 && c.split_k) {
        for (int32_t s = 2; s <= kMaxSplitK; ++s) {
          if (!split_k_candidate(k, s, dtype)) continue;
          if (!split_k_within_waves(c, m, n, s, concurrent)) break;  // the workspace bound (split_k_workspace_bound)
          candidates.push_back(s);
        }
      }
    }
    for (int32_t s : candidates) {
      Prediction p = predict(c, m, n, k, s, concurrent, large_rate);
      // Stream-K fixes the last wave's idle SMs, not padded tiles: only where a unit's rows are all real
      // (M >= tile_m x cluster_m). Below that the cooperative tiles compute padding rows (the MMA runs on the
      // whole tile), which the load-bound terms of the model at small M do not see: on the test half's first
      // run (2026-12-03, bf16, M >= 128, every 4th row) the model sent M = 128 to 256x128 stream-K and those
      // 39 rows ran 1.73x slower than the whole-tile ping-pong choice (bench/results/
      // gemm_corpus_test_m128_every4_sk_*_h200_20261203_s11.jsonl). kOn still forces it there.
      const bool rows_full = m >= int64_t(c.tile_m) * c.cluster_m;
      const bool sk_possible =
          s == 1 && c.stream_k && stream_k != StreamKMode::kOff && (rows_full || stream_k == StreamKMode::kOn) &&
          gemm::stream_k_shape(p.units, p.concurrent, ceil_div(k, c.tile_k), true).active();
      if (sk_possible) {
        // Stream-K of this config against the same config whole-tile; kOn takes it whenever it applies.
        Prediction q = predict(c, m, n, k, 1, concurrent, large_rate, true);
        if (stream_k == StreamKMode::kOn || q.us < p.us * (1.0 - kStreamKMinGain)) {
          if (best < 0 || q.us < best_p.us * (1.0 - 1e-9)) {
            best = c.id;
            best_splits = 1;
            best_sk = true;
            best_p = q;
          }
          if (stream_k == StreamKMode::kOn) continue;
        }
      }
      if (s == 1 && (best < 0 || p.us < best_unsplit_us)) best_unsplit_us = p.us;
      const double bar = s > 1 ? 1.0 - kSplitMinGain : 1.0 - 1e-9;
      if (best < 0 || p.us < best_p.us * bar) {
        best = c.id;
        best_splits = s;
        best_sk = false;
        best_p = p;
      }
    }
  }
  // The decode rule (kDecodeSwapMaxM above): it replaces the model's pick.
  bool decode_rule = false;
  const bool wide = m >= kDecodeWideMinM && m <= kDecodeWideMaxM;
  const GemmConfigInfo& decode = configs[static_cast<int>(wide ? gemm::ConfigId::k64x64x128PingpongSwapC1x1
                                                               : gemm::ConfigId::k16x64x128PingpongSwapC1x1)];
  if ((m <= kDecodeSwapMaxM || wide) && swap_ab_allowed && !fp8 && has_kernel(decode) &&
      stream_k != StreamKMode::kOn) {
    const int64_t concurrent = concurrent_of(decode);
    const int64_t units = units_of(decode, m, n);
    int32_t s = split_k > 1 ? split_k : 1;
    if (split_k == 0 && units * kDecodeSplitUnitsDiv < limits.sm_count) {
      for (int32_t t = 2; t <= kMaxSplitK; ++t) {
        if (split_k_candidate(k, t) && units * t * 4 <= int64_t(limits.sm_count) * 3 &&
            split_k_within_waves(decode, m, n, t, concurrent)) {
          s = t;
        }
      }
    }
    best = decode.id;
    best_splits = s;
    best_sk = false;
    best_p = predict(decode, m, n, k, s, concurrent, large_rate);
    decode_rule = true;
  }
  FLUX_CHECK_ARG(best >= 0, "flux gemm: split_k ", split_k, " forced, but no config can split K (configs with split_k: ",
                 "see gemm_configs())");
  const GemmConfigInfo& c = configs[best];
  GemmSelection sel;
  sel.config = c;
  sel.splits = best_splits;
  sel.stream_k = best_sk;
  sel.predicted_us = best_p.us;
  sel.tiles_m = ceil_div(m, c.tile_m);
  sel.tiles_n = ceil_div(n, c.tile_n);
  int64_t units_m = ceil_div(sel.tiles_m, c.cluster_m), units_n = ceil_div(sel.tiles_n, c.cluster_n);
  if (c.skinny) {
    // Few tile rows (usually one): plain row-major, every CTA on its own columns of B.
    sel.raster = Raster::kRowMajor;
    sel.swizzle = 1;
  } else if (c.swap_ab) {
    // Bands of the kernel's M (C's unit columns), as ping-pong: the kernel's row-major order is C's column-major.
    sel.raster = Raster::kColMajor;
    sel.swizzle = pow2_at_most(units_n, kPingpongSwizzle);
  } else {
    // Walk the shorter dimension fastest (M fastest when there are more unit columns than rows: A's rows stay
    // hot in L2 while B streams through). Cooperative: in bands of about sqrt(concurrent clusters) lines so the
    // clusters in flight cover a near-square block of C; ping-pong: bands of up to kPingpongSwizzle lines.
    sel.raster = units_n >= units_m ? Raster::kColMajor : Raster::kRowMajor;
    const int64_t minor = sel.raster == Raster::kColMajor ? units_n : units_m;
    int32_t swizzle = 1;
    if (c.pingpong) {
      swizzle = pow2_at_most(minor, kPingpongSwizzle);
    } else {
      while (swizzle * 2 <= 8 && int64_t(swizzle) * 2 * swizzle * 2 <= best_p.concurrent && swizzle * 2 <= minor) {
        swizzle *= 2;
      }
    }
    sel.swizzle = swizzle;
  }
  sel.reason = detail::cat("heuristic: ", c.name, best_splits > 1 ? detail::cat(" split-K ", best_splits) : std::string(),
                           best_sk ? " stream-K" : "",
                           decode_rule ? detail::cat(" by the decode rule (M <= ", kDecodeSwapMaxM, " or ",
                                                     kDecodeWideMinM, " <= M <= ", kDecodeWideMaxM, "; model time ")
                                       : std::string(" predicted fastest ("),
                           best_p.us, " us; time model in gemm_config.cpp): ", best_p.units,
                           " units", best_splits > 1 ? detail::cat(" x ", best_splits, " slices") : std::string(), " in ",
                           best_p.waves, " waves of ", best_p.concurrent, " clusters; raster ",
                           sel.raster == Raster::kColMajor ? "col" : "row", " (", units_m, "x", units_n,
                           " units), swizzle ", sel.swizzle,
                           best_splits > 1 ? detail::cat("; unsplit best ", best_unsplit_us, " us") : std::string(),
                           m > kMidMaxM && low_hbm ? "; large-M rates for HBM below 4 TB/s" : "");
  return sel;
}

}  // namespace flux
