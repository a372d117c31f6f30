"""torch.compile(model, backend=prism.torch_backend) (PyTorch 2): the parts of a captured graph that
prism can express become prism.compile callables; the rest runs as PyTorch runs it.

The graph is split with torch.fx's capability partitioner: a node is prism's when from_torch
translates it (fx_import.translates). Each partition of two or more such nodes is compiled at the
example inputs' sizes (torch.compile captures a graph per shape); one that prism cannot compile
(no verified family, an error) stays PyTorch's, with a warning that says why (docs/python.md).
"""
import warnings

from . import fx_import
from .compiled import Compiled
from .errors import ConnectionLost, PrismError, UnsupportedOp


def _example(node):
    """A tensor like the one `node` gave when the graph ran on the example inputs."""
    import torch

    meta = node.meta["tensor_meta"]
    return torch.randn(tuple(meta.shape)).to(meta.dtype)


def _compute_nodes(graph_module):
    import operator

    return sum(n.op in ("call_module", "call_method", "call_function") and n.target is not operator.getitem
               for n in graph_module.graph.nodes)


def _partition_module(compiled):
    """An nn.Module (what a GraphModule's call_module needs) that calls `compiled`."""
    import torch

    class PrismPartition(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.compiled = compiled

        def forward(self, *args):
            return self.compiled(*args)

    return PrismPartition()


def torch_backend(graph_module, example_inputs, target="cpu", top=None):
    """A torch.compile backend: `graph_module` with each partition prism compiles replaced by its
    callable. The result's `prism_partitions` lists (name, Compiled), `prism_skipped` (name, why)."""
    import torch
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase
    from torch.fx.passes.shape_prop import ShapeProp

    class PrismSupport(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return fx_import.translates(graph_module, node)

    with torch.no_grad():
        ShapeProp(graph_module).propagate(*example_inputs)
    # Single nodes too: the partitioner's own filter counts call_function nodes only, and a model
    # traced with its nn.Modules calls them (call_module); _compute_nodes filters instead.
    partitioned = CapabilityBasedPartitioner(graph_module, PrismSupport(), allows_single_node_partition=True).partition_and_fuse()
    partitioned.prism_partitions, partitioned.prism_skipped = [], []
    for node in partitioned.graph.nodes:
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        if _compute_nodes(partitioned.get_submodule(node.target)) < 2:
            continue  # one op alone gains nothing from fusion: PyTorch runs it
        try:
            compiled = Compiled(partitioned.get_submodule(node.target), [_example(a) for a in node.args], target=target,
                                name="torch_" + node.target, top=top)
        except (UnsupportedOp, PrismError, ConnectionLost) as why:
            warnings.warn(f"prism: {node.target} stays PyTorch's: {why}", RuntimeWarning, stacklevel=2)
            partitioned.prism_skipped.append((node.target, str(why)))
            continue
        partitioned.prism_partitions.append((node.target, compiled))
        setattr(partitioned, node.target, _partition_module(compiled))
    return partitioned


def register_torch_backend(name="prism"):
    """Registers torch_backend with torch.compile as `name` (PyTorch 2); False where this PyTorch
    has no torch.compile (1.x)."""
    try:
        from torch._dynamo import register_backend
    except ImportError:
        return False
    register_backend(name=name)(torch_backend)
    return True
