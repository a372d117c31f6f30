"""prism.from_torch on layers written as PyTorch models write them (examples/python/layers.py):
the program the daemon accepts, proves equal to the hand-written layer, and runs to module(x)."""
import math
import os
import sys

import numpy as np
import pytest

import prism

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import layers  # noqa: E402

D, H = 64, 128

# Each module beside the layer written by hand in .prism over the same inputs: examples/layers'
# swiglu_ffn with Llama's RMSNorm and residual, gpt2_mlp_fc through nn.Linear, gelu_linear.
CASES = {
    "llama": (lambda: layers.LlamaMLPBlock(D, H), """program llama_by_hand(x: f32[n, 64], post_attention_layernorm_weight: f32[64],
    gate_proj_weight: f32[128, 64], up_proj_weight: f32[128, 64], down_proj_weight: f32[64, 128]) {
  Y = rms_norm(x, eps=1e-6) * post_attention_layernorm_weight
  return x + matmul(silu(matmul(Y, transpose(gate_proj_weight))) * matmul(Y, transpose(up_proj_weight)), transpose(down_proj_weight))
}
"""),
    "gpt2": (lambda: layers.GPT2MLP(D, H), """program gpt2_by_hand(x: f32[n, 64], c_fc_weight: f32[128, 64], c_fc_bias: f32[128],
    c_proj_weight: f32[64, 128], c_proj_bias: f32[64]) {
  A = matmul(x, transpose(c_fc_weight)) + c_fc_bias
  return matmul(gelu_tanh(A), transpose(c_proj_weight)) + c_proj_bias
}
"""),
    "bert": (lambda: layers.BertIntermediate(D, H), """program bert_by_hand(x: f32[n, 64], dense_weight: f32[128, 64], dense_bias: f32[128]) {
  return gelu(matmul(x, transpose(dense_weight)) + dense_bias)
}
"""),
}


def imported(case):
    torch.manual_seed(0)
    module = CASES[case][0]().eval()
    return module, prism.from_torch(module, torch.randn(4, D), dims={"x": {0: "n"}}, name=case + "_imported")


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_imported_module_is_proved_equal_to_the_layer_written_by_hand(client, case):
    module, program = imported(case)
    assert client.open(text=program.text) == [program.name]
    by_hand = CASES[case][1]
    client.open(text=by_hand)
    proof = client.equivalent(program.name, by_hand.split("(")[0].split()[1])
    assert proof["result"] == "proved", proof.get("message")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_imported_program_computes_what_the_module_computes_at_two_token_counts(client, tmp_path, case):
    module, program = imported(case)
    client.open(text=program.text)
    for n in (3, 8):
        x = torch.randn(n, D) * 2
        files = {}
        for (name, _, _), tensor in zip(program.inputs, program.arguments(module, x)):
            files[name] = str(tmp_path / f"{name}.npy")
            np.save(files[name], tensor.detach().numpy())
        out = str(tmp_path / "out.npy")
        client.run(program.name, {"n": n}, inputs=files, output=out)
        want = module(x).detach().numpy()
        got = np.load(out)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_an_op_prism_cannot_express_names_the_node_and_the_source_line():
    class Cumulative(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, -1) * 2

    with pytest.raises(prism.UnsupportedOp) as caught:
        prism.from_torch(Cumulative(), torch.randn(2, 8))
    message = str(caught.value)
    assert "node 'cumsum' (call_function cumsum)" in message
    assert f"{__file__}:" in message and "no translation" in message


def _llama_decoder_layer():
    """transformers' LlamaDecoderLayer (4 query heads over 2 key/value heads, sdpa) and its
    rotary embedding: written for dynamo, which torch.fx's symbolic trace cannot follow."""
    transformers = pytest.importorskip("transformers")
    llama = transformers.models.llama.modeling_llama
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                                      num_hidden_layers=1, vocab_size=128)
    config._attn_implementation = "sdpa"
    return llama.LlamaDecoderLayer(config, layer_idx=0).eval(), llama.LlamaRotaryEmbedding(config)


