"""torch.compile(model, backend="prism") (PyTorch 2): the parts of a captured graph that prism can
express become prism.compile callables; the rest runs as PyTorch runs it.

`import prism` registers the backend by name (at once where torch is loaded, else when torch's
dynamo is), and an installed package declares it as a `torch_dynamo_backends` entry point. The
graph is split with torch.fx's capability partitioner: a node is prism's when from_torch translates
it (fx_import.translates). Each partition of two or more such nodes is imported from the shapes
dynamo recorded (a size dynamo lets vary is a prism dim: one family serves every size, no
recompile), searched, and tuned at each new size on its first call. One that prism cannot compile
(an op the importer refuses, no verified family, an error) stays PyTorch's, and a warning says why,
once per reason (docs/python.md, "torch.compile").
"""
import collections
import importlib.abc
import importlib.util
import sys
import warnings

from . import fx_import
from .compiled import Compiled
from .errors import ConnectionLost, PrismError, UnsupportedOp
from .rows import fold_rows

_Meta = collections.namedtuple("_Meta", ["shape", "dtype"])
_WARNED = set()  # the warnings said in this process: each once


def _warn_once(text):
    if text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)


def _meta_of(value):
    """tensor_meta's shape and dtype of a (fake) tensor, a list of them (a split's pieces), or None."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return _Meta(tuple(value.shape), value.dtype)
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "shape") for v in value):
        return [_Meta(tuple(v.shape), v.dtype) for v in value]
    return None


def _record_shapes(graph_module, example_inputs):
    """Every node's `tensor_meta`: from the fake values dynamo recorded (sizes it lets vary stay
    SymInts), else by running the graph on the example inputs (a graph from symbolic_trace)."""
    import torch
    from torch.fx.passes.shape_prop import ShapeProp

    nodes = list(graph_module.graph.nodes)
    if any("example_value" in n.meta for n in nodes):
        for n in nodes:
            meta = _meta_of(n.meta.get("example_value"))
            if meta is not None:
                n.meta["tensor_meta"] = meta
        return
    with torch.no_grad():
        ShapeProp(graph_module).propagate(*example_inputs)


_OPENS = ("_vmap_increment_nesting", "_enter_autocast")  # calls whose effect lasts until their close
_CLOSES = ("_vmap_decrement_nesting", "_exit_autocast")


def _in_regions(graph_module):
    """The nodes between a vmap nesting's or an autocast's opening call and its close: what they
    compute depends on that state, which a partition moved out of the region would lose."""
    inside, depth = set(), 0
    for n in graph_module.graph.nodes:
        name = getattr(n.target, "__name__", "")
        depth -= name in _CLOSES
        if depth > 0:
            inside.add(n)
        depth += name in _OPENS
    return inside


def _keep_order(graph_module, order):
    """Sorts the graph topologically, each node as early as its original position `order` (the
    node's, or for a fused partition its first node's; a node fusing made, its input's) allows:
    fusing must not move a call with effects (vmap nesting, autocast) past the nodes around it, as
    the partitioner's breadth-first sort does."""
    import heapq

    import torch

    nodes = list(graph_module.graph.nodes)  # topologically sorted already
    rank = {}
    for n in nodes:
        rank[n] = order[n] if n in order else max((rank[i] for i in n.all_input_nodes), default=0)
    waiting = {n: len(n.all_input_nodes) for n in nodes}
    ready = [(rank[n], i, n) for i, n in enumerate(nodes) if waiting[n] == 0]
    heapq.heapify(ready)
    index = {n: i for i, n in enumerate(nodes)}
    graph, env = torch.fx.Graph(), {}
    while ready:
        _, _, n = heapq.heappop(ready)
        env[n] = graph.node_copy(n, lambda x: env[x])
        for user in n.users:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (rank[user], index[user], user))
    graph_module.graph = graph
    graph_module.recompile()


_NO_OP_CASTS = ("to", "float", "half", "bfloat16", "type_as")


def additive_mask(mask, dtype):
    """A boolean attention mask (True: attend) as the additive one scaled_dot_product_attention
    makes of it: 0 where kept, -inf where masked."""
    import torch

    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(mask.logical_not(), float("-inf"))


