"""prism.from_torch: a PyTorch function or nn.Module, traced with torch.fx, as a .prism program.

Every FX node becomes one statement of the program (docs/python.md, "from_torch"). Inputs keep
their names; module parameters and buffers become inputs named after their qualified names
(`fc1.weight` -> `fc1_weight`). Sizes are the example inputs' numbers unless `dims` names them.
"""
import contextlib
import dis
import functools
import inspect
import math
import operator
import os
import re
import sys

from . import bool_inputs, bool_selects, dynamo_capture, effects, graph_rewrites
from .errors import UnsupportedOp
from .fx_formulas import tanh_gelus
from .grouped_heads import grouped_sources, repeat_step
from .share import arguments as _args, is_dtype_limit, is_split_piece

_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}


MADE_AT_CALL = object()  # arguments()' place for an input the call makes (a causal mask: Compiled fills it)


class Imported:
    """The program: `text` (its .prism source), `name`, and `inputs`, the program's inputs in
    order, each (prism_name, torch_name, kind) with kind "input" (the traced function's argument
    named torch_name), "parameter" (the module's parameter or buffer named torch_name) or
    "causal" (`is_causal=True`'s mask, which the call makes: MADE_AT_CALL in arguments()).
    `returns_tuple`: the module returns a tuple (or list) of tensors, the program's outputs.
    `boolean_inputs`: {an argument's torch_name: the float dtype its boolean mask is passed in}
    (bool_inputs.py)."""

    def __init__(self, name, text, inputs, returns_tuple=False):
        self.name, self.text, self.inputs, self.returns_tuple = name, text, inputs, returns_tuple
        self.module = None  # from_torch's: the module whose parameters and buffers are inputs
        self.boolean_inputs = {}
        self.additive_masks = set()  # of boolean_inputs, those passed as attention's additive mask
        self.calling = None  # a module dynamo captured: its arguments' tree and results' (dynamo_capture.Calling)

    def arguments(self, module, *args, **kwargs):
        """The tensors for the program's inputs, in order: the call's tensor `args` (a size among
        them, which dynamo passes, is read from the shapes instead; of a module dynamo captured,
        the leaves of its arguments and keyword arguments the program reads), then the module's
        parameters and buffers, read from their owners at each call (one reassigned is the new
        one). A boolean mask argument is given as 1.0 and 0.0 (bool_inputs.py)."""
        if self.calling is not None:
            args = self.calling.leaves(args, kwargs)
        elif kwargs:
            raise TypeError(f"{self.name}: keyword arguments ({', '.join(kwargs)}) to a program traced with positional "
                            "ones (prism.compile's example_kwargs captures a module called with them)")
        owners = self._owners(module)
        if self._positional_only:
            tensors = [a for a in args if hasattr(a, "shape")]
        else:
            positional = iter(a for a in args if hasattr(a, "shape"))
            tensors = [next(positional) if owner is None else owner if owner is MADE_AT_CALL else getattr(owner, attr)
                       for owner, attr in owners]
        if self.boolean_inputs:
            tensors = [self._as_floats(i, t) for i, t in enumerate(tensors)]
        return tensors

    def _as_floats(self, index, tensor):
        import torch

        prism_name, torch_name, _ = self.inputs[index]
        dtype = self.boolean_inputs.get(torch_name)
        if dtype is None:
            return tensor
        if tensor.dtype != torch.bool:
            raise TypeError(f"{self.name}: input '{prism_name}' is {tensor.dtype}, the program takes a boolean mask "
                            "(torch.bool, True where kept), as the module was traced with")
        return bool_inputs.passed_as(tensor, dtype, torch_name in self.additive_masks)

    def _owners(self, module):
        """(owning submodule, attribute) of each parameter or buffer input of `module`, (None,
        None) for each argument; found once per module, as a call takes microseconds."""
        cached = getattr(self, "_owners_of", None)
        if cached is None or cached[0] is not module:
            owners = []
            for _, torch_name, kind in self.inputs:
                if kind == "input":
                    owners.append((None, None))
                    continue
                if kind == "causal":
                    owners.append((MADE_AT_CALL, None))
                    continue
                if module is None:
                    raise KeyError(torch_name)
                path, _, attr = torch_name.rpartition(".")
                owners.append((module.get_submodule(path) if path else module, attr))
            self._owners_of = cached = (module, owners)
            self._positional_only = all(owner is None for owner, _ in owners)
        return cached[1]


def source_line(node):
    """'FILE:LINE' of the code that made `node`: the innermost frame of the trace's stack outside
    PyTorch itself (the modeling file's line under dynamo, whose outer frames are the model's
    wrappers; the module's line under torch.fx, whose inner ones are the tracer's)."""
    torch = sys.modules.get("torch")
    own = os.path.dirname(torch.__file__) + os.sep if torch is not None and getattr(torch, "__file__", None) else None
    frames = [f for f in re.findall(r'File "([^"]+)", line (\d+)', node.stack_trace or "") if not own or not f[0].startswith(own)]
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else "line unknown"


def _identifier(text):
    """`text` as a prism name: each character no name holds an underscore, and one more before a
    leading digit (nn.Sequential's `0.weight`)."""
    name = re.sub(r"\W", "_", text)
    return "_" + name if name[:1].isdigit() else name


def _size_text(size):
    """A size as prism writes it: a number, or the dim a symbolic size (torch.SymInt, as dynamo
    captures a size it lets vary) names: `s27`, `2 * s27`, `s16 * s27`."""
    if isinstance(size, (int, str)):  # a number, or a dim by name (rows.py's "rows")
        return str(size)
    expression = getattr(getattr(size, "node", None), "expr", None)
    if expression is None:
        return str(int(size))
    shape_env = getattr(size.node, "shape_env", None)
    if shape_env is not None:  # what dynamo's guards proved since (a mask's length is the cache's)
        expression = shape_env.replace(expression)
    if expression.is_Integer:
        return str(int(expression))
    if expression.is_Symbol:
        return str(expression)
    if expression.is_Mul and all(f.is_Symbol or f.is_Integer for f in expression.args):
        return " * ".join(str(f) for f in expression.args)
    if expression.is_Add and all(f.is_Symbol or f.is_Integer for f in expression.args):
        # A cache's length after this step's tokens (s53 + 1): a dim of its own, bound at the call
        # from the tensor that has it; an op relating it to s53 (the cache's concat) does not type.
        return "_".join(str(f).replace("-", "m") for f in sorted(expression.args, key=lambda f: (f.is_Integer, str(f))))
    raise UnsupportedOp(f"a size {expression} that is no product of dims (prism's dims multiply and divide)")


