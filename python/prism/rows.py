"""Leading dims folded into rows: a partition whose every op works row by row ([batch, seq, hidden]
activations through linears, Conv1D's `view(-1, d)`/`addmm`/`view(*shape, d)`, elementwise ops and
norms over the last axis) is imported with each activation as [rows, hidden], the form the search
serves best; its reshapes that move only leading dims vanish (docs/python.md, "torch.compile").

fold_rows(part) rewrites the partition's graph in place and returns a Rows that reshapes the call's
tensors to rows and the results back; None where some op is not row-wise (a head view, a
transpose, a reduction over another axis), and the partition is imported as written.
"""
import functools
import operator

from .share import RESHAPES, SPLITS as _SPLITS, is_split_piece, op_name as _name, shape_of as _shape

_LINEAR_WEIGHT = {"linear": 1, "addmm": 2, "matmul": 1}  # the argument that is the weight
_ROWWISE_AXIS = {"sum", "mean", "amax", "var", "softmax", "log_softmax"} | _SPLITS  # row-wise along the last axis
_ELEMENTWISE = {"add", "sub", "mul", "div", "true_divide", "pow", "neg", "exp", "log", "sqrt", "rsqrt", "tanh",
                "sigmoid", "relu", "silu", "gelu", "abs", "erf", "maximum", "minimum", "where", "clamp", "float",
                "half", "bfloat16", "to", "type_as", "contiguous", "dropout", "layer_norm"}


def _axis_is_last(node, rank):
    at = 2 if _name(node) in _SPLITS else 1  # split(x, size, dim), sum(x, dim)
    dim = node.kwargs.get("dim", node.args[at] if len(node.args) > at else 0 if at == 2 else None)
    dim = dim[0] if isinstance(dim, (list, tuple)) and len(dim) == 1 else dim
    return isinstance(dim, int) and dim in (-1, rank - 1)


class Rows:
    """How a folded partition's tensors meet the call: `inputs[i]` is True where placeholder i is
    an activation read as rows; `outputs[j]` is the index of the input whose leading dims output j
    takes back (None: it stays as computed)."""

    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = inputs, outputs

    def arguments(self, args):
        return [a.reshape(-1, a.shape[-1]) if fold else a for a, fold in zip(args, self.inputs)]

    def output_shapes(self, args, shapes):
        """The outputs' shapes at a call with `args`, from the folded program's `shapes`."""
        return [shape if k is None else (*args[k].shape[:-1], shape[-1]) for shape, k in zip(shapes, self.outputs)]


def _weights(graph):
    """The 2-D placeholders read only as a linear's, addmm's or matmul's weight (they keep their
    shape). A matmul by a batched operand (the rotary's `inv_freq[b, e, 1] @ positions[b, 1, s]`)
    is not row by row: its rows are not the product's."""
    weights = set()
    for n in graph.nodes:
        shape = _shape(n)
        if n.op == "placeholder" and shape is not None and len(shape) == 2 and n.users and all(
                _name(u) in _LINEAR_WEIGHT and len(u.args) > _LINEAR_WEIGHT[_name(u)] and u.args[_LINEAR_WEIGHT[_name(u)]] is n
                for u in n.users):
            weights.add(n)
    return weights


def _rowwise(n, shape, inputs, weights):
    """Whether node `n` works row by row on its tensors (a matmul: by one of `weights`)."""
    name = _name(n)
    if name in _LINEAR_WEIGHT:
        at = _LINEAR_WEIGHT[name]
        return len(n.args) > at and n.args[at] in weights
    if n.target is operator.getitem:  # a piece of a split the loop took as row-wise
        return is_split_piece(n)
    if name in RESHAPES:
        return inputs and inputs[0] and inputs[0][-1:] == shape[-1:]
    if name in _ROWWISE_AXIS:
        return _axis_is_last(n, len(inputs[0])) if inputs and inputs[0] else False
    return name in _ELEMENTWISE or n.target in (operator.add, operator.sub, operator.mul,
                                                                          operator.truediv, operator.neg, operator.pow)


def fold_rows(part):
    """Folds `part`'s activations into rows in place (module docstring); a Rows, or None."""
    graph = part.graph
    weights = _weights(graph)
    rows, values, splits = set(), [], []
    for n in graph.nodes:
        shape = _shape(n)
        if _name(n) in _SPLITS and n.op != "placeholder":  # its meta is its pieces'
            source = _shape(n.args[0])
            if source is None or len(source) < 2 or not _axis_is_last(n, len(source)):
                return None
            splits.append(n)
            continue
        if n.op == "output" or shape is None or n in weights or len(shape) < 2:
            if n.op in ("call_function", "call_method") and shape is None and _name(n) != "getitem":
                return None
            continue
        if n.op != "placeholder" and not _rowwise(n, shape, [_shape(a) for a in n.all_input_nodes], weights):
            return None
        rows.add(str(functools.reduce(operator.mul, shape[:-1], 1)))
        values.append(n)
    if len(rows) != 1 or not any(len(_shape(v)) > 2 for v in values):
        return None
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    outputs = graph.output_node().args[0]
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    taken_back = []
    for out in outputs:
        if out not in values:
            taken_back.append(None)
            continue
        like = [i for i, p in enumerate(placeholders) if p in values and tuple(map(str, _shape(p)[:-1])) == tuple(map(str, _shape(out)[:-1]))]
        if not like and len(_shape(out)) > 2:
            return None  # no input gives the leading dims back
        taken_back.append(like[0] if like and len(_shape(out)) > 2 else None)
    count = rows.pop()
    folded = int(count) if count.isdigit() else "rows"
    def as_rows(meta):
        return type(meta)((folded, meta.shape[-1]), meta.dtype) if hasattr(meta, "_fields") else meta

    for v in values:
        v.meta["tensor_meta"] = as_rows(v.meta["tensor_meta"])
    for n in splits:  # along the last axis, whatever rank it had
        n.meta["tensor_meta"] = [as_rows(m) for m in n.meta["tensor_meta"]]
        if "dim" in n.kwargs:
            n.kwargs = {**n.kwargs, "dim": -1}
        elif len(n.args) > 2:
            n.args = n.args[:2] + (-1,) + n.args[3:]
    for n in list(graph.nodes):
        if n in values and _name(n) in RESHAPES and n.op != "placeholder":
            n.replace_all_uses_with(n.args[0])
            graph.erase_node(n)
    part.recompile()
    return Rows([p in values for p in placeholders], taken_back)
