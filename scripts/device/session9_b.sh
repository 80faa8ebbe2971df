#!/usr/bin/env bash
# scripts/device/session9_b.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with tests
# and flux_torch linked to its libflux.so; every fused-op GPU job (the path rule is now the overlap model's, so
# `auto` takes other paths than before); flux_torch's pytest suite; flux-bench model (the 18 suite shapes, rates
# measured here, with the rule's pick beside); the CPU tests too.
source scripts/device/build_tree.sh "$1" pip
step cpu.log 120 build/tests/flux_cpu_tests
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/cpu.log" | tail -8
step ops.log 330 flux_gpu_tests --gtest_filter='Jobs/*:GemmRsGpuFaults.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/ops.log" | tail -8
wait_pip torch.log
step torch.log 200 python3 -m pytest -q -rs tests/python
step model.log 120 flux-bench model --json "$out/model.jsonl"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
