"""Where torch_backend cuts a graph between prism's pieces: at the layout changes of computed values
that a piece's fused kernels do not make (docs/python.md, "torch.compile").

An attention layer splits its projections into heads (`view(b, s, h, e).transpose(1, 2)`), appends
its keys and values to a cache (`cat` along the sequence) and merges the heads back before its
output projection. PyTorch makes these views between prism's pieces (a copy where the next piece
reads a strided view), and each piece is what the search serves: the norm and projections as rows, the
rotary embedding and the attention core at [batch, heads, seq, head_dim], the output projection
with its residual as rows. A layout op that reads a graph input (a weight's `.t()`, a gain's
`unsqueeze`) stays inside: the piece reads the input through it in place. A reshape that only
folds leading dims into rows or back (GPT-2 Conv1D's `view(-1, d)`) stays too: fold_rows takes it.
A strided slice of a computed value (GPT-J's interleaved rotary, `x[..., ::2]`) is PyTorch's view.
repeat_kv's `expand` and `reshape` of grouped key/value heads stay in attention's piece, which
reads them as a broadcast (grouped_heads.py).

Unless PRISM_HEADS_INSIDE=0, a head split or merge (`splits_heads`: a view, reshape, transpose or
permute of a computed value) is first left inside a piece: the search's kernel cuts read a
projection's rows as heads in place and write attention's heads back as rows (docs/search.md,
"Kernel cuts"). Where that piece does not import or its search finds no family, torch_backend cuts
at it as above (docs/python.md, "Head splits inside").
"""
import operator

from .grouped_heads import repeat_step
from .share import RESHAPES, op_name as _name, shape_of as _shape

_TRANSPOSES = {"transpose", "permute", "t"}
_HEAD_MOVES = {"view", "reshape", "transpose", "permute"}
_ALWAYS = {"expand", "expand_as", "repeat", "repeat_interleave", "flatten", "unflatten", "squeeze"}




def _reads_graph_input(node):
    source = node.args[0] if node.args else None
    return getattr(source, "op", None) in ("placeholder", "get_attr")


def folds_rows(node):
    """A reshape that moves only leading dims: the last dim kept and one side a matrix of rows."""
    before, after = _shape(node.args[0]), _shape(node)
    return before is not None and after is not None and before[-1:] == after[-1:] and 2 in (len(before), len(after))


def moves_layout(node):
    """Whether `node` changes the layout of a computed value in a way a piece does not take in."""
    if node.op not in ("call_method", "call_function") or repeat_step(node) is not None:
        return False  # grouped attention reads repeat_kv's source as a broadcast (grouped_heads.py)
    name = _name(node)
    if node.target is operator.getitem:
        index = node.args[1]
        parts = index if isinstance(index, tuple) else (index,)
        adds_axes = any(p is None for p in parts)
        strided = any(isinstance(p, slice) and p.step not in (None, 1) for p in parts)  # GPT-J's x[..., ::2]
        return (adds_axes or strided) and not _reads_graph_input(node)
    if name in _ALWAYS:
        return True
    if name == "cat":  # along the last axis: rotate_half's halves; along another: a KV cache's append
        dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else 0)
        shape = _shape(node)
        return shape is not None and dim not in (-1, len(shape) - 1)
    if name in _TRANSPOSES or name == "unsqueeze" or node.target is getattr and node.args[1] in ("T", "mT"):
        return not _reads_graph_input(node)
    if name in RESHAPES:
        return not folds_rows(node) and not _reads_graph_input(node)
    return False


def splits_heads(node):
    """Whether `node` is a head split or merge that a piece may take in (module docstring): a view,
    reshape, transpose or permute of a computed value that moves_layout would cut at."""
    return _name(node) in _HEAD_MOVES and moves_layout(node)