def test_a_module_the_symbolic_trace_cannot_follow_is_captured_by_dynamo():
    # dynamo_capture.py: named as the module names its arguments and parameters, the tuple of
    # rotary tables as two inputs, the boolean mask (sliced to the keys' length by transformers'
    # sdpa) a float input, the arguments the layer does not read (position_ids) left out.
    layer, rope = _llama_decoder_layer()
    x = torch.randn(2, 8, 64)
    cos, sin = rope(x, torch.arange(8)[None])
    mask = torch.ones(8, 8, dtype=torch.bool).tril()[None, None].expand(2, 1, 8, 8)
    args = (x, mask, torch.arange(8)[None], None, False, None, (cos, sin))  # positionally: the fallback
    program = prism.from_torch(layer, args, dims={"hidden_states": {1: "n"}, "attention_mask": {2: "n", 3: "n"},
                                                  "position_embeddings_0": {1: "n"}, "position_embeddings_1": {1: "n"}})
    header = program.text.split("{", 1)[0]
    assert ("hidden_states: f32[2, n, 64], attention_mask: f32[2, 1, n, n], position_embeddings_0: f32[1, n, 16], "
            "position_embeddings_1: f32[1, n, 16], input_layernorm_weight: f32[64], self_attn_q_proj_weight") in header, header
    # Attention alone reads the mask: it is passed as the additive mask (0 kept, -inf masked).
    assert "v_self_attn_q_proj = " in program.text and "where(" not in program.text, program.text
    assert program.boolean_inputs == {"attention_mask": torch.float32} and program.additive_masks == {"attention_mask"}
    assert ("self_attn.q_proj.weight", "parameter") in [(t, k) for _, t, k in program.inputs]
    tensors = program.arguments(layer, *args)
    assert tensors[0] is x and tensors[2] is cos and tensors[4] is layer.input_layernorm.weight
    assert tensors[1].dtype == torch.float32 and bool((tensors[1] == torch.where(mask, 0.0, float("-inf"))).all())
    assert program.calling.result((x,)) is x
    attention = prism.from_torch(layer.self_attn, (), example_kwargs={"hidden_states": x, "attention_mask": mask,
                                                                      "position_embeddings": (cos, sin)})
    assert attention.calling.result((x,)) == (x, None)  # LlamaAttention's (attn_output, attn_weights)


def test_a_slice_bounded_by_a_size_is_written_with_the_number_it_is():
    # GPT-NeoX's and Phi-3's partial rotary, `q[..., :cos.shape[-1]]`: a bound read from a size,
    # a number at every size of the dims. Before, "a slice with a symbolic bound".
    def partial_rotary(x, cos):
        return torch.cat((x[..., :cos.shape[-1]] * cos, x[..., cos.shape[-1]:]), -1)

    text = prism.from_torch(partial_rotary, (torch.randn(2, 8, 16), torch.randn(8, 4)),
                            dims={"x": {1: "n"}, "cos": {0: "n"}}).text
    assert "= split(x, 4, axis=2)" in text and "v_getitem_1 * cos" in text, text
    # The rotary over the whole head (Phi-3's): the pass-through slice is empty, the concat its other part.
    whole = prism.from_torch(partial_rotary, (torch.randn(2, 8, 16), torch.randn(8, 16))).text
    assert "v_cat = v_mul" in whole and "concat" not in whole and "split" not in whole, whole


def test_many_module_classes_are_captured_past_dynamos_recompile_limit():
    # Each export caches a frame on the code it traces, and modules of different classes share
    # their call's code (transformers' decoder layers, GradientCheckpointingLayer.__call__): the
    # ninth met dynamo's recompile limit of 8 before (dynamo_capture.py).
    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def __call__(self, *args, **kwargs):  # as GradientCheckpointingLayer's
            return super().__call__(*args, **kwargs)

        def forward(self, x, scale=None):
            return torch.sigmoid(self.proj(x)) * scale

    for i in range(10):  # ten classes: one frame each on the call code they share
        kind = type(f"Gate{i}", (Gate,), {})
        program = prism.from_torch(kind(), (), example_kwargs={"x": torch.randn(2, 8), "scale": torch.randn(2, 8)})
    assert "sigmoid(" in program.text and "scale: f32[2, 8]" in program.text, program.text


