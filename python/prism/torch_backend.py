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
import copy
import importlib.abc
import importlib.util
import os
import re
import sys

from . import effects, fx_import, graph_order, graph_rewrites, implicit_casts, piece_calls, pieces, share, varying_floats
from .compiled import Compiled
from .errors import ConnectionLost, PrismError, UnsupportedOp, as_bug, warn_once
from .layout_cuts import moves_layout, splits_heads
from .rows import fold_rows
from .share import Meta


def _meta_of(value):
    """tensor_meta's shape and dtype of a (fake) tensor, a list of them (a split's pieces), or None."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return Meta(tuple(value.shape), value.dtype)
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "shape") for v in value):
        return [Meta(tuple(v.shape), v.dtype) for v in value]
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


# Partitioning again without the nodes the importer refused, or cut at the head splits a piece's
# search could not take: every refusal of a round is found at once, and a node is refused or cut
# once, so few rounds pass (one per refusal that uncovers another, one for the head splits).
_PARTITION_ROUNDS = 6


def _imports(graph_module, partitions):
    """{fused name: (piece, its folded rows, program), or the error its import raised} for each
    partition, by fuse_partitions' names (`fused_<index>`): each imported on a copy of its nodes
    (`fuse_as_graphmodule`, nothing fused) and folded there, so a piece prism does not take runs
    as the graph wrote it."""
    from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule, topo_sort

    imported = {}
    for i, partition in enumerate(partitions):
        name = f"fused_{i}"
        try:
            # As fuse_partitions fuses it: the piece's inputs in the order its call passes them.
            piece = copy.deepcopy(fuse_as_graphmodule(graph_module, topo_sort(list(partition.nodes)), name, partition.nodes)[0])
            folded = fold_rows(piece)
            imported[name] = (piece, folded, fx_import.from_graph(piece, "torch_" + name))
        except Exception as error:  # noqa: BLE001 -- said where the piece is taken or left
            imported[name] = error
    return imported


def _refusals(graph_module, imported):
    """{node: why} for the nodes the importer refused in `imported`'s pieces (a `pow` with a
    tensor exponent, a slice of many parts)."""
    by_name = {n.name: n for n in graph_module.graph.nodes}
    return {by_name[e.node]: e.reason for e in imported.values() if isinstance(e, UnsupportedOp) and e.node in by_name}


def _described(node):
    return f"'{node.name}' ({getattr(node.target, '__name__', node.target)}) at {fx_import.source_line(node)}"


def _left_to_pytorch(graph_module):
    """[(node description, why)] for each node computing a floating-point or complex tensor that
    prism does not translate (index, mask and position arithmetic in integers and booleans is
    PyTorch's)."""
    left = []
    for n in graph_module.graph.nodes:
        if n.op not in ("call_module", "call_method", "call_function") or not share.computes_numbers(n):
            continue
        if n.target in graph_rewrites.MADE_BY_SIMPLIFY:  # masks and patches simplify made, beside the ops prism imports
            continue
        why = fx_import.why_untranslated(graph_module, n)
        if why is not None:
            left.append((_described(n), why))
    return left


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHARED = collections.OrderedDict()  # (the text up to names, target, top) -> Compiled, the last used last
_SHARED_AT_MOST = 256


def _up_to_names(text):
    """The program's text with the names it declares (its own, its inputs', its values') replaced
    by their order of declaration: equal for two layers of a model that compute alike."""
    header, body = text.split("{", 1)
    declared = _IDENTIFIER.findall(header.split("(", 1)[0].replace("program", "", 1))
    declared += re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*:", header)
    for line in body.splitlines():
        if "=" in line and not line.lstrip().startswith("return"):
            declared += _IDENTIFIER.findall(line.split("=", 1)[0])
    order = {name: f"n{i}" for i, name in enumerate(dict.fromkeys(declared))}
    return _IDENTIFIER.sub(lambda m: order.get(m.group(0), m.group(0)), text)


def _untaken_head_splits(partitions, imported, compile_piece=None):
    """The head splits and merges inside the pieces that did not import or, given
    `compile_piece(piece, program)` (which searches now; _compiled keeps what it found), find no
    family: each such piece is cut at them in the next round (layout_cuts)."""
    untaken = set()
    for i, partition in enumerate(partitions):
        heads = [n for n in partition.nodes if splits_heads(n)]
        if not heads:
            continue
        try:
            if isinstance(imported[f"fused_{i}"], Exception):
                raise imported[f"fused_{i}"]
            if compile_piece is not None:
                piece, _, program = imported[f"fused_{i}"]
                compile_piece(piece, program)
        except Exception:  # noqa: BLE001 -- the piece cut at its head splits is tried next
            untaken.update(heads)
    return untaken


def _device_target(piece):
    """The target that runs `piece`: the one of the device its tensors are on ("cpu", "cuda"), as
    dynamo's fake values say (a graph from symbolic_trace: the CPU's). UnsupportedOp where they lie
    on devices of two kinds or on one prism has no target for."""
    devices = {value.device.type for value in
               (n.meta.get("example_value") for n in piece.graph.nodes if n.op == "placeholder")
               if hasattr(value, "device")}
    if len(devices) > 1 or devices - set(_TARGETS):
        raise UnsupportedOp(f"its tensors are on {' and '.join(sorted(devices))}; prism's targets are "
                            f"{' and '.join(map(repr, _TARGETS))}")
    return devices.pop() if devices else "cpu"


def _compiled(piece, program, target, top):
    """A Compiled for `program`: the one an identical piece already has in this process (a model's
    layers, a graph dynamo compiles again: searched once, tuned once per size), else a new one.
    `target` None: the one of the device the piece's tensors are on (_device_target)."""
    target = target or _device_target(piece)
    key = (_up_to_names(program.text), target, top)
    compiled = _SHARED.get(key)
    if compiled is None:
        # Where no fused kernel wins at a call's sizes, the graph's own ops run (piece_calls),
        # not prism's eager plan: the same plan, in the kernels the user had.
        compiled = Compiled(piece, None, target=target, top=top, imported=program, eager_plan=False)
        _SHARED[key] = compiled
        if len(_SHARED) > _SHARED_AT_MOST:
            _SHARED.popitem(last=False)
    _SHARED.move_to_end(key)
    return compiled


def _needs_gradients(example_inputs):
    import torch

    return torch.is_grad_enabled() and any(getattr(x, "requires_grad", False) for x in example_inputs)


def _failed_on_graph(error):
    warn_once(f"prism: PyTorch runs this graph as written: prism failed on it ({as_bug(error)})")


_TARGETS = ("cpu", "cuda")  # the daemon's targets, named by the torch device their tensors are on
# torch.compile's modes, as the instantiations a tune times (`top`; None: the daemon's default).
_MODES = {"default": None, "reduce-overhead": None, "max-autotune": 32, "max-autotune-no-cudagraphs": 32}


def _settings(target, top, mode, options):
    """(target, top) from torch.compile's `mode` and `options` (docs/python.md, "Modes,
    options and devices"); ValueError, naming what prism takes, for a mode or option it does not know."""
    options = dict(options or {})
    unknown = sorted(set(options) - {"target", "top"})
    if unknown:
        raise ValueError(f"prism's torch.compile options are 'target' and 'top', not {', '.join(map(repr, unknown))}")
    if mode is not None and mode not in _MODES:
        raise ValueError(f"prism's torch.compile modes are {', '.join(map(repr, _MODES))}, not {mode!r}")
    if mode == "reduce-overhead":
        warn_once("prism: mode 'reduce-overhead' runs as 'default': prism captures no CUDA graphs")
    target, top = options.get("target", target), options.get("top", _MODES.get(mode) if top is None else top)
    if target is not None and target not in _TARGETS:
        raise ValueError(f"prism's targets are {' and '.join(map(repr, _TARGETS))}, not {target!r}")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 256):
        raise ValueError(f"prism's 'top' (instantiations a tune times) is an int from 1 to 256, not {top!r}")
    return target, top