def _simplify(graph_module):
    """What the importer should not see: a cast to the dtype a value already has (one fewer node,
    no program that returns its input), and a boolean attention mask, which becomes the additive
    one PyTorch makes of it, computed by PyTorch."""
    graph = graph_module.graph
    for n in list(graph.nodes):
        meta, source = n.meta.get("tensor_meta"), n.args[0] if n.args else None
        if n.op == "call_method" and n.target in _NO_OP_CASTS and hasattr(meta, "dtype") and hasattr(source, "meta"):
            before = source.meta.get("tensor_meta")
            if hasattr(before, "dtype") and before.dtype == meta.dtype and tuple(map(str, before.shape)) == tuple(map(str, meta.shape)):
                n.replace_all_uses_with(source)
                graph.erase_node(n)
                continue
        if getattr(n.target, "__name__", None) == "scaled_dot_product_attention":
            mask = n.kwargs.get("attn_mask", n.args[3] if len(n.args) > 3 else None)
            if not hasattr(getattr(mask, "meta", {}).get("tensor_meta"), "dtype") or str(mask.meta["tensor_meta"].dtype) != "torch.bool":
                continue
            dtype = n.args[0].meta["tensor_meta"].dtype
            with graph.inserting_before(n):
                additive = graph.call_function(additive_mask, (mask, dtype))
            additive.meta["tensor_meta"] = _Meta(mask.meta["tensor_meta"].shape, dtype)
            n.replace_input_with(mask, additive)
    graph_module.recompile()


def _left_to_pytorch(graph_module):
    """[(node description, why)] for each node computing a floating-point tensor that prism does
    not translate (index, mask and position arithmetic in integers and booleans is PyTorch's)."""
    left = []
    for n in graph_module.graph.nodes:
        meta = n.meta.get("tensor_meta")
        if n.op not in ("call_module", "call_method", "call_function") or not getattr(getattr(meta, "dtype", None), "is_floating_point", False):
            continue
        if n.target is additive_mask:  # _simplify's own, beside the attention prism imports
            continue
        why = fx_import.why_untranslated(graph_module, n)
        if why is not None:
            target = getattr(n.target, "__name__", n.target)
            left.append((f"'{n.name}' ({target}) at {fx_import.source_line(n)}", why))
    return left


