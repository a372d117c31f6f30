"""torch.compile(model, backend="prism") on PyTorch 2: transformers' own modules at [batch, seq,
hidden], sizes dynamo lets vary as prism dims, autograd left alone, and every op prism leaves to
PyTorch named with its source line (docs/python.md, "torch.compile")."""
import os
import re
import shutil
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs PyTorch 2", allow_module_level=True)
transformers = pytest.importorskip("transformers")

import prism  # noqa: E402
from prism import piece_calls, errors  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.models.llama.modeling_llama import (  # noqa: E402
    LlamaDecoderLayer, LlamaMLP, LlamaRMSNorm, LlamaRotaryEmbedding, apply_rotary_pos_emb, repeat_kv)

HIDDEN = 64
BACKEND = sys.modules["prism.torch_backend"]


def activations(batch, seq, scale=1.0):
    """[batch, seq, hidden] as a residual stream has them: a few channels 20x the others."""
    x = torch.randn(batch, seq, HIDDEN) * scale
    x[..., 3] *= 20
    x[..., 17] *= -20
    return x


class LlamaMLPBlock(torch.nn.Module):
    """transformers' own LlamaRMSNorm and LlamaMLP with the residual add, as a decoder layer's
    second half; weights drawn, gains not ones."""

    def __init__(self):
        super().__init__()
        config = LlamaConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN)
        self.norm, self.mlp = LlamaRMSNorm(HIDDEN, eps=1e-6), LlamaMLP(config)
        with torch.no_grad():
            for p in self.parameters():
                p.normal_(0.0, 0.2)
            self.norm.weight.add_(1.0)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


def test_the_backend_is_registered_by_name_whichever_is_imported_first():
    for first, second in (("prism", "torch"), ("torch", "prism")):
        code = f"import {first}, {second}, torch._dynamo; print('prism' in torch._dynamo.list_backends(exclude_tags=()))"
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), ".."))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.stdout.strip() == "True", (first, out.stderr[-2000:])


def test_an_installed_package_is_found_by_dynamo_through_its_entry_point(tmp_path):
    # Built from a copy: the build leaves its build/ and egg-info beside the sources.
    source = os.path.join(os.path.dirname(__file__), "..")
    package = tmp_path / "src"
    shutil.copytree(os.path.join(source, "prism"), package / "prism", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(source, "pyproject.toml"), package)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path / "site"), str(package)],
                   check=True, capture_output=True, timeout=300, cwd=str(tmp_path))
    code = ("import sys, torch\nfrom torch._dynamo.backends.registry import lookup_backend\n"
            "print(lookup_backend('prism').__module__, 'prism' in sys.modules)")  # no `import prism`
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(tmp_path / "site")),
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert out.stdout.split() == ["prism.torch_backend", "True"], out.stderr[-2000:]


def test_a_transformers_mlp_block_runs_in_prism_at_every_sequence_length_with_one_recompile(shared_daemon, spy):
    torch.manual_seed(0)
    block = LlamaMLPBlock().eval()
    compiled = torch.compile(block, backend=spy)
    with torch.no_grad():
        for seq in (5, 7, 9, 12):
            x = activations(2, seq)
            want = block(x)
            got = compiled(x)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), seq
    # Dynamo compiles the first size, then once more with the sequence length as a SymInt; the
    # block works row by row, so prism folds [2, seq, 64] into rows: 10 at the first size, the dim
    # `rows` at the second, whose one program serves 7, 9 and 12.
    assert len(spy.graphs) == 2
    texts = [compiled_part.program.text for graph in spy.graphs for _, compiled_part in graph.prism_partitions]
    assert len(texts) == 2, [graph.prism_skipped for graph in spy.graphs]
    assert "f32[10, 64]" in texts[0]
    assert "f32[rows, 64]" in texts[1], texts[1]


