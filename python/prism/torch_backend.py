"""torch.compile(model, backend="prism") (PyTorch 2): the parts of a captured graph that prism can
express become prism.compile callables; the rest runs as PyTorch runs it.

`import prism` registers the backend by name (at once where torch is loaded, else when torch's
dynamo is), and an installed package declares it as a `torch_dynamo_backends` entry point. The
graph is split with torch.fx's capability partitioner: a node is prism's when from_torch translates
it (fx_import.translates). Each partition of two or more such nodes is imported from the shapes
dynamo recorded (a size dynamo lets vary is a prism dim: one family serves every size, no
recompile), searched, and tuned at each new size on its first call. One that prism cannot compile
(an op the importer refuses, no verified family, an error) stays PyTorch's, and a warning says why,
once per reason (docs/python.md, "torch.compile").
"""
import collections
import copy
import importlib.abc
import importlib.util
import operator
import os
import re
import sys
import warnings

from . import bool_selects, effects, fx_import, implicit_casts, patch_convolutions, share, varying_floats
from .agreement import computes_16_bit, disagreement
from .compiled import Compiled
from .errors import ConnectionLost, PrismError, UnsupportedOp, as_bug
from .layout_cuts import folds_rows, moves_layout, splits_heads
from .rows import fold_rows

_Meta = collections.namedtuple("_Meta", ["shape", "dtype"])
_WARNED = set()  # the warnings said in this process: each once


def _warn_once(text):
    if text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)


def _meta_of(value):
    """tensor_meta's shape and dtype of a (fake) tensor, a list of them (a split's pieces), or None."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return _Meta(tuple(value.shape), value.dtype)
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "shape") for v in value):
        return [_Meta(tuple(v.shape), v.dtype) for v in value]
    return None


def _record_shapes(graph_module, example_inputs):
    """Every node's `tensor_meta`: from the fake values dynamo recorded (sizes it lets vary stay
    SymInts), else by running the graph on the example inputs (a graph from symbolic_trace)."""
    import torch
    from torch.fx.passes.shape_prop import ShapeProp

    nodes = list(graph_module.graph.nodes)
    if any("example_value" in n.meta for n in nodes):
        for n in nodes:
            meta = _meta_of(n.meta.get("example_value"))
            if meta is not None:
                n.meta["tensor_meta"] = meta
        return
    with torch.no_grad():
        ShapeProp(graph_module).propagate(*example_inputs)


_OPENS = ("_vmap_increment_nesting",)  # calls whose effect lasts until their close
_CLOSES = ("_vmap_decrement_nesting",)
_EFFECT_CALLS = frozenset(_OPENS + _CLOSES + ("_enter_autocast", "_exit_autocast"))


def _in_regions(graph_module):
    """The nodes between a vmap nesting's opening call and its close: what they compute depends on
    that state, which a partition moved out of the nesting would lose."""
    inside, depth = set(), 0
    for n in graph_module.graph.nodes:
        name = getattr(n.target, "__name__", "")
        depth -= name in _CLOSES
        if depth > 0:
            inside.add(n)
        depth += name in _OPENS
    return inside


def _autocast_segments(graph_module):
    """Each node's segment of the graph, cut at every autocast region's opening call and after its
    close (a model's own `with torch.autocast(...)`: Llama's rotary turns it off): a piece holds
    nodes of one segment only, so that it, and the ops PyTorch runs that read it, sit where the
    region's state is the one eager computed them in (docs/python.md, "Autocast and mixed dtypes")."""
    segment, of = 0, {}
    for n in graph_module.graph.nodes:
        name = getattr(n.target, "__name__", "")
        segment += name == "_enter_autocast"
        of[n] = segment
        segment += name == "_exit_autocast"
    return of


def _by_segment(partition, segment):
    """`partition` as one partition per segment its nodes are in (an autocast region's, and
    between in-place writes: effects.segments). Each is convex as the
    partition is: a path between two of its nodes runs through nodes between them in the graph's
    order, so of their segment."""
    from torch.fx.passes.infra.partitioner import Partition

    parts = {}
    for n in partition.nodes:
        parts.setdefault(segment[n], []).append(n)
    return [Partition(id=partition.id, nodes=nodes) for nodes in parts.values()]


def _keep_order(graph_module, order, barriers=frozenset()):
    """Sorts the graph topologically, each node as early as its original position `order` (the
    node's, or for a fused partition its first node's; a node fusing made, its input's) allows:
    fusing must not move a call with effects (vmap nesting, autocast, an in-place write) past the
    nodes around it, as the partitioner's breadth-first sort does. The nodes named in `barriers`
    (those calls) keep every node with a position on its side of them, whatever its inputs."""
    import heapq

    import torch

    nodes = list(graph_module.graph.nodes)  # topologically sorted already
    rank = {}
    for n in nodes:
        rank[n] = order[n] if n in order else max((rank[i] for i in n.all_input_nodes), default=0)
    waits_on = {n: set(n.all_input_nodes) for n in nodes}
    barrier, since = None, []
    for n in sorted((n for n in nodes if n in order), key=order.get):
        if barrier is not None:
            waits_on[n].add(barrier)
        if n.name in barriers:  # after every node since the last barrier
            waits_on[n].update(since)
            barrier, since = n, []
        else:
            since.append(n)
    users = {n: [] for n in nodes}
    for n, inputs in waits_on.items():
        for i in inputs:
            users[i].append(n)
    waiting = {n: len(inputs) for n, inputs in waits_on.items()}
    ready = [(rank[n], i, n) for i, n in enumerate(nodes) if waiting[n] == 0]
    heapq.heapify(ready)
    index = {n: i for i, n in enumerate(nodes)}
    graph, env = torch.fx.Graph(), {}
    while ready:
        _, _, n = heapq.heappop(ready)
        env[n] = graph.node_copy(n, lambda x: env[x])
        for user in users[n]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (rank[user], index[user], user))
    assert len(env) == len(nodes), "the order's barriers made a cycle"
    graph_module.graph = graph
    graph_module.recompile()