def torch_backend(graph_module, example_inputs, target=None, top=None, explain=False, mode=None, options=None):
    """A torch.compile backend: `graph_module` with each partition prism compiles replaced by its
    callable. The result's `prism_partitions` lists (name, Compiled), `prism_skipped` (name, why)
    and `prism_left` (node, why) for each op outside every partition. `target` ("cpu", "cuda"):
    where prism's kernels run, else where each piece's tensors lie; `top`: the instantiations a
    tune times; torch.compile's `mode` and `options` ({"target", "top"}) set them too.
    Under autograd (an input that requires grad, grad mode on) the graph is returned as it is:
    prism's kernels compute no gradients. `explain`: nothing is searched or said; each piece's
    program is kept in `prism_programs` (name, Imported) and PyTorch runs the whole graph.
    An error of prism's own outside every piece (a bug) leaves the whole graph to PyTorch, with
    one warning that says so: the user's model runs as written, never crashes in its compile."""
    target, top = _settings(target, top, mode, options)  # the user's mistake: raised, not a fallback
    try:
        floats = varying_floats.positions(graph_module, example_inputs)
        if floats:  # compiled for each set of their values (docs/python.md, "Floats dynamo lets vary")
            return varying_floats.ByValues(graph_module, example_inputs, floats,
                                           lambda graph, args: torch_backend(graph, args, target, top, explain),
                                           warn_once, _failed_on_graph)
        return _backend(graph_module, example_inputs, target, top, explain)
    except Exception as error:  # noqa: BLE001 -- the model runs as written, the bug is reported
        _failed_on_graph(error)
        graph_module.prism_partitions, graph_module.prism_left, graph_module.prism_programs = [], [], []
        graph_module.prism_skipped = [("graph", f"prism failed on it ({type(error).__name__}: {error})")]
        graph_module.prism_share = share.Share(0, 0, 0, 0)
        return graph_module


