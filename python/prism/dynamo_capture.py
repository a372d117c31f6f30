"""from_torch's second way in: a module torch.fx's symbolic trace cannot follow (transformers'
layers: decorated forwards, `**kwargs`, item assignment on shapes) captured by dynamo instead
(docs/python.md, "prism.from_torch", "Captured by dynamo").

`torch._dynamo.export` runs the module's Python and records its tensor ops, taking its arguments
and keyword arguments as one tree (a `position_embeddings=(cos, sin)` pair is two leaves). The
graph it gives is rewritten to read as a traced one: its parameters and submodules under their
qualified names in the module (read from the module at each call, as a traced module's are), its
inputs named after the arguments they are (`hidden_states`, `position_embeddings_0`), the leaves
the computation never reads left out. `Calling` turns a call's arguments into the program's
inputs and its outputs back into what the module returns (`(attn_output, None)`).
"""
import contextlib
import inspect

from .errors import UnsupportedOp


class Calling:
    """How a captured module is called: `in_spec` (the tree of its arguments), `read` (the leaves
    the program takes, in its inputs' order), `out_spec` and `outputs` (for each leaf of what the
    module returns, the index of the program's output that is it, or the constant it is)."""

    def __init__(self, in_spec, read, out_spec, outputs, names):
        self.in_spec, self.read, self.out_spec, self.outputs = in_spec, read, out_spec, outputs
        self.names = names  # each leaf's, as the program's inputs are named

    def leaves(self, args, kwargs):
        """The call's arguments the program reads, in order; TypeError where one is no tensor or
        the call's arguments are not of the captured call's form."""
        from torch.fx._pytree import tree_flatten_spec

        try:
            leaves = tree_flatten_spec((args, kwargs), self.in_spec)
        except Exception as error:  # noqa: BLE001 -- a missing keyword, a tuple of another length
            raise TypeError(f"the call's arguments are not of the form the module was captured with ({error})") from error
        read = [leaves[i] for i in self.read]
        for i, leaf in zip(self.read, read):
            if not hasattr(leaf, "shape"):
                raise TypeError(f"'{self.names[i]}' is {type(leaf).__name__}, where the module was captured with a tensor")
        return read

    def program_outputs(self, result):
        """The program's outputs among what the module returned (the first call's check)."""
        import torch.utils._pytree as pytree

        leaves = pytree.tree_leaves(result, is_leaf=lambda x: x is None)
        return tuple(leaf for leaf, kept in zip(leaves, self.outputs) if isinstance(kept, _Output))

    def result(self, outputs):
        """The module's result made of the program's `outputs` (a tuple)."""
        import torch.utils._pytree as pytree

        leaves = [outputs[k.index] if isinstance(k, _Output) else k for k in self.outputs]
        return pytree.tree_unflatten(leaves, self.out_spec)


class _Output:
    def __init__(self, index):
        self.index = index


