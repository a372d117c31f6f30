"""How much of a captured graph prism's kernels run: its FLOPs and its weights' bytes, the report
torch_backend and prism.explain give per graph (docs/python.md, "torch.compile").

FLOPs count a multiply and an add as two: 2·M·N·K for a matmul (linear, addmm, bmm, the two of an
attention), 2·out·(C_in/groups)·k... for a convolution of 1, 2 or 3 dims (only conv2d was
counted once: Whisper's two conv1d, 15% of its encoder's FLOPs, went uncounted and its report
said 100%), one per output element for every other op that
computes a floating-point or complex tensor (Meta's reference Llama rotates by complex products).
A weight is a floating-point (or complex) parameter or buffer the graph reads (dynamo passes them
as inputs); it counts for prism where a piece prism runs reads it. A boolean or integer buffer is
no weight: GPT-2's causal mask, a 1024 x 1024 bool buffer a layer slices 8 x 8 of, counted 2 MB
of a tiny model's 2.8 MB and made prism's share of the weight bytes read 16% where its pieces read
every weight.
"""
import collections
import math
import operator

MATMULS = {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm"}
CASTS = frozenset({"to", "float", "half", "bfloat16", "type_as", "type"})  # the methods that cast a tensor
RESHAPES = frozenset({"view", "reshape"})  # the methods and functions that reshape a tensor
SPLITS = frozenset({"split", "chunk"})  # the ops whose pieces are getitem nodes
Meta = collections.namedtuple("Meta", ["shape", "dtype"])  # a node's tensor_meta, as the backend records it
# Ops that move, pick or convert data and compute nothing: no FLOPs.
MOVES_DATA = {"getitem", "view", "reshape", "split", "chunk", "contiguous", "unsqueeze", "squeeze", "transpose",
              "permute", "t", "cat", "expand", "expand_as", "repeat", "repeat_interleave", "flatten", "embedding", "tensor", "to", "float",
              "half", "bfloat16", "type_as", "type", "clone", "dropout", "Dropout", "Identity", "getattr",  # getattr: x.T
              "select_condition", "patch_rows", "patch_grid"}  # torch_backend's own cast and patch moves


def op_name(node):
    """A call's op: the method's name, the function's, or the module's class name."""
    if node.op == "call_method":
        return node.target
    if node.op == "call_module":
        return type(node.graph.owning_module.get_submodule(node.target)).__name__
    return getattr(node.target, "__name__", node.target)


def is_split(node):
    """A call of split or chunk."""
    return getattr(node, "op", None) in ("call_method", "call_function") and op_name(node) in SPLITS


def is_split_piece(node):
    """A getitem of a split's or chunk's pieces."""
    return node.target is operator.getitem and is_split(node.args[0])


def is_dtype_limit(value):
    """Whether `value` is a finite float of a dtype's limit's size (`finfo.min` written as a
    number): mask building, which PyTorch does and prism's pieces read the result of."""
    return isinstance(value, float) and math.isfinite(value) and abs(value) >= 1e30


def hint(size):
    """A size as a number: an int, or a SymInt's hint (the size of the call being compiled); None
    where it has none."""
    return size if isinstance(size, int) else getattr(getattr(size, "node", None), "hint", None)


def shape_of(node):
    """The shape `tensor_meta` records for `node` (sizes as dynamo gave them), or None."""
    meta = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return tuple(meta.shape) if hasattr(meta, "shape") else None


def _shape(node):
    shape = shape_of(node)
    return None if shape is None else [1 if hint(s) is None else int(hint(s)) for s in shape]


def attention_mask(node):
    """The `attn_mask` a scaled_dot_product_attention node is given, by keyword or position; None
    where it has none."""
    return node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)


def arguments(node, names, defaults=None):
    """The node's arguments by name, positional or keyword."""
    values = dict(defaults or {})
    values.update(zip(names, node.args))
    values.update(node.kwargs)
    return values


_CONVOLUTIONS = {"conv1d", "conv2d", "conv3d", "Conv1d", "Conv2d", "Conv3d"}
# Operand names where they are not (input, weight): passed by keyword too (Bloom's
# `baddbmm(batch1=..., batch2=...)`, an attention's `query=`).
_OPERANDS = {"addmm": ("input", "mat1", "mat2"), "baddbmm": ("input", "batch1", "batch2"),
             "scaled_dot_product_attention": ("query", "key", "value")}


