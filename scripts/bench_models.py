#!/usr/bin/env python3
"""What a user measures: transformers models, and the first decoder (or encoder) layer of each,
under eager PyTorch, `torch.compile()` (Inductor), `torch.compile(mode="max-autotune")` and
`torch.compile(backend="prism")`, in one process on this machine's CPU.

For each model, part (the whole model, or its first layer called with the arguments the model
gives it), dtype and shape (prefill of T tokens; decode of t tokens over a 512-token KV cache,
for the causal LMs), every variant is called once (its first-call time: dynamo's capture, the
compile, prism's search and tune), checked against eager, and then all are timed in interleaved
rounds (A B C D, A B C D, ...; each round the mean per-call time over about 0.2 s, under
torch.no_grad). A row's time is the median of its rounds and its spread their interquartile
range over the median. A round during which other processes used more than half a core
(/proc/stat less this process's own CPU time) is measured again, as the tuner refuses load, up to
three times; `loaded` counts the rounds that stayed loaded. Rows go to a CSV (default
bench/cpu/models/DATE-MACHINE.csv) with the machine; a table is printed.

  PYTHONPATH=python ~/.cache/prism/venv/bin/python scripts/bench_models.py \\
      --models llama,gpt2 --dtypes f32 --shapes prefill32,decode1

Arguments: --models (llama qwen2 mistral gemma gpt2 bert t5 vit by default; also qwen3 gemma3
mixtral), --parts (model layer),
--dtypes (f32 bf16), --shapes (prefill32 prefill128 decode1 decode8), --variants (eager inductor
max-autotune prism), --hidden (the models' width, 512), --rounds (7), --csv FILE, --attention
(the models' attn_implementation: eager, sdpa; transformers' default where not given), --cache
(decode's KV cache: dynamic, or static: transformers' StaticCache, written in place).
"""
import argparse
import copy
import csv
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings

import torch
import transformers as T

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import prism  # noqa: E402,F401  (registers the backend)