def additive_mask(mask, dtype):
    """A boolean attention mask (True: attend) as the additive one scaled_dot_product_attention
    makes of it: 0 where kept, -inf where masked."""
    import torch

    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(mask.logical_not(), float("-inf"))


def _addmm_at_rank(graph):
    """GPT-2's Conv1D, `addmm(b, x.view(-1, d), W).view(*x.shape[:-1], n)`, as `b + x @ W` at x's
    rank: the reshapes gone, a piece need not fold its rows to take it."""
    import operator

    import torch

    for n in list(graph.nodes):
        if getattr(n.target, "__name__", None) != "addmm" or len(n.args) != 3 or n.kwargs or len(n.users) != 1:
            continue
        bias, rows, weight = n.args
        (back,) = n.users
        if share.op_name(rows) not in ("view", "reshape") or share.op_name(back) not in ("view", "reshape") or len(rows.users) != 1:
            continue
        x = rows.args[0]
        before, after = x.meta.get("tensor_meta"), back.meta.get("tensor_meta")
        if not hasattr(before, "shape") or not hasattr(after, "shape") or \
                tuple(map(str, before.shape[:-1])) != tuple(map(str, after.shape[:-1])):
            continue
        with graph.inserting_before(back):
            product = graph.call_function(torch.matmul, (x, weight))
            total = graph.call_function(operator.add, (bias, product))
        product.meta.update(back.meta)
        total.meta.update(back.meta)
        back.replace_all_uses_with(total)
        for dead in (back, n, rows):
            graph.erase_node(dead)


def _is_identity(node):
    """An eval-mode dropout (F.dropout with training=False, an nn.Dropout not training) or an
    nn.Identity: its input, unchanged."""
    name = share.op_name(node) if node.op in ("call_function", "call_method", "call_module") else None
    if name in ("Dropout", "Identity"):
        return name == "Identity" or not node.graph.owning_module.get_submodule(node.target).training
    if name == "dropout" and node.op == "call_function":
        training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
        return training is False and not node.kwargs.get("inplace", node.args[3] if len(node.args) > 3 else False)
    return False


def _unit_product_operand(node):
    """The tensor `x` of `x * 1`, `1 * x` or `x / 1` (transformers' rotary `cos * attention_scaling`
    at its default 1.0), where the product has x's dtype and shape: x itself, exactly, in IEEE
    arithmetic (NaN, infinities and -0 included); else None."""
    name = share.op_name(node) if node.op in ("call_function", "call_method") else None
    if name not in ("mul", "div", "truediv", "true_divide") or len(node.args) != 2 or node.kwargs:
        return None
    x, one = node.args if name != "mul" or hasattr(node.args[0], "meta") else node.args[::-1]
    if isinstance(one, bool) or not isinstance(one, (int, float)) or one != 1 or not hasattr(x, "meta"):
        return None
    return x if _same_type(x.meta.get("tensor_meta"), node.meta.get("tensor_meta")) else None


def _same_type(before, after):
    """Whether two values' tensor metas have one dtype and one shape."""
    return (hasattr(before, "dtype") and hasattr(after, "dtype") and before.dtype == after.dtype
            and tuple(map(str, before.shape)) == tuple(map(str, after.shape)))


def causal_mask(query, key):
    """The additive mask `is_causal=True` stands for: query i attends keys 0..i (top-left, as
    scaled_dot_product_attention aligns it), 0 kept, -inf masked."""
    import torch

    rows, columns = query.shape[-2], key.shape[-2]
    keep = torch.ones(rows, columns, dtype=torch.bool, device=query.device).tril()
    return torch.zeros(rows, columns, dtype=query.dtype, device=query.device).masked_fill_(keep.logical_not(), float("-inf"))


def _explicit_causal_mask(graph, n):
    """scaled_dot_product_attention(..., is_causal=True) as the same call with causal_mask's
    additive mask, computed by PyTorch (a call without an attention mask gets it)."""
    has_mask = n.kwargs.get("attn_mask", n.args[3] if len(n.args) > 3 else None) is not None
    causal = n.kwargs.get("is_causal", n.args[5] if len(n.args) > 5 else False)
    if causal is not True or has_mask or len(n.args) > 3:
        return
    query, key = n.args[0], n.args[1]
    with graph.inserting_before(n):
        mask = graph.call_function(causal_mask, (query, key))
    q, k = query.meta["tensor_meta"], key.meta["tensor_meta"]
    mask.meta["tensor_meta"] = _Meta((q.shape[-2], k.shape[-2]), q.dtype)
    n.kwargs = {**n.kwargs, "attn_mask": mask, "is_causal": False}