def test_gpt2s_conv1d_mlp_is_one_program_of_rows_at_every_sequence_length(shared_daemon, spy):
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP

    torch.manual_seed(4)
    mlp = GPT2MLP(4 * HIDDEN, GPT2Config(n_embd=HIDDEN)).eval()  # addmm on x.view(-1, d), view back
    compiled = torch.compile(mlp, backend=spy)
    with torch.no_grad():
        for seq in (5, 7, 11):
            x = activations(2, seq, scale=0.5)
            want = mlp(x)
            assert torch.allclose(compiled(x), want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), seq
    texts = [c.program.text for graph in spy.graphs for _, c in graph.prism_partitions]
    # Both Conv1Ds and the tanh GELU in one program, the leading dims folded into rows: [10, 64]
    # at the first size, then the dim `rows` for every later one.
    assert len(texts) == 2, [graph.prism_skipped for graph in spy.graphs]
    assert "f32[10, 64]" in texts[0] and texts[0].count("@") == 2
    # GPT-2's gelu_new, written out as arithmetic, is one gelu_tanh (fx_formulas.py).
    assert all(t.count("gelu_tanh(") == 1 and t.count("tanh(") == 1 for t in texts), texts
    assert "f32[rows, 64]" in texts[1] and "reshape(" not in texts[1]


class RowsThenNorm(torch.nn.Module):
    """OPT's last decoder layer and head as transformers writes them: the MLP and its residual on
    `x.reshape(-1, d)`, viewed back to [batch, seq, hidden] before the final LayerNorm and the LM
    head."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(HIDDEN, 2 * HIDDEN), torch.nn.Linear(2 * HIDDEN, HIDDEN)
        self.norm, self.head = torch.nn.LayerNorm(HIDDEN), torch.nn.Linear(HIDDEN, 2 * HIDDEN, bias=False)

    def forward(self, x):
        shape = x.shape
        rows = x.reshape(-1, shape[-1])
        rows = rows + self.fc2(torch.relu(self.fc1(rows)))
        return self.head(self.norm(rows.view(shape)))


def test_a_piece_reads_the_rows_another_left_through_pytorchs_view(shared_daemon, spy):
    # The second piece starts with the view of the first's rows: PyTorch views them (free) and the
    # piece reads them as [batch, seq, hidden], which fold_rows folds and gives back; left in, the
    # view kept the piece from folding (no input gives [batch, seq] back) and, with the length a
    # dim, made it an input of `2 * s` rows whose `s` no input named.
    torch.manual_seed(6)
    model = RowsThenNorm().eval()
    compiled = torch.compile(model, backend=spy)
    with torch.no_grad():
        for seq in (5, 7, 9):
            x = activations(2, seq)
            got, want = compiled(x), model(x)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), seq
    assert len(spy.graphs) == 2
    for graph in spy.graphs:
        assert not graph.prism_skipped, graph.prism_skipped
        texts = [c.program.text for _, c in graph.prism_partitions]
        assert len(texts) == 2 and not any("reshape(" in t for t in texts), texts


def test_a_matmul_by_a_batched_input_is_not_folded_into_rows(shared_daemon, spy):
    # The rotary's angles as transformers writes them, `inv_freq[b, e, 1] @ positions[b, 1, s]`:
    # the second operand is batched, not a weight, so the piece's rows are not the product's.
    # Folded as [b * e, 1] @ [b, 1, s], its kernel wrote b * b * e * s elements into an output of
    # b * e * s and corrupted the heap (a double free in PyTorch's next op).
    def angles(inv_freq, positions):
        return (inv_freq @ positions) * 2.0

    inv_freq, positions = torch.rand(2, 8, 1), torch.arange(12.0).expand(2, 1, 12).contiguous()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(angles, backend=spy)(inv_freq, positions)
    assert torch.allclose(got, angles(inv_freq, positions), rtol=1e-5, atol=1e-5)
    assert not [str(w.message) for w in caught if "a bug" in str(w.message)]
    (graph,) = spy.graphs
    (text,) = [c.program.text for _, c in graph.prism_partitions]
    assert "f32[2, 8, 1]" in text and "f32[2, 1, 12]" in text, text


def test_an_in_place_add_to_a_pieces_input_is_done_once(shared_daemon, spy):
    # Falcon's `mlp_output += attention_output` where the MLP's output comes from outside the
    # piece: the piece's own ops, which the race runs many times, added to their input each time.
    def residual(x, y, w):
        h = torch.cumsum(x, dim=-1)  # PyTorch's: the piece reads it
        h += torch.nn.functional.linear(y, w)
        return h * 0.5

    x, y, w = activations(2, 5), activations(2, 5), torch.randn(HIDDEN, HIDDEN) * 0.1
    with torch.no_grad():
        want = residual(x, y, w)
        got = torch.compile(residual, backend=spy)(x, y, w)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), (got - want).abs().max()
    (graph,) = spy.graphs
    assert any("+" in c.program.text and "@" in c.program.text for _, c in graph.prism_partitions)


def test_a_kernel_that_disagrees_with_the_graphs_ops_on_the_first_call_leaves_the_piece_to_pytorch(
        shared_daemon, spy, monkeypatch):
    """The first call at a piece's sizes compares prism's kernel with the graph's own ops on the
    call's inputs (agreement.py): a program that is not what the graph computes is caught there."""
    call_for = prism.Compiled.call_for

    class OffByOne:  # the real kernel, its first output then moved by 1
        def __init__(self, kernel):
            self.kernel = kernel

        def run(self, inputs, outputs, device):
            self.kernel.run(inputs, outputs, device)
            outputs[0].add_(1.0)

    def wrong(self, *args):
        call = call_for(self, *args)
        return prism.compiled.Call(OffByOne(call.kernel), call.outputs, call.device, call.returns_tuple)

    monkeypatch.setattr(prism.Compiled, "call_for", wrong)
    torch.manual_seed(2)
    block = LlamaMLPBlock().eval()
    x = activations(2, 5)
    errors.WARNED.clear()
    compiled = torch.compile(block, backend=spy)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        want = block(x)
        for _ in range(2):  # the second call goes straight to the graph's ops
            got = compiled(x)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    said = [str(w.message) for w in caught if "on this call's inputs" in str(w.message)]
    assert len(said) == 1 and "from the graph's ops" in said[0] and "a bug" in said[0], said
    (graph,) = spy.graphs
    assert all(call is None for name, _ in graph.prism_partitions for call in getattr(graph, name).calls.values())


