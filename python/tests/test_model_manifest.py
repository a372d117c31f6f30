"""prism.model_manifest (issue 51): a whole model, written as Llama writes it, split into its
distinct layers, written as a batch manifest, each layer's program computing what its module does,
and the batch tuned on this machine."""
import os
import sys

import numpy as np
import pytest

import prism

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import layers  # noqa: E402

from torch import nn  # noqa: E402

DIM, HIDDEN, HEADS, VOCAB, CACHE = 32, 64, 4, 50, 16


class Decoder(nn.Module):
    """A Llama decoder layer at a decode step: the attention block (keys and values cached,
    rotary applied), then the MLP block."""

    def __init__(self):
        super().__init__()
        self.self_attn = layers.LlamaAttentionBlock(DIM, HEADS)
        self.mlp = layers.LlamaMLPBlock(DIM, HIDDEN)

    def forward(self, x, k_cache, v_cache, mask):
        return self.mlp(self.self_attn(x, k_cache, v_cache, mask))


class TinyLlama(nn.Module):
    """Token embedding, two decoder layers in an nn.ModuleList, the final RMSNorm, the LM head."""

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([Decoder() for _ in range(2)])
        self.norm = layers.RMSNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids, k_cache, v_cache, mask):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, k_cache, v_cache, mask)
        return self.lm_head(self.norm(x))


def example(tokens=3):
    """The model and an input of `tokens` tokens (no other size is 3): caches of CACHE positions
    and a causal mask whose masked scores are -inf."""
    torch.manual_seed(0)
    model = TinyLlama().eval()
    head = DIM // HEADS
    mask = torch.triu(torch.full((tokens, CACHE), float("-inf")), diagonal=CACHE - tokens + 1)
    inputs = (torch.randint(0, VOCAB, (tokens,)), torch.randn(HEADS, CACHE, head), torch.randn(HEADS, CACHE, head), mask)
    return model, inputs


def test_a_model_splits_into_its_distinct_layers_and_writes_a_manifest(tmp_path):
    model, inputs = example()
    found = prism.model_manifest(str(tmp_path / "model.json"), model, inputs, tokens=[1, 8], top=1)
    # The two decoder layers are one program; the embedding (int64 ids) is left out, saying why.
    assert [(p.name, names) for p, names in found.programs] == [("decoder", ["layers.0", "layers.1"]), ("rms_norm", ["norm"]),
                                                                ("linear", ["lm_head"])]
    assert [name for name, _ in found.skipped] == ["embed_tokens"]
    assert "int64" in found.skipped[0][1]
    decoder = found.programs[0][0].text
    assert "x: f32[n, 32]" in decoder and "mask: f32[n, 16]" in decoder and "k_cache: f32[4, 16, 8]" in decoder
    jobs = prism.load_manifest(str(tmp_path / "model.json"))
    assert [(j["program"], j["bindings"]) for j in jobs] == [(p, {"n": n}) for p in ("decoder", "rms_norm", "linear") for n in (1, 8)]
    assert all(j["top"] == 1 and os.path.exists(j["file"]) for j in jobs)


def test_no_layer_that_imports_is_an_error_that_says_why(tmp_path):
    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, DIM)

        def forward(self, ids):
            return self.embed(ids)

    with pytest.raises(ValueError, match="embed: UnsupportedOp"):
        prism.model_manifest(str(tmp_path / "model.json"), Tokens(), torch.randint(0, VOCAB, (3,)), tokens=[1])