def _backend(graph_module, example_inputs, target, top, explain):
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
    from torch.fx.passes.operator_support import OperatorSupportBase

    if _needs_gradients(example_inputs):
        warn_once("prism: this graph needs gradients and prism's kernels compute none: PyTorch runs it "
                  "(call the model under torch.no_grad() or torch.inference_mode() for prism's kernels)")
        graph_module.prism_partitions, graph_module.prism_skipped, graph_module.prism_left = [], [], []
        graph_module.prism_share = share.share(graph_module, example_inputs, [])
        return graph_module

    # Ops whose dtype no cast explains run where autocast is as it was (implicit_casts.py).
    autocast_bound = implicit_casts.write_casts(graph_module)
    _record_shapes(graph_module, example_inputs)
    graph_rewrites.simplify(graph_module)
    regions = graph_order.in_regions(graph_module) | autocast_bound

    refused = {}  # node -> why the importer refused it in a piece: PyTorch's, the piece cut around it
    cut_heads = set()  # head splits and merges a piece's search could not take: cut there
    heads_inside = os.environ.get("PRISM_HEADS_INSIDE", "1") != "0"  # docs/python.md, "Head splits inside"

    def cuts(node):
        return moves_layout(node) and (not heads_inside or node in cut_heads or not splits_heads(node))

    class PrismSupport(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return (node not in regions and node not in refused and not cuts(node) and
                    fx_import.translates(graph_module, node))

    # Single nodes too: the partitioner's own filter counts call_function nodes only, and a model
    # traced with its nn.Modules calls them (call_module); pieces.compute_nodes filters instead.
    # Positions by name: fusing copies the nodes into a new graph, under their names.
    original = {n.name: i for i, n in enumerate(graph_module.graph.nodes)}
    writes = effects.visible_writes(graph_module)
    autocast, between_writes = graph_order.autocast_segments(graph_module), effects.segments(graph_module, writes)
    segment = {n: (autocast[n], between_writes[n]) for n in graph_module.graph.nodes}
    barriers = {n.name for n in graph_module.graph.nodes
                if n in writes or getattr(n.target, "__name__", "") in graph_order.EFFECT_CALLS}
    for _ in range(_PARTITION_ROUNDS):
        partitioner = CapabilityBasedPartitioner(graph_module, PrismSupport(), allows_single_node_partition=True)
        partitions = [Partition(id=i, nodes=nodes) for i, nodes in
                      enumerate(piece for p in partitioner.propose_partitions() for part in graph_order.by_segment(p, segment)
                                for piece in pieces.pieces_of(pieces.trimmed(part), original))]
        imported = _imports(graph_module, partitions)
        # A piece that holds head splits and does not import, or (when compiling) finds no
        # family, is cut at them first; then the importer's refusals, as in a piece without them.
        untaken = _untaken_head_splits(partitions, imported) if heads_inside else set()
        more = {} if untaken else _refusals(graph_module, imported)
        if heads_inside and not untaken and not more and not explain:
            untaken = _untaken_head_splits(partitions, imported, lambda piece, program: _compiled(piece, program, target, top))
        if not untaken and not more:
            break
        cut_heads.update(untaken)
        refused.update(more)
    left = _left_to_pytorch(graph_module) + [(_described(n), why) for n, why in refused.items()]
    first = {f"fused_{i}": min(original[n.name] for n in p.nodes) for i, p in enumerate(partitions)}  # fuse_by_partitions' names
    members = {f"fused_{i}": list(p.nodes) for i, p in enumerate(partitions)}
    whole_graph = share.share(graph_module, example_inputs, [])  # counted before fusing moves the nodes
    shares = {name: share.share(graph_module, example_inputs, nodes) for name, nodes in members.items()}
    partitioned = partitioner.fuse_partitions(partitions)
    order = {n: first[n.target] if n.op == "call_module" and n.target in first else original[n.name]
             for n in partitioned.graph.nodes if n.name in original or (n.op == "call_module" and n.target in first)}
    graph_order.keep_order(partitioned, order, barriers)
    partitioned.prism_partitions, partitioned.prism_skipped, partitioned.prism_left = [], [], left
    partitioned.prism_programs = []
    taken = []
    for node in partitioned.graph.nodes:
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        part = partitioned.get_submodule(node.target)
        if pieces.compute_nodes(part) < 2:
            continue  # one op alone gains nothing from fusion: PyTorch runs it
        try:
            if isinstance(imported[node.target], Exception):
                raise imported[node.target]
            piece, folded, program = imported[node.target]
            if explain:
                partitioned.prism_programs.append((node.target, program))
                taken.append(shares[node.target])
                continue
            compiled = _compiled(piece, program, target, top)
        except Exception as error:  # noqa: BLE001 -- a piece prism fails on is PyTorch's, never the user's crash
            known = isinstance(error, (UnsupportedOp, PrismError, ConnectionLost))
            why = str(error) if known else f"prism failed on it ({as_bug(error)})"
            if not explain:
                warn_once(f"prism: {node.target} stays PyTorch's: {why}")
            partitioned.prism_skipped.append((node.target, why))
            continue
        partitioned.prism_partitions.append((node.target, compiled))
        taken.append(shares[node.target])
        setattr(partitioned, node.target, piece_calls.partition_module(node.target, compiled, folded, piece_calls.functional(part)))
    partitioned.prism_share = sum(taken, whole_graph)
    if left and not explain:
        warn_once(f"prism: {partitioned.prism_share}; PyTorch runs these ops of the graph:\n" +
                  "\n".join(f"  {node}: {why}" for node, why in left))
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
            lines.append(f"  if each finds a family, {graph.prism_share}")
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
