"""What the importer should not see, rewritten in a captured graph before it is partitioned
(docs/python.md, "torch.compile"): a cast to the dtype a value already has, dropout at inference,
nn.Identity and a product by 1 (a piece returning its input, or one searched and tuned for
nothing); a boolean attention mask, as the additive one PyTorch makes of it, and `is_causal=True`
as its mask, computed by PyTorch; GPT-2's Conv1D reshapes around `addmm`; a cache's values'
length written as its keys'; a select by a boolean mask, as one by the mask cast to floats
(bool_selects.py); a patch embedding's convolution, as its linear (patch_convolutions.py).
"""
from . import bool_selects, patch_convolutions, share
from .share import Meta


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
    return causal_mask_sized((query.shape[-2], key.shape[-2]), query.dtype, query.device)


def causal_mask_at_rank(query, key):
    """causal_mask at the query's rank, its leading axes 1 (`[1, 1, s, t]`): from_torch's made
    input, which grouped heads read as a mask of one head (docs/python.md, "is_causal=True")."""
    return causal_mask_sized((1,) * (query.dim() - 2) + (query.shape[-2], key.shape[-2]), query.dtype, query.device)


def causal_mask_sized(shape, dtype, device):
    """causal_mask's mask of `shape[-2]` queries over `shape[-1]` keys, in `shape`."""
    import torch

    rows, columns = shape[-2], shape[-1]
    keep = torch.ones(rows, columns, dtype=torch.bool, device=device).tril()
    mask = torch.zeros(rows, columns, dtype=dtype, device=device).masked_fill_(keep.logical_not(), float("-inf"))
    return mask.view(shape)


def explicit_causal_masks(graph_module):
    """Every `is_causal=True` attention of the graph with causal_mask_at_rank's additive mask."""
    for n in list(graph_module.graph.nodes):
        if getattr(n.target, "__name__", None) == "scaled_dot_product_attention":
            _explicit_causal_mask(graph_module.graph, n, at_rank=True)
    graph_module.recompile()


def _explicit_causal_mask(graph, n, at_rank=False):
    """scaled_dot_product_attention(..., is_causal=True) as the same call with causal_mask's
    additive mask, computed by PyTorch (a call without an attention mask gets it); `at_rank`:
    causal_mask_at_rank's, from_torch's made input."""
    has_mask = share.attention_mask(n) is not None
    causal = n.kwargs.get("is_causal", n.args[5] if len(n.args) > 5 else False)
    if causal is not True or has_mask or len(n.args) > 3:
        return
    query, key = n.args[0], n.args[1]
    with graph.inserting_before(n):
        mask = graph.call_function(causal_mask_at_rank if at_rank else causal_mask, (query, key))
    q, k = query.meta["tensor_meta"], key.meta["tensor_meta"]
    leading = (1,) * (len(q.shape) - 2) if at_rank else ()
    mask.meta["tensor_meta"] = Meta(leading + (q.shape[-2], k.shape[-2]), q.dtype)
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
            n.meta["tensor_meta"] = Meta(tuple(same.get(str(d), d) for d in meta.shape), meta.dtype)


def simplify(graph_module):
    """What the importer should not see: a cast to the dtype a value already has (one fewer node,
    no program that returns its input), and a boolean attention mask, which becomes the additive
    one PyTorch makes of it, computed by PyTorch; Conv1D's reshapes (_addmm_at_rank); a cache's
    values' length (_unify_value_lengths); `is_causal=True` as its mask (_explicit_causal_mask); dropout at
    inference, nn.Identity (T5's `dropout(inputs_embeds)` would be a piece returning its input) and
    a product by 1 (a piece of its own, searched and tuned for nothing); a select by a boolean
    mask, as one by its mask cast to floats (bool_selects.py); a patch embedding's convolution, as
    its linear (patch_convolutions.py)."""
    graph = graph_module.graph
    bool_selects.write_float_selects(graph, Meta)
    patch_convolutions.write_patch_linears(graph, Meta)
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
            mask = share.attention_mask(n)
            if not hasattr(getattr(mask, "meta", {}).get("tensor_meta"), "dtype") or str(mask.meta["tensor_meta"].dtype) != "torch.bool":
                continue
            dtype = n.args[0].meta["tensor_meta"].dtype
            with graph.inserting_before(n):
                additive = graph.call_function(additive_mask, (mask, dtype))
            additive.meta["tensor_meta"] = Meta(mask.meta["tensor_meta"].shape, dtype)
            n.replace_input_with(mask, additive)
    graph_module.recompile()


# The functions simplify's nodes call: masks and patches beside the ops prism imports, not ops
# PyTorch keeps of the model's.
MADE_BY_SIMPLIFY = (additive_mask, causal_mask, bool_selects.select_condition, patch_convolutions.patch_rows,
                    patch_convolutions.patch_grid)
