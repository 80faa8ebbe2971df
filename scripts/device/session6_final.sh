#!/usr/bin/env bash
# scripts/device/session6_final.sh OUT — one device call (carry build/_deps/cutlass and .devdeps): the C++ tree
# with tests and flux_torch (pip) built side by side; the GEMM core / split-K / skinny GPU tests; the corpus
# test half (every third row, bf16 + fp16: issue 9's figure, with the skinny model refitted on the tune
# half); flux_torch's tests (CPU + W = 1, 2, 4 under MPS).
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON
T0=$(date +%s)
site="$PWD/build/py/site"
( env PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-build-isolation --no-deps --target "$site" . \
    > /tmp/pip.log 2>&1; echo "pip rc=$? at $(( $(date +%s) - T0 )) s" >> /tmp/pip.log ) &
pip_pid=$!
./scripts/build.sh > "$out/build.log" 2>&1
echo "build rc=$? at $(( $(date +%s) - T0 )) s"; grep -E " error" "$out/build.log" | head -5
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
step tests.log 100 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -4
step corpus_test.log 200 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/corpus_test.jsonl"
grep -E "over" "$out/corpus_test.log" | tail -5
echo "at $(( $(date +%s) - T0 )) s; waiting for pip"
wait $pip_pid; tail -2 /tmp/pip.log | tee -a "$out/torch.log"
export PYTHONPATH="$site"
step torch.log 150 python3 -m pytest -q -rs tests/python
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