def _unify_value_lengths(graph):
    """Attention's values have the keys' length (PyTorch raises otherwise), but dynamo gives a
    cache's values a symbol of their own (`s40 + 1` beside the keys' `s53 + 1`), which would not
    type in prism: every size written as the values' length is written as the keys'."""
    same = {}
    for n in graph.nodes:
        if share.op_name(n) != "scaled_dot_product_attention" or len(n.args) < 3:
            continue
        key, value = (getattr(a.meta.get("tensor_meta"), "shape", None) if hasattr(a, "meta") else None for a in n.args[1:3])
        if key and value and str(key[-2]) != str(value[-2]) and share.hint(key[-2]) is not None and share.hint(key[-2]) == share.hint(value[-2]):
            same[str(value[-2])] = key[-2]
    if not same:
        return
    for n in graph.nodes:
        meta = n.meta.get("tensor_meta")
        if hasattr(meta, "shape") and any(str(d) in same for d in meta.shape):
            n.meta["tensor_meta"] = _Meta(tuple(same.get(str(d), d) for d in meta.shape), meta.dtype)


def _simplify(graph_module):
    """What the importer should not see: a cast to the dtype a value already has (one fewer node,
    no program that returns its input), and a boolean attention mask, which becomes the additive
    one PyTorch makes of it, computed by PyTorch; Conv1D's reshapes (_addmm_at_rank); a cache's
    values' length (_unify_value_lengths); `is_causal=True` as its mask (_explicit_causal_mask); dropout at
    inference, nn.Identity (T5's `dropout(inputs_embeds)` would be a piece returning its input) and
    a product by 1 (a piece of its own, searched and tuned for nothing); a select by a boolean
    mask, as one by its mask cast to floats (bool_selects.py); a patch embedding's convolution, as
    its linear (patch_convolutions.py)."""
    graph = graph_module.graph
    bool_selects.write_float_selects(graph, _Meta)
    patch_convolutions.write_patch_linears(graph, _Meta)
    _addmm_at_rank(graph)
    _unify_value_lengths(graph)
    for n in list(graph.nodes):
        meta, source = n.meta.get("tensor_meta"), n.args[0] if n.args else None
        kept = source if _is_identity(n) else _unit_product_operand(n)
        if kept is not None:
            n.replace_all_uses_with(kept)
            graph.erase_node(n)
            continue
        if n.op == "call_method" and n.target in share.CASTS and hasattr(meta, "dtype") and hasattr(source, "meta"):
            if _same_type(source.meta.get("tensor_meta"), meta):
                n.replace_all_uses_with(source)
                graph.erase_node(n)
                continue
        if getattr(n.target, "__name__", None) == "scaled_dot_product_attention":
            _explicit_causal_mask(graph, n)
            mask = n.kwargs.get("attn_mask", n.args[3] if len(n.args) > 3 else None)
            if not hasattr(getattr(mask, "meta", {}).get("tensor_meta"), "dtype") or str(mask.meta["tensor_meta"].dtype) != "torch.bool":
                continue
            dtype = n.args[0].meta["tensor_meta"].dtype
            with graph.inserting_before(n):
                additive = graph.call_function(additive_mask, (mask, dtype))
            additive.meta["tensor_meta"] = _Meta(mask.meta["tensor_meta"].shape, dtype)
            n.replace_input_with(mask, additive)
    graph_module.recompile()


# Partitioning again without the nodes the importer refused, or cut at the head splits a piece's
# search could not take: every refusal of a round is found at once, and a node is refused or cut
# once, so few rounds pass (one per refusal that uncovers another, one for the head splits).
_PARTITION_ROUNDS = 6


def _imports(graph_module, partitions):
    """{fused name: (piece, its folded rows, program), or the error its import raised} for each
    partition, by fuse_partitions' names (`fused_<index>`): each imported on a copy of its nodes
    (`fuse_as_graphmodule`, nothing fused) and folded there, so a piece prism does not take runs
    as the graph wrote it."""
    from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule, topo_sort

    imported = {}
    for i, partition in enumerate(partitions):
        name = f"fused_{i}"
        try:
            # As fuse_partitions fuses it: the piece's inputs in the order its call passes them.
            piece = copy.deepcopy(fuse_as_graphmodule(graph_module, topo_sort(list(partition.nodes)), name, partition.nodes)[0])
            folded = fold_rows(piece)
            imported[name] = (piece, folded, fx_import.from_graph(piece, "torch_" + name))
        except Exception as error:  # noqa: BLE001 -- said where the piece is taken or left
            imported[name] = error
    return imported


def _refusals(graph_module, imported):
    """{node: why} for the nodes the importer refused in `imported`'s pieces (a `pow` with a
    tensor exponent, a slice of many parts)."""
    by_name = {n.name: n for n in graph_module.graph.nodes}
    return {by_name[e.node]: e.reason for e in imported.values() if isinstance(e, UnsupportedOp) and e.node in by_name}


def _described(node):
    return f"'{node.name}' ({getattr(node.target, '__name__', node.target)}) at {fx_import.source_line(node)}"


_SIMPLIFYS_OWN = (additive_mask, causal_mask, bool_selects.select_condition, patch_convolutions.patch_rows,
                  patch_convolutions.patch_grid)


def _left_to_pytorch(graph_module):
    """[(node description, why)] for each node computing a floating-point or complex tensor that
    prism does not translate (index, mask and position arithmetic in integers and booleans is
    PyTorch's)."""
    left = []
    for n in graph_module.graph.nodes:
        if n.op not in ("call_module", "call_method", "call_function") or not share.computes_numbers(n):
            continue
        if n.target in _SIMPLIFYS_OWN:  # masks and patches _simplify made, beside the ops prism imports
            continue
        why = fx_import.why_untranslated(graph_module, n)
        if why is not None:
            left.append((_described(n), why))
    return left


