#!/usr/bin/env python3
"""Write the constants fitted by `fit_heuristic.py --grid rates|rates-large|skinny|gemv --emit FIT.json` into
src/gemm/gemm_config.cpp.

The constants of the M <= kMidMaxM regime: kRelativeRateMid (keys "rate<id>": entries of the configs fitted; the
others kept), kSwapAbMaxM, kReduceFixedUs, kFillUs, kCoopEpilogueUs, kStreamMaxM; of the M > kMidMaxM regime:
kRelativeRate (keys "lrate<id>"); of the skinny configs (--grid skinny): kSkinnyLatencyUs, kSkinnyFillUs; of the
GEMV config (--grid gemv): kGemvLatencyUs, kGemvFillUs. Each
must appear exactly once (a changed layout of gemm_config.cpp is an error, not a silent no-op). Prints what changed.

usage: apply_fit.py FIT.json [--file src/gemm/gemm_config.cpp]
"""
import argparse
import json
import re
import sys


def replace_once(text, pattern, repl, what):
    new, n = re.subn(pattern, repl, text, flags=re.S)
    if n != 1:
        sys.exit(f"apply_fit: {what}: expected one match of {pattern!r}, found {n}")
    return new


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fit")
    ap.add_argument("--file", default="src/gemm/gemm_config.cpp")
    a = ap.parse_args()
    fit = json.load(open(a.fit))
    text = open(a.file).read()
    for table, prefix in (("kRelativeRateMid", "rate"), ("kRelativeRate", "lrate")):
        keys = {k: v for k, v in fit.items() if re.fullmatch(prefix + r"[0-9]+", k)}
        if not keys:
            continue
        pattern = rf"constexpr double {table}\[gemm::kNumConfigs\] = \{{([^}}]*)\}};"
        found = list(re.finditer(pattern, text))
        if len(found) != 1:
            sys.exit(f"apply_fit: {table}: expected one match of {pattern!r}, found {len(found)}")
        m = found[0]
        rates = [float(x) for x in m.group(1).replace("\n", " ").split(",")]
        for key, value in keys.items():
            rates[int(key[len(prefix):])] = float(value)
        head = f"constexpr double {table}[gemm::kNumConfigs] = {{"
        cells = [f"{r:.2f}" for r in rates]
        lines = [", ".join(cells[i:i + 7]) for i in range(0, len(cells), 7)]  # 7 per line: within 120 columns
        body = (",\n" + " " * len(head)).join(lines)
        text = text[: m.start()] + head + body + "};" + text[m.end():]
    scalars = {"swap_max_m": ("kSwapAbMaxM", "int64_t", lambda v: str(int(v))),
               "reduce_fixed": ("kReduceFixedUs", "double", lambda v: f"{float(v):.1f}"),
               "fill": ("kFillUs", "double", lambda v: f"{float(v):.1f}"),
               "coop_epi": ("kCoopEpilogueUs", "double", lambda v: f"{float(v):.1f}"),
               "stream_max_m": ("kStreamMaxM", "int64_t", lambda v: str(int(v))),
               "sk_lat": ("kSkinnyLatencyUs", "double", lambda v: f"{float(v):.1f}"),
               "sk_fill": ("kSkinnyFillUs", "double", lambda v: f"{float(v):.1f}"),
               "gv_lat": ("kGemvLatencyUs", "double", lambda v: f"{float(v):.1f}"),
               "gv_fill": ("kGemvFillUs", "double", lambda v: f"{float(v):.1f}")}
    for key, (name, ctype, fmt) in scalars.items():
        if key in fit:
            text = replace_once(text, rf"constexpr {ctype} {name} = [0-9.e+]+;", f"constexpr {ctype} {name} = {fmt(fit[key])};",
                                name)
    open(a.file, "w").write(text)
    print("apply_fit:", json.dumps(fit))


if __name__ == "__main__":
    main()
