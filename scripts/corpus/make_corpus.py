#!/usr/bin/env python3
"""scripts/corpus/make_corpus.py — the GEMM shape corpus (issue 9): per-rank GEMMs of public LLMs + random shapes.

Writes bench/corpus/gemm_corpus.csv (committed; regenerate with `python3 scripts/corpus/make_corpus.py`; the
output is deterministic). Every row is one per-rank GEMM C [M, N] = A [M, K] B^T with B as [N, K] (nn.Linear):

  column-parallel layers (QKV, MLP up+gate, MoE expert up+gate): N = out / tp, K = hidden;
  row-parallel layers (attention out, MLP down, MoE expert down):  N = hidden,  K = in / tp;

for tp in {1, 2, 4, 8} and M (tokens per rank) in {1, 2, 4, ..., 16384}, plus 48 random shapes (N, K multiples
of 8, log-uniform, seeded). Shapes whose N or K is not a multiple of 8 at some tp are left out (TMA needs
16-byte rows). Duplicate (M, N, K) keep their first name.

The split into a tuning half and a test half is a fixed rule on the weight shape, so that every M of one
weight lands in the same half and the test half holds only weights the tuning never saw:
  half = "tune" if sha256(f"{N}x{K}")[0] is even else "test".
Everything that learns from measurements (heuristic constants, the default tuning cache) may read the tune
half only; results are reported per half. tests/tools/test_corpus.cpp checks the file against this rule.

Model dimensions are from the models' public configuration files (config.json on their model cards):
hidden_size, intermediate_size (moe_intermediate_size for experts), num_attention_heads,
num_key_value_heads, head_dim.
"""
import csv
import hashlib
import math
import os
import random

# name, family, hidden, intermediate, heads, kv_heads, head_dim, expert_intermediate (0: dense)
MODELS = [
    ("llama3.2-1b", "llama3", 2048, 8192, 32, 8, 64, 0),
    ("llama3-8b", "llama3", 4096, 14336, 32, 8, 128, 0),
    ("llama3-70b", "llama3", 8192, 28672, 64, 8, 128, 0),
    ("llama3.1-405b", "llama3", 16384, 53248, 128, 8, 128, 0),
    ("qwen2.5-72b", "qwen2.5", 8192, 29568, 64, 8, 128, 0),
    ("qwen2.5-7b", "qwen2.5", 3584, 18944, 28, 4, 128, 0),
    ("gemma2-27b", "gemma2", 4608, 36864, 32, 16, 128, 0),
    ("mixtral-8x22b", "mixtral", 6144, 0, 48, 8, 128, 16384),
    ("phi3-medium", "phi3", 5120, 17920, 40, 10, 128, 0),
    ("deepseek-v3", "deepseek-v3", 7168, 18432, 128, 128, 128, 2048),
    ("gpt3-175b", "gpt3", 12288, 49152, 96, 96, 128, 0),
]
TPS = [1, 2, 4, 8]
MS = [1 << i for i in range(15)]  # 1 .. 16384
RANDOM_SHAPES = 48
SEED = 20261201


def half_of(n, k):
    return "tune" if hashlib.sha256(f"{n}x{k}".encode()).digest()[0] % 2 == 0 else "test"


def layer_shapes(model):
    name, family, hidden, inter, heads, kv, hd, expert = model
    out = []
    for tp in TPS:
        qkv = (heads + 2 * kv) * hd
        layers = [("qkv", "col", qkv // tp if qkv % tp == 0 else 0, hidden),
                  ("attn_out", "row", hidden, (heads * hd) // tp if (heads * hd) % tp == 0 else 0)]
        if inter:
            layers += [("mlp_up_gate", "col", 2 * inter // tp if (2 * inter) % tp == 0 else 0, hidden),
                       ("mlp_down", "row", hidden, inter // tp if inter % tp == 0 else 0)]
        if expert:
            layers += [("expert_up_gate", "col", 2 * expert // tp if (2 * expert) % tp == 0 else 0, hidden),
                       ("expert_down", "row", hidden, expert // tp if expert % tp == 0 else 0)]
        for layer, parallel, n, k in layers:
            if n <= 0 or k <= 0 or n % 8 or k % 8:
                continue
            out.append((f"{name}/{layer}", family, layer, parallel, tp, n, k))
    return out


def main():
    rows, seen = [], set()
    for model in MODELS:
        for label, family, layer, parallel, tp, n, k in layer_shapes(model):
            for m in MS:
                if (m, n, k) in seen:
                    continue
                seen.add((m, n, k))
                rows.append((label, family, layer, parallel, tp, m, n, k, half_of(n, k)))
    rng = random.Random(SEED)
    added = 0
    while added < RANDOM_SHAPES:
        n = 8 * int(math.exp(rng.uniform(math.log(32), math.log(8192))))
        k = 8 * int(math.exp(rng.uniform(math.log(32), math.log(8192))))
        m = int(math.exp(rng.uniform(0, math.log(16384))))
        if (m, n, k) in seen:
            continue
        seen.add((m, n, k))
        rows.append((f"random/{added}", "random", "random", "none", 0, m, n, k, half_of(n, k)))
        added += 1
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "bench", "corpus", "gemm_corpus.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["name", "family", "layer", "parallel", "tp", "m", "n", "k", "half"])
        w.writerows(rows)
    tune = sum(1 for r in rows if r[-1] == "tune")
    print(f"{os.path.normpath(path)}: {len(rows)} shapes ({tune} tune, {len(rows) - tune} test), "
          f"{len({r[1] for r in rows} - {'random'})} model families + random")


if __name__ == "__main__":
    main()