def _is_matmul(node):
    """Whether `node` is a matmul, attention counted as one."""
    return share.op_name(node) in share.MATMULS or share.op_name(node) == "scaled_dot_product_attention"


def _matmuls(nodes):
    """How many of `nodes` are matmuls, attention counted as one."""
    return sum(map(_is_matmul, nodes))


def _biased(node, nodes):
    """Whether `node`'s one reader in `nodes` adds a bias vector to it (Conv1D's `b + x @ W`): a
    piece takes the add with its matmul."""
    users = list(node.users)
    if len(users) != 1 or users[0] not in nodes or share.op_name(users[0]) not in ("add", "iadd"):
        return False
    other = [a for a in users[0].args if a is not node]
    shape = getattr(other[0].meta.get("tensor_meta"), "shape", None) if other and hasattr(other[0], "meta") else None
    return shape is not None and len(shape) == 1


def _projected(node, nodes):
    """Whether every reader of `node` in `nodes` is a matmul (an MLP's hidden rows before its down
    projection), or a head merge leading to one (attention's heads, merged back into rows for the
    output projection): the block goes on, the search cuts it where that pays (docs/search.md,
    "Kernel cuts")."""
    readers = []
    for reader in (u for u in node.users if u in nodes):
        while splits_heads(reader) or share.op_name(reader) == "contiguous":
            next_readers = [u for u in reader.users if u in nodes]
            if len(next_readers) != 1:
                break
            reader = next_readers[0]
        readers.append(reader)
    return bool(readers) and _matmuls(readers) == len(readers)


def _scores(node, nodes):
    """Whether `node` is an attention's scores: its readers in `nodes`, one after another (a scale,
    a mask's select or add, a cast), lead to a softmax. A piece goes on to the softmax and the
    weights' matmul: GPT-2's eager attention was cut after `q @ k^T`, its scores written out and
    read back."""
    for _ in range(8):
        readers = [u for u in node.users if u in nodes]
        if len(readers) != 1 or _is_matmul(readers[0]):
            return False
        node = readers[0]
        if share.op_name(node) in ("softmax", "Softmax"):
            return True
    return False


def _pieces(partition, original):
    """A partition cut, in the graph's order, where the nodes so far leave one value to the rest
    (a residual stream between a layer's blocks) and hold a matmul, two pieces of one matmul each
    joined (GPT-2's two Conv1Ds are one MLP): single-output programs, the search's
    best-served form, one block of a layer each (an attention block up to its output projection,
    an MLP with its residual add). A prefix of a partition in topological order is convex as the
    partition is, so every piece, and every run of consecutive pieces, is one."""
    pieces, piece, members = [], [], set()
    for node in sorted(partition.nodes, key=lambda n: original[n.name]):
        piece.append(node)
        members.add(node)
        live = [n for n in piece if any(user not in members for user in n.users)]
        if (live == [node] and _matmuls(piece) and not _biased(node, partition.nodes) and not _projected(node, partition.nodes)
                and not _scores(node, partition.nodes)):
            pieces.append(piece)
            piece, members = [], set()
    joined = []
    for p in pieces + [piece] if piece else pieces:
        if joined and (_matmuls(joined[-1]) == 1 and _matmuls(p) == 1 or not _matmuls(p)):  # an epilogue joins too
            joined[-1] = joined[-1] + p
        else:
            joined.append(p)
    return [_without_leading_row_views(part) for p in joined for part in _without_prologue(p)]


def _without_prologue(piece):
    """`piece` as two pieces where it returns a value no matmul of it precedes (T5's position bias
    plus mask, which its attention adds to the scores and the next layer reads): the values
    leading to it first, then the rest, which reads it. The search takes a program of several
    outputs only as written (docs/search.md), so a prologue's output left in would cost the
    attention its fused kernels. The prologue holds every member it reads, so both are convex."""
    members, after_matmul = set(piece), set()
    for node in piece:  # in the graph's order
        if _is_matmul(node) or any(i in after_matmul for i in node.all_input_nodes):
            after_matmul.add(node)
    prologue = set()
    stack = [n for n in piece if n not in after_matmul and any(u not in members for u in n.users)]
    while stack:
        node = stack.pop()
        if node not in prologue:
            prologue.add(node)
            stack.extend(i for i in node.all_input_nodes if i in members)
    if not prologue or not _matmuls(piece):
        return [piece]
    return [[n for n in piece if n in prologue], [n for n in piece if n not in prologue]]


def _without_leading_row_views(piece):
    """`piece` without the reshapes it starts with that only move leading dims of a value it does
    not compute (OPT's `view(hidden_shape)` of the rows its MLP left): PyTorch's view is free, and
    the piece then reads the activation at [batch, seq, hidden], whose dims fold_rows folds and
    gives back, instead of returning a value it only viewed. A member whose inputs are all outside
    a convex piece is reachable from no other member, so the rest stays convex."""
    members = set(piece)
    while True:
        starts = {n for n in piece if share.op_name(n) in share.RESHAPES and n.op != "placeholder" and
                  folds_rows(n) and not any(i in members for i in n.all_input_nodes)}
        if not starts or starts == members:
            return piece
        members -= starts
        piece = [n for n in piece if n in members]


def _computes_nothing(node):
    """A cast that changes no value prism computes, or an op that only moves data."""
    return node.op == "call_method" and node.target in share.CASTS or share.op_name(node) in share.MOVES_DATA