_SIZE = object()  # the name of a node that computes sizes (a reshape reads them from the traced shapes)
_DTYPE = object()  # the name of `x.dtype` (a cast reads its dtype from the traced result instead)
_REPEATED = object()  # the name of repeat_kv's expand and reshape (grouped attention reads their source)
_EMPTY = object()  # the name of a slice with no elements (Phi-3's pass-through when the rotary takes the whole head)


class _Writer:
    """Writes the statements of one traced graph."""

    def __init__(self, graph_module, dims, resized=None):
        self.module = graph_module
        self.dims = dims or {}
        # The named dims' sizes in the example inputs and in a second trace where each is doubled
        # (name -> (example, doubled)), and every node's shape in that trace: a size computed from
        # the dims (a reshape's target) is the expression of them that gives both.
        self.resized = resized or ({}, {})
        self.names = {}       # node -> prism expression (a name or a literal)
        self.lines = []
        self.inputs = []      # (prism_name, torch_name, kind, type text)
        # Formulas written out as arithmetic: their output node -> its argument, and the nodes
        # inside them, which nothing else reads (fx_formulas.py).
        self.gelus, self.inside_formulas = tanh_gelus(graph_module.graph)

    # ---- values ------------------------------------------------------------------------

    def type_of(self, node):
        meta = node.meta.get("tensor_meta")
        if meta is None:
            raise self.unsupported(node, "its shape is unknown (not a tensor?)")
        return meta.shape, meta.dtype

    def type_text(self, shape, dtype, torch_name):
        """`f32[n, 64]`: the sizes `dims` names for torch_name, the numbers elsewhere."""
        prism_dtype = _DTYPES.get(str(dtype))
        if str(dtype) == "torch.bool":
            raise UnsupportedOp(f"'{torch_name}' is a boolean tensor read otherwise than as a mask (prism has f32, f16, "
                                "bf16, and reads a boolean input as the condition of where or masked_fill, negated "
                                "or not, or as scaled_dot_product_attention's attn_mask)")
        if prism_dtype is None:
            raise UnsupportedOp(f"'{torch_name}' has dtype {dtype} (prism has f32, f16, bf16)")
        named = self.dims.get(torch_name, {})
        sizes = [str(named[axis]) if axis in named else str(named[axis - len(shape)]) if axis - len(shape) in named else _size_text(size)
                 for axis, size in enumerate(shape)]
        return f"{prism_dtype}[{', '.join(sizes)}]"

    def size_texts(self, node):
        """The node's sizes as prism writes them: a number where it is one at every size of the
        named dims, else the named dim (or a multiple of it, or a product of two) it always equals."""
        sizes, shapes = self.resized
        first, second = list(node.meta["tensor_meta"].shape), shapes.get(node)
        if second is None or len(second) != len(first):
            return [_size_text(a) for a in first]
        texts = []
        for a, b in zip(first, second):
            texts.append(str(a) if a == b else self._size_expression(node, a, b, sizes))
        return texts

    def _size_expression(self, node, a, b, sizes):
        for name, (va, vb) in sizes.items():
            if a % va == 0 and a // va * vb == b:
                return name if a == va else f"{a // va} * {name}"
        for n1, (a1, b1) in sizes.items():
            for n2, (a2, b2) in sizes.items():
                if n1 <= n2 and a == a1 * a2 and b == b1 * b2:
                    return f"{n1} * {n2}"
        raise self.unsupported(node, f"a size ({a}) that is no multiple of a named dim, nor a product of two")

    def add_input(self, shape, dtype, torch_name, kind):
        name = _identifier(torch_name)
        if all(i[0] != name for i in self.inputs):
            self.inputs.append((name, torch_name, kind, self.type_text(shape, dtype, torch_name)))
        return name

    def made_mask(self, node):
        """An input the call makes, not the caller (kind "causal"): `is_causal=True`'s mask, at the
        sizes the program's dims give it (Compiled makes it once per signature)."""
        name = _identifier(node.name.replace("causal_mask_at_rank", "causal_mask"))
        _, dtype = self.type_of(node)
        self.inputs.append((name, name, "causal", f"{_DTYPES[str(dtype)]}[{', '.join(self.size_texts(node))}]"))
        return name

    def is_size(self, node):
        """Whether the node computes sizes, not a tensor: a shape, a size, an item or a product of them."""
        if node.op not in ("call_function", "call_method") or "tensor_meta" in node.meta:
            return False
        if node.op == "call_method" and node.target == "size":
            return True
        if node.op == "call_function" and getattr(node.target, "__name__", None) in ("sym_size.int", "sym_size", "Size"):
            return True  # dynamo's `torch.ops.aten.sym_size.int(x, 0)`, `torch.Size([b, s])`
        if node.op == "call_function" and node.target is getattr and node.args[1] == "shape":
            return True
        sources = [a for a in node.args if hasattr(a, "op")]
        return bool(sources) and all(self.names.get(a) is _SIZE for a in sources)

    def arg(self, a):
        if hasattr(a, "op"):  # an FX node
            if self.names[a] is _SIZE:
                raise UnsupportedOp(f"node '{a.name}' is a size used as a value (prism's sizes are dims, in shapes)")
            if self.names[a] is _REPEATED:
                raise UnsupportedOp(f"node '{a.name}' is a repeat of key/value heads read elsewhere than by grouped attention")
            if self.names[a] is _DTYPE:
                raise UnsupportedOp(f"node '{a.name}' is a tensor's dtype used as a value (prism reads it only in casts)")
            if self.names[a] is _EMPTY:
                raise UnsupportedOp(f"node '{a.name}' is an empty slice read otherwise than by a concat (prism's sizes "
                                    "are positive)")
            return self.names[a]
        if isinstance(a, bool):
            return "1" if a else "0"
        if isinstance(a, (int, float)):
            if isinstance(a, float) and math.isinf(a):
                return "inf" if a > 0 else "-inf"
            return repr(a)
        raise UnsupportedOp(f"an argument {a!r} prism cannot express")

    def temporaries(self, node, count, expression):
        """A statement of its own for a step of `node`'s translation, giving `count` values (a
        split's pieces); their names."""
        names = [f"v_{_identifier(node.name)}_{len(self.lines)}_{i}" for i in range(count)]
        self.lines.append(f"  {', '.join(names)} = {expression}")
        return names

    def temporary(self, node, expression):
        return self.temporaries(node, 1, expression)[0]

    def emit(self, node, expression):
        name = "v_" + _identifier(node.name)
        self.lines.append(f"  {name} = {expression}")
        self.names[node] = name

    def emit_pieces(self, node, count, expression):
        """A statement giving `count` values (split): the node's name is the list of them, which
        its getitem nodes pick from."""
        names = [f"v_{_identifier(node.name)}_{i}" for i in range(count)]
        self.lines.append(f"  {', '.join(names)} = {expression}")
        self.names[node] = names

    def unsupported(self, node, why):
        target = getattr(node.target, "__name__", node.target)
        return UnsupportedOp(f"node '{node.name}' ({node.op} {target}) at {source_line(node)}: {why}", node.name, why)

    # ---- nodes -------------------------------------------------------------------------

    def node(self, node):
        if node.op == "placeholder" and _is_symbolic_size(node):  # dynamo's SymInt argument: a dim
            self.names[node] = _SIZE
            return None
        if node.op in ("placeholder", "get_attr"):
            self.names[node] = self.add_input(*self.type_of(node), node.target, "input" if node.op == "placeholder" else "parameter")
            return None
        if node.op == "output" or node in self.inside_formulas:
            return None
        if repeat_step(node) in ("expand", "result"):  # grouped attention reads the repeat's source
            self.names[node] = _REPEATED
            return None
        if node in self.gelus:
            self.emit(node, f"gelu_tanh({self.arg(self.gelus[node])})")
            return None
        if node.op == "call_function" and node.target is graph_rewrites.causal_mask_at_rank:
            self.names[node] = self.made_mask(node)
            return None
        if self.is_size(node):  # x.shape[0], x.size(1), n * h: read by reshapes from the traced shapes
            self.names[node] = _SIZE
            return None
        if node.op == "call_function" and node.target is operator.getitem:
            pieces = self.names.get(node.args[0])
            if isinstance(pieces, list) and isinstance(node.args[1], int):
                self.names[node] = pieces[node.args[1]]
                return None
            value = _index(self, node)
            if value is _EMPTY:
                self.names[node] = _EMPTY
            else:
                self.emit(node, value)
            return None
        if node.op == "call_module":
            rule = _MODULES.get(type(self.module.get_submodule(node.target)).__name__)
        elif node.op == "call_method":
            rule = _METHODS.get(node.target)
        else:
            rule = _FUNCTIONS.get(node.target) or _FUNCTIONS.get(getattr(node.target, "__name__", None))
        if rule is None:
            raise self.unsupported(node, "prism has no translation of this op")
        unkept = _unkept_dtype(node)
        if unkept is not None:  # `.to(torch.float64)`, `softmax(x, dtype=torch.float64)`, `.long()`: not f32's values
            raise self.unsupported(node, f"its result is {unkept} (prism computes f32, f16 and bf16)")
        expression = rule(self, node)
        if expression is not None:
            self.emit(node, expression)

    def param(self, target):
        """A module's parameter or buffer as a program input (once)."""
        tensors = dict(self.module.named_parameters())
        tensors.update(dict(self.module.named_buffers()))
        return self.add_input(tuple(tensors[target].shape), tensors[target].dtype, target, "parameter")


