#!/usr/bin/env python3
"""PyTorch on docs/design.md §8's workloads and shapes in f16 on the GPU, and on Mirage issue #658's
rms_norm(2, 4096) @ W(4096, 6144), for the table scripts/bench_gpu.sh prints beside prism's: eager
called from Python, eager replayed from a CUDA graph (its kernels' time without Python's
dispatch), torch.compile, and torch.compile(mode="max-autotune-no-cudagraphs"). Timed as prism
times its kernels: CUDA events around one call, the L2 overwritten before each (a layer's weights
come from HBM), median of 50 after warm-up. Arguments: workload names to restrict to (as
prism_bench_tune_gpu takes them); --no-max-autotune skips that column (its compiles take minutes)."""
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
    yield "rms_proj", "d=4096 n=2 o=6144", rms_linear, (r(2, 4096), r(4096, 6144))


_flush = None


def time_ms(fn, args, runs=50, warmup=10):
    global _flush
    if _flush is None:  # twice the L2, as prism's CudaDevice::flush_l2
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
        _flush = torch.empty(max(2 * l2, 64 << 20), dtype=torch.int8, device=DEV)
    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _flush.zero_()
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def graph_ms(fn, args):
    """The eager ops captured in a CUDA graph and replayed: their GPU time without Python's
    dispatch, the fair comparison for prism's kernels."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(*args)
    return time_ms(graph.replay, ())


def main():
    if not torch.cuda.is_available():
        print("no CUDA device: torch.cuda.is_available() is False")
        return 0
    only = set(a for a in sys.argv[1:] if not a.startswith("--") and not a.isdigit())
    modes = [None] if "--no-max-autotune" in sys.argv else [None, "max-autotune-no-cudagraphs"]
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| workload | shape | torch eager ms | eager in a CUDA graph ms | torch.compile ms |" + (" max-autotune ms |" if len(modes) > 1 else ""))
    print("|---|---|---|---|---|" + ("---|" if len(modes) > 1 else ""))
    for w, shape, fn, args in cases():
        if only and w not in only:
            continue
        cells = [f"{time_ms(fn, args):.4f}"]
        try:
            cells.append(f"{graph_ms(fn, args):.4f}")
        except Exception as e:  # capture needs static shapes and no host syncs; say why not
            cells.append(f"failed: {type(e).__name__}")
        for mode in modes:
            torch._dynamo.reset()  # each mode compiles afresh
            try:
                cells.append(f"{time_ms(torch.compile(fn, mode=mode), args):.4f}")
            except Exception as e:  # torch.compile needs a working Triton; say why not
                cells.append(f"failed: {type(e).__name__}")
        print(f"| {w} | {shape} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