def _trimmed(partition):
    """The partition without the layout changes it ends with (the partitioner puts a getitem with
    its source, a split's pieces, also `x[:, :, None]`, repeat_kv's, which layout_cuts leaves to
    PyTorch; GPT-2's `split` of its fused q, k, v projection into three, where the heads are cut
    after it: a piece of three outputs is searched only as written, each output's kernels
    computing the norm and projection again) and without the casts and views it starts with whose result others read too (Llama's
    `cos.to(x.dtype)` at bf16, Mixtral's `cos.unsqueeze(1)` before a graph break: a piece would
    return a value it only converted or viewed). Dropping a node no other member reads, or one
    that reads no member, keeps the partition convex."""
    from torch.fx.passes.infra.partitioner import Partition

    nodes = set(partition.nodes)
    changed = True
    while changed:
        ends = [n for n in nodes if (moves_layout(n) or share.is_split(n) or share.is_split_piece(n)) and not any(u in nodes for u in n.users)]
        starts = [n for n in nodes if _computes_nothing(n) and
                  not any(i in nodes for i in n.all_input_nodes) and any(u not in nodes for u in n.users)]
        nodes.difference_update(ends + starts)
        changed = bool(ends or starts)
    return Partition(id=partition.id, nodes=[n for n in partition.nodes if n in nodes])


# Worth a piece alone: attention (its two matmuls and softmax), a norm, a projection by a weight (the
# user asked for prism's kernels, and its tuned matmul is one).
_WORTH_ALONE = {"scaled_dot_product_attention", "linear", "addmm", "baddbmm", "matmul", "mm", "bmm", "layer_norm", "LayerNorm",
                "Linear"}


def _compute_nodes(graph_module):
    """The nodes that compute, one worth a piece alone counted twice: not those that only move or
    pick data (a piece of them alone gains nothing from fusion)."""
    return sum((n.op in ("call_module", "call_method", "call_function") and share.op_name(n) not in share.MOVES_DATA) +
               (share.op_name(n) in _WORTH_ALONE) for n in graph_module.graph.nodes)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHARED = collections.OrderedDict()  # (the text up to names, target, top) -> Compiled, the last used last
_SHARED_AT_MOST = 256


def _up_to_names(text):
    """The program's text with the names it declares (its own, its inputs', its values') replaced
    by their order of declaration: equal for two layers of a model that compute alike."""
    header, body = text.split("{", 1)
    declared = _IDENTIFIER.findall(header.split("(", 1)[0].replace("program", "", 1))
    declared += re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*:", header)
    for line in body.splitlines():
        if "=" in line and not line.lstrip().startswith("return"):
            declared += _IDENTIFIER.findall(line.split("=", 1)[0])
    order = {name: f"n{i}" for i, name in enumerate(dict.fromkeys(declared))}
    return _IDENTIFIER.sub(lambda m: order.get(m.group(0), m.group(0)), text)


def _untaken_head_splits(partitions, imported, compile_piece=None):
    """The head splits and merges inside the pieces that did not import or, given
    `compile_piece(piece, program)` (which searches now; _compiled keeps what it found), find no
    family: each such piece is cut at them in the next round (layout_cuts)."""
    untaken = set()
    for i, partition in enumerate(partitions):
        heads = [n for n in partition.nodes if splits_heads(n)]
        if not heads:
            continue
        try:
            if isinstance(imported[f"fused_{i}"], Exception):
                raise imported[f"fused_{i}"]
            if compile_piece is not None:
                piece, _, program = imported[f"fused_{i}"]
                compile_piece(piece, program)
        except Exception:  # noqa: BLE001 -- the piece cut at its head splits is tried next
            untaken.update(heads)
    return untaken


def _device_target(piece):
    """The target that runs `piece`: the one of the device its tensors are on ("cpu", "cuda"), as
    dynamo's fake values say (a graph from symbolic_trace: the CPU's). UnsupportedOp where they lie
    on devices of two kinds or on one prism has no target for."""
    devices = {value.device.type for value in
               (n.meta.get("example_value") for n in piece.graph.nodes if n.op == "placeholder")
               if hasattr(value, "device")}
    if len(devices) > 1 or devices - set(_TARGETS):
        raise UnsupportedOp(f"its tensors are on {' and '.join(sorted(devices))}; prism's targets are "
                            f"{' and '.join(map(repr, _TARGETS))}")
    return devices.pop() if devices else "cpu"


def _compiled(piece, program, target, top):
    """A Compiled for `program`: the one an identical piece already has in this process (a model's
    layers, a graph dynamo compiles again: searched once, tuned once per size), else a new one.
    `target` None: the one of the device the piece's tensors are on (_device_target)."""
    target = target or _device_target(piece)
    key = (_up_to_names(program.text), target, top)
    compiled = _SHARED.get(key)
    if compiled is None:
        # Where no fused kernel wins at a call's sizes, the graph's own ops run (_partition_module),
        # not prism's eager plan: the same plan, in the kernels the user had.
        compiled = Compiled(piece, None, target=target, top=top, imported=program, eager_plan=False)
        _SHARED[key] = compiled
        if len(_SHARED) > _SHARED_AT_MOST:
            _SHARED.popitem(last=False)
    _SHARED.move_to_end(key)
    return compiled


_RACE_WARMUP = 4  # untimed calls of each first: the first few run slower (docs/python.md, "The race")
_RACE_ROUND_S = 2e-4  # a round calls each enough times to take about this long