def test_the_decoder_program_computes_what_each_decoder_layer_computes_under_a_causal_mask(client, tmp_path):
    model, inputs = example()
    found = prism.model_manifest(str(tmp_path / "model.json"), model, inputs, tokens=[1])
    program, names = found.programs[0]
    assert client.open(text=program.text) == [program.name]
    ids, k_cache, v_cache, mask = inputs
    x = model.embed_tokens(ids).detach() * 3  # activations larger than the embedding's
    for name in names:
        layer = dict(model.named_modules())[name]
        files = {}
        for (input_name, _, _), tensor in zip(program.inputs, program.arguments(layer, x, k_cache, v_cache, mask)):
            files[input_name] = str(tmp_path / f"{input_name}.npy")
            np.save(files[input_name], tensor.detach().numpy())
        out = str(tmp_path / "out.npy")
        client.run(program.name, {"n": 3}, inputs=files, output=out)
        want = layer(x, k_cache, v_cache, mask).detach().numpy()
        np.testing.assert_allclose(np.load(out), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_the_models_batch_tunes_every_layer_on_this_machine(client, tmp_path):
    model, inputs = example()
    prism.model_manifest(str(tmp_path / "model.json"), model, inputs, tokens=[2], top=1)
    # Searched first with room: the decoder's search takes most of the default 10 s budget, and
    # the batch's reopening of the same files keeps these searches.
    for job in prism.load_manifest(str(tmp_path / "model.json")):
        client.open(path=job["file"])
        client.search(job["program"], budget_seconds=60)
    result = prism.batch(str(tmp_path / "model.json"), client=client)
    assert not result["failed"], result
    assert [(job["program"], job["status"]) for job in result["jobs"]] == [(p, "tuned") for p in ("decoder", "rms_norm", "linear")]


def test_a_layer_imported_as_its_children_says_why_it_did_not_import_whole(tmp_path):
    class Scan(nn.Module):  # a projection, then an op prism has no translation of
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(DIM, DIM)

        def forward(self, x):
            return self.proj(x).cumsum(0)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scan = Scan()

        def forward(self, x):
            return self.scan(x)

    found = prism.model_manifest(str(tmp_path / "model.json"), Model().eval(), torch.randn(3, DIM), tokens=[1], top=1)
    assert [(p.name, names) for p, names in found.programs] == [("linear", ["scan.proj"])]
    assert found.skipped == [] and [name for name, _ in found.split] == ["scan"]
    assert "node 'cumsum'" in found.split[0][1] and "no translation" in found.split[0][1]


@pytest.mark.parametrize("padded", [True, False])
def test_a_transformers_llama_is_its_decoder_layer_final_norm_and_head(tmp_path, padded):
    # Its decoder calls each layer with keywords (the padding mask, the rotary tables): recorded
    # with them, each layer is captured by dynamo whole, norm, attention and MLP, and both layers
    # are one program. Before, the keywords were not recorded and each layer split into its
    # norms, projections and MLP, attention left out.
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(3)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=DIM, intermediate_size=HIDDEN, num_hidden_layers=2,
                                      num_attention_heads=HEADS, num_key_value_heads=2)
    config._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(config).eval()
    ids, mask = torch.randint(0, VOCAB, (2, 3)), torch.ones(2, 3, dtype=torch.long)
    mask[1, 0] = 0 if padded else 1  # the second sequence's first token padded; else attention is_causal
    found = prism.model_manifest(str(tmp_path / "model.json"), model, (ids,), tokens=[1, 8], token_count=3,
                                 example_kwargs={"attention_mask": mask, "use_cache": False})
    assert [(p.name, names) for p, names in found.programs] == [
        ("llama_decoder_layer", ["model.layers.0", "model.layers.1"]), ("llama_rms_norm", ["model.norm"]),
        ("linear", ["lm_head"])]
    decoder = found.programs[0][0]
    given = "attention_mask: f32[2, 1, n, n], " if padded else ""
    assert (f"hidden_states: f32[2, n, 32], {given}position_embeddings_0: f32[1, n, 8], "
            "position_embeddings_1: f32[1, n, 8]") in decoder.text and "mlp_down_proj_weight" in decoder.text, decoder.text
    assert ("causal_mask: f32[1, 1, n, n]" in decoder.text) == (not padded), decoder.text
    assert [name for name, _ in found.skipped] == ["model.embed_tokens", "model.rotary_emb"]
    assert found.manifest["programs"][0]["bindings"] == [{"n": 1}, {"n": 8}]
