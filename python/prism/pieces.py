"""The pieces torch_backend searches, cut from the capability partitioner's partitions: one block
of a layer each (an attention block up to its output projection, an MLP with its residual add),
without the layout changes they end with and the casts and views they start with (docs/python.md,
"torch.compile"; docs/search.md, "Kernel cuts").
"""
from . import share
from .layout_cuts import folds_rows, moves_layout, splits_heads


def _is_matmul(node):
    """Whether `node` is a matmul, attention counted as one."""
    return share.op_name(node) in share.MATMULS or share.op_name(node) == "scaled_dot_product_attention"


def _matmuls(nodes):
    """How many of `nodes` are matmuls, attention counted as one."""
    return sum(map(_is_matmul, nodes))


def _biased(node, nodes):
    """Whether `node`'s one reader in `nodes` adds a bias vector to it (Conv1D's `b + x @ W`): a
    piece takes the add with its matmul."""
    users = list(node.users)
    if len(users) != 1 or users[0] not in nodes or share.op_name(users[0]) not in ("add", "iadd"):
        return False
    other = [a for a in users[0].args if a is not node]
    shape = getattr(other[0].meta.get("tensor_meta"), "shape", None) if other and hasattr(other[0], "meta") else None
    return shape is not None and len(shape) == 1


def _projected(node, nodes):
    """Whether every reader of `node` in `nodes` is a matmul (an MLP's hidden rows before its down
    projection), or a head merge leading to one (attention's heads, merged back into rows for the
    output projection): the block goes on, the search cuts it where that pays (docs/search.md,
    "Kernel cuts")."""
    readers = []
    for reader in (u for u in node.users if u in nodes):
        while splits_heads(reader) or share.op_name(reader) == "contiguous":
            next_readers = [u for u in reader.users if u in nodes]
            if len(next_readers) != 1:
                break
            reader = next_readers[0]
        readers.append(reader)
    return bool(readers) and _matmuls(readers) == len(readers)


def _scores(node, nodes):
    """Whether `node` is an attention's scores: its readers in `nodes`, one after another (a scale,
    a mask's select or add, a cast), lead to a softmax. A piece goes on to the softmax and the
    weights' matmul: GPT-2's eager attention was cut after `q @ k^T`, its scores written out and
    read back."""
    for _ in range(8):
        readers = [u for u in node.users if u in nodes]
        if len(readers) != 1 or _is_matmul(readers[0]):
            return False
        node = readers[0]
        if share.op_name(node) in ("softmax", "Softmax"):
            return True
    return False


def pieces_of(partition, original):
    """A partition cut, in the graph's order, where the nodes so far leave one value to the rest
    (a residual stream between a layer's blocks) and hold a matmul, two pieces of one matmul each
    joined (GPT-2's two Conv1Ds are one MLP): single-output programs, the search's
    best-served form, one block of a layer each (an attention block up to its output projection,
    an MLP with its residual add). A prefix of a partition in topological order is convex as the
    partition is, so every piece, and every run of consecutive pieces, is one."""
    pieces, piece, members = [], [], set()
    for node in sorted(partition.nodes, key=lambda n: original[n.name]):
        piece.append(node)
        members.add(node)
        live = [n for n in piece if any(user not in members for user in n.users)]
        if (live == [node] and _matmuls(piece) and not _biased(node, partition.nodes) and not _projected(node, partition.nodes)
                and not _scores(node, partition.nodes)):
            pieces.append(piece)
            piece, members = [], set()
    joined = []
    for p in pieces + [piece] if piece else pieces:
        if joined and (_matmuls(joined[-1]) == 1 and _matmuls(p) == 1 or not _matmuls(p)):  # an epilogue joins too
            joined[-1] = joined[-1] + p
        else:
            joined.append(p)
    return [_without_leading_row_views(part) for p in joined for part in _without_prologue(p)]