def _race(prism_call, torch_call, rounds=7):
    """Seconds per call of `prism_call` and of `torch_call`, warm (each called _RACE_WARMUP times
    first, alternated): the medians of `rounds` rounds, alternated so that load which comes and
    goes falls on both, each round a batch of calls of about _RACE_ROUND_S (a call of 20 µs timed
    alone is mostly its caches' state)."""
    import math
    import statistics
    import time

    calls = (prism_call, torch_call)
    warm = [0.0, 0.0]  # each one's last warm-up call
    for _ in range(_RACE_WARMUP):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            call()
            warm[i] = time.perf_counter() - start
    batch = max(1, min(32, math.ceil(_RACE_ROUND_S / max(max(warm), 1e-7))))
    times = ([], [])
    for _ in range(rounds):
        for spent, call in zip(times, calls):
            start = time.perf_counter()
            for _ in range(batch):
                call()
            spent.append((time.perf_counter() - start) / batch)
    return statistics.median(times[0]), statistics.median(times[1])


def _functional(part):
    """`part` with its in-place operators made out-of-place, as prism's program computes them: the
    importer takes `a += b` (or `f(a, inplace=True)`) only where no other node can read `a`
    (effects.writes_visibly), so no one sees the difference, but `a` may be an input of the
    piece, which the race and the first call's check run more than once (Falcon's `mlp_output +=
    attention_output` under autocast added the attention again at each)."""
    changed = False
    for n in part.graph.nodes:
        changed |= effects.make_out_of_place(n)
    if changed:
        part.recompile()
    return part


def _partition_module(name, compiled, rows, fallback):
    """An nn.Module (what a GraphModule's call_module needs) that calls `compiled`, its tensors
    folded into rows and back where `rows` (rows.fold_rows) says. Where prism fails at a call's
    sizes (no fused kernel passed its check or beat the ops one by one, the tune finds the
    program's own reference overflowing on its inputs, the daemon went away), `fallback`, the piece
    as the graph wrote it, computes them, and a warning says why. So it does where, at the first
    call at new sizes, PyTorch's own ops ran the piece faster in this process (_race): the tuner
    times prism's kernels against prism's eager plan, not against the kernels the user had.
    What the first call with a signature decided, later ones do at once (docs/python.md, "A
    call's cost")."""
    import torch

    unseen = object()

    def arguments(args):  # the program's tensors, as the call gives them: rows are views of them
        return compiled.program.arguments(compiled._module, *args)

    class PrismPartition(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.compiled, self.fallback = compiled, fallback
            self.calls = {}  # a signature's Call, or None where PyTorch's ops run it

        def forward(self, *args):
            # dynamo's guards hold each input's dtype and device; its shapes vary where a dim is
            # dynamic, the values of its size arguments with them.
            signature = tuple([a.shape if isinstance(a, torch.Tensor) else a for a in args])
            call = self.calls.get(signature, unseen)
            if call is unseen:
                call = self.calls[signature] = self.first_call(args)
            if call is not None:
                try:
                    return call(arguments(args))
                except Exception as error:  # noqa: BLE001 -- PyTorch computes what prism cannot
                    self.calls[signature] = self.refused(error)
            return self.fallback(*args)

        def first_call(self, args):
            """The Call for `args`' signature, or None where PyTorch's ops run them."""
            try:
                call = compiled.call_for(*(rows.arguments(args) if rows is not None else args))
                if rows is not None:
                    call = call.reshaped(rows.output_shapes(args, [shape for shape, _ in call.outputs]))
                why = disagreement(call(arguments(args)), self.fallback(*args), computes_16_bit(compiled.program.text, args))
                if why:
                    _warn_once(f"prism: {name} stays PyTorch's at {_shapes_text(args)}: on this call's inputs {why}; "
                               "a bug: please report it")
                    return None
                ours, theirs = _race(lambda: call(arguments(args)), lambda: self.fallback(*args))
            except Exception as error:  # noqa: BLE001 -- PyTorch computes what prism cannot
                return self.refused(error)
            if theirs < ours:
                _warn_once(f"prism: {name} stays PyTorch's at {_shapes_text(args)}: its own ops ran it in "
                           f"{theirs * 1e3:.3f} ms in this process, prism's tuned kernel in {ours * 1e3:.3f} ms")
                return None
            return call

        # Called by the GraphModule only: no hooks to run, so not through nn.Module's __call__,
        # which costs microseconds a call (docs/python.md, "A call's cost").
        __call__ = forward

        def refused(self, error):
            known = isinstance(error, (PrismError, ConnectionLost, UnsupportedOp))
            why = error if known else f"prism failed ({as_bug(error)})"
            _warn_once(f"prism: {name} stays PyTorch's at these sizes: {why}")
            return None  # the Call kept for these sizes: PyTorch's ops run them

    return PrismPartition()


def _shapes_text(args):
    return ", ".join("x".join(str(d) for d in a.shape) if hasattr(a, "shape") else str(a) for a in args)


def _needs_gradients(example_inputs):
    import torch

    return torch.is_grad_enabled() and any(getattr(x, "requires_grad", False) for x in example_inputs)


def _failed_on_graph(error):
    _warn_once(f"prism: PyTorch runs this graph as written: prism failed on it ({as_bug(error)})")


_TARGETS = ("cpu", "cuda")  # the daemon's targets, named by the torch device their tensors are on
# torch.compile's modes, as the instantiations a tune times (`top`; None: the daemon's default).
_MODES = {"default": None, "reduce-overhead": None, "max-autotune": 32, "max-autotune-no-cudagraphs": 32}


def _settings(target, top, mode, options):
    """(target, top) from torch.compile's `mode` and `options` (docs/python.md, "Modes,
    options and devices"); ValueError, naming what prism takes, for a mode or option it does not know."""
    options = dict(options or {})
    unknown = sorted(set(options) - {"target", "top"})
    if unknown:
        raise ValueError(f"prism's torch.compile options are 'target' and 'top', not {', '.join(map(repr, unknown))}")
    if mode is not None and mode not in _MODES:
        raise ValueError(f"prism's torch.compile modes are {', '.join(map(repr, _MODES))}, not {mode!r}")
    if mode == "reduce-overhead":
        _warn_once("prism: mode 'reduce-overhead' runs as 'default': prism captures no CUDA graphs")
    target, top = options.get("target", target), options.get("top", _MODES.get(mode) if top is None else top)
    if target is not None and target not in _TARGETS:
        raise ValueError(f"prism's targets are {' and '.join(map(repr, _TARGETS))}, not {target!r}")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 256):
        raise ValueError(f"prism's 'top' (instantiations a tune times) is an int from 1 to 256, not {top!r}")
    return target, top


