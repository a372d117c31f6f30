#!/usr/bin/env python3
"""prism.compile against the PyTorch module it came from, on the CPU: examples/python/layers.py's
blocks at model sizes, called with n token rows. Each module is compiled (searched, then tuned at
each n on its first call), then the module and the compiled callable are timed in interleaved
rounds (median of the rounds' per-call times, torch.no_grad). Prints one row per block and n:
PyTorch's time on its default thread count and on the kernel's, prism's, and PyTorch's faster
time over prism's. Arguments: token counts (default 1 8 32).

  PYTHONPATH=python ~/.cache/prism/venv/bin/python scripts/bench_compile.py 1 8
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "python"))
import prism  # noqa: E402
from layers import BertIntermediate, GPT2MLP, LlamaMLPBlock  # noqa: E402

BLOCKS = [("LlamaMLPBlock", LlamaMLPBlock, 1024, 2816), ("GPT2MLP", GPT2MLP, 768, 3072),
          ("BertIntermediate", BertIntermediate, 768, 3072)]


def per_call(fn, x, seconds=0.2):
    """Seconds per call over a round of about `seconds`."""
    calls, start = 0, time.perf_counter()
    while True:
        fn(x)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= 3:
            return elapsed / calls


def main(counts):
    torch.manual_seed(0)
    default_threads = torch.get_num_threads()
    print(f"torch {torch.__version__}; PyTorch timed on its default {default_threads} thread(s) and on the kernel's")
    print(f"{'block':<18} {'n':>4} {'threads':>7} {'torch ms':>9} {'torch ms':>9} {'prism ms':>9} {'best torch/prism':>17}  candidate")
    print(f"{'':<18} {'':>4} {'':>7} {'default':>9} {'=threads':>9}")
    for name, layer, dim, hidden in BLOCKS:
        module = layer(dim, hidden).eval()
        compiled = prism.compile(module, torch.randn(4, dim), dims={"x": {0: "n"}}, top=4)
        for n in counts:
            x = torch.randn(n, dim)
            with torch.no_grad():
                compiled(x)  # tunes at this n
                kernel = compiled.kernels[(("n", n),)]
                rounds = []
                for _ in range(7):
                    torch.set_num_threads(default_threads)
                    default = per_call(module, x)
                    torch.set_num_threads(kernel.threads)
                    rounds.append((default, per_call(module, x), per_call(compiled, x)))
            default, same, ours = (statistics.median(r[i] for r in rounds) for i in range(3))
            print(f"{name:<18} {n:>4} {kernel.threads:>7} {default * 1e3:>9.3f} {same * 1e3:>9.3f} {ours * 1e3:>9.3f} "
                  f"{min(default, same) / ours:>16.2f}x  {kernel.candidate} ({kernel.summary[:50]})")
        torch.set_num_threads(default_threads)
        compiled.close()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1, 8, 32])
