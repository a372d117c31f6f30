#!/usr/bin/env python3
"""prism.compile of a whole transformers decoder layer (captured by dynamo, one program: its
norms, attention and MLP) against the same layer run eagerly, under torch.compile (Inductor) and
under torch.compile(backend="prism") (its pieces, a block each), in this process, on the CPU. The layer is built from a small config with random weights, called
as its model calls it (hidden_states, the rotary tables, a causal mask or is_causal), symbolic in
the token count: one search, a tune at each count on its first call. The three are timed in
interleaved rounds (median per-call time, torch.no_grad). Prints one row per token count: the
four times, prism's speed over eager, Inductor and the pieces, and prism's largest error against eager
relative to the output's largest magnitude (docs/python.md, "Captured by dynamo").

  PYTHONPATH=python ~/.cache/prism/venv/bin/python scripts/bench_compile_hf.py [--model llama]
      [--hidden 512] [--heads 8] [--kv-heads 2] [--rounds 7] [--padded] [--budget 30] 1 8 32
"""
import argparse
import importlib
import statistics
import time
import warnings

import torch
import transformers

import prism


FAMILIES = {"llama": "Llama", "qwen2": "Qwen2"}  # --model: transformers' class prefix


def layer_of(model, hidden, heads, kv_heads):
    """(decoder layer, rotary embedding) of `model`'s family at these sizes, sdpa attention."""
    if model not in FAMILIES:
        raise SystemExit(f"--model {model}: one of {', '.join(FAMILIES)}")
    prefix = FAMILIES[model]
    modeling = importlib.import_module(f"transformers.models.{model}.modeling_{model}")
    config = getattr(transformers, f"{prefix}Config")(hidden_size=hidden, intermediate_size=hidden * 11 // 4,
                                                      num_attention_heads=heads, num_key_value_heads=kv_heads, vocab_size=128)
    config._attn_implementation = "sdpa"
    return (getattr(modeling, f"{prefix}DecoderLayer")(config, layer_idx=0).eval(),
            getattr(modeling, f"{prefix}RotaryEmbedding")(config))


def inputs(rope, hidden, n, padded):
    """The layer's keyword arguments at n tokens, a batch of 2: a boolean causal mask with the
    second row's last key padded, or none (is_causal)."""
    x = torch.randn(2, n, hidden)
    x[:, :, 3] *= 20  # an outlier channel
    mask = None
    if padded:
        mask = torch.ones(n, n, dtype=torch.bool).tril()[None, None].repeat(2, 1, 1, 1)
        mask[1, :, :, n - 1] = n == 1  # the second row's last key padded (no query left with none)
    return {"hidden_states": x, "attention_mask": mask, "position_embeddings": rope(x, torch.arange(n)[None])}


def per_call(fn, kwargs, seconds=0.2):
    calls, start = 0, time.perf_counter()
    while True:
        fn(**kwargs)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= 3:
            return elapsed / calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("counts", nargs="*", type=int, default=[1, 8, 32])
    parser.add_argument("--model", default="llama")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--padded", action="store_true")
    parser.add_argument("--budget", type=float, default=30.0, help="the search's budget in seconds")
    args = parser.parse_args()
    torch.manual_seed(0)
    layer, rope = layer_of(args.model, args.hidden, args.heads, args.kv_heads)
    dims = {"hidden_states": {1: "n"}, "position_embeddings_0": {1: "n"}, "position_embeddings_1": {1: "n"}}
    if args.padded:
        dims["attention_mask"] = {2: "n", 3: "n"}
    with torch.no_grad():
        started = time.perf_counter()
        compiled = prism.compile(layer, (), example_kwargs=inputs(rope, args.hidden, 4, args.padded), dims=dims,
                                 search_budget=args.budget)
        searched = time.perf_counter() - started
        inductor = torch.compile(layer, dynamic=True)
        pieces = torch.compile(layer, backend="prism", dynamic=True)  # the backend's pieces: a block each
        print(f"{args.model} decoder layer, hidden {args.hidden}, {args.heads} heads over {args.kv_heads}, "
              f"{'padded mask' if args.padded else 'is_causal'}, f32, batch 2; search {searched:.1f} s")
        print("tokens | eager ms | inductor ms | backend's pieces ms | prism ms | prism/eager | prism/inductor | "
              "prism/pieces | error")
        for n in args.counts:
            kwargs = inputs(rope, args.hidden, n, args.padded)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = compiled(**kwargs)  # the tune at n, and the first call's check
                inductor(**kwargs)
                pieces(**kwargs)
            want = layer(**kwargs)
            error = ((got - want).abs().max() / want.abs().max()).item()
            variants = (("eager", layer), ("inductor", inductor), ("pieces", pieces), ("prism", compiled))
            times = {name: [] for name, _ in variants}
            for _ in range(args.rounds):
                for name, fn in variants:
                    times[name].append(per_call(fn, kwargs))
            eager, ind, cut, ours = (statistics.median(times[name]) * 1e3 for name, _ in variants)
            eager_plan = " (eager plan)" if compiled.kernels[(("n", n),)].eager else ""
            print(f"{n} | {eager:.3f} | {ind:.3f} | {cut:.3f} | {ours:.3f}{eager_plan} | {eager / ours:.2f}x | "
                  f"{ind / ours:.2f}x | {cut / ours:.2f}x | {error:.1e}")
    compiled.close()


if __name__ == "__main__":
    main()
