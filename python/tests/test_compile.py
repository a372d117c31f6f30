"""prism.compile: modules written as PyTorch writes them, called through prism's tuned kernels."""
import copy
import os
import signal
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import prism  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
from layers import BertIntermediate, GPT2MLP, LlamaAttentionBlock, LlamaMLPBlock, Phi3MLP, ResidualRMSNorm  # noqa: E402

DIM, HIDDEN = 64, 128


def scaled_dot_product_attention(query, key, value, attn_mask=None, scale=None):
    """PyTorch 2's F.scaled_dot_product_attention as its documentation defines it, for PyTorch 1.13
    (which lacks it): a leaf of the trace, which from_torch translates by its name."""
    scale = 1.0 / query.shape[-1] ** 0.5 if scale is None else scale
    scores = query @ key.transpose(-2, -1) * scale
    if attn_mask is not None and attn_mask.dtype == torch.bool:  # True: attend
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    elif attn_mask is not None:
        scores = scores + attn_mask
    return torch.softmax(scores, dim=-1) @ value


torch.fx.wrap("scaled_dot_product_attention")


def close(got, want, rtol, atol):
    """The tuner's rule (tune/compare.h): |got - want| <= rtol |want| + atol max|want|."""
    scale = want.abs().max()
    return bool(((got.float() - want).abs() <= rtol * want.abs() + atol * scale).all())


def outlier_rows(n):
    """Activations as a trained model has them: mostly small, a few channels 20x larger."""
    x = torch.randn(n, DIM)
    x[:, 3] *= 20
    x[:, 17] *= -20
    return x


def compile_of(module, **kwargs):
    return prism.compile(module, torch.randn(4, DIM), dims={"x": {0: "n"}}, top=1, **kwargs)


@pytest.fixture
def compiled_of(shared_daemon):
    made = []

    def make(module, **kwargs):
        made.append(compile_of(module, **kwargs))
        return made[-1]

    yield make
    for c in made:
        c.close()


@pytest.mark.parametrize("layer", [LlamaMLPBlock, GPT2MLP, BertIntermediate])
def test_a_compiled_module_gives_the_modules_values_at_two_token_counts(compiled_of, layer):
    torch.manual_seed(0)
    module = layer(DIM, HIDDEN).eval()
    with torch.no_grad():  # a trained RMSNorm's gain is not all ones
        for p in module.parameters():
            if p.dim() == 1:
                p.add_(torch.rand_like(p))
    compiled = compiled_of(module)
    assert compiled.search["candidates"] > 0
    for n in (3, 8):
        x = outlier_rows(n)
        got = compiled(x)
        with torch.no_grad():
            want = module(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert close(got, want, 1e-3, 1e-4)
        kernel = compiled.kernels[(("n", n),)]  # the tune's best, or the eager plan where it won
        assert kernel.tune["best"]["ok"] and (kernel.eager or kernel.tune["best"]["candidate"] == kernel.candidate)


def test_a_bf16_module_matches_at_bf16s_tolerance(shared_daemon):
    torch.manual_seed(1)
    half = BertIntermediate(DIM, HIDDEN).eval().to(torch.bfloat16)
    compiled = prism.compile(half, torch.randn(4, DIM, dtype=torch.bfloat16), dims={"x": {0: "n"}}, top=1)
    x = outlier_rows(5).to(torch.bfloat16)
    got = compiled(x)
    assert got.dtype == torch.bfloat16
    with torch.no_grad():  # the bf16 weights and inputs, computed in f32
        want = copy.deepcopy(half).float()(x.float())
    assert close(got, want, 5e-2, 5e-2)
    compiled.close()


def test_a_new_shape_is_tuned_once_and_the_parameters_are_read_at_each_call(compiled_of):
    torch.manual_seed(2)
    module = BertIntermediate(DIM, HIDDEN).eval()
    compiled = compiled_of(module)
    x = torch.randn(6, DIM)
    first = compiled(x)
    kernel = compiled.kernels[(("n", 6),)]
    compiled(x)
    assert compiled.kernels[(("n", 6),)] is kernel and len(compiled.kernels) == 1
    with torch.no_grad():
        module.dense.bias.add_(1.0)  # the callable sees the module's weights as they are now
        want = module(x)
    assert close(compiled(x), want, 1e-3, 1e-4) and not close(first, want, 1e-3, 1e-4)
    # A parameter replaced by another (as loading a quantized or a fresh copy does) is read too,
    # and a call of another dtype is still checked after calls that passed.
    module.dense.bias = torch.nn.Parameter(torch.randn(HIDDEN))
    with torch.no_grad():
        assert close(compiled(x), module(x), 1e-3, 1e-4)
    with pytest.raises(TypeError, match=r"input 'x' is torch.float64"):
        compiled(x.double())


class InPlaceResidual(torch.nn.Module):
    """A projection of its input shifted in place, as some modeling code writes into a tensor it
    was given."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(DIM, DIM)

    def forward(self, x):
        x += 1.0
        return self.proj(x)


class _Unreachable:
    """A client or check that must not be reached: any use fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"a call seen before reached {name}")

    def __call__(self, *args, **kwargs):
        raise AssertionError("a call seen before was checked again")


