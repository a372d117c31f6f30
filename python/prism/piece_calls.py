"""A piece prism compiled, as the module the partitioned graph calls: its first call at new sizes
checks prism's kernel against the graph's own ops and races them in the caller's process; later
calls go straight to the winner (docs/python.md, "The race" and "A call's cost").
"""
from . import effects
from .agreement import computes_16_bit, disagreement
from .errors import ConnectionLost, PrismError, UnsupportedOp, as_bug, warn_once


_RACE_WARMUP = 4  # untimed calls of each first: the first few run slower (docs/python.md, "The race")
_RACE_ROUND_S = 2e-4  # a round calls each enough times to take about this long


def race(prism_call, torch_call, rounds=7):
    """Seconds per call of `prism_call` and of `torch_call`, warm (each called _RACE_WARMUP times
    first, alternated): the medians of `rounds` rounds, alternated so that load which comes and
    goes falls on both, each round a batch of calls of about _RACE_ROUND_S (a call of 20 µs timed
    alone is mostly its caches' state)."""
    import math
    import statistics
    import time

    calls = (prism_call, torch_call)
    warm = [0.0, 0.0]  # each one's last warm-up call
    for _ in range(_RACE_WARMUP):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            call()
            warm[i] = time.perf_counter() - start
    batch = max(1, min(32, math.ceil(_RACE_ROUND_S / max(max(warm), 1e-7))))
    times = ([], [])
    for _ in range(rounds):
        for spent, call in zip(times, calls):
            start = time.perf_counter()
            for _ in range(batch):
                call()
            spent.append((time.perf_counter() - start) / batch)
    return statistics.median(times[0]), statistics.median(times[1])


def functional(part):
    """`part` with its in-place operators made out-of-place, as prism's program computes them: the
    importer takes `a += b` (or `f(a, inplace=True)`) only where no other node can read `a`
    (effects.writes_visibly), so no one sees the difference, but `a` may be an input of the
    piece, which the race and the first call's check run more than once (Falcon's `mlp_output +=
    attention_output` under autocast added the attention again at each)."""
    changed = False
    for n in part.graph.nodes:
        changed |= effects.make_out_of_place(n)
    if changed:
        part.recompile()
    return part


def partition_module(name, compiled, rows, fallback):
    """An nn.Module (what a GraphModule's call_module needs) that calls `compiled`, its tensors
    folded into rows and back where `rows` (rows.fold_rows) says. Where prism fails at a call's
    sizes (no fused kernel passed its check or beat the ops one by one, the tune finds the
    program's own reference overflowing on its inputs, the daemon went away), `fallback`, the piece
    as the graph wrote it, computes them, and a warning says why. So it does where, at the first
    call at new sizes, PyTorch's own ops ran the piece faster in this process (race): the tuner
    times prism's kernels against prism's eager plan, not against the kernels the user had.
    What the first call with a signature decided, later ones do at once (docs/python.md, "A
    call's cost")."""
    import torch

    unseen = object()

    def arguments(args):  # the program's tensors, as the call gives them: rows are views of them
        return compiled.program.arguments(compiled._module, *args)

    class PrismPartition(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.compiled, self.fallback = compiled, fallback
            self.calls = {}  # a signature's Call, or None where PyTorch's ops run it

        def forward(self, *args):
            # dynamo's guards hold each input's dtype and device; its shapes vary where a dim is
            # dynamic, the values of its size arguments with them.
            signature = tuple([a.shape if isinstance(a, torch.Tensor) else a for a in args])
            call = self.calls.get(signature, unseen)
            if call is unseen:
                call = self.calls[signature] = self.first_call(args)
            if call is not None:
                try:
                    return call(arguments(args))
                except Exception as error:  # noqa: BLE001 -- PyTorch computes what prism cannot
                    self.calls[signature] = self.refused(error)
            return self.fallback(*args)

        def first_call(self, args):
            """The Call for `args`' signature, or None where PyTorch's ops run them."""
            try:
                call = compiled.call_for(*(rows.arguments(args) if rows is not None else args))
                if rows is not None:
                    call = call.reshaped(rows.output_shapes(args, [shape for shape, _ in call.outputs]))
                why = disagreement(call(arguments(args)), self.fallback(*args), computes_16_bit(compiled.program.text, args))
                if why:
                    warn_once(f"prism: {name} stays PyTorch's at {shapes_text(args)}: on this call's inputs {why}; "
                              "a bug: please report it")
                    return None
                ours, theirs = race(lambda: call(arguments(args)), lambda: self.fallback(*args))
            except Exception as error:  # noqa: BLE001 -- PyTorch computes what prism cannot
                return self.refused(error)
            if theirs < ours:
                warn_once(f"prism: {name} stays PyTorch's at {shapes_text(args)}: its own ops ran it in "
                          f"{theirs * 1e3:.3f} ms in this process, prism's tuned kernel in {ours * 1e3:.3f} ms")
                return None
            return call

        # Called by the GraphModule only: no hooks to run, so not through nn.Module's __call__,
        # which costs microseconds a call (docs/python.md, "A call's cost").
        __call__ = forward

        def refused(self, error):
            known = isinstance(error, (PrismError, ConnectionLost, UnsupportedOp))
            why = error if known else f"prism failed ({as_bug(error)})"
            warn_once(f"prism: {name} stays PyTorch's at these sizes: {why}")
            return None  # the Call kept for these sizes: PyTorch's ops run them

    return PrismPartition()


def shapes_text(args):
    return ", ".join("x".join(str(d) for d in a.shape) if hasattr(a, "shape") else str(a) for a in args)
