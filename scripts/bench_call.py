#!/usr/bin/env python3
"""What a call of a prism.compile'd layer costs in the caller's process (issue 64, 1): an RMSNorm
and a bias-free projection, as Llama writes them, compiled with the token count as a dim and tuned
at n rows. Timed in interleaved rounds, each call timed alone and a round's time the median of
its calls, as prism-runner times a kernel (torch.no_grad; the median of the rounds):

  call      the Compiled callable: argument lookup, the shape check, outputs, the kernel;
  kernel    Kernel.run on the same tensors: the ctypes call into the library, the kernel;
  overhead  call - kernel: what the Python side adds;
  tuned     the tune's time for the same kernel in prism-runner (its table's best).

Arguments: width:rows pairs (default 64:1 1024:8).

  PYTHONPATH=python ~/.cache/prism/venv/bin/python scripts/bench_call.py 64:1 1024:8
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import prism  # noqa: E402


class RmsLinear(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(d) * 0.1 + 1)
        self.proj = torch.nn.Linear(d, d, bias=False)

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.proj(self.weight * (x * torch.rsqrt(variance + 1e-6)))


def per_call_us(fn, seconds=0.2):
    """The median time of one call, over calls for about `seconds`."""
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 3:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main(pairs):
    torch.manual_seed(0)
    print(f"{'d':>5} {'n':>3} {'call us':>8} {'kernel us':>9} {'overhead us':>11} {'tuned us':>8} {'kernel/tuned':>12}")
    for d, n in pairs:
        layer = RmsLinear(d).eval()
        x = torch.randn(n, d)
        with torch.no_grad():
            compiled = prism.compile(layer, x, dims={"x": {0: "n"}})
            compiled(x)
            (kernel,) = compiled.kernels.values()
            tensors = [t.contiguous() for t in compiled.program.arguments(layer, x)]
            outputs = [torch.empty(n, d)]
            rounds = [(per_call_us(lambda: compiled(x)), per_call_us(lambda: kernel.run(tensors, outputs))) for _ in range(7)]
        call = statistics.median(c for c, _ in rounds)
        run = statistics.median(k for _, k in rounds)
        tuned = kernel.tune["bestMs"] * 1e3 if not kernel.eager else kernel.tune["baselineMs"] * 1e3
        print(f"{d:>5} {n:>3} {call:>8.1f} {run:>9.1f} {call - run:>11.1f} {tuned:>8.1f} {run / tuned:>11.2f}x")


if __name__ == "__main__":
    main([tuple(int(v) for v in a.split(":")) for a in sys.argv[1:]] or [(64, 1), (1024, 8)])