_MATMULS = ("linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "scaled_dot_product_attention")


def _matmuls(nodes):
    import operator

    return sum(n.target is operator.matmul or getattr(n.target, "__name__", n.target) in _MATMULS for n in nodes)


def _pieces(partition, original):
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
        if live == [node] and _matmuls(piece):
            pieces.append(piece)
            piece, members = [], set()
    joined = []
    for p in pieces + [piece] if piece else pieces:
        if joined and _matmuls(joined[-1]) == 1 and _matmuls(p) == 1:
            joined[-1] = joined[-1] + p
        else:
            joined.append(p)
    return joined


def _compute_nodes(graph_module):
    import operator

    return sum(n.op in ("call_module", "call_method", "call_function") and n.target is not operator.getitem
               for n in graph_module.graph.nodes)


def _partition_module(compiled, rows):
    """An nn.Module (what a GraphModule's call_module needs) that calls `compiled`, its tensors
    folded into rows and back where `rows` (rows.fold_rows) says."""
    import torch

    class PrismPartition(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.compiled = compiled

        def forward(self, *args):
            if rows is None:
                return self.compiled(*args)
            return rows.results(args, self.compiled(*rows.arguments(args)))

    return PrismPartition()


def _needs_gradients(example_inputs):
    import torch

    return torch.is_grad_enabled() and any(getattr(x, "requires_grad", False) for x in example_inputs)


def torch_backend(graph_module, example_inputs, target="cpu", top=None, explain=False):
    """A torch.compile backend: `graph_module` with each partition prism compiles replaced by its
    callable. The result's `prism_partitions` lists (name, Compiled), `prism_skipped` (name, why)
    and `prism_left` (node, why) for each op outside every partition.
    Under autograd (an input that requires grad, grad mode on) the graph is returned as it is:
    prism's kernels compute no gradients. `explain`: nothing is searched or said; each piece's
    program is kept in `prism_programs` (name, Imported) and PyTorch runs the whole graph."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
    from torch.fx.passes.operator_support import OperatorSupportBase

    if _needs_gradients(example_inputs):
        _warn_once("prism: this graph needs gradients and prism's kernels compute none: PyTorch runs it "
                   "(call the model under torch.no_grad() or torch.inference_mode() for prism's kernels)")
        graph_module.prism_partitions, graph_module.prism_skipped, graph_module.prism_left = [], [], []
        return graph_module

    _record_shapes(graph_module, example_inputs)
    _simplify(graph_module)
    regions = _in_regions(graph_module)

    class PrismSupport(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return node not in regions and fx_import.translates(graph_module, node)

    left = _left_to_pytorch(graph_module)
    if left and not explain:
        _warn_once("prism: PyTorch runs these ops of the graph:\n" + "\n".join(f"  {node}: {why}" for node, why in left))
    # Single nodes too: the partitioner's own filter counts call_function nodes only, and a model
    # traced with its nn.Modules calls them (call_module); _compute_nodes filters instead.
    # Positions by name: fusing copies the nodes into a new graph, under their names.
    original = {n.name: i for i, n in enumerate(graph_module.graph.nodes)}
    partitioner = CapabilityBasedPartitioner(graph_module, PrismSupport(), allows_single_node_partition=True)
    partitions = [Partition(id=i, nodes=nodes) for i, nodes in
                  enumerate(piece for p in partitioner.propose_partitions() for piece in _pieces(p, original))]
    first = {f"fused_{i}": min(original[n.name] for n in p.nodes) for i, p in enumerate(partitions)}  # fuse_by_partitions' names
    partitioned = partitioner.fuse_partitions(partitions)
    order = {n: first[n.target] if n.op == "call_module" and n.target in first else original[n.name]
             for n in partitioned.graph.nodes if n.name in original or (n.op == "call_module" and n.target in first)}
    _keep_order(partitioned, order)
    partitioned.prism_partitions, partitioned.prism_skipped, partitioned.prism_left = [], [], left
    partitioned.prism_programs = []
    for node in partitioned.graph.nodes:
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        part = partitioned.get_submodule(node.target)
        if _compute_nodes(part) < 2:
            continue  # one op alone gains nothing from fusion: PyTorch runs it
        try:
            folded = fold_rows(part)
            program = fx_import.from_graph(part, "torch_" + node.target)
            if explain:
                partitioned.prism_programs.append((node.target, program))
                continue
            compiled = Compiled(part, None, target=target, top=top, imported=program)
        except (UnsupportedOp, PrismError, ConnectionLost) as why:
            if not explain:
                _warn_once(f"prism: {node.target} stays PyTorch's: {why}")
            partitioned.prism_skipped.append((node.target, str(why)))
            continue
        partitioned.prism_partitions.append((node.target, compiled))
        setattr(partitioned, node.target, _partition_module(compiled, folded))
    return partitioned


class Explanation:
    """What prism.explain found, per graph dynamo captured: `graphs`, each with `prism_programs`
    (the pieces prism would search), `prism_skipped` (pieces the importer refuses, and why) and
    `prism_left` (the ops PyTorch keeps, and why). `str()` is the report."""

    def __init__(self, graphs):
        self.graphs = graphs

    def __str__(self):
        lines = []
        for i, graph in enumerate(self.graphs):
            lines.append(f"graph {i}: prism would search {len(graph.prism_programs)} program(s)")
            for name, program in graph.prism_programs:
                signature = program.text.split("{", 1)[0].strip()
                lines.append(f"  {name}: {signature} ({program.text.count(chr(10)) - 2} statements)")
            for name, why in graph.prism_skipped:
                lines.append(f"  {name} stays PyTorch's: {why}")
            for node, why in graph.prism_left:
                lines.append(f"  PyTorch runs {node}: {why}")
        return "\n".join(lines)


def explain(model, *args, **kwargs):
    """What torch.compile(model, backend="prism") gives prism and leaves to PyTorch on this call,
    without searching or tuning: dynamo captures the graphs, the backend imports each piece, and
    PyTorch computes the call. Returns an Explanation (print it for the report)."""
    import torch

    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(torch_backend(graph_module, example_inputs, explain=True))
        return graphs[-1]

    torch._dynamo.reset()
    try:
        with torch.no_grad():
            torch.compile(model, backend=backend)(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    return Explanation(graphs)


def register_torch_backend(name="prism"):
    """Registers torch_backend with torch.compile as `name` (PyTorch 2); False where this PyTorch
    has no torch.compile (1.x)."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return False
    if name not in list_backends(exclude_tags=()):
        register_backend(name=name)(torch_backend)
    return True


class _RegisterWhenDynamoLoads(importlib.abc.MetaPathFinder):
    """Registers the backend right after torch._dynamo is first imported, so that `import prism`
    before `import torch` costs no torch import and torch.compile(backend="prism") still finds it."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch._dynamo":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            register_torch_backend()

        spec.loader.exec_module = exec_module
        return spec


def register_on_import():
    """What `import prism` does: register now where torch's dynamo is loaded, else when it loads."""
    if "torch._dynamo" in sys.modules:
        register_torch_backend()
    elif not any(isinstance(f, _RegisterWhenDynamoLoads) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterWhenDynamoLoads())
