#!/usr/bin/env python3
"""What a call of a prism-compiled layer costs in the caller's process (issue 64, 1): an RMSNorm
and a bias-free projection, as Llama writes them, through `prism.compile` (rows as a dim, tuned
at n rows) and through `torch.compile(backend="prism")` on [1, n, d] activations. Timed in
interleaved rounds, each call timed alone and a round's time the median of its calls, as
prism-runner times a kernel (torch.no_grad; the median of the rounds):

  call      the callable (prism.compile's, or the compiled layer's piece as its graph calls it);
  kernel    Kernel.run on the same tensors: the ctypes call into the library, the kernel;
  python    the call with the library's entry replaced by nothing: what the Python side adds
            (timeit's best of 5 runs of 2,000 calls: the least noisy of these figures);
  layer     the same for the whole compiled layer (torch.compile's: dynamo's guards, its
            graph and the piece);
  tuned     the tune's time for the same kernel in prism-runner (its table's best).

Arguments: width:rows pairs (default 64:1 1024:8).

  PYTHONPATH=python ~/.cache/prism/venv/bin/python scripts/bench_call.py 64:1 1024:8
"""
import os
import statistics
import sys
import time
import timeit
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import prism  # noqa: E402
from prism.torch_backend import torch_backend  # noqa: E402


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


def python_us(fn, kernel):
    """`fn`'s time with `kernel`'s library entry replaced by nothing."""
    runner = kernel._runner
    runner.run = lambda ins, outs, device: None
    try:
        return min(timeit.repeat(fn, number=2000, repeat=5)) / 2000 * 1e6
    finally:
        del runner.run


def backend_piece(layer, x):
    """The compiled layer's prism piece, its Call and the arguments its graph passes it."""
    pieces, seen = [], []

    def backend(graph_module, example_inputs):
        compiled = torch_backend(graph_module, example_inputs)
        for name, _ in compiled.prism_partitions:
            piece = getattr(compiled, name)
            forward = type(piece).__call__
            type(piece).__call__ = lambda self, *args: seen.append(args) or forward(self, *args)
            pieces.append((piece, forward))
        return compiled

    model = torch.compile(layer, backend=backend)
    model(x)
    (piece, forward), = pieces
    type(piece).__call__ = forward
    (call,) = piece.calls.values()
    if call is None:
        sys.exit("the backend left the piece to PyTorch: nothing of prism's to time")
    args = seen[-1]
    return model, piece, call, piece.compiled.program.arguments(piece.compiled._module, *args), args


def row(path, d, n, call_fn, kernel, tensors, outputs, layer_fn=None):
    rounds = [(per_call_us(call_fn), per_call_us(lambda: kernel.run(tensors, outputs))) for _ in range(7)]
    call = statistics.median(c for c, _ in rounds)
    run = statistics.median(k for _, k in rounds)
    tuned = kernel.tune["bestMs"] * 1e3 if not kernel.eager else kernel.tune["baselineMs"] * 1e3
    layer = f"{python_us(layer_fn, kernel):>8.1f}" if layer_fn else f"{'':>8}"
    print(f"{path:>13} {d:>5} {n:>3} {call:>8.1f} {run:>9.1f} {python_us(call_fn, kernel):>9.1f} {layer} {tuned:>8.1f} "
          f"{run / tuned:>11.2f}x")


def main(pairs):
    torch.manual_seed(0)
    warnings.simplefilter("ignore")
    print(f"{'path':>13} {'d':>5} {'n':>3} {'call us':>8} {'kernel us':>9} {'python us':>9} {'layer us':>8} {'tuned us':>8} "
          f"{'kernel/tuned':>12}")
    for d, n in pairs:
        layer = RmsLinear(d).eval()
        x = torch.randn(n, d)
        with torch.no_grad():
            compiled = prism.compile(layer, x, dims={"x": {0: "n"}})
            compiled(x)
            (kernel,) = compiled.kernels.values()
            tensors = [t.contiguous() for t in compiled.program.arguments(layer, x)]
            row("prism.compile", d, n, lambda: compiled(x), kernel, tensors, [torch.empty(n, d)])
            rows = x.reshape(1, n, d)
            model, piece, call, tensors, args = backend_piece(layer, rows)
            row("torch.compile", d, n, lambda: piece(*args), call.kernel, [t.contiguous() for t in tensors],
                [torch.empty(n, d)], lambda: model(rows))


if __name__ == "__main__":
    main([tuple(int(v) for v in a.split(":")) for a in sys.argv[1:]] or [(64, 1), (1024, 8)])