def test_a_module_neither_the_trace_nor_dynamo_takes_says_both_whys():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x  # a branch on values: no one graph

    with pytest.raises(prism.UnsupportedOp, match=r"symbolic trace could not follow DataDependent's Python .*, and "
                                                  r"dynamo could not capture DataDependent as one graph"):
        prism.from_torch(DataDependent(), torch.randn(2, 8))


def test_pieces_of_unequal_sizes_and_a_boolean_mask_are_errors_that_say_what_prism_takes():
    class Uneven(torch.nn.Module):
        def forward(self, x):
            a, b = torch.split(x, [3, 5], dim=-1)
            return a.sum(-1) + b.sum(-1)

    with pytest.raises(prism.UnsupportedOp, match=r"pieces of unequal sizes \[3, 5\]"):
        prism.from_torch(Uneven(), torch.randn(2, 8))

    class Indexed(torch.nn.Module):
        def forward(self, x):
            return x[0] * 2

    with pytest.raises(prism.UnsupportedOp, match=r"indexing by an integer or a tensor \(prism takes slices and None\)"):
        prism.from_torch(Indexed(), torch.randn(2, 8))


def test_equal_pieces_become_one_split_and_a_tuple_return_several_outputs():
    class Halves(torch.nn.Module):
        def forward(self, x):
            first, second = x.chunk(2, dim=-1)
            return first * second, first + second

    program = prism.from_torch(Halves(), torch.randn(2, 8), dims={"x": {0: "n"}})
    assert "v_chunk_0, v_chunk_1 = split(x, 2, axis=-1)" in program.text
    assert "return v_mul, v_add" in program.text and program.returns_tuple


def test_gpt2s_gelu_written_out_is_one_gelu_tanh_unless_a_value_inside_it_is_read():
    transformers = pytest.importorskip("transformers")

    class Written(torch.nn.Module):  # GPT-2's gelu_new (nine nodes) beside a tanh of its own
        def __init__(self):
            super().__init__()
            self.act = transformers.activations.NewGELUActivation()

        def forward(self, x):
            return self.act(x + 1), torch.tanh(x)

    text = prism.from_torch(Written(), torch.randn(2, 8)).text
    assert text.count("gelu_tanh(") == 1 and "gelu_tanh(v_add)" in text and text.count("tanh(") == 2, text
    assert "** 3" not in text and "0.044715" not in text, text

    class Reads(torch.nn.Module):  # the same formula, its tanh read by a second output
        def forward(self, x):
            t = torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0)))
            return 0.5 * x * (1.0 + t), t

    text = prism.from_torch(Reads(), torch.randn(2, 8)).text
    assert "gelu_tanh(" not in text and "0.044715" in text, text


def test_a_reshape_keeps_the_named_dims_symbolic_in_its_target(client):
    class Rows(torch.nn.Module):
        def forward(self, x, y):
            pairs = x.reshape(-1, 32) * 2  # [n, 64] as [2n, 32]
            return pairs.view(x.shape[0], 2, 32).sum(1) + y.reshape(y.shape[0] * y.shape[1], 32)

    program = prism.from_torch(Rows(), (torch.randn(3, 64), torch.randn(3, 1, 32)), dims={"x": {0: "n"}, "y": {0: "n"}})
    assert "reshape(x, [2 * n, 32])" in program.text and "[n, 2, 32]" in program.text and "reshape(y, [n, 32])" in program.text
    assert client.open(text=program.text) == [program.name]

    class Flat(torch.nn.Module):
        def forward(self, x):
            return x.reshape(-1) * 2  # a * b * c elements

    with pytest.raises(prism.UnsupportedOp, match=r"a size \(30\) that is no multiple of a named dim, nor a product of two"):
        prism.from_torch(Flat(), torch.randn(2, 3, 5), dims={"x": {0: "a", 1: "b", 2: "c"}})


def test_transformers_rms_norm_reads_its_inputs_dtype_for_the_cast_back():
    # LlamaRMSNorm keeps `input_dtype = hidden_states.dtype`, computes in f32 and casts back with
    # `.to(input_dtype)`: the cast reads its dtype from the trace, `.dtype` itself is no value.
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = LlamaRMSNorm(64, eps=1e-6)
            self.mlp = LlamaMLP(transformers.LlamaConfig(hidden_size=64, intermediate_size=128))

        def forward(self, x):
            return x + self.mlp(self.norm(x))

    f32 = prism.from_torch(Block().eval(), [torch.randn(8, 64)]).text
    assert "f32(" not in f32 and "bf16(" not in f32 and "rsqrt(" in f32
    bf16 = prism.from_torch(Block().eval().to(torch.bfloat16), [torch.randn(8, 64, dtype=torch.bfloat16)]).text
    assert "= f32(x)" in bf16 and "bf16(v_mul)" in bf16, bf16