def test_a_call_seen_before_runs_the_kernel_on_the_callers_memory_with_no_check_and_no_daemon(compiled_of,
                                                                                             monkeypatch):
    torch.manual_seed(3)
    module = LlamaMLPBlock(DIM, HIDDEN).eval()
    compiled = compiled_of(module)
    x = outlier_rows(5)
    with torch.no_grad():
        want = module(x)
    assert close(compiled(x), want, 1e-3, 1e-4)  # checked, tuned and loaded
    pointers = []
    run = prism.Kernel.run
    monkeypatch.setattr(prism.Kernel, "run", lambda self, ins, outs, device=None: (
        pointers.append([t.data_ptr() for t in ins]), run(self, ins, outs, device)))
    monkeypatch.setattr(compiled, "_client", _Unreachable())
    monkeypatch.setattr(compiled, "_bind", _Unreachable())
    assert close(compiled(x), want, 1e-3, 1e-4)
    # The kernel read the caller's tensors where they lie: the activations and the weights.
    assert pointers == [[t.data_ptr() for t in compiled.program.arguments(module, x)]]
    # Strides are no part of a call's signature: a transposed view of the same shape is made
    # contiguous for the kernel, whose values are the same.
    strided = x.t().contiguous().t()
    assert not strided.is_contiguous() and close(compiled(strided), want, 1e-3, 1e-4)
    assert pointers[-1][0] != strided.data_ptr()
    # A signature not seen before is checked.
    with pytest.raises(AssertionError, match="checked again"):
        compiled(outlier_rows(6))


def test_the_first_call_at_new_sizes_is_compared_with_the_module_once(compiled_of):
    torch.manual_seed(6)
    module = InPlaceResidual().eval()
    compiled = compiled_of(module)
    calls = []
    module.register_forward_hook(lambda *_: calls.append(1))
    x = outlier_rows(5)
    before = x.clone()
    with torch.no_grad():
        want = module(x.clone())
    calls.clear()
    assert close(compiled(x), want, 1e-3, 1e-4) and len(calls) == 1  # the kernel's, checked by the module's
    assert torch.equal(x, before), "the module wrote into a copy of the input, not the caller's"
    assert close(compiled(x), want, 1e-3, 1e-4) and len(calls) == 1  # at sizes checked, the kernel alone


