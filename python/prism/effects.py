"""In-place writes in a captured graph, and the order they impose (docs/python.md, "In-place
writes").

An in-place op (`x.index_copy_(...)`, `x[i] = v`, `x += y`, `f(x, inplace=True)`, `out=x`) writes
into a tensor that later nodes read through x's own node, not through the op's result: no edge of
the graph orders them. transformers' StaticCache writes each layer's keys and values so
(`keys.index_copy_(2, cache_position, k)`) and the attention reads `keys`: a piece that joins
that attention to work before the write, or a sort that moves it there, reads the cache before
the step's keys are in it.

So each write whose effect another node can see is a barrier: PyTorch runs it, no piece holds
nodes from both sides of it (`segments`), and the graph's sort keeps every node on its side
(graph_order.keep_order). A write nothing else can see, into a tensor the graph made by a
computing op (no input, buffer or view) that no other node reads (Falcon's `mlp_output +=
attention_output`, T5's `scores += bias`), is computed out of place in a piece, as before.
"""
import functools
import inspect
import operator

from .share import op_name

_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                       operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
                       operator.ilshift, operator.irshift, operator.setitem}
_IN_PLACE_DUNDERS = {"__setitem__"} | {f"__i{name}__" for name in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                                                                       "pow", "matmul", "and", "or", "xor")}
_OUT_OF_PLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
                 operator.itruediv: operator.truediv}
# Ops whose result may share memory with an input: a write into it is a write into that input.
_VIEWS = frozenset({"getitem", "view", "view_as", "reshape", "transpose", "permute", "t", "T", "mT", "expand",
                    "expand_as", "unsqueeze", "squeeze", "flatten", "unflatten", "narrow", "select", "as_strided",
                    "split", "chunk", "unbind", "tensor_split", "contiguous", "to", "float", "half", "bfloat16",
                    "type", "type_as", "detach", "movedim", "moveaxis", "swapaxes", "swapdims", "diagonal", "real",
                    "imag", "unfold", "getattr", "Identity", "Dropout", "dropout", "alias"})


def written(node):
    """The node whose tensor `node` writes in place (None where it writes none): the first
    operand of an in-place method, function or operator, the input of an op called with
    `inplace=True`, a tensor passed as `out=`."""
    if node.op == "call_module":
        module = node.graph.owning_module.get_submodule(node.target)
        return _first(node) if getattr(module, "inplace", False) is True else None
    if node.op not in ("call_method", "call_function"):
        return None
    out = node.kwargs.get("out")
    if out is not None:
        return out[0] if isinstance(out, (tuple, list)) else out
    if node.op == "call_function" and node.target in _IN_PLACE_OPERATORS:
        return _first(node)
    name = str(op_name(node)).split(".")[0]  # an aten overload's name: add_.Tensor
    if name.endswith("_") and not name.endswith("__") or name in _IN_PLACE_DUNDERS:
        return _first(node)
    return _first(node) if node.op == "call_function" and _inplace_argument(node) else None


def writes_visibly(node):
    """Whether `node` writes in place into a tensor another node can read: a graph input or
    buffer, a value read by any node but this one, or one that shares memory with such a tensor
    (a view of it, or a cast that may return it)."""
    reader, target = node, written(node)
    while target is not None:
        if not hasattr(target, "op") or target.op in ("placeholder", "get_attr") or set(target.users) != {reader}:
            return True
        if op_name(target) not in _VIEWS and written(target) is None:
            return False  # made by an op that computes a new tensor, read by this write alone
        reader, target = target, _first(target)  # what the view, or an earlier write, shares memory with
    return False


def visible_writes(graph_module):
    """The nodes of `graph_module` that write visibly (writes_visibly)."""
    return {n for n in graph_module.graph.nodes if writes_visibly(n)}


def segments(graph_module, writes):
    """Each node's segment: how many of `writes` (visible_writes) come before it in the graph's
    order. A write opens the next segment (module docstring)."""
    segment, of = 0, {}
    for n in graph_module.graph.nodes:
        segment += n in writes
        of[n] = segment
    return of


def make_out_of_place(node):
    """Rewrites `node`, an in-place operator or a call with `inplace=True`, as its out-of-place
    form (`a + b`, `inplace=False`); whether it changed it."""
    if node.op == "call_function" and node.target in _OUT_OF_PLACE:
        node.target = _OUT_OF_PLACE[node.target]
        return True
    if node.kwargs.get("inplace") is True:
        node.kwargs = {**node.kwargs, "inplace": False}
        return True
    if node.op != "call_function" or not _inplace_argument(node):
        return False
    at = list(_signature(node.target).parameters).index("inplace")  # passed by position
    node.args = node.args[:at] + (False,) + node.args[at + 1:]
    return True


def _first(node):
    return node.args[0] if node.args else next(iter(node.kwargs.values()), None)


def _inplace_argument(node):
    """`inplace=True` by keyword, or by position where the function's signature names it
    (`F.relu(x, True)`, `F.dropout(x, p, training, True)`)."""
    if node.kwargs.get("inplace") is True:
        return True
    signature = _signature(node.target)
    if signature is None or "inplace" not in signature.parameters:
        return False
    try:
        return signature.bind(*node.args, **node.kwargs).arguments.get("inplace") is True
    except TypeError:  # arguments the signature does not take
        return False


@functools.lru_cache(maxsize=None)
def _signature(function):
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):  # a builtin with no signature
        return None
