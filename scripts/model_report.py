"""Per transformers model, what torch.compile(model, backend="prism") runs in prism: the share of
its FLOPs and weight bytes, how far its outputs are from eager's, and what PyTorch keeps, as the
markdown table of docs/python.md ("Models").

    ~/.cache/prism/venv/bin/python scripts/model_report.py [MODEL ... | --more]

`--more`: the classes the issue does not list (MORE). "pieces prism failed": searched but left to
PyTorch at the call's sizes (no kernel that passed its check, an error of prism's own), not where
the same ops one by one ran faster.

Tiny configs with random weights (hidden 64, 2 layers, 4 heads; nothing downloaded), f32, a batch
of 2 x 8 tokens with the second row's first two padded (ViT: two 32 x 32 images).
"""
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import transformers as T  # noqa: E402

import prism  # noqa: E402
from prism import errors  # noqa: E402

BACKEND = sys.modules["prism.torch_backend"]


def decoder(cls, **extra):
    return cls(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=64, **extra)


MODELS = {
    "LlamaForCausalLM": lambda: T.LlamaForCausalLM(decoder(T.LlamaConfig)),
    "Qwen2ForCausalLM": lambda: T.Qwen2ForCausalLM(decoder(T.Qwen2Config)),
    "MistralForCausalLM": lambda: T.MistralForCausalLM(decoder(T.MistralConfig, head_dim=16)),
    "GemmaForCausalLM": lambda: T.GemmaForCausalLM(decoder(T.GemmaConfig, head_dim=16)),
    "GPT2LMHeadModel": lambda: T.GPT2LMHeadModel(T.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4)),
    "BertModel": lambda: T.BertModel(T.BertConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                                  num_hidden_layers=2, num_attention_heads=4)),
    "T5EncoderModel": lambda: T.T5EncoderModel(T.T5Config(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                                          num_heads=4)),
    "ViTModel": lambda: T.ViTModel(T.ViTConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                               num_attention_heads=4, image_size=32, patch_size=8)),
}
# Classes issue 63 does not list, each with something of its own (`--more`).
MORE = {
    "OPTForCausalLM": lambda: T.OPTForCausalLM(T.OPTConfig(vocab_size=128, hidden_size=64, ffn_dim=128, num_hidden_layers=2,
                                                           num_attention_heads=4, max_position_embeddings=64,
                                                           word_embed_proj_dim=64)),
    "GPTNeoXForCausalLM": lambda: T.GPTNeoXForCausalLM(T.GPTNeoXConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                                                       num_hidden_layers=2, num_attention_heads=4,
                                                                       max_position_embeddings=64, rotary_pct=0.25)),
    "PhiForCausalLM": lambda: T.PhiForCausalLM(T.PhiConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                                           num_attention_heads=4, max_position_embeddings=64,
                                                           partial_rotary_factor=0.5)),
    "Phi3ForCausalLM": lambda: T.Phi3ForCausalLM(decoder(T.Phi3Config, pad_token_id=0)),
    "Qwen3ForCausalLM": lambda: T.Qwen3ForCausalLM(decoder(T.Qwen3Config, head_dim=16)),
    "Gemma2ForCausalLM": lambda: T.Gemma2ForCausalLM(decoder(T.Gemma2Config, head_dim=16)),
    "StableLmForCausalLM": lambda: T.StableLmForCausalLM(decoder(T.StableLmConfig)),
    "FalconForCausalLM": lambda: T.FalconForCausalLM(T.FalconConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2,
                                                                    num_attention_heads=4, new_decoder_architecture=False,
                                                                    multi_query=True)),
    "GPTJForCausalLM": lambda: T.GPTJForCausalLM(T.GPTJConfig(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                                                              rotary_dim=8)),
    "Starcoder2ForCausalLM": lambda: T.Starcoder2ForCausalLM(decoder(T.Starcoder2Config)),
    "OlmoForCausalLM": lambda: T.OlmoForCausalLM(decoder(T.OlmoConfig)),
    "GraniteForCausalLM": lambda: T.GraniteForCausalLM(decoder(T.GraniteConfig)),
    "MixtralForCausalLM": lambda: T.MixtralForCausalLM(decoder(T.MixtralConfig, num_local_experts=4, num_experts_per_tok=2)),
    "BloomForCausalLM": lambda: T.BloomForCausalLM(T.BloomConfig(vocab_size=128, hidden_size=64, n_layer=2, n_head=4)),
    "GPTNeoForCausalLM": lambda: T.GPTNeoForCausalLM(T.GPTNeoConfig(vocab_size=128, hidden_size=64, num_layers=2, num_heads=4,
                                                                    attention_types=[[["global", "local"], 1]],
                                                                    max_position_embeddings=64, window_size=16)),
    "DistilBertModel": lambda: T.DistilBertModel(T.DistilBertConfig(vocab_size=128, dim=64, hidden_dim=128, n_layers=2, n_heads=4,
                                                                    max_position_embeddings=64)),
    "RobertaModel": lambda: T.RobertaModel(T.RobertaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                                           num_hidden_layers=2, num_attention_heads=4,
                                                           max_position_embeddings=80)),
    "ElectraModel": lambda: T.ElectraModel(T.ElectraConfig(vocab_size=128, embedding_size=64, hidden_size=64,
                                                           intermediate_size=128, num_hidden_layers=2,
                                                           num_attention_heads=4, max_position_embeddings=64)),
}


