"""Formulas a model writes out as arithmetic, imported as the one op they compute (docs/python.md,
"Models").

transformers' NewGELUActivation (GPT-2's `gelu_new`) is Python arithmetic, so dynamo's graph holds
its nine elementwise nodes, `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))`, each of
which the search has to place. prism has the formula as one op, `gelu_tanh` (the one
`F.gelu(approximate="tanh")` imports as), which the search treats as a single elementwise step.
A formula is recognised only where every node inside it is read by the formula alone: a model that
also reads an inner value (the tanh, say) keeps its nodes as written.
"""
import math

from .share import op_name

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


def _is(node, *names):
    return getattr(node, "op", None) in ("call_function", "call_method") and op_name(node) in names


def _close(value, want):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value - want) <= 1e-6 * abs(want)


def _operands(node, op):
    """The two operands of `node` when it is a binary `op` ("mul", "add") of a tensor and
    anything; None otherwise."""
    if not _is(node, op) or len(node.args) != 2 or node.kwargs:
        return None
    return node.args


def _split_constant(node, op, want):
    """The tensor operand of `node` = `op`(tensor, constant ≈ want), in either order; else None."""
    args = _operands(node, op)
    if args is None:
        return None
    a, b = args
    if _close(b, want) and hasattr(a, "op"):
        return a
    if _close(a, want) and hasattr(b, "op"):
        return b
    return None


def _cube_of(node):
    """x where `node` is x ** 3 (pow(x, 3) or x ** 3.0)."""
    if _is(node, "pow") and len(node.args) == 2 and _close(node.args[1], 3.0) and hasattr(node.args[0], "op"):
        return node.args[0]
    return None


def _tanh_gelu_argument(out):
    """(x, inner nodes) where `out` computes 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)));
    else None."""
    args = _operands(out, "mul")
    if args is None:
        return None
    for half, one_plus in (args, args[::-1]):
        x = _split_constant(half, "mul", 0.5) if hasattr(half, "op") else None
        t = _split_constant(one_plus, "add", 1.0) if hasattr(one_plus, "op") else None
        if x is None or t is None or not _is(t, "tanh") or len(t.args) != 1:
            continue
        inner = _split_constant(t.args[0], "mul", _SQRT_2_OVER_PI)
        sum_args = _operands(inner, "add") if inner is not None else None
        if sum_args is None:
            continue
        for lone, cubic in (sum_args, sum_args[::-1]):
            cube = _split_constant(cubic, "mul", _CUBIC) if hasattr(cubic, "op") else None
            if lone is x and cube is not None and _cube_of(cube) is x:
                return x, [half, one_plus, t, t.args[0], inner, cubic, cube]
    return None


def tanh_gelus(graph):
    """{output node: x} for each tanh GELU written out in `graph`, and the set of nodes inside
    them, which nothing else reads."""
    found, inner = {}, set()
    for node in graph.nodes:
        match = _tanh_gelu_argument(node)
        if match is None:
            continue
        x, nodes = match
        formula = set(nodes) | {node}
        if all(set(n.users) <= formula for n in nodes) and not inner.intersection(nodes):
            found[node] = x
            inner.update(nodes)
    return found, inner
