#!/usr/bin/env python3
"""One transformers Llama decoder layer, called without a KV cache (its rotary embedding, an
additive causal mask), or one BERT layer (`--model bert`, a padding mask of zeros), under eager
PyTorch, Inductor and torch.compile(backend="prism") with PRISM_HEADS_INSIDE=0 and 1 (the
default; docs/python.md, "Head splits inside"): each variant's first call (dynamo, prism's
searches and tunes), its pieces, and the median of interleaved rounds.

  PYTHONPATH=python ~/.cache/prism/venv/bin/python scripts/bench_heads_inside.py \\
      [--model llama|bert] [--hidden 512] [--kv-heads 8] [--tokens 32] [--rounds 7]
"""
import argparse
import copy
import os
import statistics
import sys
import time
import warnings

import torch
from transformers import BertConfig, LlamaConfig
from transformers.models.bert.modeling_bert import BertLayer
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import prism  # noqa: E402,F401  (registers the backend)

BACKEND = sys.modules["prism.torch_backend"]


class Layer(torch.nn.Module):
    """One Llama decoder layer with its rotary embedding, under a causal -inf mask."""

    def __init__(self, hidden, kv_heads):
        super().__init__()
        config = LlamaConfig(hidden_size=hidden, num_attention_heads=hidden // 64, num_key_value_heads=kv_heads,
                             intermediate_size=int(hidden * 2.6875), num_hidden_layers=1)
        config._attn_implementation = "sdpa"
        self.layer, self.rotary = LlamaDecoderLayer(config, 0).eval(), LlamaRotaryEmbedding(config)

    def forward(self, x, positions, mask):
        out = self.layer(x, attention_mask=mask, position_ids=positions, position_embeddings=self.rotary(x, positions))
        return out[0] if isinstance(out, tuple) else out


class BertBlock(torch.nn.Module):
    """One BERT layer (post-norm LayerNorms, biased projections, GELU), under an additive padding
    mask of zeros; `positions` is not read."""

    def __init__(self, hidden, kv_heads):
        super().__init__()
        config = BertConfig(hidden_size=hidden, num_attention_heads=hidden // 64, intermediate_size=4 * hidden,
                            num_hidden_layers=1)
        config._attn_implementation = "sdpa"
        self.layer = BertLayer(config).eval()

    def forward(self, x, positions, mask):
        out = self.layer(x, attention_mask=mask)
        return out[0] if isinstance(out, tuple) else out


def prism_variant(module, inside, graphs):
    """torch.compile(backend="prism") with PRISM_HEADS_INSIDE as `inside` while it compiles."""
    def backend(graph_module, example_inputs):
        os.environ["PRISM_HEADS_INSIDE"] = inside
        graphs.append(BACKEND.torch_backend(graph_module, example_inputs))
        return graphs[-1]
    return torch.compile(copy.deepcopy(module), backend=backend)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["llama", "bert"], default="llama")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    a = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    layer = (Layer if a.model == "llama" else BertBlock)(a.hidden, a.kv_heads)
    s = a.tokens
    mask = torch.triu(torch.full((s, s), float("-inf")), 1)[None, None] if a.model == "llama" else torch.zeros(1, 1, 1, s)
    args = (torch.randn(1, s, a.hidden), torch.arange(s)[None], mask)
    graphs = {"prism": [], "prism heads inside": []}
    variants = {"eager": layer, "inductor": torch.compile(copy.deepcopy(layer)),
                "prism": prism_variant(layer, "0", graphs["prism"]),
                "prism heads inside": prism_variant(layer, "1", graphs["prism heads inside"])}
    with torch.no_grad():
        want = layer(*args)
        for name, f in variants.items():
            start = time.perf_counter()
            error = (f(*args) - want).abs().max().item()
            pieces = [c.program.text.count("\n") - 1 for g in graphs.get(name, []) for _, c in g.prism_partitions]
            print(f"{name}: first call {time.perf_counter() - start:.1f} s, max error {error:.1e}" +
                  (f", {len(pieces)} pieces of {pieces} statements" if name in graphs else ""))
        times = {name: [] for name in variants}
        for _ in range(a.rounds):
            for name, f in variants.items():
                calls, start = 0, time.perf_counter()
                while calls < 3 or time.perf_counter() - start < 0.2:
                    f(*args)
                    calls += 1
                times[name].append((time.perf_counter() - start) / calls * 1e3)
    for name, ms in times.items():
        print(f"{name:20s} {statistics.median(ms):7.3f} ms  (rounds {min(ms):.3f} to {max(ms):.3f})")


if __name__ == "__main__":
    main()
