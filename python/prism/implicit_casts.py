"""The casts PyTorch makes without the graph showing them, written into it (docs/python.md,
"Autocast and mixed dtypes").

Under `torch.autocast` (around the compiled call, or in the model's code) a matmul's floating
inputs are cast to the autocast dtype before it runs, and some ops' to float32; a norm given a
16-bit input and an f32 gain computes at f32 and gives the input's dtype. dynamo's graph records
only the dtypes these give (its fake values). prism's programs compute what they read, by the
wider of two dtypes, so each such cast is written as a `.to(dtype)` node: the graph then computes
the same values with autocast on or off, in prism's pieces and in PyTorch's.

The rules, for an op whose floating inputs are not all of the dtype it gives (D):
- a matmul, attention or convolution (PyTorch multiplies only equal dtypes: autocast cast them):
  its floating inputs are cast to D (a convolution read as a norm's mixed-type kernel computed
  ViT's patch embedding at f32 where autocast's is bf16, and once a linear, patch_convolutions.py,
  its piece's own ops computed it at bf16 where the graph said f32);
- D is float32: its 16-bit inputs are cast to f32 (what type promotion computes anyway, and
  what autocast does for the ops it runs at f32);
- D is 16-bit and the wider of the inputs' dtypes is f32 (a norm's mixed-type kernel): its
  16-bit inputs are cast to f32, and its result to D;
- otherwise no cast explains it: the op runs where autocast is as it was (PyTorch's)."""
import functools

from . import share

_MATMULS = share.MATMULS | {"scaled_dot_product_attention", "conv1d", "conv2d", "conv3d"}


def write_casts(graph_module):
    """Writes the casts of the rules above into `graph_module` (nodes with dynamo's
    `example_value`). Returns the ops no rule explains: they stay PyTorch's."""
    import torch

    graph, unexplained = graph_module.graph, set()
    for node in list(graph.nodes):
        given = _floating_dtype(node)
        inputs = [a for a in node.all_input_nodes if _floating_dtype(a) is not None]
        if (node.op not in ("call_function", "call_method") or given is None or share.op_name(node) in share.CASTS
                or "dtype" in node.kwargs or all(_floating_dtype(a) == given for a in inputs)):
            continue
        if share.op_name(node) in _MATMULS or given == torch.float32:
            _cast_inputs(graph, node, inputs, given)
        elif functools.reduce(torch.promote_types, [_floating_dtype(a) for a in inputs]) == torch.float32:
            _cast_inputs(graph, node, inputs, torch.float32)
            _cast_result(graph, node, given)
        else:
            unexplained.add(node)
    graph_module.recompile()
    return unexplained


def _floating_dtype(node):
    """The dtype of the floating tensor `node` gives (dynamo's fake value), else None."""
    dtype = getattr(node.meta.get("example_value"), "dtype", None)
    return dtype if dtype is not None and dtype.is_floating_point else None


def _cast_inputs(graph, node, inputs, dtype):
    """`node` reads each of its floating `inputs` not of `dtype` cast to it."""
    for source in inputs:
        if _floating_dtype(source) != dtype:
            with graph.inserting_before(node):
                cast = graph.call_method("to", (source, dtype))
            cast.meta["example_value"] = source.meta["example_value"].to(dtype)
            node.replace_input_with(source, cast)


def _cast_result(graph, node, dtype):
    """`node` gives f32 (its inputs are), and its readers read the result cast to `dtype`."""
    import torch

    given = node.meta["example_value"]
    with graph.inserting_after(node):
        cast = graph.call_method("to", (node, dtype))
    node.replace_all_uses_with(cast, delete_user_cb=lambda user: user is not cast)
    cast.meta["example_value"] = given
    node.meta["example_value"] = given.to(torch.float32)