def torch_backend(graph_module, example_inputs, target=None, top=None, explain=False, mode=None, options=None):
    """A torch.compile backend: `graph_module` with each partition prism compiles replaced by its
    callable. The result's `prism_partitions` lists (name, Compiled), `prism_skipped` (name, why)
    and `prism_left` (node, why) for each op outside every partition. `target` ("cpu", "cuda"):
    where prism's kernels run, else where each piece's tensors lie; `top`: the instantiations a
    tune times; torch.compile's `mode` and `options` ({"target", "top"}) set them too.
    Under autograd (an input that requires grad, grad mode on) the graph is returned as it is:
    prism's kernels compute no gradients. `explain`: nothing is searched or said; each piece's
    program is kept in `prism_programs` (name, Imported) and PyTorch runs the whole graph.
    An error of prism's own outside every piece (a bug) leaves the whole graph to PyTorch, with
    one warning that says so: the user's model runs as written, never crashes in its compile."""
    target, top = _settings(target, top, mode, options)  # the user's mistake: raised, not a fallback
    try:
        floats = varying_floats.positions(graph_module, example_inputs)
        if floats:  # compiled for each set of their values (docs/python.md, "Floats dynamo lets vary")
            return varying_floats.ByValues(graph_module, example_inputs, floats,
                                           lambda graph, args: torch_backend(graph, args, target, top, explain),
                                           _warn_once, _failed_on_graph)
        return _backend(graph_module, example_inputs, target, top, explain)
    except Exception as error:  # noqa: BLE001 -- the model runs as written, the bug is reported
        _failed_on_graph(error)
        graph_module.prism_partitions, graph_module.prism_left, graph_module.prism_programs = [], [], []
        graph_module.prism_skipped = [("graph", f"prism failed on it ({type(error).__name__}: {error})")]
        graph_module.prism_share = share.Share(0, 0, 0, 0)
        return graph_module