def test_the_tanh_gelu_is_one_op_and_gives_pytorchs_values(shared_daemon, spy):
    # F.gelu(approximate="tanh"), as Gemma's MLP calls it: one gelu_tanh, not its nine ops.
    torch.manual_seed(5)
    mlp = torch.nn.Sequential(torch.nn.Linear(HIDDEN, 2 * HIDDEN), torch.nn.GELU(approximate="tanh"),
                              torch.nn.Linear(2 * HIDDEN, HIDDEN)).eval()
    compiled = torch.compile(mlp, backend=spy)
    x = activations(2, 5, scale=3.0)  # past the GELU's knee on both sides
    with torch.no_grad():
        want, got = mlp(x), compiled(x)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    texts = [c.program.text for graph in spy.graphs for _, c in graph.prism_partitions]
    assert texts and all("gelu_tanh(" in t and "tanh(0." not in t for t in texts), texts


def test_by_name_under_no_grad(shared_daemon):
    torch.manual_seed(1)
    block = LlamaMLPBlock().eval()
    compiled = torch.compile(block, backend="prism")
    x = activations(1, 6)
    with torch.no_grad():
        want, got = block(x), compiled(x)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    torch._dynamo.reset()


def test_under_autograd_the_graph_is_pytorchs_and_one_warning_says_why(spy):
    block = LlamaMLPBlock()
    compiled = torch.compile(block, backend=spy)
    errors.WARNED.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(activations(1, 4))
        compiled(activations(1, 4))
    out.sum().backward()
    assert block.mlp.up_proj.weight.grad is not None
    said = [str(w.message) for w in caught if "needs gradients" in str(w.message)]
    assert len(said) == 1
    assert all(not graph.prism_partitions for graph in spy.graphs)