CACHE_TOKENS = 512
VOCAB = 4096
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def configs(hidden, attention=None):
    """The models at width `hidden`; `attention`: their attn_implementation ("eager", "sdpa"),
    transformers' default where None."""
    heads = max(1, hidden // 64)
    chosen = {"attn_implementation": attention} if attention else {}
    inter = (hidden * 8 // 3 + 63) // 64 * 64  # a gated MLP's width, as Llama rounds it
    decoder = dict(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=2,
                   num_attention_heads=heads, num_key_value_heads=max(1, heads // 2), max_position_embeddings=1024,
                   **chosen)
    return {
        "llama": lambda: T.LlamaForCausalLM(T.LlamaConfig(**decoder)),
        "qwen2": lambda: T.Qwen2ForCausalLM(T.Qwen2Config(**decoder)),
        "mistral": lambda: T.MistralForCausalLM(T.MistralConfig(**decoder, head_dim=64)),
        "gemma": lambda: T.GemmaForCausalLM(T.GemmaConfig(**decoder, head_dim=64)),
        "qwen3": lambda: T.Qwen3ForCausalLM(T.Qwen3Config(**decoder, head_dim=64)),
        "gemma3": lambda: T.Gemma3ForCausalLM(T.Gemma3TextConfig(**decoder, head_dim=64)),
        "mixtral": lambda: T.MixtralForCausalLM(T.MixtralConfig(**decoder, num_local_experts=8, num_experts_per_tok=2)),
        "gpt2": lambda: T.GPT2LMHeadModel(T.GPT2Config(vocab_size=VOCAB, n_embd=hidden, n_layer=2, n_head=heads,
                                                       n_positions=1024, **chosen)),
        "bert": lambda: T.BertModel(T.BertConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=4 * hidden,
                                                 num_hidden_layers=2, num_attention_heads=heads,
                                                 max_position_embeddings=1024, **chosen)),
        "t5": lambda: T.T5EncoderModel(T.T5Config(vocab_size=VOCAB, d_model=hidden, d_kv=64, d_ff=4 * hidden,
                                                  num_layers=2, num_heads=heads, **chosen)),
        "vit": lambda: T.ViTModel(T.ViTConfig(hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=2,
                                              num_attention_heads=heads, image_size=128, patch_size=16, **chosen)),
    }


CAUSAL = {"llama", "qwen2", "mistral", "gemma", "gpt2", "qwen3", "gemma3", "mixtral"}


def first_layer(model):
    """The model's first transformer layer."""
    for path in ("model.layers", "transformer.h", "encoder.layer", "encoder.block"):
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        return obj[0]
    raise ValueError(f"no layer list in {type(model).__name__}")


class Call:
    """One way to call a model at one shape: `inputs()` gives fresh (args, kwargs) for a call (a
    new cache over the same 512 stored tokens for decode, so that no call grows it)."""

    def __init__(self, name, model, shape, dtype, cache="dynamic"):
        self.tokens = 0
        self.cache = None
        self._static = None
        if name == "vit":
            pixels = torch.randn(1, 3, 128, 128, dtype=dtype)
            self.tokens = (128 // 16) ** 2 + 1
            self._make = lambda: ((), {"pixel_values": pixels})
            return
        kind, count = ("decode", int(shape[6:])) if shape.startswith("decode") else ("prefill", int(shape[7:]))
        self.tokens = count
        ids = torch.randint(0, VOCAB, (1, count))
        if kind == "prefill":
            self._make = lambda: ((), {"input_ids": ids})
            return
        stored = torch.randint(0, VOCAB, (1, CACHE_TOKENS))
        self.cache = CACHE_TOKENS
        if cache == "static":  # written in place at the step's positions: every call writes the same slots
            self._static = T.StaticCache(config=model.config, max_cache_len=CACHE_TOKENS + count)
            with torch.no_grad():
                model(input_ids=stored, past_key_values=self._static, cache_position=torch.arange(CACHE_TOKENS))
            self._lengths = [getattr(layer, "cumulative_length", None) for layer in self._static.layers]
            step = torch.arange(CACHE_TOKENS, CACHE_TOKENS + count)
            self._make = lambda: ((), {"input_ids": ids, "past_key_values": self.fresh_cache(), "cache_position": step,
                                       "use_cache": True})
            return
        with torch.no_grad():
            out = model(input_ids=stored, use_cache=True)
        legacy = out.past_key_values.to_legacy_cache() if hasattr(out.past_key_values, "to_legacy_cache") else out.past_key_values
        self._legacy = legacy
        self._make = lambda: ((), {"input_ids": ids, "past_key_values": self.fresh_cache(), "use_cache": True})

    def inputs(self):
        return self._make()

    def fresh_cache(self):
        """A cache no call has grown: empty for prefill, the 512 stored tokens for decode (a
        static cache is the same one: a call writes its step's slots; a sliding-window layer's
        count of tokens seen, which a call raises, is set back, lest it roll the cache)."""
        if self._static is not None:
            for layer, length in zip(self._static.layers, self._lengths):
                if length is not None:
                    layer.cumulative_length = length
            return self._static
        return T.DynamicCache.from_legacy_cache(self._legacy) if self.cache else T.DynamicCache()


def layer_call(model, call):
    """The first layer called as the model calls it at `call`'s shape: its arguments captured by a
    hook, any cache among them made afresh at each call (Call.fresh_cache)."""
    captured = {}

    def hook(module, args, kwargs):
        captured.setdefault("args", (args, kwargs))

    layer = first_layer(model)
    handle = layer.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        args, kwargs = call.inputs()
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        handle.remove()
    args, kwargs = captured["args"]

    def inputs():  # GPT-2's model passes its cache by position, Llama's by keyword
        fresh = lambda v: call.fresh_cache() if isinstance(v, T.Cache) else v  # noqa: E731
        return tuple(fresh(v) for v in args), {k: fresh(v) for k, v in kwargs.items()}

    return layer, inputs


def first_output(out):
    """The tensor a model's output leads with: its logits, its last hidden state, or the first of a
    tuple."""
    if isinstance(out, torch.Tensor):
        return out
    for attr in ("logits", "last_hidden_state"):
        if getattr(out, attr, None) is not None:
            return getattr(out, attr)
    return first_output(out[0])


class Load:
    """Other processes' CPU use between start() and cores(), in cores (the tuner's rule)."""

    def start(self):
        self.before = self._sample()

    def cores(self):
        after = self._sample()
        total = after[0] - self.before[0]
        if total <= 0:
            return 0.0
        busy = after[1] - self.before[1]
        own = after[2] - self.before[2]
        return max(0.0, busy - own) / total * os.cpu_count()

    @staticmethod
    def _sample():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
        user, nice, system, idle, iowait, irq, softirq, steal = fields
        busy = user + nice + system + irq + softirq
        times = os.times()
        own = (times.user + times.system) * os.sysconf("SC_CLK_TCK")
        return busy + idle + iowait + steal, busy, own


def per_call(fn, seconds=0.2):
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= 3:
            return elapsed / calls


def spread(values):
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / statistics.median(values)


def make_variant(variant, module):
    if variant == "eager":
        return module
    copied = copy.deepcopy(module)
    if variant == "inductor":
        return torch.compile(copied)
    if variant == "max-autotune":
        return torch.compile(copied, mode="max-autotune")
    if variant == "prism":
        return torch.compile(copied, backend="prism")
    raise ValueError(variant)


def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.processor())
    return f"{model}, {os.cpu_count()} cores"


def commit():
    """The checkout's commit, `+changes` where its tracked files differ from it."""
    def git(*args):
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=os.path.dirname(__file__)).stdout.strip()

    try:
        return git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    except OSError:
        return ""


def bench(name, part, dtype_name, shape, variants, hidden, rounds, load, attention=None, cache="dynamic"):
    # Each case compiles from scratch: a layer's forward is one code object for every copy and
    # shape, and past dynamo's recompile limit a frame would silently run eager.
    torch._dynamo.reset()
    torch.manual_seed(0)
    dtype = DTYPES[dtype_name]
    model = configs(hidden, attention)[name]().eval().to(dtype)
    call = Call(name, model, shape, dtype, cache)
    if part == "layer":
        module, inputs = layer_call(model, call)
    else:
        module, inputs = model, call.inputs
    made, rows = {}, {}
    with torch.no_grad():
        args, kwargs = inputs()
        want = first_output(module(*args, **kwargs)).float()
        for variant in variants:
            row = rows[variant] = {"first_call_s": "", "error": "", "note": ""}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    fn = make_variant(variant, module)
                    start = time.perf_counter()
                    args, kwargs = inputs()
                    got = first_output(fn(*args, **kwargs)).float()
                    row["first_call_s"] = time.perf_counter() - start
                    row["max_error"] = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
                    made[variant] = fn
                except Exception as e:  # a variant that cannot run this shape: said, the others go on
                    row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            shares = [str(w.message) for w in caught if "prism runs" in str(w.message)]
            if shares:
                row["note"] = shares[0].splitlines()[0][:300]
            stayed = [str(w.message).split(": ", 2)[1:] for w in caught if "stays PyTorch's" in str(w.message)]
            if stayed:  # which pieces PyTorch's ops ran, and why (lost the race, no kernel)
                row["note"] = (row["note"] + " | " if row["note"] else "") + " | ".join(": ".join(m) for m in stayed)[:600]
        times = {v: [] for v in made}
        loaded = 0
        for _ in range(rounds):
            for attempt in range(4):
                load.start()
                got = {}
                for variant, fn in made.items():
                    def once(fn=fn):
                        a, k = inputs()
                        fn(*a, **k)
                    got[variant] = per_call(once)
                if load.cores() <= 0.5:
                    break
            else:
                loaded += 1
            for variant, t in got.items():
                times[variant].append(t)
    for variant, row in rows.items():
        if variant in times:
            row["median_ms"] = statistics.median(times[variant]) * 1e3
            row["spread"] = spread(times[variant])
            row["rounds"], row["loaded"] = len(times[variant]), loaded
    return call, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama,qwen2,mistral,gemma,gpt2,bert,t5,vit")
    parser.add_argument("--parts", default="model,layer")
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--shapes", default="prefill32,prefill128,decode1,decode8")
    parser.add_argument("--variants", default="eager,inductor,max-autotune,prism")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--csv", default="")
    parser.add_argument("--attention", default="", help="the models' attn_implementation (eager, sdpa); "
                                                        "transformers' default where not given")
    parser.add_argument("--cache", default="dynamic", choices=("dynamic", "static"),
                        help="decode's KV cache: transformers' DynamicCache, or the StaticCache its docs pair "
                             "with torch.compile (written in place)")
    a = parser.parse_args()
    torch._dynamo.config.recompile_limit = 64  # four variants of one code object, each at two sizes
    variants = a.variants.split(",")
    where = machine()
    path = a.csv or os.path.join(os.path.dirname(__file__), "..", "bench", "cpu", "models",
                                 f"{datetime.date.today()}-{where.split(',')[0].split('(')[0].split()[0].lower()}"
                                 f"-{os.cpu_count()}core.csv")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fields = ["date", "machine", "torch", "transformers", "prism_commit", "threads", "model", "part", "hidden", "attention", "cache", "dtype",
              "shape", "tokens", "cache_tokens", "variant", "first_call_s", "median_ms", "spread", "rounds", "loaded",
              "vs_eager", "vs_inductor", "max_error", "error", "note"]
    fixed = {"date": str(datetime.date.today()), "machine": where, "torch": torch.__version__,
             "transformers": T.__version__, "prism_commit": commit(), "threads": torch.get_num_threads(),
             "hidden": a.hidden, "attention": a.attention or "default", "cache": a.cache}
    print(f"{where}; torch {torch.__version__} on {torch.get_num_threads()} threads; transformers {T.__version__}")
    print(f"{'model':<8} {'part':<6} {'dtype':<5} {'shape':<10} " + " ".join(f"{v:>14}" for v in variants)
          + "   inductor/prism")
    load = Load()
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fields)
        writer.writeheader()
        for name in a.models.split(","):
            for part in a.parts.split(","):
                for dtype in a.dtypes.split(","):
                    for shape in a.shapes.split(","):
                        if shape.startswith("decode") and name not in CAUSAL:
                            continue
                        if name == "vit" and shape != a.shapes.split(",")[0]:
                            continue  # one image size
                        call, rows = bench(name, part, dtype, shape, variants, a.hidden, a.rounds, load, a.attention or None, a.cache)
                        eager = rows.get("eager", {}).get("median_ms")
                        inductor = rows.get("inductor", {}).get("median_ms")
                        cells = []
                        for variant, row in rows.items():
                            ms = row.get("median_ms")
                            row.update(fixed, model=name, part=part, dtype=dtype, shape=shape if name != "vit" else "image128",
                                       tokens=call.tokens, cache_tokens=call.cache or 0, variant=variant,
                                       vs_eager=eager / ms if eager and ms else "",
                                       vs_inductor=inductor / ms if inductor and ms else "")
                            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()
                                             if k in fields})
                            cells.append(f"{ms:8.3f} ±{100 * row['spread']:3.0f}%" if ms else f"{'failed':>14}")
                        out.flush()
                        prism_ms = rows.get("prism", {}).get("median_ms")
                        ratio = f"{inductor / prism_ms:.2f}x" if prism_ms and inductor else "-"
                        print(f"{name:<8} {part:<6} {dtype:<5} {rows and next(iter(rows.values()))['shape']:<10} "
                              + " ".join(cells) + f"   {ratio}", flush=True)
    print(f"rows: {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
