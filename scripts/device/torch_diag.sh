#!/usr/bin/env bash
# scripts/device/torch_diag.sh OUT — diagnosis of a flux_torch crash on the GPU machine (no gdb there).
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-build-isolation --no-deps --target build/py/site . > "$out/pip.log" 2>&1
echo "pip rc=$? in $(( $(date +%s) - t0 )) s"; tail -5 "$out/pip.log"
export PYTHONPATH=$PWD/build/py/site
gcc -shared -fPIC -o /tmp/segv.so scripts/device/segv_backtrace.c
g++ -std=c++17 scripts/device/diag_gemm.cpp -Iinclude -I/usr/local/cuda/include -Lbuild/py -lflux \
  -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,$PWD/build/py -o /tmp/diag_gemm && LD_PRELOAD=/tmp/segv.so /tmp/diag_gemm 2>&1 | c++filt | tail -30
echo "--- python diag"
rm -f /tmp/diagstore
LD_PRELOAD=/tmp/segv.so python3 scripts/device/diag_torch.py 2>&1 | c++filt | tail -45 | cut -c1-300
echo "--- ldd"
ldd build/py/site/flux_torch/_C*.so | grep -v "^\s*lib\(m\|c\|dl\|rt\|pthread\|gcc_s\)\.so" | head -20
echo "--- cpu tests"
python3 -m pytest -x -q -p no:faulthandler tests/python/test_flux_torch_cpu.py 2>&1 | tail -15