def test_a_kernel_that_disagrees_with_the_module_leaves_those_sizes_to_it_with_a_warning(compiled_of, monkeypatch):
    torch.manual_seed(7)
    module = LlamaMLPBlock(DIM, HIDDEN).eval()
    compiled = compiled_of(module)
    run = prism.Kernel.run

    def off_by_one(self, ins, outs, device=None):  # a wrong kernel, as a bug in prism would make
        run(self, ins, outs, device)
        outs[0].add_(1.0)

    monkeypatch.setattr(prism.Kernel, "run", off_by_one)
    x = outlier_rows(5)
    with torch.no_grad():
        want = module(x)
    with pytest.warns(RuntimeWarning, match=r"at n=5: on this call's inputs prism's kernel is [0-9.]+ from the module, "
                                            r".*the module runs at these sizes \(a bug: please report it\)"):
        got = compiled(x)
    assert torch.equal(got, want)
    monkeypatch.setattr(prism.Kernel, "run", _Unreachable())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert torch.equal(compiled(x), want)
    monkeypatch.setattr(prism.Kernel, "run", run)
    y = outlier_rows(6)  # other sizes: checked, and the kernel's
    with torch.no_grad():
        assert close(compiled(y), module(y), 1e-3, 1e-4)
    assert (("n", 6),) in compiled.kernels