def _result_metas(node):
    """The tensor_meta of each tensor `node` gives: one, a split's pieces, or [None] for neither."""
    meta = node.meta.get("tensor_meta")
    return [meta] if hasattr(meta, "dtype") else list(meta) if isinstance(meta, (list, tuple)) else [None]


def _unkept_dtype(node):
    """The dtype of `node`'s result where prism has none like it (float64, an integer), else None;
    a boolean (a comparison's, which prism gives as 1.0 and 0.0) is kept."""
    for m in _result_metas(node):
        dtype = str(getattr(m, "dtype", None))
        if dtype.startswith("torch.") and dtype not in _DTYPES and dtype != "torch.bool":
            return dtype
    return None


def _is_symbolic_size(node):
    """Whether placeholder `node` is a size, not a tensor (dynamo passes each varying size it
    names, s27, as an argument of its own)."""
    value = node.meta.get("example_value", node.meta.get("val"))
    return value is not None and not hasattr(value, "shape")


def _axis(w, node, value):
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise w.unsupported(node, "a reduction over several dims (prism reduces one axis at a time)")
        value = value[0]
    if not isinstance(value, int):
        raise w.unsupported(node, "a dim prism needs as a constant integer")
    return value


def _binary(symbol):
    return lambda w, n: f"{w.arg(n.args[0])} {symbol} {w.arg(n.args[1])}"


def _unary(fn):
    return lambda w, n: f"{fn}({w.arg(n.args[0])})"


def _linear(w, x, weight, bias):
    out = f"{x} @ {weight}.T"
    return f"{out} + {bias}" if bias is not None else out


def _gelu(w, x, approximate):
    return f"gelu_tanh({x})" if approximate == "tanh" else f"gelu({x})"


def _read_at_result_dtype(w, n, source):
    """`source` as a reduction or softmax `n` reads it: cast first where `n` gives another dtype
    (`softmax(x, dim=-1, dtype=torch.float32)` of a bf16 x, eager attention's upcast), as
    PyTorch casts its input before the op."""
    x = w.arg(source)
    given = _DTYPES.get(str(n.meta["tensor_meta"].dtype))
    if given is None or given == _DTYPES.get(str(getattr(source.meta.get("tensor_meta"), "dtype", None))):
        return x
    return f"{given}({x})"


def _reduce(op):
    def rule(w, n):
        a = _args(n, ["input", "dim", "keepdim"], {"dim": None, "keepdim": False})
        if a["dim"] is None:
            raise w.unsupported(n, "a reduction over every dim (name one: dim=-1)")
        return f"{op}({_read_at_result_dtype(w, n, a['input'])}, axis={_axis(w, n, a['dim'])}, keepdims={'true' if a['keepdim'] else 'false'})"
    return rule


def _var(w, n):
    a = _args(n, ["input", "dim", "unbiased", "keepdim"], {"dim": None, "unbiased": True, "keepdim": False})
    if a["dim"] is None:
        raise w.unsupported(n, "a variance over every dim (name one: dim=-1)")
    axis = _axis(w, n, a["dim"])
    correction = a.get("correction", 1 if a["unbiased"] else 0)
    size = n.args[0].meta["tensor_meta"].shape[axis]
    x = w.arg(a["input"])
    keep = "true" if a["keepdim"] else "false"
    return f"mean(({x} - mean({x}, axis={axis}, keepdims=true)) ** 2, axis={axis}, keepdims={keep}) * {size / (size - correction)!r}"


def _softmax(log):
    def rule(w, n):
        a = _args(n, ["input", "dim"], {"dim": None})
        if a["dim"] is None:
            raise w.unsupported(n, "softmax without dim")
        x, axis = _read_at_result_dtype(w, n, a["input"]), _axis(w, n, a["dim"])
        if not log:
            return f"softmax({x}, axis={axis})"
        shifted = f"({x} - max({x}, axis={axis}, keepdims=true))"
        return f"{shifted} - log(sum(exp({shifted}), axis={axis}, keepdims=true))"
    return rule


def _layer_norm(w, x, shape, weight, bias, eps):
    if len(shape) != 1:
        raise UnsupportedOp("layer_norm over more than the last dim")
    out = f"layer_norm({x}, eps={eps!r})"
    if weight is not None:
        out = f"{out} * {weight}"
    return f"{out} + {bias}" if bias is not None else out