def test_a_softmax_or_sum_given_a_dtype_reads_its_input_cast_to_it():
    # Eager attention's `softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)` (Llama's,
    # Phi's): PyTorch casts the input first and gives f32. Written as a bf16 softmax, a piece
    # of Phi's bf16 model that ended at it gave bf16 where the graph's ops gave f32.
    def upcast(x):
        return torch.softmax(x, dim=-1, dtype=torch.float32), x.sum(-1, dtype=torch.float32), x.mean(-1)

    text = prism.from_torch(upcast, [torch.randn(4, 8, dtype=torch.bfloat16)]).text
    assert "softmax(f32(x), axis=-1)" in text and "sum(f32(x), axis=-1" in text and "mean(x, axis=-1" in text, text


@pytest.mark.parametrize("step", [
    lambda x: torch.softmax(x, dim=-1, dtype=torch.float64).float(),  # written as an f32 softmax, once
    lambda x: torch.sum(x, dim=-1, dtype=torch.float64).float(),
    lambda x: (x.to(torch.float64) * 2).float(),                       # written as `None(x)`, once
    lambda x: x * x.to(torch.int32),                                   # truncation, once not said
])
def test_a_result_in_a_dtype_prism_has_not_is_refused_where_it_is_made(step):
    # A float64 accumulation computed in f32 or an integer cast left out is another program: the
    # import names the node, never writes it narrower.
    with pytest.raises(prism.UnsupportedOp, match=r"its result is torch\.(float64|int32) \(prism computes"):
        prism.from_torch(step, [torch.randn(4, 8)])


def test_a_boolean_input_read_as_a_mask_is_a_float_input_and_read_otherwise_an_error():
    # bool_inputs.py: where, masked_fill and ~ read the mask's 1s and 0s; attention's boolean
    # attn_mask is its additive mask. Multiplying by it is no read as a mask.
    class Masked(torch.nn.Module):
        def forward(self, x, mask):
            kept = torch.where(mask, x, 0.0) + x.masked_fill(mask.logical_not(), -1.0)
            return torch.nn.functional.scaled_dot_product_attention(kept, x, x, attn_mask=mask)

    mask = torch.ones(8, 8, dtype=torch.bool).tril()
    program = prism.from_torch(Masked(), (torch.randn(2, 8, 8), mask))
    assert program.boolean_inputs == {"mask": torch.float32}
    assert "mask: f32[8, 8]" in program.text and "where(mask, x, 0.0)" in program.text, program.text
    assert "1.0 - mask" in program.text and "where(mask, 0.0, -inf)" in program.text, program.text

    class Scaled(torch.nn.Module):
        def forward(self, x, mask):
            return x * mask

    with pytest.raises(prism.UnsupportedOp, match=r"'mask' is a boolean tensor read otherwise than as a mask"):
        prism.from_torch(Scaled(), (torch.randn(8, 8), mask))


def test_masked_fill_by_a_computed_condition_is_a_select():
    class Clipped(torch.nn.Module):
        def forward(self, x):
            return x.masked_fill(x < 0, 0.5) + torch.masked_fill(x, x > 1, 2.0)

    text = prism.from_torch(Clipped(), torch.randn(4, 8)).text
    assert "where(v_lt, 0.5, x)" in text and "where(v_gt, 2.0, x)" in text, text


def test_python_torch_fx_cannot_follow_is_an_unsupported_op_that_names_the_module():
    class Branchy(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # control flow on a value: symbolic tracing cannot follow it
                return x * 2
            return x

    with pytest.raises(prism.UnsupportedOp, match=r"torch.fx's symbolic trace could not follow Branchy's Python "
                                                  r"\(TraceError: .*torch.compile\(model, backend=\"prism\"\)"):
        prism.from_torch(Branchy(), torch.randn(2, 8))