def _backend(graph_module, example_inputs, target, top, explain):
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
    from torch.fx.passes.operator_support import OperatorSupportBase

    if _needs_gradients(example_inputs):
        _warn_once("prism: this graph needs gradients and prism's kernels compute none: PyTorch runs it "
                   "(call the model under torch.no_grad() or torch.inference_mode() for prism's kernels)")
        graph_module.prism_partitions, graph_module.prism_skipped, graph_module.prism_left = [], [], []
        graph_module.prism_share = share.share(graph_module, example_inputs, [])
        return graph_module

    # Ops whose dtype no cast explains run where autocast is as it was (implicit_casts.py).
    autocast_bound = implicit_casts.write_casts(graph_module)
    _record_shapes(graph_module, example_inputs)
    _simplify(graph_module)
    regions = _in_regions(graph_module) | autocast_bound

    refused = {}  # node -> why the importer refused it in a piece: PyTorch's, the piece cut around it
    cut_heads = set()  # head splits and merges a piece's search could not take: cut there
    heads_inside = os.environ.get("PRISM_HEADS_INSIDE", "1") != "0"  # docs/python.md, "Head splits inside"

    def cuts(node):
        return moves_layout(node) and (not heads_inside or node in cut_heads or not splits_heads(node))

    class PrismSupport(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return (node not in regions and node not in refused and not cuts(node) and
                    fx_import.translates(graph_module, node))

    # Single nodes too: the partitioner's own filter counts call_function nodes only, and a model
    # traced with its nn.Modules calls them (call_module); _compute_nodes filters instead.
    # Positions by name: fusing copies the nodes into a new graph, under their names.
    original = {n.name: i for i, n in enumerate(graph_module.graph.nodes)}
    writes = effects.visible_writes(graph_module)
    autocast, between_writes = _autocast_segments(graph_module), effects.segments(graph_module, writes)
    segment = {n: (autocast[n], between_writes[n]) for n in graph_module.graph.nodes}
    barriers = {n.name for n in graph_module.graph.nodes
                if n in writes or getattr(n.target, "__name__", "") in _EFFECT_CALLS}
    for _ in range(_PARTITION_ROUNDS):
        partitioner = CapabilityBasedPartitioner(graph_module, PrismSupport(), allows_single_node_partition=True)
        partitions = [Partition(id=i, nodes=nodes) for i, nodes in
                      enumerate(piece for p in partitioner.propose_partitions() for part in _by_segment(p, segment)
                                for piece in _pieces(_trimmed(part), original))]
        imported = _imports(graph_module, partitions)
        # A piece that holds head splits and does not import, or (when compiling) finds no
        # family, is cut at them first; then the importer's refusals, as in a piece without them.
        untaken = _untaken_head_splits(partitions, imported) if heads_inside else set()
        more = {} if untaken else _refusals(graph_module, imported)
        if heads_inside and not untaken and not more and not explain:
            untaken = _untaken_head_splits(partitions, imported, lambda piece, program: _compiled(piece, program, target, top))
        if not untaken and not more:
            break
        cut_heads.update(untaken)
        refused.update(more)
    left = _left_to_pytorch(graph_module) + [(_described(n), why) for n, why in refused.items()]
    first = {f"fused_{i}": min(original[n.name] for n in p.nodes) for i, p in enumerate(partitions)}  # fuse_by_partitions' names
    members = {f"fused_{i}": list(p.nodes) for i, p in enumerate(partitions)}
    whole_graph = share.share(graph_module, example_inputs, [])  # counted before fusing moves the nodes
    shares = {name: share.share(graph_module, example_inputs, nodes) for name, nodes in members.items()}
    partitioned = partitioner.fuse_partitions(partitions)
    order = {n: first[n.target] if n.op == "call_module" and n.target in first else original[n.name]
             for n in partitioned.graph.nodes if n.name in original or (n.op == "call_module" and n.target in first)}
    _keep_order(partitioned, order, barriers)
    partitioned.prism_partitions, partitioned.prism_skipped, partitioned.prism_left = [], [], left
    partitioned.prism_programs = []
    taken = []
    for node in partitioned.graph.nodes:
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        part = partitioned.get_submodule(node.target)
        if _compute_nodes(part) < 2:
            continue  # one op alone gains nothing from fusion: PyTorch runs it
        try:
            if isinstance(imported[node.target], Exception):
                raise imported[node.target]
            piece, folded, program = imported[node.target]
            if explain:
                partitioned.prism_programs.append((node.target, program))
                taken.append(shares[node.target])
                continue
            compiled = _compiled(piece, program, target, top)
        except Exception as error:  # noqa: BLE001 -- a piece prism fails on is PyTorch's, never the user's crash
            known = isinstance(error, (UnsupportedOp, PrismError, ConnectionLost))
            why = str(error) if known else f"prism failed on it ({as_bug(error)})"
            if not explain:
                _warn_once(f"prism: {node.target} stays PyTorch's: {why}")
            partitioned.prism_skipped.append((node.target, why))
            continue
        partitioned.prism_partitions.append((node.target, compiled))
        taken.append(shares[node.target])
        setattr(partitioned, node.target, _partition_module(node.target, compiled, folded, _functional(part)))
    partitioned.prism_share = sum(taken, whole_graph)
    if left and not explain:
        _warn_once(f"prism: {partitioned.prism_share}; PyTorch runs these ops of the graph:\n" +
                   "\n".join(f"  {node}: {why}" for node, why in left))
    return partitioned


class Explanation:
    """What prism.explain found, per graph dynamo captured: `graphs`, each with `prism_programs`
    (the pieces prism would search), `prism_skipped` (pieces the importer refuses, and why) and
    `prism_left` (the ops PyTorch keeps, and why). `str()` is the report."""

    def __init__(self, graphs):
        self.graphs = graphs

    def __str__(self):
        lines = []
        for i, graph in enumerate(self.graphs):
            lines.append(f"graph {i}: prism would search {len(graph.prism_programs)} program(s)")
            lines.append(f"  if each finds a family, {graph.prism_share}")
            for name, program in graph.prism_programs:
                signature = program.text.split("{", 1)[0].strip()
                lines.append(f"  {name}: {signature} ({program.text.count(chr(10)) - 2} statements)")
            for name, why in graph.prism_skipped:
                lines.append(f"  {name} stays PyTorch's: {why}")
            for node, why in graph.prism_left:
                lines.append(f"  PyTorch runs {node}: {why}")
        return "\n".join(lines)


def explain(model, *args, **kwargs):
    """What torch.compile(model, backend="prism") gives prism and leaves to PyTorch on this call,
    without searching or tuning: dynamo captures the graphs, the backend imports each piece, and
    PyTorch computes the call. Returns an Explanation (print it for the report)."""
    import torch

    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(torch_backend(graph_module, example_inputs, explain=True))
        return graphs[-1]

    torch._dynamo.reset()
    try:
        with torch.no_grad():
            torch.compile(model, backend=backend)(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    return Explanation(graphs)


def register_torch_backend(name="prism"):
    """Registers torch_backend with torch.compile as `name` (PyTorch 2); False where this PyTorch
    has no torch.compile (1.x)."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return False
    if name not in list_backends(exclude_tags=()):
        register_backend(name=name)(torch_backend)
    return True


class _RegisterWhenDynamoLoads(importlib.abc.MetaPathFinder):
    """Registers the backend right after torch._dynamo is first imported, so that `import prism`
    before `import torch` costs no torch import and torch.compile(backend="prism") still finds it."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch._dynamo":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            register_torch_backend()

        spec.loader.exec_module = exec_module
        return spec


def register_on_import():
    """What `import prism` does: register now where torch's dynamo is loaded, else when it loads."""
    if "torch._dynamo" in sys.modules:
        register_torch_backend()
    elif not any(isinstance(f, _RegisterWhenDynamoLoads) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterWhenDynamoLoads())