def _transpose(w, n):
    a = _args(n, ["input", "dim0", "dim1"])
    rank = len(n.meta["tensor_meta"].shape)
    perm = list(range(rank))
    d0, d1 = a["dim0"] % rank, a["dim1"] % rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return f"transpose({w.arg(a['input'])}, perm={perm})"


def _permute(w, n):
    dims = n.args[1:] if len(n.args) > 2 or not isinstance(n.args[1], (list, tuple)) else n.args[1]
    return f"transpose({w.arg(n.args[0])}, perm={list(dims)})"


_SLICE_PARTS = 16  # at most this many equal parts of an axis for one slice


def _slice_of(w, n, source, axis, entry, size):
    """x[..., a:b] along `axis` as pieces of an equal split: `size` divided into parts of the
    greatest length that divides a, b - a and `size`, the slice the concat of its parts (one part
    where b - a divides the others: rotate_half's halves; three of four for GPT-NeoX's 4:16, the
    head dims its partial rotary passes through). A slice that is the whole axis is x itself."""
    start, stop, step = entry.start or 0, size if entry.stop is None else entry.stop, entry.step or 1
    if not all(isinstance(v, int) for v in (start, stop, step)) or step != 1:
        raise w.unsupported(n, "a slice with a symbolic bound or a step (prism slices whole pieces of a constant axis)")
    start, stop = max(0, start + size if start < 0 else start), min(size, stop + size if stop < 0 else stop)
    if (start, stop) == (0, size):
        return source
    if stop <= start:
        return _EMPTY
    part = math.gcd(start, stop - start, size) if stop > start else 0
    if not part or size // part > _SLICE_PARTS:
        raise w.unsupported(n, f"the slice {start}:{stop} of an axis of {size} (prism takes the concat of at most "
                               f"{_SLICE_PARTS} equal parts of an axis)")
    parts = w.temporaries(n, size // part, f"split({source}, {size // part}, axis={axis})")[start // part:stop // part]
    value = parts[0]
    for part in parts[1:]:  # a fused kernel's concat joins two values
        value = w.temporary(n, f"concat({value}, {part}, axis={axis})")
    return value


def _bounds_as_numbers(w, n, entry, axis, kept_axis):
    """Slice `entry` of the source's `axis` (the result's `kept_axis`) with a bound read from a
    size (dynamo's `mask[..., :key_length]`, Phi-3's `q[..., cos.shape[-1]:]`) written as the
    number the traced shapes give it: the whole axis where the result's size is the source's at
    every size of the named dims, else, where both sizes are numbers, the start or stop that
    leaves the result's. Other slices are as they are."""
    if entry.step not in (None, 1) or not any(hasattr(b, "op") for b in (entry.start, entry.stop)):
        return entry
    source, result = w.size_texts(n.args[0])[axis], w.size_texts(n)[kept_axis]
    if result == source and entry.start in (None, 0):
        return slice(None)
    if not (source.isdigit() and result.isdigit()):
        return entry
    if hasattr(entry.start, "op") and entry.stop is None:
        return slice(int(source) - int(result), None)
    if entry.start in (None, 0) and hasattr(entry.stop, "op"):
        return slice(0, int(result))
    return entry


def _indexes_by_value(n):
    """Whether x[...] node `n` picks by an integer or a tensor (BERT's first token, a gather)."""
    index = n.args[1]
    parts = index if isinstance(index, tuple) else (index,)
    return any(p is not None and p is not Ellipsis and not isinstance(p, slice) for p in parts)


def _index(w, n):
    """x[...] with full slices, `None` (a new axis of 1), `...`, and slices that are equal pieces
    of a constant axis (rotate_half's halves, a mask cut to its keys)."""
    source, index = n.args
    parts = index if isinstance(index, tuple) else (index,)
    if _indexes_by_value(n):
        raise w.unsupported(n, "indexing by an integer or a tensor (prism takes slices and None)")
    shape = list(source.meta["tensor_meta"].shape)
    named = sum(p is not None and p is not Ellipsis for p in parts)
    if Ellipsis in parts:
        at = parts.index(Ellipsis)
        parts = parts[:at] + (slice(None),) * (len(shape) - named) + parts[at + 1:]
    value, axis, kept = w.arg(source), 0, 0
    for entry in parts:
        kept += 1
        if entry is None:
            continue
        entry = _bounds_as_numbers(w, n, entry, axis, kept - 1)
        if entry.start not in (None, 0) or entry.stop is not None or entry.step not in (None, 1):
            size = shape[axis]
            if not isinstance(size, int):
                raise w.unsupported(n, "a slice of a symbolic axis (prism slices whole pieces of a constant axis)")
            value = _slice_of(w, n, value, axis, entry, size)
            if value is _EMPTY:
                return value
        axis += 1
    if any(p is None for p in parts):  # new axes: the node's own shape
        value = f"reshape({value}, [{', '.join(w.size_texts(n))}])"
    return value


_MAX_COPIES = 16  # copies side by side a concat writes for an expand or a repeat


def _copies(w, n, value, count, axis):
    """`count` copies of `value` side by side along `axis`, a statement of `n`'s translation."""
    return w.temporary(n, f"concat({', '.join([value] * count)}, axis={axis})")


def _expand(w, n):
    """x.expand(...) of axes of 1 (repeat_kv's heads) as copies side by side: a concat of n copies
    along each axis that grows, the same values broadcasting would give."""
    source = n.args[0]
    have, want = list(source.meta["tensor_meta"].shape), list(n.meta["tensor_meta"].shape)
    value = w.arg(source)
    if len(have) != len(want):
        value = w.temporary(n, f"reshape({value}, [{', '.join(['1'] * (len(want) - len(have)) + [_size_text(s) for s in have])}])")
        have = [1] * (len(want) - len(have)) + have
    for axis, (a, b) in enumerate(zip(have, want)):
        if str(a) == str(b):
            continue
        if a != 1 or not isinstance(b, int) or b > _MAX_COPIES:
            raise w.unsupported(n, f"an expand of an axis of {a} to {b} (prism copies axes of 1, at most {_MAX_COPIES} times)")
        value = _copies(w, n, value, b, axis)
    return value


def _repeat_interleave(w, n):
    """x.repeat_interleave(r, dim=d) (grouped-query heads, as older modeling files repeat them): each
    slice along d r times in a row, as a new axis of r copies after d folded into d."""
    a = _args(n, ["input", "repeats", "dim"], {"dim": None})
    source, repeats, dim = a["input"], a["repeats"], a["dim"]
    if not isinstance(repeats, int) or isinstance(repeats, bool) or not 1 <= repeats <= _MAX_COPIES or not isinstance(dim, int):
        raise w.unsupported(n, f"repeats {repeats!r} along {'no dim' if dim is None else f'dim {dim}'} (prism "
                               f"repeats along a dim, at most {_MAX_COPIES} times)")
    return _interleaved(w, n, source, repeats, dim, w.size_texts(n))


def _interleaved(w, n, source, repeats, dim, grown):
    """`source` with each slice along `dim` `repeats` times in a row, of sizes `grown`: a new axis
    of copies after `dim`, folded into it (the fold the expression returned)."""
    sizes = w.size_texts(source)
    dim %= len(sizes)
    value = w.temporary(n, f"reshape({w.arg(source)}, [{', '.join(sizes[:dim + 1] + ['1'] + sizes[dim + 1:])}])")
    value = _copies(w, n, value, repeats, dim + 1)
    return f"reshape({value}, [{', '.join(grown)}])"


def _reshape(w, n):
    return f"reshape({w.arg(n.args[0])}, [{', '.join(w.size_texts(n))}])"


def _attribute(w, n):
    """`x.T` of a matrix and `x.mT` (Falcon's `input @ self.weight.T`): transposes, a weight's
    read in place. `x.dtype` (Llama's RMSNorm casts back to its input's) is what the cast reading
    it gives its result, which the trace recorded."""
    if n.args[1] == "dtype":
        w.names[n] = _DTYPE
        return None
    name, rank = n.args[1], len(n.args[0].meta["tensor_meta"].shape)
    if name == "mT" and rank >= 2 or name == "T" and rank == 2:
        return f"{w.arg(n.args[0])}.{name}"
    raise w.unsupported(n, f"the attribute .{name} of a tensor of rank {rank} (prism takes .T of a matrix and .mT)")


def _identity(w, n):
    return w.arg(n.args[0])


def _cast(w, n):
    dtype = _DTYPES.get(str(n.meta["tensor_meta"].dtype))
    if dtype is None:  # `.bool()` of a float
        raise w.unsupported(n, f"a cast to {n.meta['tensor_meta'].dtype} (prism casts to f32, f16 and bf16)")
    source = _DTYPES.get(str(n.args[0].meta["tensor_meta"].dtype))
    return w.arg(n.args[0]) if dtype == source else f"{dtype}({w.arg(n.args[0])})"


def _pow(w, n):
    if hasattr(n.args[1], "op"):
        raise w.unsupported(n, "a tensor exponent (prism takes constant exponents)")
    return f"{w.arg(n.args[0])} ** {w.arg(n.args[1])}"


def _where(w, n):
    return f"where({w.arg(n.args[0])}, {w.arg(n.args[1])}, {w.arg(n.args[2])})"


def _masked_fill(w, n):
    """`x.masked_fill(mask, value)`: value where the mask holds, x elsewhere."""
    a = _args(n, ["input", "mask", "value"])
    return f"where({w.arg(a['mask'])}, {w.arg(a['value'])}, {w.arg(a['input'])})"


def _clamp(w, n):
    a = _args(n, ["input", "min", "max"], {"min": None, "max": None})
    bounds = [f"{k}={w.arg(a[k])}" for k in ("min", "max") if a[k] is not None]
    return f"clamp({w.arg(a['input'])}, {', '.join(bounds)})"


def _pieces(w, n, source, dim):
    """`split(x, parts, axis)` for a chunk or split into equal pieces."""
    shapes = [tuple(m.shape) for m in n.meta["tensor_meta"]]
    if len({tuple(map(str, s)) for s in shapes}) != 1:  # SymInts do not hash
        raise w.unsupported(n, f"pieces of unequal sizes {[s[dim] for s in shapes]} (prism splits into equal pieces)")
    w.emit_pieces(n, len(shapes), f"split({w.arg(source)}, {len(shapes)}, axis={dim})")


def _chunk(w, n):
    a = _args(n, ["input", "chunks", "dim"], {"dim": 0})
    _pieces(w, n, a["input"], a["dim"])


def _split(w, n):
    a = _args(n, ["tensor", "split_size_or_sections", "dim"], {"dim": 0})
    if "split_size" in a:  # Tensor.split's keyword
        a["split_size_or_sections"] = a["split_size"]
    _pieces(w, n, a["tensor"], a["dim"])


_SDPA_ARGUMENTS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def _sdpa(w, n):
    """F.scaled_dot_product_attention: softmax(Q K^T * scale + mask) V, with an additive float
    mask; the default scale is 1/sqrt(E), E the query's last dim; a row masked whole gives 0."""
    a = _args(n, list(_SDPA_ARGUMENTS), {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False})
    unknown = sorted(set(a) - set(_SDPA_ARGUMENTS))
    if unknown:
        raise w.unsupported(n, f"the argument {unknown[0]!r}, which prism does not know")
    if a["is_causal"]:
        raise w.unsupported(n, "is_causal=True (prism has no mask of its own yet: pass the causal mask as attn_mask, -inf above the diagonal)")
    if a["dropout_p"]:
        raise w.unsupported(n, "dropout_p > 0 (prism imports inference graphs)")
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(a["query"].meta["tensor_meta"].shape[-1])
    mask = a["attn_mask"]
    if mask is not None and hasattr(mask, "meta") and str(mask.meta["tensor_meta"].dtype) == "torch.bool":
        raise w.unsupported(n, "a boolean attn_mask (give an additive one: 0 where kept, -inf where masked)")
    grouped = _grouped_attention(w, n, a)
    if grouped is not None:
        query, key, value, mask = grouped
    else:
        query, key, value = w.arg(a["query"]), w.arg(a["key"]), w.arg(a["value"])
        mask = None if mask is None else w.arg(mask)
    scores = f"{query} @ {key}.mT * {scale!r}" + (f" + {mask}" if mask is not None else "")
    # PyTorch's attention gives 0 for a query whose keys are all masked (a padding row), where a
    # softmax of -inf everywhere is NaN: the row max is kept at or above the dtype's lowest, so
    # its exps are 0, and their sum, 1 or more in every other row, at or above its tiniest.
    import torch

    info = torch.finfo(a["query"].meta["tensor_meta"].dtype)
    scores = w.temporary(n, scores)
    exps = w.temporary(n, f"exp({scores} - maximum(max({scores}, axis=-1), {info.min!r}))")
    out = f"{exps} / maximum(sum({exps}, axis=-1), {info.tiny!r}) @ {value}"
    return out if grouped is None else f"reshape({w.temporary(n, out)}, [{', '.join(w.size_texts(n))}])"


def _grouped_attention(w, n, a):
    """Grouped-query heads (enable_gqa, or keys and values repeat_kv repeated) as a broadcast
    (grouped_heads.py): (query, key, value, mask) with the queries' heads split into [k, g], the
    keys and values at [k, 1] and the mask's heads, where it has some, split alike; None for
    attention with a key/value head per query head."""
    query = a["query"]
    heads = query.meta["tensor_meta"].shape[-3] if len(query.meta["tensor_meta"].shape) > 2 else 1
    repeated = grouped_sources(n)
    if repeated is not None:
        key, value, group = (w.arg(repeated[0]), w.arg(repeated[1]), repeated[2])
    elif a["enable_gqa"] and str(heads) != str(a["key"].meta["tensor_meta"].shape[-3]):
        key_heads = a["key"].meta["tensor_meta"].shape[-3]
        if not isinstance(heads, int) or not isinstance(key_heads, int) or heads % key_heads:
            raise w.unsupported(n, f"enable_gqa with {heads} query heads over {key_heads} key heads (prism groups a "
                                   f"whole number of query heads per key head)")
        group = heads // key_heads

        def with_group_axis(x):
            sizes = w.size_texts(x)
            return w.temporary(n, f"reshape({w.arg(x)}, [{', '.join(sizes[:-2] + ['1'] + sizes[-2:])}])")

        key, value = with_group_axis(a["key"]), with_group_axis(a["value"])
    else:
        return None
    if not isinstance(heads, int) or len(query.meta["tensor_meta"].shape) < 3:
        raise w.unsupported(n, f"grouped-query attention over {heads} query heads (prism splits a static head count)")

    def heads_split(x):
        sizes = w.size_texts(x)
        return sizes[:-3] + [str(heads // group), str(group)] + sizes[-2:]

    queries = w.temporary(n, f"reshape({w.arg(query)}, [{', '.join(heads_split(query))}])")
    mask = a["attn_mask"]
    if mask is None or not hasattr(mask, "meta") or len(mask.meta["tensor_meta"].shape) < 3:
        return queries, key, value, None if mask is None else w.arg(mask)
    sizes = w.size_texts(mask)
    if sizes[-3] == "1":
        split = sizes[:-3] + ["1", "1"] + sizes[-2:]
    elif sizes[-3] == str(heads):
        split = heads_split(mask)
    else:
        raise w.unsupported(n, f"an attn_mask of {sizes[-3]} heads beside {heads} query heads")
    return queries, key, value, w.temporary(n, f"reshape({w.arg(mask)}, [{', '.join(split)}])")


def _addmm(w, n):
    """torch.addmm(input, a, b, beta=1, alpha=1): beta input + alpha (a @ b), as GPT-2's Conv1D
    calls it with its bias, the rows and its [in, out] weight; baddbmm is the batched form."""
    first, second = ("batch1", "batch2") if getattr(n.target, "__name__", n.target) == "baddbmm" else ("mat1", "mat2")
    a = _args(n, ["input", first, second], {"beta": 1, "alpha": 1})
    product = f"{w.arg(a[first])} @ {w.arg(a[second])}"
    product = product if a["alpha"] == 1 else f"({product}) * {w.arg(a['alpha'])}"
    bias = w.arg(a["input"]) if a["beta"] == 1 else f"{w.arg(a['input'])} * {w.arg(a['beta'])}"
    return f"{bias} + {product}" if a["beta"] != 0 else product


def _cat(w, n):
    """torch.cat, leaving out an empty slice (Phi-3's `cat((q_embed, q_pass))` where the rotary
    takes the whole head)."""
    a = _args(n, ["tensors", "dim"], {"dim": 0})
    tensors = [t for t in a["tensors"] if not (hasattr(t, "op") and w.names.get(t) is _EMPTY)]
    if len(tensors) == 1:
        return w.arg(tensors[0])
    return f"concat({', '.join(w.arg(t) for t in tensors)}, axis={a['dim']})"


def _compare(symbol):
    return lambda w, n: f"({w.arg(n.args[0])} {symbol} {w.arg(n.args[1])})"


def _linear_module(w, n):
    m = w.module.get_submodule(n.target)
    weight = w.param(n.target + ".weight")
    bias = w.param(n.target + ".bias") if m.bias is not None else None
    return _linear(w, w.arg(n.args[0]), weight, bias)


def _layer_norm_module(w, n):
    m = w.module.get_submodule(n.target)
    weight = w.param(n.target + ".weight") if m.weight is not None else None
    bias = w.param(n.target + ".bias") if m.bias is not None else None
    return _layer_norm(w, w.arg(n.args[0]), m.normalized_shape, weight, bias, m.eps)


def _functional_linear(w, n):
    a = _args(n, ["input", "weight", "bias"], {"bias": None})
    return _linear(w, w.arg(a["input"]), w.arg(a["weight"]), None if a["bias"] is None else w.arg(a["bias"]))


def _functional_layer_norm(w, n):
    a = _args(n, ["input", "normalized_shape", "weight", "bias", "eps"], {"weight": None, "bias": None, "eps": 1e-5})
    arg = lambda v: None if v is None else w.arg(v)  # noqa: E731
    return _layer_norm(w, w.arg(a["input"]), a["normalized_shape"], arg(a["weight"]), arg(a["bias"]), a["eps"])


def _functional_gelu(w, n):
    return _gelu(w, w.arg(n.args[0]), n.kwargs.get("approximate", "none"))


def _module_gelu(w, n):
    return _gelu(w, w.arg(n.args[0]), w.module.get_submodule(n.target).approximate)


def _module_softmax(log):
    def rule(w, n):
        return _softmax(log)(w, type("N", (), {"args": (n.args[0], w.module.get_submodule(n.target).dim), "kwargs": {}, "meta": n.meta})())
    return rule


_ELEMENTWISE = {"exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh", "sigmoid": "sigmoid",
                "relu": "relu", "silu": "silu", "abs": "abs", "erf": "erf", "neg": "neg"}
_FUNCTIONS = {
    operator.add: _binary("+"), operator.iadd: _binary("+"),  # T5's `scores += bias`, where nothing else reads `scores`
    operator.sub: _binary("-"), operator.mul: _binary("*"), operator.truediv: _binary("/"),
    operator.matmul: _binary("@"), operator.neg: _unary("neg"), operator.pow: _pow,
    operator.gt: _compare(">"), operator.ge: _compare(">="), operator.lt: _compare("<"), operator.le: _compare("<="),
    "add": _binary("+"), "sub": _binary("-"), "mul": _binary("*"), "div": _binary("/"), "true_divide": _binary("/"),
    "matmul": _binary("@"), "mm": _binary("@"), "bmm": _binary("@"), "linear": _functional_linear,
    "softmax": _softmax(False), "log_softmax": _softmax(True), "sum": _reduce("sum"), "mean": _reduce("mean"),
    "amax": _reduce("max"), "var": _var, "layer_norm": _functional_layer_norm, "gelu": _functional_gelu,
    "transpose": _transpose, "permute": _permute, "reshape": _reshape, "unsqueeze": _reshape, "pow": _pow, "where": _where, "clamp": _clamp,
    "cat": _cat, "repeat_interleave": _repeat_interleave, "addmm": _addmm, "baddbmm": _addmm, "chunk": _chunk, "split": _split, "scaled_dot_product_attention": _sdpa, "masked_fill": _masked_fill,
    "maximum": lambda w, n: f"maximum({w.arg(n.args[0])}, {w.arg(n.args[1])})",
    "minimum": lambda w, n: f"minimum({w.arg(n.args[0])}, {w.arg(n.args[1])})", "dropout": _identity,
    bool_selects.select: _where,  # a select by a boolean mask, its mask cast by PyTorch
    getattr: _attribute,
    **{name: _unary(fn) for name, fn in _ELEMENTWISE.items()},
}
_METHODS = {
    "add": _binary("+"), "sub": _binary("-"), "mul": _binary("*"), "div": _binary("/"), "matmul": _binary("@"),
    "pow": _pow, "sum": _reduce("sum"), "mean": _reduce("mean"), "amax": _reduce("max"), "var": _var,
    "softmax": _softmax(False), "log_softmax": _softmax(True), "transpose": _transpose, "permute": _permute,
    "reshape": _reshape, "view": _reshape, "contiguous": _identity, "unsqueeze": _reshape, "expand": _expand,
    "repeat_interleave": _repeat_interleave, "float": _cast, "half": _cast, "bfloat16": _cast,
    "to": _cast, "type_as": _cast, "type": _cast, "clamp": _clamp, "masked_fill": _masked_fill, "chunk": _chunk, "split": _split, "addmm": _addmm, "baddbmm": _addmm,
    "t": lambda w, n: f"{w.arg(n.args[0])}.T",
    **{name: _unary(fn) for name, fn in _ELEMENTWISE.items()},
}
_MODULES = {
    "Linear": _linear_module, "LayerNorm": _layer_norm_module, "GELU": _module_gelu, "Dropout": _identity, "Identity": _identity,
    "ReLU": lambda w, n: f"relu({w.arg(n.args[0])})", "SiLU": lambda w, n: f"silu({w.arg(n.args[0])})",
    "Tanh": lambda w, n: f"tanh({w.arg(n.args[0])})", "Sigmoid": lambda w, n: f"sigmoid({w.arg(n.args[0])})",
    "Softmax": _module_softmax(False), "LogSoftmax": _module_softmax(True),
}


def translates(module, node):
    """Whether from_torch translates FX node `node` of `module`: its op, and tensors of prism's
    dtypes (torch.compile's partitioner asks, torch_backend.py)."""
    return why_untranslated(module, node) is None


def why_untranslated(module, node):
    """None where from_torch translates `node`; else why not, in words: the op, or the dtype."""
    if effects.writes_visibly(node):
        return ("it writes in place into a tensor other ops can read (an input, a buffer, a view, or a value "
                "read elsewhere): PyTorch runs it where the model does")
    if node.op == "call_module":
        known = type(module.get_submodule(node.target)).__name__ in _MODULES
    elif node.op == "call_method":
        known = node.target in _METHODS
    elif node.op == "call_function" and node.target is operator.getitem:  # a piece of a split, or x[...]
        source = node.args[0]
        if is_split_piece(node):
            known = True
        elif _indexes_by_value(node):
            return "indexing by an integer or a tensor (prism takes slices and None)"
        else:
            known = hasattr(getattr(source, "meta", {}).get("tensor_meta"), "dtype")
    elif node.op == "call_function":
        known = node.target in _FUNCTIONS or getattr(node.target, "__name__", None) in _FUNCTIONS
    else:
        return f"a {node.op} node"
    if not known:
        return "prism has no translation of this op"
    metas = _result_metas(node)
    if not all(hasattr(m, "dtype") for m in metas):
        return "its result is no tensor (a size, or a value prism does not compute)"
    dtypes = sorted({str(m.dtype) for m in metas if str(m.dtype) not in _DTYPES})
    if dtypes:
        return f"its result is {', '.join(dtypes)} (prism computes f32, f16 and bf16)"
    limits = [a for a in list(node.args) + list(node.kwargs.values()) if is_dtype_limit(a)]
    if limits:
        return (f"it multiplies or adds {limits[0]!r}, a dtype's limit (finfo.min: a mask being built, which PyTorch "
                "builds; prism's pieces read the mask)")
    read = [i.meta.get("tensor_meta") for i in node.all_input_nodes]
    dtypes = sorted({str(r.dtype) for r in read if hasattr(r, "dtype") and str(r.dtype) not in _DTYPES})
    if dtypes:
        return f"it reads {', '.join(dtypes)} (index or mask arithmetic; prism computes f32, f16 and bf16)"
    if any(isinstance(size, int) and size == 0 for m in metas + [r for r in read if hasattr(r, "shape")] for size in m.shape):
        return "it reads or gives an empty tensor (an axis of 0, as a cache before its first token; prism's sizes are positive)"
    return None


@contextlib.contextmanager
def _tuple_unpacking_traced():
    """Tuple unpacking of a traced value (`gate, up = x.chunk(2, -1)`) on PyTorch 1.13 under Python
    3.11: its Proxy.__iter__ finds the calling instruction at index f_lasti // 2, wrong once 3.11
    put inline caches between instructions, and fails. For the trace, one that finds it by offset
    (as PyTorch 2 does); elsewhere PyTorch's own."""
    from torch.fx.proxy import Proxy

    if sys.version_info < (3, 11) or not Proxy.__module__.startswith("torch.fx"):
        yield
        return

    def unpacking_iter(self):
        frame = inspect.currentframe().f_back
        for instruction in dis.get_instructions(frame.f_code):
            if instruction.offset == frame.f_lasti and instruction.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(instruction.argval))
        return self.tracer.iter(self)

    original = Proxy.__iter__
    Proxy.__iter__ = unpacking_iter
    try:
        yield
    finally:
        Proxy.__iter__ = original


def _resized_shapes(module, example_inputs, dims):
    """({dim: (example size, doubled)}, {node: shape}) from a trace on inputs with every dim named
    on the module's inputs doubled; ({}, {}) when none is named, or when the module does not run at
    the doubled sizes (its sizes are then written as numbers)."""
    import torch
    from torch.fx.passes.shape_prop import ShapeProp

    inputs = [node for node in module.graph.nodes if node.op == "placeholder"]
    # Per input, its named axes counted from the front: {axis: name}.
    named = [{axis % x.dim(): name for axis, name in (dims or {}).get(node.target, {}).items() if -x.dim() <= axis < x.dim()}
             if isinstance(x, torch.Tensor) else {} for node, x in zip(inputs, example_inputs)]
    sizes = {}
    for axes, x in zip(named, example_inputs):
        for axis, name in axes.items():
            if sizes.setdefault(name, (x.shape[axis], 2 * x.shape[axis]))[0] != x.shape[axis]:
                return {}, {}  # one name for two sizes: the import says so later
    if not sizes:
        return {}, {}
    resized = []
    for axes, x in zip(named, example_inputs):
        if not isinstance(x, torch.Tensor):
            resized.append(x)
            continue
        shape = [sizes[axes[a]][1] if a in axes else n for a, n in enumerate(x.shape)]
        resized.append(torch.randn(shape, dtype=x.dtype) if x.is_floating_point() else torch.zeros(shape, dtype=x.dtype))
    try:
        with torch.no_grad():
            ShapeProp(module).propagate(*resized)
    except Exception:  # noqa: BLE001 - the module fixes a size somewhere: no second trace
        return {}, {}
    shapes = {node: list(node.meta["tensor_meta"].shape) for node in module.graph.nodes if hasattr(node.meta.get("tensor_meta"), "shape")}
    return sizes, shapes


def from_torch(fn_or_module, example_inputs, dims=None, name=None, example_kwargs=None):
    """Traces `fn_or_module` (torch.fx.symbolic_trace, with source lines for error messages) on
    `example_inputs` and returns an Imported program; a module the symbolic trace cannot follow,
    or one given `example_kwargs`, is captured by dynamo instead (dynamo_capture.py). `dims` names
    sizes symbolically: {"x": {0: "n"}} makes axis 0 of input x the dim n; a parameter's axes are
    named by its qualified name ({"fc1.weight": {1: "d"}}). Raises UnsupportedOp naming the node,
    its op and the user's source line."""
    import torch
    from torch.fx.passes.shape_prop import ShapeProp

    example_inputs = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    calling = None
    if example_kwargs:
        module, example_inputs, calling = dynamo_capture.capture(fn_or_module, example_inputs, example_kwargs)
    else:
        try:
            module = _traced(fn_or_module)
        except _Untraceable as untraceable:
            try:
                module, example_inputs, calling = dynamo_capture.capture(fn_or_module, example_inputs, {})
            except UnsupportedOp as error:
                raise UnsupportedOp(f"{untraceable}, and {error}") from error
    with torch.no_grad():
        ShapeProp(module).propagate(*example_inputs)
    boolean_inputs, additive_masks = bool_inputs.read_as_floats(module)
    graph_rewrites.explicit_causal_masks(module)  # is_causal=True: a mask the call makes (_Writer.made_mask)
    # The sizes again, a mask as the floats it is read as: the doubled trace's shapes include the
    # selects and additive masks written for it.
    placeholders = [node.target for node in module.graph.nodes if node.op == "placeholder"]
    example_inputs = [bool_inputs.passed_as(x, boolean_inputs[name], name in additive_masks) if name in boolean_inputs else x
                      for name, x in zip(placeholders, example_inputs)]
    resized = _resized_shapes(module, example_inputs, dims)
    if resized[1]:
        with torch.no_grad():
            ShapeProp(module).propagate(*example_inputs)
    imported = _written(_Writer(module, dims, resized), name or getattr(fn_or_module, "__name__", None) or type(fn_or_module).__name__)
    imported.boolean_inputs, imported.additive_masks = boolean_inputs, additive_masks
    imported.calling = calling
    # What holds the tensors a function closes over, read at each call as a module's parameters.
    imported.module = fn_or_module if isinstance(fn_or_module, torch.nn.Module) else module
    return imported


class _Untraceable(Exception):
    """torch.fx's symbolic trace could not follow the module's Python."""


def _traced(fn_or_module):
    """The GraphModule of torch.fx's symbolic trace of `fn_or_module`, rooted at the module, or for
    a function at the module that holds the tensors it closes over (`_tensor_constant0`); raises
    _Untraceable saying why the trace stopped."""
    import torch
    import torch.fx

    tracer = _line_tracer()()
    try:
        with _tuple_unpacking_traced():
            graph = tracer.trace(fn_or_module)
    except UnsupportedOp:
        raise
    except Exception as error:  # noqa: BLE001 -- Python torch.fx cannot follow: said as what it is
        raise _Untraceable(f"torch.fx's symbolic trace could not follow {dynamo_capture.described(fn_or_module)}'s Python "
                           f"({type(error).__name__}: "
                           f"{str(error).splitlines()[0] if str(error) else ''})") from error
    return torch.fx.GraphModule(tracer.root, graph)


@functools.lru_cache(maxsize=None)
def _line_tracer():
    """torch.fx's Tracer writing each node's Python stack as its `stack_trace` (source_line's
    form, outermost frame first). fx's own `record_stack_traces` symbolizes the C++ stack too, which
    imports torch._inductor: 1.4 to 2.8 s on a process's first trace, for lines Python has."""
    import torch.fx

    own = os.path.dirname(os.path.abspath(__file__)) + os.sep

    class LineTracer(torch.fx.Tracer):
        def create_node(self, *args, **kwargs):
            node = super().create_node(*args, **kwargs)
            frames, frame = [], sys._getframe(1)
            while frame is not None:
                if not frame.f_code.co_filename.startswith(own):
                    frames.append(f'  File "{frame.f_code.co_filename}", line {frame.f_lineno}, in {frame.f_code.co_name}')
                frame = frame.f_back
            node.stack_trace = "\n".join(reversed(frames))
            return node

    return LineTracer


def from_graph(graph_module, name):
    """The program of a graph whose nodes already carry their shapes and dtypes (torch_backend sets
    `tensor_meta` from the fake values dynamo records): no trace, no example inputs. A size dynamo
    lets vary (a SymInt, `s27`) is the dim of that name; every other size is its number."""
    return _written(_Writer(graph_module, None), name)


def _written(writer, name):
    """The Imported program of every node of `writer.module`'s graph."""
    output = None
    for node in writer.module.graph.nodes:
        writer.node(node)
        if node.op == "output":
            output = node.args[0]
    outputs = list(output) if isinstance(output, (list, tuple)) else [output]
    if not outputs or not all(hasattr(o, "op") and isinstance(writer.names.get(o), str) for o in outputs):
        raise UnsupportedOp("the module returns no tensor, or something other than tensors; prism imports a tensor "
                            "or a tuple of tensors")
    program = _identifier(name).lower()
    signature = ", ".join(f"{n}: {t}" for n, _, _, t in writer.inputs)
    body = "\n".join(writer.lines)
    returned = ", ".join(writer.names[o] for o in outputs)
    text = f"program {program}({signature}) {{\n{body}\n  return {returned}\n}}\n"
    return Imported(program, text, [(n, torch_name, kind) for n, torch_name, kind, _ in writer.inputs],
                    returns_tuple=isinstance(output, (list, tuple)))