def _without_prologue(piece):
    """`piece` as two pieces where it returns a value no matmul of it precedes (T5's position bias
    plus mask, which its attention adds to the scores and the next layer reads): the values
    leading to it first, then the rest, which reads it. The search takes a program of several
    outputs only as written (docs/search.md), so a prologue's output left in would cost the
    attention its fused kernels. The prologue holds every member it reads, so both are convex."""
    members, after_matmul = set(piece), set()
    for node in piece:  # in the graph's order
        if _is_matmul(node) or any(i in after_matmul for i in node.all_input_nodes):
            after_matmul.add(node)
    prologue = set()
    stack = [n for n in piece if n not in after_matmul and any(u not in members for u in n.users)]
    while stack:
        node = stack.pop()
        if node not in prologue:
            prologue.add(node)
            stack.extend(i for i in node.all_input_nodes if i in members)
    if not prologue or not _matmuls(piece):
        return [piece]
    return [[n for n in piece if n in prologue], [n for n in piece if n not in prologue]]


def _without_leading_row_views(piece):
    """`piece` without the reshapes it starts with that only move leading dims of a value it does
    not compute (OPT's `view(hidden_shape)` of the rows its MLP left): PyTorch's view is free, and
    the piece then reads the activation at [batch, seq, hidden], whose dims fold_rows folds and
    gives back, instead of returning a value it only viewed. A member whose inputs are all outside
    a convex piece is reachable from no other member, so the rest stays convex."""
    members = set(piece)
    while True:
        starts = {n for n in piece if share.op_name(n) in share.RESHAPES and n.op != "placeholder" and
                  folds_rows(n) and not any(i in members for i in n.all_input_nodes)}
        if not starts or starts == members:
            return piece
        members -= starts
        piece = [n for n in piece if n in members]


def _computes_nothing(node):
    """A cast that changes no value prism computes, or an op that only moves data."""
    return node.op == "call_method" and node.target in share.CASTS or share.op_name(node) in share.MOVES_DATA


def trimmed(partition):
    """The partition without the layout changes it ends with (the partitioner puts a getitem with
    its source, a split's pieces, also `x[:, :, None]`, repeat_kv's, which layout_cuts leaves to
    PyTorch; GPT-2's `split` of its fused q, k, v projection into three, where the heads are cut
    after it: a piece of three outputs is searched only as written, each output's kernels
    computing the norm and projection again) and without the casts and views it starts with whose result others read too (Llama's
    `cos.to(x.dtype)` at bf16, Mixtral's `cos.unsqueeze(1)` before a graph break: a piece would
    return a value it only converted or viewed). Dropping a node no other member reads, or one
    that reads no member, keeps the partition convex."""
    from torch.fx.passes.infra.partitioner import Partition

    nodes = set(partition.nodes)
    changed = True
    while changed:
        ends = [n for n in nodes if (moves_layout(n) or share.is_split(n) or share.is_split_piece(n)) and not any(u in nodes for u in n.users)]
        starts = [n for n in nodes if _computes_nothing(n) and
                  not any(i in nodes for i in n.all_input_nodes) and any(u not in nodes for u in n.users)]
        nodes.difference_update(ends + starts)
        changed = bool(ends or starts)
    return Partition(id=partition.id, nodes=[n for n in partition.nodes if n in nodes])


# Worth a piece alone: attention (its two matmuls and softmax), a norm, a projection by a weight (the
# user asked for prism's kernels, and its tuned matmul is one).
_WORTH_ALONE = {"scaled_dot_product_attention", "linear", "addmm", "baddbmm", "matmul", "mm", "bmm", "layer_norm", "LayerNorm",
                "Linear"}


def compute_nodes(graph_module):
    """The nodes that compute, one worth a piece alone counted twice: not those that only move or
    pick data (a piece of them alone gains nothing from fusion)."""
    return sum((n.op in ("call_module", "call_method", "call_function") and share.op_name(n) not in share.MOVES_DATA) +
               (share.op_name(n) in _WORTH_ALONE) for n in graph_module.graph.nodes)
