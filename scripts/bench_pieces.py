#!/usr/bin/env python3
"""Where a compiled layer's time goes: each piece `torch.compile(backend="prism")` cut the layer
into, timed inside the layer (the layer's own calls, interleaved with eager calls of the same
layer) and alone (the piece called again and again on the arguments the layer last gave it), and
whether prism's kernel or PyTorch's ops run it. A piece that runs a third slower inside the layer
than alone while PyTorch's pieces slow down as much is the layer's cache state, not prism's
kernel; one that alone runs slower than the ops it replaced is prism's (docs/python.md, "Prefill
after the packed NT form").

  PYTHONPATH=python ~/.cache/prism/venv/bin/python scripts/bench_pieces.py \\
      --model llama --shape prefill128 --dtype f32 --rounds 9 --max-autotune

Each round: --calls calls of the eager layer (and of max-autotune's with --max-autotune), then as
many of the compiled layer (each piece's time summed over them), then each piece alone as many
times; medians over rounds.
"""
import argparse
import copy
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
import bench_models as models  # noqa: E402  (also puts python/ on the path and imports prism)
from prism.torch_backend import torch_backend as prism_backend  # noqa: E402


class PieceTimer:
    """Wraps each piece of the graph prism's backend returns: its time per call, and the
    arguments of its last call (to call it alone)."""

    def __init__(self):
        self.pieces = {}  # name -> module
        self.spent = {}  # name -> [seconds, calls]
        self.last = {}  # name -> args

    def backend(self, graph_module, example_inputs):
        compiled = prism_backend(graph_module, example_inputs)
        for name, _ in getattr(compiled, "prism_partitions", []):
            self.wrap(name, getattr(compiled, name))
        return compiled

    def wrap(self, name, module):
        cls, forward = type(module), type(module).forward
        self.pieces[name], self.spent[name] = module, [0.0, 0]

        def timed(this, *args):
            self.last[name] = args
            start = time.perf_counter()
            out = forward(this, *args)
            self.spent[name][0] += time.perf_counter() - start
            self.spent[name][1] += 1
            return out

        cls.__call__ = timed  # each piece is an instance of its own class (piece_calls.partition_module)

    def runs_in(self, name):
        calls = list(self.pieces[name].calls.values())
        return "prism" if calls and all(c is not None for c in calls) else "PyTorch"


def median_ms(xs):
    return statistics.median(xs) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="llama", choices=sorted(models.configs(64)))
    parser.add_argument("--shape", default="prefill128")
    parser.add_argument("--dtype", default="f32", choices=sorted(models.DTYPES))
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--max-autotune", action="store_true", help="interleave Inductor's max-autotune layer too")
    a = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    dtype = models.DTYPES[a.dtype]
    model = models.configs(a.hidden)[a.model]().to(dtype).eval()
    layer, inputs = models.layer_call(model, models.Call(a.model, model, a.shape, dtype))
    timer = PieceTimer()
    compiled = torch.compile(copy.deepcopy(layer), backend=timer.backend)  # a copy each, as bench_models.py
    inductor = torch.compile(copy.deepcopy(layer), mode="max-autotune") if a.max_autotune else None

    def per_call(fn):
        start = time.perf_counter()
        for _ in range(a.calls):
            args, kwargs = inputs()
            fn(*args, **kwargs)
        return (time.perf_counter() - start) / a.calls

    with torch.no_grad():
        args, kwargs = inputs()
        compiled(*args, **kwargs)  # the first call: search, tune and race each piece
        if inductor:
            args, kwargs = inputs()
            inductor(*args, **kwargs)
        autotuned, eager, layer_s = [], [], []
        inside, alone = {n: [] for n in timer.pieces}, {n: [] for n in timer.pieces}
        for _ in range(a.rounds):
            eager.append(per_call(layer))
            if inductor:
                autotuned.append(per_call(inductor))
            for spent in timer.spent.values():
                spent[0], spent[1] = 0.0, 0
            layer_s.append(per_call(compiled))
            for name, (seconds, calls) in timer.spent.items():
                inside[name].append(seconds / max(calls, 1))
            for name, module in timer.pieces.items():
                start = time.perf_counter()
                for _ in range(a.calls):
                    module(*timer.last[name])
                alone[name].append((time.perf_counter() - start) / a.calls)

    print(f"{a.model} layer, {a.dtype} {a.shape}: eager {median_ms(eager):.3f} ms, prism {median_ms(layer_s):.3f} ms"
          + (f", max-autotune {median_ms(autotuned):.3f} ms" if inductor else "")
          + f" (medians of {a.rounds} rounds of {a.calls} calls)")
    print(f"{'piece':<10} {'runs in':<8} {'in the layer ms':>16} {'alone ms':>9} {'ratio':>6}")
    for name in timer.pieces:
        i, o = median_ms(inside[name]), median_ms(alone[name])
        print(f"{name:<10} {timer.runs_in(name):<8} {i:>16.3f} {o:>9.3f} {i / o:>5.2f}x")
    print(f"{'the rest':<10} {'PyTorch':<8} {median_ms(layer_s) - sum(median_ms(v) for v in inside.values()):>16.3f}")


if __name__ == "__main__":
    main()
