"""Where a captured graph's nodes may move when torch_backend partitions and fuses it: the calls
with effects that last until a close (vmap nesting, autocast regions) and the in-place writes
(effects.py) that no edge of the graph orders (docs/python.md, "Autocast and mixed dtypes" and
"In-place writes").
"""

_OPENS = ("_vmap_increment_nesting",)  # calls whose effect lasts until their close
_CLOSES = ("_vmap_decrement_nesting",)
EFFECT_CALLS = frozenset(_OPENS + _CLOSES + ("_enter_autocast", "_exit_autocast"))


def in_regions(graph_module):
    """The nodes between a vmap nesting's opening call and its close: what they compute depends on
    that state, which a partition moved out of the nesting would lose."""
    inside, depth = set(), 0
    for n in graph_module.graph.nodes:
        name = getattr(n.target, "__name__", "")
        depth -= name in _CLOSES
        if depth > 0:
            inside.add(n)
        depth += name in _OPENS
    return inside


def autocast_segments(graph_module):
    """Each node's segment of the graph, cut at every autocast region's opening call and after its
    close (a model's own `with torch.autocast(...)`: Llama's rotary turns it off): a piece holds
    nodes of one segment only, so that it, and the ops PyTorch runs that read it, sit where the
    region's state is the one eager computed them in (docs/python.md, "Autocast and mixed dtypes")."""
    segment, of = 0, {}
    for n in graph_module.graph.nodes:
        name = getattr(n.target, "__name__", "")
        segment += name == "_enter_autocast"
        of[n] = segment
        segment += name == "_exit_autocast"
    return of


def by_segment(partition, segment):
    """`partition` as one partition per segment its nodes are in (an autocast region's, and
    between in-place writes: effects.segments). Each is convex as the
    partition is: a path between two of its nodes runs through nodes between them in the graph's
    order, so of their segment."""
    from torch.fx.passes.infra.partitioner import Partition

    parts = {}
    for n in partition.nodes:
        parts.setdefault(segment[n], []).append(n)
    return [Partition(id=partition.id, nodes=nodes) for nodes in parts.values()]


def keep_order(graph_module, order, barriers=frozenset()):
    """Sorts the graph topologically, each node as early as its original position `order` (the
    node's, or for a fused partition its first node's; a node fusing made, its input's) allows:
    fusing must not move a call with effects (vmap nesting, autocast, an in-place write) past the
    nodes around it, as the partitioner's breadth-first sort does. The nodes named in `barriers`
    (those calls) keep every node with a position on its side of them, whatever its inputs."""
    import heapq

    import torch

    nodes = list(graph_module.graph.nodes)  # topologically sorted already
    rank = {}
    for n in nodes:
        rank[n] = order[n] if n in order else max((rank[i] for i in n.all_input_nodes), default=0)
    waits_on = {n: set(n.all_input_nodes) for n in nodes}
    barrier, since = None, []
    for n in sorted((n for n in nodes if n in order), key=order.get):
        if barrier is not None:
            waits_on[n].add(barrier)
        if n.name in barriers:  # after every node since the last barrier
            waits_on[n].update(since)
            barrier, since = n, []
        else:
            since.append(n)
    users = {n: [] for n in nodes}
    for n, inputs in waits_on.items():
        for i in inputs:
            users[i].append(n)
    waiting = {n: len(inputs) for n, inputs in waits_on.items()}
    ready = [(rank[n], i, n) for i, n in enumerate(nodes) if waiting[n] == 0]
    heapq.heapify(ready)
    index = {n: i for i, n in enumerate(nodes)}
    graph, env = torch.fx.Graph(), {}
    while ready:
        _, _, n = heapq.heappop(ready)
        env[n] = graph.node_copy(n, lambda x: env[x])
        for user in users[n]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (rank[user], index[user], user))
    assert len(env) == len(nodes), "the order's barriers made a cycle"
    graph_module.graph = graph
    graph_module.recompile()