def rotary_attention(q, k, v, cos, sin, mask):
    """Llama's attention core as transformers writes it: rotate_half's slices, repeat_kv's expand,
    scaled_dot_product_attention with an additive mask."""
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    k, v = repeat_kv(k, 2), repeat_kv(v, 2)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def rotary_attention_interleaved(q, k, v, cos, sin, mask):
    """The same with the KV heads repeated by repeat_interleave, as older modeling files write it."""
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    k, v = k.repeat_interleave(2, dim=1), torch.repeat_interleave(v, 2, dim=1)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def rotary_attention_gqa(q, k, v, cos, sin, mask):
    """The same with the KV heads left to scaled_dot_product_attention (`enable_gqa=True`, as
    transformers' sdpa attention calls it where no mask is given)."""
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


@pytest.mark.parametrize("attention", [rotary_attention, rotary_attention_interleaved, rotary_attention_gqa],
                         ids=["expand", "repeat_interleave", "enable_gqa"])
def test_rotary_halves_and_repeated_kv_heads_are_imported(shared_daemon, spy, attention):
    torch.manual_seed(2)
    b, h, s, d = 2, 4, 6, 16
    q, k, v = torch.randn(b, h, s, d), torch.randn(b, h // 2, s, d), torch.randn(b, h // 2, s, d)
    cos, sin = torch.randn(b, s, d), torch.randn(b, s, d)
    mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1).expand(b, 1, s, s)
    compiled = torch.compile(attention, backend=spy)
    with torch.no_grad():
        want, got = attention(q, k, v, cos, sin, mask), compiled(q, k, v, cos, sin, mask)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)
    (graph,) = spy.graphs
    # Imported whole: no import error among the reasons a piece stayed PyTorch's.
    assert not [why for _, why in graph.prism_skipped if "node '" in why], graph.prism_skipped
    texts = [c.program.text for _, c in graph.prism_partitions] + [why for _, why in graph.prism_skipped]
    assert any("split(" in t and "concat(" in t for t in texts), texts
    # The attention itself is prism's: its keys repeated to the queries' heads in its program.
    (core,) = [t for t in (c.program.text for _, c in graph.prism_partitions) if "maximum(max(" in t and "@" in t]
    if attention is not rotary_attention_interleaved:
        # repeat_kv and enable_gqa as a broadcast (docs/python.md, "Grouped heads"): the queries'
        # heads split into 2 groups of 2, the keys and values at one head per group, no copy.
        assert "[2, 2, 2, 6, 16]" in core and "[2, 2, 1, 6, 16]" in core, core
        assert "axis=2)" not in core, core


class LlamaLayer(torch.nn.Module):
    """transformers' LlamaDecoderLayer with its rotary embedding, called as LlamaModel calls it."""

    def __init__(self, kv_heads):
        super().__init__()
        config = LlamaConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_attention_heads=4,
                             num_key_value_heads=kv_heads, num_hidden_layers=1)
        config._attn_implementation = "sdpa"
        self.layer, self.rotary = LlamaDecoderLayer(config, 0).eval(), LlamaRotaryEmbedding(config)

    def forward(self, x, positions, mask):
        out = self.layer(x, attention_mask=mask, position_ids=positions, position_embeddings=self.rotary(x, positions))
        return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("kv_heads,inside", [(4, "1"), (2, "1"), (4, "0")], ids=["heads", "grouped", "off"])
