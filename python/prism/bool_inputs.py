"""Boolean mask inputs of a traced module, read as floats of 1 and 0 (docs/python.md,
"prism.from_torch", "Boolean masks").

prism computes f32, f16 and bf16, so a module's boolean argument (an attention mask, True where
kept) cannot be a program's input as it is. prism.compile passes it as 1.0 and 0.0 in the dtype
its readers compute in, and the traced graph reads it so: `torch.where(mask, a, b)` and
`x.masked_fill(mask, value)` become selects by it (bool_selects.select, prism's `where`, exact:
an infinity or NaN in the operand not selected is dropped as PyTorch drops it), `~mask` and
`mask.logical_not()` are `1 - mask`, a slice of it is a slice of those floats, and
`scaled_dot_product_attention`'s boolean `attn_mask` is the additive mask PyTorch makes of it, 0
where kept and -inf where masked (a mask attention alone reads is passed so, made by PyTorch at
the call). A boolean input read any other way stays boolean, and the importer says which input
and why.
"""
import operator

from . import bool_selects, graph_rewrites, share
from .share import Meta

_NOTS = {"logical_not", "invert", "bitwise_not"}


def read_as_floats(module):
    """Rewrites `module`'s graph (nodes with ShapeProp's tensor_meta) so that each boolean input
    read only as above reads floats. Returns ({the input's name: the torch dtype it is passed
    in}, {the names of those passed as additive masks}): an input attention alone reads (itself
    or a slice of it) is passed as the additive mask PyTorch makes of it, 0 where kept and -inf
    where masked, and attention reads it as such; a fused search takes an additive mask input
    where a select computing one before attention leaves a decoder layer without a family."""
    graph, passed, additive = module.graph, {}, set()
    for node in list(graph.nodes):
        if node.op != "placeholder" or _dtype(node) != "torch.bool":
            continue
        family = _family(node)
        readers = list(dict.fromkeys(u for n in family for u in n.users if u not in family))
        dtypes = {_reads_as(reader, family) for reader in readers}
        if not readers or len(dtypes) != 1 or None in dtypes:
            continue
        dtype = dtypes.pop()
        as_additive = (all(share.op_name(r) == "scaled_dot_product_attention" for r in readers)
                       and not any(map(_is_not, family)))
        # First: a negation _as_float replaces hands its readers its `1 - x`.
        for reader in readers if not as_additive else ():
            _read_floats(graph, reader, dtype)
        for n in family:
            _as_float(graph, n, dtype)
        passed[node.target] = dtype
        if as_additive:
            additive.add(node.target)
    if passed:
        module.recompile()
    return passed, additive


def _dtype(node):
    return str(getattr(getattr(node, "meta", {}).get("tensor_meta"), "dtype", None))


def _is_not(node):
    return (node.op in ("call_function", "call_method") and share.op_name(node) in _NOTS and len(node.args) == 1
            and not node.kwargs)


def _is_slice(node):
    """A slice of a mask (`mask[:, :, :, :t]`, attention's cut to the keys' length): the same
    booleans, fewer of them."""
    if node.op != "call_function" or node.target is not operator.getitem or node.kwargs:
        return False
    index = node.args[1] if isinstance(node.args[1], tuple) else (node.args[1],)
    return all(i is None or i is Ellipsis or isinstance(i, slice) for i in index)


def _family(source):
    """`source` and the negations and slices of it, and of them, that the graph computes, in graph
    order."""
    family, stack = [source], [source]
    while stack:
        for user in stack.pop().users:
            if (_is_not(user) or _is_slice(user)) and user not in family:
                family.append(user)
                stack.append(user)
    return family


def _reads_as(node, family):
    """The floating dtype `node` computes in where it reads a member of `family` as a mask only
    (the condition of a select, an attention's mask); else None."""
    name = share.op_name(node) if node.op in ("call_function", "call_method") else None
    if name in ("where", "masked_fill"):
        operands = bool_selects.select_operands(node)
        if operands is None or operands[0] not in family or any(o in family for o in operands[1:]):
            return None
        return node.meta["tensor_meta"].dtype
    if name == "scaled_dot_product_attention":
        mask = share.attention_mask(node)
        if mask not in family or any(a in family for a in node.args[:3]):  # query, key, value
            return None
        return node.args[0].meta["tensor_meta"].dtype
    return None


def _as_float(graph, node, dtype):
    """A member of the family as 1.0 and 0.0: the input and a slice retyped, a negation as `1 - x`."""
    shape = node.meta["tensor_meta"].shape
    if node.op != "placeholder" and not _is_slice(node):
        with graph.inserting_before(node):
            flipped = graph.call_function(operator.sub, (1.0, node.args[0]))
        flipped.meta = {**node.meta, "tensor_meta": Meta(shape, dtype)}
        node.replace_all_uses_with(flipped)
        graph.erase_node(node)
        return
    node.meta["tensor_meta"] = Meta(shape, dtype)


def _read_floats(graph, node, dtype):
    """`node` reading the family's floats: a select by them, or attention with their additive mask."""
    if share.op_name(node) == "scaled_dot_product_attention":
        mask = share.attention_mask(node)
        with graph.inserting_before(node):
            additive = graph.call_function(bool_selects.select, (mask, 0.0, float("-inf")))
        additive.meta = {**mask.meta, "tensor_meta": Meta(mask.meta["tensor_meta"].shape, dtype)}
        node.replace_input_with(mask, additive)
        return
    condition, taken, other = bool_selects.select_operands(node)
    with graph.inserting_before(node):
        chosen = graph.call_function(bool_selects.select, (condition, taken, other))
    chosen.meta = dict(node.meta)
    node.replace_all_uses_with(chosen)
    graph.erase_node(node)


def passed_as(mask, dtype, additive):
    """A boolean mask as the program takes it: 1.0 and 0.0, or the additive mask (0.0 and -inf)."""
    return mask.to(dtype) if not additive else graph_rewrites.additive_mask(mask, dtype)
