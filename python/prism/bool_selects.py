"""Selects by a boolean mask, written as selects by a float mask of 0 and 1 that PyTorch casts
(docs/python.md, "Selects by a boolean mask").

prism computes f32, f16 and bf16, so an op that reads a boolean is PyTorch's, and the pieces are
cut around it. Eager attention masks its scores so: GPT-2's and GPT-Neo's
`torch.where(causal_mask, scores, mask_value)`, DistilBERT's `scores.masked_fill(mask, min)`,
their mask a slice of a boolean buffer. Each such select now reads `select_condition(mask,
dtype)`, the mask cast to the select's dtype (PyTorch's: it reads the boolean), through
`select(keep, input, other)`, which the importer writes as prism's `where`: `mask(c, input) +
mask(c == 0, other)`, a select by bits, exact, a NaN or an infinity in the operand not selected
dropped as PyTorch drops it. Run by PyTorch (a piece's own ops), `select` is `torch.where`.

A select given a dtype's limit as a number (`masked_fill(mask, finfo.min)` on a mask being
built) is left as it is: the importer leaves those to PyTorch (fx_import.why_untranslated).
"""
from . import share


def select_condition(condition, dtype):
    """A boolean `condition` as 1 where it holds, else 0, in `dtype`."""
    return condition.to(dtype)


def select(keep, input, other):
    """`input` where `keep` is nonzero, else `other`: prism's where, as torch.where computes it."""
    import torch

    return torch.where(keep != 0, input, other)


def write_float_selects(graph, meta_of):
    """Rewrites each select by a boolean mask in `graph` (torch.where, masked_fill) whose result is
    floating point as `select(select_condition(mask, dtype), input, other)`. `meta_of(shape,
    dtype)` makes a new node's tensor_meta."""
    for node in list(graph.nodes):
        operands = _select_operands(node)
        if operands is None:
            continue
        condition, input, other = operands
        dtype = node.meta["tensor_meta"].dtype
        with graph.inserting_before(node):
            keep = graph.call_function(select_condition, (condition, dtype))
            chosen = graph.call_function(select, (keep, input, other))
        keep.meta = {**condition.meta, "tensor_meta": meta_of(condition.meta["tensor_meta"].shape, dtype)}
        chosen.meta = dict(node.meta)
        node.replace_all_uses_with(chosen)
        graph.erase_node(node)


def select_operands(node):
    """(condition, taken where it holds, taken elsewhere) of a where or masked_fill node given its
    three arguments by position; else None."""
    if node.op not in ("call_function", "call_method"):
        return None
    name, args = share.op_name(node), list(node.args)
    if len(args) != 3 or node.kwargs:
        return None
    if name == "where" and node.op == "call_function":  # torch.where(condition, input, other)
        return tuple(args)
    if name == "where":  # input.where(condition, other)
        input, condition, other = args
        return condition, input, other
    if name == "masked_fill":  # torch.masked_fill(x, mask, value), x.masked_fill(mask, value)
        other, condition, input = args
        return condition, input, other
    return None


def _select_operands(node):
    """(condition, input, other) of a select by a boolean tensor giving a floating-point tensor,
    one of whose operands is a tensor of numbers with a shape (an attention's scores, not a mask
    being built from scalars), none a dtype's limit as a number; else None."""
    operands = select_operands(node) if share.computes_numbers(node) else None
    if operands is None:
        return None
    condition, input, other = operands
    if str(getattr(getattr(condition, "meta", {}).get("tensor_meta"), "dtype", None)) != "torch.bool":
        return None
    if share.is_dtype_limit(input) or share.is_dtype_limit(other):
        return None
    shaped = [a for a in (input, other) if hasattr(a, "meta") and share.computes_numbers(a) and share.shape_of(a)]
    return (condition, input, other) if shaped else None