def test_an_attention_splits_and_merges_its_heads_inside_its_piece_where_the_search_can(shared_daemon, spy, monkeypatch,
                                                                                      kv_heads, inside):
    # By default (PRISM_HEADS_INSIDE unset or 1), each head's queries, keys and values read in place from the
    # projections' rows, the output written back as rows for o_proj: one piece from the norm to
    # o_proj (docs/python.md, "Head splits inside"), grouped heads too (read as a broadcast:
    # "Grouped heads"). With PRISM_HEADS_INSIDE=0, the piece is cut at its head splits and merge.
    monkeypatch.setenv("PRISM_HEADS_INSIDE", inside)
    torch.manual_seed(9)
    layer = LlamaLayer(kv_heads)
    compiled = torch.compile(layer, backend=spy)
    with torch.no_grad():
        for seq in (8, 12) if inside == "1" else (8,):  # the joined piece at a second length too
            x, positions = activations(2, seq), torch.arange(seq).expand(2, seq)
            mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1).expand(2, 1, seq, seq)
            want, got = layer(x, positions, mask), compiled(x, positions, mask)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), (seq, (got - want).abs().max())
    for graph in spy.graphs:
        assert not graph.prism_skipped, graph.prism_skipped
        texts = [c.program.text for _, c in graph.prism_partitions]
        (attention,) = [t for t in texts if "maximum(max(" in t]
        whole = "transpose(" in attention and "o_proj" in attention and "q_proj" in attention
        assert whole == (inside == "1"), attention


def test_explain_says_what_prism_would_search_and_what_pytorch_keeps_without_a_daemon(monkeypatch, tmp_path):
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))  # nothing to connect to: none needed
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))
    torch.manual_seed(6)
    config = LlamaConfig(vocab_size=128, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    explained = prism.explain(LlamaForCausalLM(config).eval(), input_ids=torch.randint(0, 128, (1, 6)))
    report = str(explained)
    (graph,) = explained.graphs
    names = [name for name, _ in graph.prism_programs]
    assert len(names) >= 3 and report.startswith(f"graph 0: prism would search {len(names)} program(s)")
    assert any("lm_head" in program.text for _, program in graph.prism_programs)
    assert re.search(r"PyTorch runs 'inputs_embeds' \(embedding\) at .*modeling_llama\.py:\d+", report), report
    assert "PyTorch runs 'additive_mask" not in report


def test_a_boolean_buffer_is_no_weight_in_the_share(monkeypatch, tmp_path):
    # GPT-2's eager attention slices its causal mask from a [1, 1, 1024, 1024] bool buffer: counted
    # as a weight PyTorch reads, it made prism's share of the weight bytes 16%.
    from transformers import GPT2Config, GPT2LMHeadModel

    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))
    config = GPT2Config(vocab_size=128, n_embd=HIDDEN, n_layer=1, n_head=4, n_positions=64)
    config._attn_implementation = "eager"
    model = GPT2LMHeadModel(config).eval()
    (graph,) = prism.explain(model, input_ids=torch.randint(0, 128, (1, 6))).graphs
    assert any(b.dtype == torch.bool for b in model.buffers())
    assert graph.prism_share.all_weight_bytes == sum(p.numel() * p.element_size() for p in model.parameters())
    position_table = model.transformer.wpe.weight  # read by the embedding, PyTorch's
    assert graph.prism_share.weight_bytes == graph.prism_share.all_weight_bytes - position_table.numel() * 4


def test_a_rotary_in_complex_numbers_is_pytorchs_and_the_report_says_so(monkeypatch, tmp_path):
    # Meta's reference Llama rotates queries by complex products (view_as_complex, a product by
    # freqs_cis, view_as_real): prism computes real numbers, and says so op by op.
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))

    def rotary_then_projection(x, freqs_cis, w):
        b, s, _ = x.shape
        pairs = torch.view_as_complex(x.float().reshape(b, s, 4, -1, 2))
        rotated = torch.view_as_real(pairs * freqs_cis.view(1, s, 1, -1)).flatten(3)
        return torch.nn.functional.linear(rotated.reshape(b, s, HIDDEN), w)

    angles = torch.outer(torch.arange(6.0), 1.0 / 10000 ** (torch.arange(0, 16, 2) / 16))
    explained = prism.explain(rotary_then_projection, activations(2, 6), torch.polar(torch.ones_like(angles), angles),
                              torch.randn(32, HIDDEN))
    report = str(explained)
    assert re.search(r"PyTorch runs '\w+' \(view_as_complex\) at .*: prism has no translation of this op", report), report
    assert re.search(r"PyTorch runs '\w+' \(mul\) at .*: its result is torch.complex64 \(prism computes f32", report), report