def capture(fn_or_module, args, kwargs):
    """(GraphModule, the example leaves it reads, Calling) of `fn_or_module` called with `args`
    and `kwargs` as dynamo captures it. A module's graph is rooted at the module. Raises
    UnsupportedOp where dynamo breaks the graph or the module returns something prism cannot."""
    import torch
    import torch.fx

    try:
        with torch.no_grad(), _no_lasting_caches():
            exported, _ = torch._dynamo.export(fn_or_module)(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 -- dynamo could not make one graph: said as what it is
        first = str(error).splitlines()[0] if str(error) else ""
        raise UnsupportedOp(f"dynamo could not capture {described(fn_or_module)} as one graph ({type(error).__name__}: {first}); "
                            "torch.compile(model, backend=\"prism\") runs such code in pieces") from error
    graph = exported.graph
    in_spec, out_spec = exported._in_spec, exported._out_spec
    graph.set_codegen(torch.fx.graph.CodeGen())
    names = _leaf_names(fn_or_module, in_spec)
    leaves = torch.fx._pytree.tree_flatten_spec((args, kwargs), in_spec)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(names):  # dynamo's graph takes one input per leaf of the call's tree
        raise UnsupportedOp(f"dynamo's graph of {described(fn_or_module)} takes {len(placeholders)} inputs for the call's "
                            f"{len(names)} arguments")
    read = []
    for index, node in enumerate(placeholders):
        if not node.users:
            graph.erase_node(node)
            continue
        node.target = names[index]
        read.append(index)
    outputs = _outputs(graph)
    # A module's: what the graph reads, under the names the module gives it (as a traced
    # module's graph reads them); a function's: what dynamo made, the tensors it closes over.
    root = _retargeted(graph, exported, fn_or_module) if isinstance(fn_or_module, torch.nn.Module) else exported
    module = torch.fx.GraphModule(root, graph)
    return module, [leaves[i] for i in read], Calling(in_spec, read, out_spec, outputs, names)


@contextlib.contextmanager
def _no_lasting_caches():
    """An export that neither meets dynamo's recompile limit nor leaves its compiled frames behind
    (docs/python.md, "Captured by dynamo"): each export caches a frame on the code it traces, and
    modules of many classes share their call's code. The limit is lifted for the export; the
    frames of code dynamo had not traced before it are cleared after (code a torch.compile of the
    user's traced keeps its own)."""
    import torch._dynamo.config
    from torch._dynamo import convert_frame
    from torch._dynamo.eval_frame import reset_code

    before = set(convert_frame.input_codes.seen_ids) | set(convert_frame.output_codes.seen_ids)
    try:
        with torch._dynamo.config.patch(recompile_limit=1 << 30, accumulated_recompile_limit=1 << 30):
            yield
    finally:
        for weak in convert_frame.input_codes.seen + convert_frame.output_codes.seen:
            code = weak()
            if code is not None and id(code) not in before:
                reset_code(code)


def described(fn_or_module):
    """A module's class name, or a function's name, as messages name what was imported."""
    import torch

    return type(fn_or_module).__name__ if isinstance(fn_or_module, torch.nn.Module) else getattr(fn_or_module, "__name__", "it")


def _leaf_names(fn_or_module, in_spec):
    """A name for each leaf of the arguments' tree: the parameter it is (`hidden_states`), with the
    place in a tuple or dict it is passed in (`position_embeddings_0`)."""
    import torch

    forward = fn_or_module.forward if isinstance(fn_or_module, torch.nn.Module) else fn_or_module
    try:
        positional = [p.name for p in inspect.signature(forward).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        positional = []
    args_spec, kwargs_spec = in_spec.children_specs
    names = []

    def walk(spec, name):
        if spec.is_leaf():
            names.append(name)
            return
        keys = spec.context if isinstance(spec.context, list) else range(len(spec.children_specs))
        for key, child in zip(keys, spec.children_specs):
            walk(child, f"{name}_{key}")

    for i, child in enumerate(args_spec.children_specs):
        walk(child, positional[i] if i < len(positional) else f"arg{i}")
    for key, child in zip(kwargs_spec.context, kwargs_spec.children_specs):
        walk(child, key)
    return names


def _outputs(graph):
    """For each leaf the output node returns: an _Output (the program's next output) for a tensor
    node, else the constant itself (None); the output node then returns the tensors alone."""
    output = next(n for n in graph.nodes if n.op == "output")
    returned = output.args[0]
    returned = list(returned) if isinstance(returned, (list, tuple)) else [returned]
    kept, outputs = [], []
    for value in returned:
        if hasattr(value, "op"):
            outputs.append(_Output(len(kept)))
            kept.append(value)
        elif value is None:
            outputs.append(None)
        else:
            raise UnsupportedOp(f"the module returns {value!r} beside its tensors; prism imports tensors (and None)")
    output.args = (tuple(kept),)
    return outputs


def _retargeted(graph, exported, module):
    """{name: what it is} for the graph's parameters, buffers and submodules, each renamed as
    `module` names it. Dynamo's submodules are copies holding the module's own tensors: a copy is
    its module where their tensors are the same; one without tensors (an activation) is kept as
    dynamo named it."""
    tensors = {id(t): name for name, t in list(module.named_parameters(remove_duplicate=False))
               + list(module.named_buffers(remove_duplicate=False))}
    modules = {_held(m): name for name, m in module.named_modules(remove_duplicate=False) if name and _held(m)[1]}
    root = {}
    for node in graph.nodes:
        if node.op == "call_module":
            value = exported.get_submodule(node.target)
            held = _held(value)
            name = modules.get(held) if held[1] else node.target
        elif node.op == "get_attr":
            value = _attribute(exported, node.target)
            name = tensors.get(id(value))
        else:
            continue
        if name is None:
            raise UnsupportedOp(f"dynamo made '{node.target}', which {type(module).__name__} does not hold (a tensor "
                                "made at trace time); prism reads a module's own parameters and buffers")
        node.target = name
        if node.op == "call_module":  # `v_self_attn_q_proj`, not `v_l__self___self_attn_q_proj`, in the program
            node._rename(name.replace(".", "_"))
        root[name] = value
    return root


def _held(module):
    """A module's type and the tensors it holds itself: what a copy of it shares with it."""
    return type(module), tuple(id(t) for t in list(module._parameters.values()) + list(module._buffers.values())
                               if t is not None)


def _attribute(module, target):
    path, _, attr = target.rpartition(".")
    return getattr(module.get_submodule(path) if path else module, attr)
