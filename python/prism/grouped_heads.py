"""Grouped-query attention as modeling files write it: repeat_kv copies each key/value head once per
query head of its group before `F.scaled_dot_product_attention`,

    x[:, :, None, :, :].expand(b, k, g, s, e).reshape(b, k * g, s, e)   (or x.unsqueeze(2))

prism reads the repeat as a broadcast instead (docs/python.md, "Grouped heads"): the queries viewed
as [b, k, g, s, e] attend to keys and values at [b, k, 1, s, e], so no copy of the cache is made.
fx_import writes the attention that way and nothing for the repeat's steps; layout_cuts keeps the
steps in the attention's piece.
"""
from .share import RESHAPES, op_name, shape_of


def _text(sizes):
    return [str(s) for s in sizes]


def repeated_heads(node):
    """The repeat's source at [b, k, 1, s, e] where `node` is repeat_kv's result (module docstring),
    with the group size g; None for any other node."""
    if getattr(node, "op", None) not in ("call_method", "call_function") or op_name(node) not in RESHAPES:
        return None
    expanded = node.args[0]
    if getattr(expanded, "op", None) != "call_method" or op_name(expanded) != "expand" or len(expanded.users) != 1:
        return None
    source = expanded.args[0]
    have, grown, merged = shape_of(source), shape_of(expanded), shape_of(node)
    if have is None or grown is None or merged is None or len(have) != 5 or len(grown) != 5 or len(merged) != 4:
        return None
    group = grown[2]
    if str(have[2]) != "1" or not isinstance(group, int) or _text(have[:2]) + _text(have[3:]) != _text(grown[:2]) + _text(grown[3:]):
        return None
    if _text(merged) != _text([have[0], have[1] * group if isinstance(have[1], int) else None, have[3], have[4]]):
        return None
    return source, group


def _attention_argument(sdpa, index, name):
    return sdpa.kwargs[name] if name in sdpa.kwargs else sdpa.args[index] if len(sdpa.args) > index else None


def grouped_sources(sdpa):
    """(keys, values, group) where attention `sdpa` reads repeat_kv's results for both, of one
    group size: the repeats' sources at [b, k, 1, s, e]; None otherwise."""
    if op_name(sdpa) != "scaled_dot_product_attention":
        return None
    key, value = (repeated_heads(_attention_argument(sdpa, i, name)) for i, name in ((1, "key"), (2, "value")))
    if key is None or value is None or key[1] != value[1]:
        return None
    return key[0], value[0], key[1]


def repeat_step(node):
    """Which step `node` is of a repeat that only grouped attention reads (grouped_sources):
    "source" (the repeat's source, where the expand alone reads it), "expand", "result" (its
    reshape); None for any other node."""
    reshape, steps = node, 0
    while repeated_heads(reshape) is None:
        if steps == 2 or len(getattr(reshape, "users", ())) != 1:
            return None
        reshape, steps = next(iter(reshape.users)), steps + 1
    if not reshape.users or not all(grouped_sources(u) is not None for u in reshape.users):
        return None
    if steps == 2 and repeated_heads(reshape)[0] is not node:
        return None
    return ("result", "expand", "source")[steps]