def test_a_product_by_one_is_its_operand_and_no_piece(monkeypatch, tmp_path):
    # transformers' rotary scales its tables by `attention_scaling`, 1.0 unless the rope type sets
    # it: `cos * 1.0` and `sin * 1.0` were a piece of their own, searched and tuned for nothing.
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))

    def tables(angles):
        return angles.cos() * 1.0, angles.sin() * 1.0, angles.exp() * 1 + 1 * angles.tanh() / 1

    explained = prism.explain(tables, torch.randn(2, 8, 16))
    (text,) = [program.text for graph in explained.graphs for _, program in graph.prism_programs]
    assert "exp(" in text and "tanh(" in text and "* 1" not in text and "/ 1" not in text, text


def test_an_op_prism_lacks_stays_pytorchs_and_the_report_names_its_line(shared_daemon, spy):
    def with_cumsum(x, w):
        y = torch.nn.functional.linear(torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * x, w)
        return torch.cumsum(y, dim=-1) * 2.0  # the line the report names

    line = with_cumsum.__code__.co_firstlineno + 2
    errors.WARNED.clear()
    x, w = activations(2, 5), torch.randn(32, HIDDEN) * 0.1
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(with_cumsum, backend=spy)(x, w)
    assert torch.allclose(got, with_cumsum(x, w), rtol=1e-4, atol=1e-4 * got.abs().max().item())
    report = "\n".join(str(w.message) for w in caught)
    assert f"(cumsum) at {__file__}:{line}: prism has no translation of this op" in report, report
    assert spy.graphs[0].prism_left and "cumsum" in spy.graphs[0].prism_left[0][0]


def test_a_bias_the_next_layer_reads_too_is_no_output_of_the_attentions_program(monkeypatch, tmp_path):
    # T5's attention: its position bias plus the mask, added to the scores and returned for the
    # next layer. Left in the attention's piece it would be a second output, and the search takes
    # a program of several outputs only as written: the attention's program returns one value.
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))

    def t5_attention(q, k, v, position_bias, mask):
        bias = position_bias + mask
        weights = torch.softmax(q @ k.transpose(3, 2) + bias, dim=-1)
        return weights @ v, bias

    q, k, v = (torch.randn(2, 4, 6, 16) for _ in range(3))
    mask = torch.zeros(2, 1, 1, 6)
    mask[1, ..., :2] = torch.finfo(torch.float32).min
    (graph,) = prism.explain(t5_attention, q, k, v, torch.randn(1, 4, 6, 6), mask).graphs
    texts = [program.text for _, program in graph.prism_programs]
    (attention,) = [t for t in texts if "softmax(" in t]
    returned = attention.strip().splitlines()[-2].split("return", 1)[1]
    assert "," not in returned, attention