def computes_numbers(node):
    """Whether `node` gives a floating-point or complex tensor: one that computes numbers, not an
    index, a mask or a count (integers and booleans)."""
    dtype = getattr(node.meta.get("tensor_meta"), "dtype", None)
    return bool(getattr(dtype, "is_floating_point", False) or getattr(dtype, "is_complex", False))


def node_flops(node):
    """The floating-point operations `node` computes (module docstring); 0 for no float tensor."""
    if not computes_numbers(node):
        return 0
    out = math.prod(_shape(node))
    name = op_name(node)
    if name in MOVES_DATA:
        return 0
    names = _OPERANDS.get(name, ("input", "weight"))
    shapes = {k: _shape(v) for k, v in arguments(node, names).items() if hasattr(v, "meta")}
    first = shapes.get(names[0])
    if name in MATMULS:
        rows = shapes.get(names[1]) if name in ("addmm", "baddbmm") else first
        return 2 * out * (rows or [1])[-1]
    if name == "scaled_dot_product_attention" and first:
        keys = (shapes.get("key") or [1, 1])[-2]
        return 2 * 2 * math.prod(first) * keys  # Q K^T, then the weights times V
    if name in _CONVOLUTIONS:  # each output a dot product of the kernel's in/groups x k... values
        kernel = shapes.get("weight") or _module_weight_shape(node)
        if kernel:
            return 2 * out * math.prod(kernel[1:])
    if name == "Linear" and first:
        return 2 * out * first[-1]
    return out


def _module_weight_shape(node):
    """A convolution module's weight shape (the node of a graph traced with its nn.Modules)."""
    if node.op != "call_module":
        return None
    weight = getattr(node.graph.owning_module.get_submodule(node.target), "weight", None)
    return list(weight.shape) if weight is not None else None


def weights(graph_module, example_inputs):
    """{placeholder: bytes} for the graph inputs that are floating-point parameters or buffers."""
    import torch

    found = {}
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, example_inputs):
        is_weight = isinstance(value, torch.nn.Parameter) or "_parameters_" in node.name or "_buffers_" in node.name
        dtype = getattr(value, "dtype", None)
        if is_weight and dtype is not None and (dtype.is_floating_point or dtype.is_complex):
            found[node] = value.numel() * value.element_size()
    return found


class Share:
    """FLOPs and weight bytes: prism's and the graph's."""

    def __init__(self, flops, all_flops, weight_bytes, all_weight_bytes, read=None):
        self.flops, self.all_flops = flops, all_flops
        self.weight_bytes, self.all_weight_bytes = weight_bytes, all_weight_bytes
        self.read = read or {}  # {weight's name: bytes} that prism's pieces read

    def __add__(self, other):
        """Two disjoint sets of nodes of one graph: a weight both read counts once."""
        read = {**self.read, **other.read}
        return Share(self.flops + other.flops, self.all_flops, sum(read.values()), self.all_weight_bytes, read)

    def __str__(self):
        def percent(part, whole):
            return f"{100.0 * part / whole:.0f}%" if whole else "none"
        return (f"prism runs {percent(self.flops, self.all_flops)} of its FLOPs ({self.flops:,} of {self.all_flops:,}) "
                f"and reads {percent(self.weight_bytes, self.all_weight_bytes)} of its weight bytes "
                f"({self.weight_bytes:,} of {self.all_weight_bytes:,})")


def share(graph_module, example_inputs, prism_nodes):
    """The Share of `graph_module` (before partitioning) whose nodes `prism_nodes` run in prism."""
    nodes = [n for n in graph_module.graph.nodes if n.op in ("call_module", "call_method", "call_function")]
    weight = weights(graph_module, example_inputs)
    read = {w.name: weight[w] for n in prism_nodes for w in n.all_input_nodes if w in weight}
    return Share(sum(node_flops(n) for n in prism_nodes), sum(node_flops(n) for n in nodes),
                 sum(read.values()), sum(weight.values()), read)
