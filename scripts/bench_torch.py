#!/usr/bin/env python3
"""PyTorch eager and torch.compile on docs/design.md §8's workloads and shapes in f16 on the GPU, timed
with CUDA events (median of 50 after warm-up), for the table scripts/bench_gpu.sh prints beside
prism's. Arguments: workload names to restrict to (as prism_bench_tune_gpu takes them)."""
import statistics
import sys

import torch

DEV = "cuda"
DT = torch.float16


# The programs of examples/*.prism, op for op, at f16 storage (as PyTorch's eager mode runs them).
def rms_norm(x):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True))


def rms_linear(X, W):
    return rms_norm(X) @ W


def rmsnorm_mlp(X, Wu, Wg):
    Y = rms_norm(X)
    return (Y @ Wu) * (Y @ Wg)


def gated_mlp(X, Wg, Wu):
    return torch.nn.functional.silu(X @ Wg) * (X @ Wu)


def attention(Q, Kt, V):
    S = torch.exp(Q @ Kt)
    return (S / S.sum(-1, keepdim=True)) @ V


def qk_norm_attention(Q, Kt, V):
    return attention(rms_norm(Q), Kt, V)


def lora(X, W, A, B):
    return X @ W + (X @ A) @ B


gqa = attention  # Q [h, g, e], Kt [h, e, s], V [h, s, e]


def r(*shape):
    return torch.randn(*shape, device=DEV, dtype=DT) * 0.1


def cases():
    for w, fn in (("rms_linear", rms_linear), ("rmsnorm_mlp", rmsnorm_mlp), ("gated_mlp", gated_mlp)):
        for n, d in ((8, 1024), (8, 2048), (8, 4096), (16, 1024), (16, 4096)):
            weights = 1 if w == "rms_linear" else 2
            yield w, f"d={d} n={n}", fn, (r(n, d),) + tuple(r(d, d) for _ in range(weights))
    for w, fn in (("attention", attention), ("qk_norm_attention", qk_norm_attention)):
        for b, q in ((16, 1), (16, 128), (64, 1), (32, 1)):
            yield w, f"B={b} e=128 q={q} s=1024", fn, (r(b, q, 128), r(b, 128, 1024), r(b, 1024, 128))
    yield "lora", "d=256 n=16 o=4096 r=16", lora, (r(16, 256), r(256, 4096), r(256, 16), r(16, 4096))
    yield "gqa", "e=64 g=256 h=2 s=4096", gqa, (r(2, 256, 64), r(2, 64, 4096), r(2, 4096, 64))


def time_ms(fn, args, runs=50, warmup=10):
    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    if not torch.cuda.is_available():
        print("no CUDA device: torch.cuda.is_available() is False")
        return 0
    only = set(a for a in sys.argv[1:] if not a.startswith("--") and not a.isdigit())
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| workload | shape | torch eager ms | torch.compile ms |")
    print("|---|---|---|---|")
    for w, shape, fn, args in cases():
        if only and w not in only:
            continue
        eager = time_ms(fn, args)
        try:
            compiled = time_ms(torch.compile(fn), args)
            compiled_text = f"{compiled:.4f}"
        except Exception as e:  # torch.compile needs a working Triton; say why not
            compiled_text = f"failed: {type(e).__name__}"
        print(f"| {w} | {shape} | {eager:.4f} | {compiled_text} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