def test_a_projection_split_into_q_k_and_v_after_its_piece_is_one_output_pytorch_splits(monkeypatch, tmp_path):
    # GPT-2's c_attn at decode, where the cache's append cuts the heads after it: the split into
    # q, k and v ends the piece. Left in, the program has three outputs, searched only as written
    # (each output's kernels compute the norm and projection again: 0.35x PyTorch's speed).
    monkeypatch.setenv("PRISM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("PRISM_BIN", str(tmp_path / "no-prism"))

    def c_attn(x, gain, bias, w, b):
        h = torch.nn.functional.layer_norm(x, (HIDDEN,), gain, bias, 1e-5)
        return torch.addmm(b, h.view(-1, HIDDEN), w).view(1, 1, 3 * HIDDEN).split(HIDDEN, dim=2)

    x = activations(1, 1)
    (graph,) = prism.explain(c_attn, x, torch.randn(HIDDEN), torch.randn(HIDDEN), torch.randn(HIDDEN, 3 * HIDDEN),
                             torch.randn(3 * HIDDEN)).graphs
    (text,) = [program.text for _, program in graph.prism_programs]
    returned = text.strip().splitlines()[-2].split("return", 1)[1]
    assert "split(" not in text and "," not in returned, text


def test_an_error_of_prisms_own_leaves_the_graph_to_pytorch_and_says_so(monkeypatch, spy):
    # A bug outside every piece (here the FLOPs count raising) never crashes the user's compile:
    # PyTorch runs the graph as written and one warning asks for a report.
    def broken(*args, **kwargs):
        raise IndexError("tuple index out of range")

    monkeypatch.setattr(BACKEND.share, "share", broken)
    errors.WARNED.clear()
    block = LlamaMLPBlock().eval()
    x = activations(2, 5)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(block, backend=spy)(x)
        want = block(x)
    assert torch.equal(got, want)
    (graph,) = spy.graphs
    assert not graph.prism_partitions and "IndexError" in graph.prism_skipped[0][1]
    report = "\n".join(str(w.message) for w in caught)
    assert "PyTorch runs this graph as written: prism failed on it (IndexError" in report and "please report" in report, report


def test_a_pieces_later_calls_at_its_sizes_go_straight_to_its_kernel(shared_daemon, spy, monkeypatch):
    """The first call at a piece's sizes checks, tunes and races; the later ones at those sizes
    run the Call it kept (docs/python.md, "A call's cost")."""
    worked_out = []
    call_for = prism.Compiled.call_for
    monkeypatch.setattr(prism.Compiled, "call_for", lambda self, *args: worked_out.append(1) or call_for(self, *args))
    monkeypatch.setattr(piece_calls, "race", lambda prism_call, torch_call: (prism_call(), torch_call()) and (1e-3, 2e-3))
    torch.manual_seed(1)
    block = LlamaMLPBlock().eval()
    compiled = torch.compile(block, backend=spy)
    with torch.no_grad():
        for seq in (5, 5, 5, 7, 7):
            x = activations(2, seq)
            got, want = compiled(x), block(x)
            assert got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    assert len(spy.graphs) == 2 and all(graph.prism_partitions for graph in spy.graphs)
    assert len(worked_out) == 2, "once at each sizes"


@pytest.mark.parametrize("faster", ["prism", "pytorch"])
def test_at_new_sizes_the_faster_of_prisms_kernel_and_pytorchs_own_ops_runs(shared_daemon, spy, monkeypatch, faster):
    """The tuner races prism's kernels against prism's eager plan; the backend races the kernel
    against the ops the graph wrote, in the caller's process, once per piece and sizes (piece_calls.race,
    made to answer here), and keeps the faster: PyTorch's with a warning that gives both times."""
    raced = []

    def race(prism_call, torch_call):
        raced.append(1)
        prism_call(), torch_call()  # both run as the real race runs them
        return (1e-3, 2e-3) if faster == "prism" else (2e-3, 1e-3)

    monkeypatch.setattr(piece_calls, "race", race)
    torch.manual_seed(0)
    block = LlamaMLPBlock().eval()
    compiled = torch.compile(block, backend=spy)
    x = activations(2, 5)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        want = block(x)
        for _ in range(3):
            got = compiled(x)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    kept = [str(w.message) for w in caught if "its own ops ran it" in str(w.message)]
    assert len(raced) == 1  # once per piece and sizes
    if faster == "prism":
        assert not kept
    else:
        assert len(kept) == 1 and "prism's tuned kernel in 2.000 ms" in kept[0], kept