def inputs(name):
    if name == "ViTModel":
        return {"pixel_values": torch.randn(2, 3, 32, 32)}
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :2] = 0
    return {"input_ids": torch.randint(0, 128, (2, 8)), "attention_mask": mask}


def row(name):
    torch.manual_seed(0)
    model, call = {**MODELS, **MORE}[name]().eval(), inputs(name)
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(BACKEND.torch_backend(graph_module, example_inputs))
        return graphs[-1]

    torch._dynamo.reset()
    # The backend says each thing once per process: an earlier model's identical piece (Qwen2's
    # are Llama's up to weights) would otherwise keep this one's failures from being counted.
    errors.WARNED.clear()
    start = time.perf_counter()
    with torch.no_grad(), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        got = torch.compile(model, backend=backend)(**call)
        seconds = time.perf_counter() - start
        want = model(**call)
    # Pieces prism searched but could not run at these sizes (its own errors, no kernel that
    # passed): not those where the same ops one by one were faster (the tune's or the race's).
    failed = sum("stays PyTorch's at these sizes" in str(w.message) and "beat the same ops" not in str(w.message)
                 for w in said)
    key = "logits" if hasattr(want, "logits") else "last_hidden_state"
    error = (getattr(got, key) - getattr(want, key)).abs().max().item() / getattr(want, key).abs().max().item()
    flops = sum(g.prism_share.flops for g in graphs) / sum(g.prism_share.all_flops for g in graphs)
    weights = sum(g.prism_share.weight_bytes for g in graphs) / sum(g.prism_share.all_weight_bytes for g in graphs)
    kept = sorted({node.split("'")[2].strip(" ()").split(")")[0] for g in graphs for node, _ in g.prism_left})
    pieces = sum(len(g.prism_partitions) for g in graphs)
    left = sum(len(g.prism_skipped) for g in graphs) + failed
    return (f"| {name} | {len(graphs)} | {pieces} | {left} | {100.0 * flops:.0f}% | {100.0 * weights:.0f}% | {error:.1e} | {seconds:.0f} s | "
            f"{', '.join(kept) or 'nothing'} |")


def main(names):
    if names == ["--more"]:
        names = list(MORE)
    print("| model | graphs | prism pieces | pieces prism failed | FLOPs in prism | weight bytes read by prism | max error / max | "
          "first call | PyTorch runs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names or MODELS:
        print(row(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