def test_wrong_device_dtype_or_fixed_size_is_an_error_that_says_what_the_program_takes(compiled_of):
    compiled = compiled_of(BertIntermediate(DIM, HIDDEN).eval())
    with pytest.raises(TypeError, match=r"input 'x' is torch.float64, the program takes torch.float32"):
        compiled(torch.randn(3, DIM, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"input 'x' is on meta; this callable runs on the CPU"):
        compiled(torch.empty(3, DIM, device="meta"))
    with pytest.raises(ValueError, match=r"size 32 on axis 1, the program takes 64 \(\[n, 64\]\); name it in dims="):
        compiled(torch.randn(3, 32))
    with pytest.raises(ValueError, match=r"has 3 dims, the program takes 2"):
        compiled(torch.randn(2, 3, DIM))
    with pytest.raises(ValueError, match=r"prism.compile's targets are 'cpu' and 'cuda', not 'tpu'"):
        prism.compile(BertIntermediate(DIM, HIDDEN), torch.randn(4, DIM), target="tpu")


def test_an_input_sized_by_an_arithmetic_of_dims_gives_its_dim():
    # A piece's input of `2 * s16` rows (the batch times dynamo's sequence length) binds s16;
    # every expression is then checked against its size by the caller, `_bind`.
    from prism.compiled import _solved_first, size_of

    bindings = {"n": 3}
    sized = [("2 * s16", 24, "x", 0), ("s16 + 1", 13, "cache", 2), ("n * m", 12, "y", 0)]
    assert _solved_first(sized, bindings) == sized and bindings == {"n": 3, "s16": 12, "m": 4}
    assert all(size_of(dim, bindings) == size for dim, size, *_ in sized)
    with pytest.raises(ValueError, match="the inputs' sizes do not give dims a, b"):
        _solved_first([("a * b", 12, "x", 0)], {})


def test_an_nn_sequential_whose_parameters_are_named_by_numbers_compiles(shared_daemon):
    # nn.Sequential names its layers 0, 1, 2: `0.weight` is the prism input `_0_weight`.
    torch.manual_seed(7)
    mlp = torch.nn.Sequential(torch.nn.Linear(DIM, HIDDEN), torch.nn.SiLU(), torch.nn.Linear(HIDDEN, DIM)).eval()
    compiled = prism.compile(mlp, torch.randn(4, DIM), dims={"input": {0: "n"}}, top=1)
    assert "_0_weight: f32[" in compiled.program.text
    x = outlier_rows(3)
    with torch.no_grad():
        assert close(compiled(x), mlp(x), 1e-4, 1e-4)
    compiled.close()


def test_a_function_that_closes_over_a_weight_compiles(shared_daemon):
    # The tracer keeps the weight it met as a constant of its root: an input read at each call.
    torch.manual_seed(8)
    weight = torch.randn(HIDDEN, DIM) * 0.1

    def project(x):
        return torch.relu(x @ weight.T)

    compiled = prism.compile(project, torch.randn(4, DIM), dims={"x": {0: "n"}}, top=1)
    x = outlier_rows(3)
    assert close(compiled(x), project(x), 1e-4, 1e-4)
    compiled.close()


def test_a_daemon_that_went_away_is_started_again_at_the_next_new_shape(shared_daemon):
    module = LlamaMLPBlock(DIM, HIDDEN).eval()
    compiled = compile_of(module)
    x = torch.randn(2, DIM)
    compiled(x)
    os.kill(compiled._client.status()["pid"], signal.SIGKILL)
    assert close(compiled(x), module(x).detach(), 1e-3, 1e-4)  # a loaded kernel needs no daemon
    y = torch.randn(7, DIM)
    assert close(compiled(y), module(y).detach(), 1e-3, 1e-4)  # tuned by a new daemon
    compiled.close()


def test_a_chunked_projection_and_a_tuple_of_outputs_are_imported_and_run(compiled_of):
    torch.manual_seed(3)
    phi3 = Phi3MLP(DIM, HIDDEN).eval()
    x = outlier_rows(5)
    with torch.no_grad():
        assert close(compiled_of(phi3)(x), phi3(x), 1e-3, 1e-4)
    norm = ResidualRMSNorm(DIM).eval()
    with torch.no_grad():
        norm.norm.weight.add_(torch.rand(DIM))
    both = prism.compile(norm, (torch.randn(4, DIM), torch.randn(4, DIM)), dims={"x": {0: "n"}, "residual": {0: "n"}},
                         top=1)
    residual = torch.randn(5, DIM)
    got = both(x, residual)
    with torch.no_grad():
        want = norm(x, residual)
    assert isinstance(got, tuple) and len(got) == 2
    assert all(close(g, w, 1e-3, 1e-4) for g, w in zip(got, want))
    both.close()


class CausalAttention(torch.nn.Module):
    """Attention over cached keys as a decoder calls it: an additive mask, -inf after each query."""

    def forward(self, q, k, v, mask):
        return scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_scaled_dot_product_attention_with_a_minus_inf_causal_mask(shared_daemon):
    torch.manual_seed(4)
    heads, queries, keys, width = 2, 4, 8, 16
    q, k, v = (torch.randn(heads, n, width) for n in (queries, keys, keys))
    mask = torch.zeros(queries, keys)
    for i in range(queries):
        mask[i, keys - queries + i + 1:] = float("-inf")
    module = CausalAttention()
    compiled = prism.compile(module, (q, k, v, mask), top=1)  # every size fixed: tuned at no bindings
    # The softmax written out, its row max kept at or above f32's lowest: a row masked whole is 0.
    assert "maximum(max(" in compiled.program.text and ".mT * 0.25" in compiled.program.text
    got = compiled(q * 4, k, v, mask)  # scores of tens: exp overflows without the max subtracted
    want = module(q * 4, k, v, mask)
    assert torch.isfinite(got).all() and close(got, want, 1e-3, 1e-4)
    # A query that attends nothing (a padded row): 0, as PyTorch's fused CPU kernel gives for 4-D
    # inputs (its math kernel, which these 3-D ones take, gives NaN).
    mask[1] = float("-inf")
    got, want = compiled(q, k, v, mask), module(q, k, v, mask)
    assert torch.equal(got[:, 1], torch.zeros_like(got[:, 1]))
    assert close(got[:, [0, 2, 3]], want[:, [0, 2, 3]], 1e-3, 1e-4)
    compiled.close()


def test_is_causal_attention_compiles_with_the_mask_the_call_makes(shared_daemon):
    # `is_causal=True` (transformers' sdpa path when nothing is padded): the program takes the
    # additive causal mask as an input at the dims' sizes, made by the call, not passed by the
    # caller. Before, from_torch refused it ("prism has no mask of its own yet").
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        pytest.skip("is_causal is PyTorch 2's scaled_dot_product_attention's")
    torch.manual_seed(8)

    def causal(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    def inputs(n):
        return tuple(torch.randn(2, n, 16) * 4 for _ in range(3))

    compiled = prism.compile(causal, inputs(4), dims={name: {1: "n"} for name in "qkv"}, top=1)
    assert "causal_mask: f32[1, n, n]" in compiled.program.text, compiled.program.text
    for n in (6, 9, 6):
        q, k, v = inputs(n)
        got, want = compiled(q, k, v), causal(q, k, v)
        assert torch.isfinite(got).all() and close(got, want, 1e-3, 1e-4)
    compiled.close()


class BooleanMaskAttention(torch.nn.Module):
    """Attention given a boolean mask (True: attend), read both ways models read one: as
    scaled_dot_product_attention's attn_mask, and by `masked_fill(~mask, finfo.min)` before the
    softmax (eager attention)."""

    def forward(self, q, k, v, mask):
        fused = scaled_dot_product_attention(q, k, v, attn_mask=mask)
        scores = (q @ k.transpose(-2, -1) * 0.25).masked_fill(~mask, torch.finfo(torch.float32).min)
        return fused + torch.softmax(scores, dim=-1) @ v


def test_a_boolean_mask_argument_is_passed_as_floats_and_masks_as_the_module_does(shared_daemon):
    torch.manual_seed(6)

    def inputs(n):
        q, k, v = (torch.randn(2, n, 16) * 4 for _ in range(3))  # scores of tens
        mask = torch.ones(n, n, dtype=torch.bool).tril()
        mask[:, 1] = False  # a key padded: every query still attends key 0
        return q, k, v, mask

    module = BooleanMaskAttention()
    dims = {"q": {1: "n"}, "k": {1: "n"}, "v": {1: "n"}, "mask": {0: "n", 1: "n"}}
    compiled = prism.compile(module, inputs(4), dims=dims, top=1)
    # The mask is an f32 input of 1 and 0: attention's additive mask is a select by it, and
    # `~mask` is 1 - mask.
    text = compiled.program.text
    assert "mask: f32[n, n]" in text and "where(mask, 0.0, -inf)" in text and "1.0 - mask" in text, text
    for n in (6, 9):
        q, k, v, mask = inputs(n)
        got, want = compiled(q, k, v, mask), module(q, k, v, mask)
        assert torch.isfinite(got).all() and close(got, want, 1e-3, 1e-4)
    with pytest.raises(TypeError, match=r"input 'mask' is torch.float32, the program takes a boolean mask"):
        compiled(q, k, v, mask.float())
    compiled.close()


def test_a_transformers_decoder_layer_called_with_keywords_compiles_whole(shared_daemon):
    # dynamo_capture.py: LlamaDecoderLayer as the model calls it (keywords, the rotary tables as
    # a pair, a boolean mask with a padded key, passed as the additive mask attention alone
    # reads), symbolic in the token count: its norms, attention and MLP one program, one search.
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(7)
    llama = transformers.models.llama.modeling_llama
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=128)
    config._attn_implementation = "sdpa"
    layer, rope = llama.LlamaDecoderLayer(config, layer_idx=0).eval(), llama.LlamaRotaryEmbedding(config)

    def inputs(n):
        x = outlier_rows(n)[None].repeat(2, 1, 1)
        mask = torch.ones(n, n, dtype=torch.bool).tril()[None, None].repeat(2, 1, 1, 1)
        mask[1, :, :, 1] = False  # the second sequence's key 1 padded
        return {"hidden_states": x, "attention_mask": mask, "position_embeddings": rope(x, torch.arange(n)[None])}

    dims = {"hidden_states": {1: "n"}, "attention_mask": {2: "n", 3: "n"}, "position_embeddings_0": {1: "n"},
            "position_embeddings_1": {1: "n"}}
    compiled = prism.compile(layer, (), example_kwargs=inputs(4), dims=dims, top=1)
    assert "attention_mask: f32[2, 1, n, n]" in compiled.program.text and "mlp_down_proj_weight" in compiled.program.text
    for n in (6, 9):
        kwargs = inputs(n)
        got = compiled(**kwargs)
        with torch.no_grad():
            want = layer(**kwargs)
        assert not compiled.kernels[(("n", n),)].eager
        assert torch.isfinite(got).all() and close(got, want, 1e-3, 1e-4)
    with pytest.raises(TypeError, match=r"'attention_mask' is NoneType"):
        compiled(**{**inputs(6), "attention_mask": None})
    compiled.close()


def test_a_decoder_attention_block_with_head_views_runs_under_a_causal_minus_inf_mask(shared_daemon):
    torch.manual_seed(5)
    heads, cached = 4, 16
    module = LlamaAttentionBlock(DIM, heads).eval()
    with torch.no_grad():
        module.input_layernorm.weight.add_(torch.rand(DIM))

    def inputs(n):
        k, v = torch.randn(heads, cached, DIM // heads), torch.randn(heads, cached, DIM // heads)
        mask = torch.zeros(n, cached)
        for i in range(n):  # the new rows are the cache's last: each sees its past and itself
            mask[i, cached - n + i + 1:] = float("-inf")
        return outlier_rows(n), k, v, mask

    dims = {"x": {0: "n"}, "mask": {0: "n"}}
    compiled = prism.compile(module, inputs(4), dims=dims, top=1)
    # The heads' reshapes keep n symbolic, and the search cuts the block where they are.
    assert "reshape(v_q_proj, [n, 4, 16])" in compiled.program.text
    for n in (2, 5):
        x, k, v, mask = inputs(n)
        got = compiled(x, k, v, mask)
        with torch.no_grad():
            want = module(x, k, v, mask)
        assert torch.isfinite(got).all() and close(got, want, 1e-3, 1e-4)
        kernel = compiled.kernels[(("n", n),)]
        assert kernel.eager or "pieces cut" in kernel.tune["best"]["summary"]
    compiled.close()


def test_where_the_eager_plan_beat_every_family_it_runs_and_a_warning_says_so(compiled_of, monkeypatch):
    real_tune = prism.Client.tune

    def eager_won(self, *args, **kwargs):  # as a tune at a shape where no fused kernel wins reports
        result = real_tune(self, *args, **kwargs)
        result["speedup"] = 0.5
        return result

    monkeypatch.setattr(prism.Client, "tune", eager_won)
    torch.manual_seed(5)
    module = GPT2MLP(DIM, HIDDEN).eval()
    compiled = compiled_of(module)
    x = outlier_rows(4)
    with pytest.warns(RuntimeWarning, match=r"no fused kernel for 'gpt2mlp_[0-9a-f]{8}' at n=4 beat prism's eager plan"):
        got = compiled(x)
    kernel = compiled.kernels[(("n", 4),)]
    assert kernel.eager and kernel.candidate == 0 and "eager" in kernel.summary
    with torch.no_grad():
        assert close(got, module(x), 1e-3, 1e-4)


class Scaled(torch.nn.Module):
    """One class, a constant per instance: two instances import as two programs of one name."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.exp(x) * self.k


def test_two_modules_imported_under_one_name_each_run_their_own_program(compiled_of):
    twice, thrice = compiled_of(Scaled(2.0)), compiled_of(Scaled(3.0))
    assert twice.program.name != thrice.program.name and twice.program.name.startswith("scaled_")
    x = torch.randn(5, DIM)
    assert close(thrice(x), torch.exp(x) * 3.0, 1e-3, 1e-4)
    assert close(twice(x), torch.exp(x) * 2.0, 1e-3, 1e-4)  # tuned after the other was opened
    again = compiled_of(Scaled(2.0))
    assert again.program.name == twice.program.name  # the same text, the same name: the DB answers it


class WithACumsum(torch.nn.Module):
    """A projection and its GELU, an op prism lacks (cumsum), then a scaled softmax."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(DIM, HIDDEN)
        self.act = torch.nn.GELU()

    def forward(self, x):
        h = torch.cumsum(self.act(self.fc(x)), dim=-1)
        return torch.softmax(h * 0.01, dim=-1)


def test_torch_backend_compiles_the_parts_prism_expresses_and_leaves_the_rest_to_pytorch(shared_daemon):
    torch.manual_seed(6)
    module = WithACumsum().eval()
    x = outlier_rows(3)
    graph = torch.fx.symbolic_trace(module)  # what torch.compile hands a backend: an FX graph and inputs
    compiled = prism.torch_backend(graph, [x], top=1)
    names = [name for name, _ in compiled.prism_partitions]
    assert len(names) == 2 and not compiled.prism_skipped, (names, compiled.prism_skipped)
    assert "cumsum" in compiled.code  # still PyTorch's
    with torch.no_grad():
        assert close(compiled(x), module(x), 1e-3, 1e-4)
    for _, partition in compiled.prism_partitions:
        partition.close()


def test_torch_backend_leaves_a_node_prism_cannot_import_to_pytorch_and_says_why(shared_daemon):
    def total(x):
        return (torch.exp(x) * 2).sum()  # a sum over every dim: from_torch asks for one

    # The node the importer refuses is PyTorch's, with its reason; the piece before it is prism's.
    x = torch.randn(3, DIM)
    with pytest.warns(RuntimeWarning, match=r"PyTorch runs these ops of the graph:\n  'sum_1' \(sum\) at .*: "
                                            r"a reduction over every dim"):
        compiled = prism.torch_backend(torch.fx.symbolic_trace(total), [x], top=1)
    assert not compiled.prism_skipped and len(compiled.prism_partitions) == 1
    assert "exp(" in compiled.prism_partitions[0][1].program.text
    assert close(compiled(x), total(x), 1e-5, 1e-6)


def test_where_no_family_passed_its_check_the_eager_plan_runs_and_a_warning_says_so(compiled_of, monkeypatch):
    real_tune = prism.Client.tune

    def none_passed(self, *args, **kwargs):  # as a tune whose every family failed its check reports
        result = real_tune(self, *args, **kwargs)
        result["best"], result["speedup"] = None, 0
        return result

    monkeypatch.setattr(prism.Client, "tune", none_passed)
    module = BertIntermediate(DIM, HIDDEN).eval()
    compiled = compiled_of(module)
    x = outlier_rows(2)
    with pytest.warns(RuntimeWarning, match=r"no fused kernel for 'bertintermediate_[0-9a-f]{8}' at n=2 passed its check"):
        got = compiled(x)
    assert compiled.kernels[(("n", 2),)].eager
    with torch.no_grad():
        assert close(got, module(x), 1e-3, 1e-4)


def test_two_callables_of_one_program_share_one_library_and_take_turns_on_it(compiled_of):
    torch.manual_seed(8)
    module = BertIntermediate(DIM, HIDDEN).eval()
    first, second = compiled_of(module), compiled_of(module)
    x = outlier_rows(4)
    first(x), second(x)
    a, b = first.kernels[(("n", 4),)], second.kernels[(("n", 4),)]
    # One file is one dlopen handle, whose tensor table both callables' calls write: one lock.
    assert a.library == b.library and a._runner._lock is b._runner._lock


def test_a_cuda_callable_takes_tensors_on_a_cuda_device_only(compiled_of):
    compiled = compiled_of(BertIntermediate(DIM, HIDDEN).eval(), target="cuda")  # searched; tuned at a call
    with pytest.raises(ValueError, match=r"input 'x' is on cpu; this callable runs on the GPU"):
        compiled(torch.randn(3, DIM))


def test_the_plan_library_refuses_a_malformed_plan_in_words():
    lib = prism.compiled._plan_library()
    assert lib.prism_plan_load(b"kernel k\n") is None
    assert lib.prism_plan_error().decode()  # what was wrong, in words


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for PyTorch")
@pytest.mark.parametrize("layer", [LlamaMLPBlock, GPT2MLP, BertIntermediate])
def test_on_a_gpu_a_compiled_module_gives_the_modules_values_at_two_token_counts(compiled_of, layer):
    torch.manual_seed(9)
    module = layer(DIM, HIDDEN).eval().cuda()
    compiled = compiled_of(module, target="cuda")
    for n in (3, 8):
        x = outlier_rows(n).cuda()
        got = compiled(x)
        with torch.no_grad():
            want = module(x)
        assert got.device == want.device and close(got, want, 1e-3, 1e-4)


class LayerNormLinear(torch.nn.Module):
    """A pre-norm projection as GPT-2 and BERT write it: nn.LayerNorm with its gain and bias."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim, eps=1e-5)
        self.proj = torch.nn.Linear(dim, hidden)

    def forward(self, x):
        return self.proj(self.norm(x))


def test_layernorm_is_as_accurate_as_pytorch_on_rows_with_a_large_mean(compiled_of):
    """A residual stream with a DC offset (docs/design.md, "Numerics"): a mean of 4096 beside a
    spread of 1, judged against the module in f64. A LayerNorm centred once on a mean summed in f32
    is off by the rounding of that sum; centred twice it is within PyTorch's own f32 error."""
    torch.manual_seed(2)
    module = LayerNormLinear(DIM, HIDDEN).eval()
    with torch.no_grad():
        module.norm.weight.add_(torch.rand(DIM))
        module.norm.bias.add_(torch.rand(DIM))
    compiled = compiled_of(module)
    assert compiled.search["candidates"] > 0
    x = torch.randn(6, DIM) + 4096
    got = compiled(x)
    with torch.no_grad():
        exact = copy.deepcopy(module).double()(x.double())
        torch_error = (module(x).double() - exact).abs().max().item()
    assert (got.double() - exact).abs().max().item() <= max(torch_error, 1e-4)
    kernel = compiled.kernels[(("n", 6),)]
    assert kernel.tune["best"]["ok"]


_COMPILE_AND_CALL = """
import json, sys
import torch, prism
sys.path.insert(0, {examples!r})
from layers import LlamaMLPBlock
torch.manual_seed(0)
module = LlamaMLPBlock({dim}, {hidden}).eval()
compiled = prism.compile(module, torch.randn(4, {dim}), dims={{"x": {{0: "n"}}}}, top=1)
x = torch.randn(2, {dim})
got, want = compiled(x), module(x).detach()
tune = next(iter(compiled.kernels.values())).tune
print(json.dumps({{"searched": not compiled.search["stats"]["fromStore"], "tuned": not tune["fromDb"],
                  "provisional": tune["provisional"], "error": float((got - want).abs().max() / want.abs().max())}}))
"""


def test_a_tune_under_load_is_kept_and_a_second_process_neither_searches_nor_tunes(daemon_env, monkeypatch):
    """A busy machine (every round disagrees) no longer costs the next process its search and tune:
    the result is stored as provisional and answered at once (docs/tuning.md, "Provisional
    results"), the search from the search store, each process with a daemon of its own."""
    import json
    import subprocess

    monkeypatch.setenv("PRISM_TUNE_NOISE_LIMIT", "1e-12")
    monkeypatch.setenv("PRISM_TUNE_PROVISIONAL", "keep")  # answered even on a quiet machine
    script = _COMPILE_AND_CALL.format(examples=os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"),
                                      dim=DIM, hidden=HIDDEN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    def process():
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        prism.Client().stop_daemon()  # the next process starts its own
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second = process(), process()
    assert first["searched"] and first["tuned"] and first["provisional"]
    assert not second["searched"] and not second["tuned"] and second["provisional"]
    assert first["error"] < 1e-4 and second["error"] < 1e-4
