"""Floats dynamo lets vary (docs/python.md, "Floats dynamo lets vary").

Once a module's float attribute (a norm's eps, attention's scaling) held another value in an earlier
compile of the same code, dynamo passes it to the graph as a 0-d float64 tensor that the graph reads
with `.item()`, so that one graph serves every value. prism's programs need numbers there: each
graph is compiled for the values it is called with, at most _AT_MOST sets of them, and every call
checks its values against the set it runs."""

_AT_MOST = 8  # sets of values compiled for one graph; beyond them PyTorch runs the graph as written
_FOLDABLE = {"_operator", "math"}  # modules whose functions of numbers alone the copy computes once


def positions(graph_module, example_inputs):
    """The positions of the graph's inputs that are floats dynamo passes as tensors and the graph
    reads with `.item()` (as dynamo's backends see them: its GraphArg says so). Not a tensor the
    caller passes, whose value may change at every call. [] when an example is fake (no value to
    compile for)."""
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    found = []
    for i, (node, example) in enumerate(zip(placeholders, example_inputs)):
        argument = node.meta.get("grapharg")
        wrapped = getattr(argument, "pass_arg_as_tensor", False) and not getattr(argument, "is_tensor", True)
        if wrapped and any(_reads(user) for user in node.users):
            if _value(example) is None:
                return []
            found.append(i)
    return found


def _reads(node):
    return node.op == "call_method" and node.target == "item"


def _value(tensor):
    try:
        return float(tensor.item())
    except Exception:  # noqa: BLE001 -- a fake tensor has no value: nothing to compile for
        return None


def specialized(graph_module, at, values):
    """A copy of the graph that reads the numbers `values` where it read the inputs at positions
    `at` through `.item()`, with what it computes of numbers alone folded; the inputs stay in its
    signature, unread. `graph_module` is left as it is."""
    import torch.fx

    graph = torch.fx.Graph()
    copies = {}
    output = graph.graph_copy(graph_module.graph, copies)
    graph.output(output)
    placeholders = [copies[n] for n in graph_module.graph.nodes if n.op == "placeholder"]
    numbers = {}
    for i, value in zip(at, values):
        for user in list(placeholders[i].users):
            if _reads(user):
                numbers[user] = value
    _fold(graph, numbers)  # no dead-code elimination: it would drop calls kept for their effect (vmap's)
    return torch.fx.GraphModule(graph_module, graph)


def _fold(graph, numbers):
    """Replaces each node of `numbers` with its number, and each function of numbers alone (an
    operator's, math's) that it leaves with the number it gives, until none is left."""
    from torch.fx.node import map_arg

    while numbers:
        node, value = numbers.popitem()
        for user in list(node.users):
            user.args = map_arg(user.args, lambda n: value if n is node else n)
            user.kwargs = map_arg(user.kwargs, lambda n: value if n is node else n)
            if user.op == "call_function" and _folds(user):
                numbers[user] = user.target(*user.args, **user.kwargs)
        graph.erase_node(node)


def _folds(node):
    """Whether `node` is a function of numbers alone that the copy computes once."""
    from torch.fx.node import Node, map_aggregate

    if getattr(node.target, "__module__", None) not in _FOLDABLE:
        return False
    found = []
    map_aggregate((node.args, node.kwargs), lambda a: found.append(a) if isinstance(a, Node) else None)
    return not found


class ByValues:
    """The graph's callable: prism's, compiled by `compile_graph(graph_module, example_inputs)` for
    each set of the floats' values it is called with (at most _AT_MOST), and PyTorch's graph as
    written for any set beyond them, `warn(text)` saying so, or where prism fails on a set,
    `failed(error)` saying so. The first set's result is compiled at once; its `prism_*`
    attributes (what prism runs, skipped and left) are this object's."""

    def __init__(self, graph_module, example_inputs, at, compile_graph, warn, failed):
        self.graph_module, self.at, self.compile_graph = graph_module, at, compile_graph
        self.warn, self.failed = warn, failed
        self.compiled = {}
        self.first = self.compiled_for(example_inputs)

    def values(self, args):
        return tuple(_value(args[i]) for i in self.at)

    def compiled_for(self, args):
        values = self.values(args)
        found = self.compiled.get(values)
        if found is None and len(self.compiled) >= _AT_MOST:
            placeholders = [n for n in self.graph_module.graph.nodes if n.op == "placeholder"]
            self.warn(f"prism: this graph was compiled for {_AT_MOST} sets of the floats dynamo lets vary "
                      f"({', '.join(placeholders[i].name for i in self.at)}); PyTorch runs it for others")
            return self.graph_module
        if found is None:
            found = self.compiled[values] = self.compile_graph(specialized(self.graph_module, self.at, values), args)
        return found

    def __call__(self, *args):
        try:
            run = self.compiled_for(args)
        except Exception as error:  # noqa: BLE001 -- the model runs as written, the bug is reported
            self.failed(error)
            run = self.compiled[self.values(args)] = self.graph_module  # not tried again
        return run(*args)

    def __getattr__(self, name):
        if name.startswith("prism_"):
            return getattr(self.first, name)
        raise AttributeError(name)
