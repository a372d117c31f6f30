"""prism.compile: a PyTorch function or module as a callable that runs prism's tuned kernel.

The module is imported (from_torch), opened in prismd and searched once; at each new set of sizes
it is called with, the program is tuned on the target (or answered by the tuning DB) and the
best kernel's library (kernel/library) is loaded into this process, once checked as the daemon
checks its own (checked_files.py), and called on the tensors' memory (docs/python.md,
"prism.compile").
"""
import ast
import ctypes
import functools
import hashlib
import itertools
import math
import operator
import os
import threading
import warnings

from .agreement import computes_16_bit, disagreement
from .checked_files import load_library, read_checked_bytes
from .client import Client, find_prism_binary
from .errors import ConnectionLost, NoFusedKernel, OutOfBoundsWrite, PrismError
from .fx_import import MADE_AT_CALL, from_torch
from .graph_rewrites import causal_mask_sized

_REFERENCE_RUNS = "the module runs"  # a signature's Call where the kernel disagreed with the module
_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
_COMPILED = itertools.count(1)
# One lock per loaded library: the same library loaded twice (two callables of one program) is one
# handle whose tensor table and scratch both share.
_LIBRARY_LOCKS = {}
_LIBRARY_LOCKS_LOCK = threading.Lock()


def _library_lock(lib):
    with _LIBRARY_LOCKS_LOCK:
        return _LIBRARY_LOCKS.setdefault(lib._handle, threading.Lock())


class _CpuLibrary:
    """A kernel library with the C ABI of engine/backend/cpu/abi.h, called on host memory; loaded
    only when its directory, the file and its seal pass checked_files' checks."""

    def __init__(self, path, threads):
        self._lib = load_library(path)
        self._entry = self._lib.prism_entry
        self._entry.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        self._entry.restype = ctypes.c_int
        self._error = self._lib.prism_error
        self._error.restype = ctypes.c_char_p
        self._threads = threads
        # The library keeps its tensor table and scratch between calls: one call at a time, over
        # every Kernel that loaded the same library.
        self._lock = _library_lock(self._lib)

    def run(self, ins, outs, device):
        with self._lock:
            if self._entry(ins, outs, self._threads) != 0:
                raise PrismError(None, f"the kernel failed: {self._error().decode()}")


@functools.lru_cache(maxsize=None)
def _plan_library():
    """libprism_cuda_plan (cuda_plan/plan_library.h): $PRISM_CUDA_PLAN_LIBRARY, else build/lib
    beside the prism binary."""
    path = os.environ.get("PRISM_CUDA_PLAN_LIBRARY") or os.path.join(
        os.path.dirname(os.path.realpath(find_prism_binary())), "..", "lib", "libprism_cuda_plan.so")
    lib = ctypes.CDLL(path)
    lib.prism_plan_load.argtypes, lib.prism_plan_load.restype = [ctypes.c_char_p], ctypes.c_void_p
    lib.prism_plan_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.c_void_p]
    lib.prism_plan_run.restype = ctypes.c_int
    lib.prism_plan_free.argtypes = [ctypes.c_void_p]
    lib.prism_plan_error.restype = ctypes.c_char_p
    return lib


class _CudaPlan:
    """A tuned CUDA plan run by libprism_cuda_plan on the tensors' device pointers, on the current
    stream of their device; read only when its directory, the file and its seal pass
    checked_files' checks."""

    def __init__(self, path, threads=None):
        self._lib = _plan_library()
        try:
            text = read_checked_bytes(path)
        except PrismError as e:
            raise PrismError(None, f"cannot load the CUDA plan {path}: {e}") from None
        self._plan = self._lib.prism_plan_load(text)
        if not self._plan:
            raise PrismError(None, f"cannot load the CUDA plan {path}: {self._lib.prism_plan_error().decode()}")

    def run(self, ins, outs, device):
        import torch

        stream = torch.cuda.current_stream(device).cuda_stream
        if self._lib.prism_plan_run(self._plan, ins, outs, ctypes.c_void_p(stream)) != 0:
            raise PrismError(None, f"the CUDA plan failed: {self._lib.prism_plan_error().decode()}")

    def __del__(self):
        if getattr(self, "_plan", None):
            self._lib.prism_plan_free(self._plan)


# How a library is loaded, by the runtime its backend names (Backend::Presentation, engine/backend/backend.h).
_RUNTIMES = {"c-abi": _CpuLibrary, "cuda-plan": _CudaPlan}


def _target_of(client, name):
    """The daemon's description of target `name` (daemon/status: its machine's words, the torch
    device its tensors are on, the runtime of its libraries); ValueError naming the targets there
    are when none has the name."""
    targets = client.status()["targets"]
    for target in targets:
        if target["name"] == name:
            return target
    names = [repr(t["name"]) for t in targets]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    raise ValueError(f"prism.compile's targets are {listed}, not {name!r}")


class Kernel:
    """One tuned kernel loaded from its library: `bindings`, `candidate`, `summary`, `tune` (the
    tune/run result: its table, speedup and roofline), `library` (the file: a shared object on the
    CPU, a plan on the GPU) and `eager` (True: the eager plan, which beat every family the tune
    timed or alone passed its check; `candidate` is then 0)."""

    def __init__(self, answer, tune):
        self.bindings = answer["bindings"]
        self.eager = answer.get("eager", False)
        self.candidate = answer["candidate"]
        self.summary = answer["summary"]
        self.library = answer["library"]
        self.tune = tune
        self.threads = tune["threads"]
        runtime = answer.get("runtime", "")
        if runtime not in _RUNTIMES:
            raise PrismError(None, f"the {answer['target']} target's libraries ({runtime or 'none'}) cannot be loaded "
                                   f"by this package (it loads {', '.join(sorted(_RUNTIMES))})")
        self._runner = _RUNTIMES[runtime](self.library, self.threads)

    def run(self, inputs, outputs, device=None):
        """Calls the kernel on contiguous tensors at the program's dtypes, on the target's device
        (`device`, else the first input's; the GIL is released)."""
        ins = _pointers(len(inputs))(*[t.data_ptr() for t in inputs])
        outs = _pointers(len(outputs))(*[t.data_ptr() for t in outputs])
        self._runner.run(ins, outs, device or (inputs[0].device if inputs else None))


class Call:
    """A call with tensors of one signature (their shapes, dtypes and devices), worked out at the
    first such call (Compiled.call_for): `call(tensors)` takes the program's input tensors, makes
    them contiguous, allocates the outputs and runs `kernel` on their memory. Nothing is checked
    again: the signature was (docs/python.md, "A call's cost"). The first call checks that the
    kernel wrote nothing past its outputs (a kernel's writes depend on its sizes alone): it raises
    OutOfBoundsWrite where one did, with the heap left as it was."""

    CANARY = -12345.0  # what follows each output at the first call: exact in f32, f16 and bf16

    def __init__(self, kernel, outputs, device, returns_tuple):
        import torch

        self.kernel, self.outputs, self.device, self.returns_tuple = kernel, outputs, device, returns_tuple
        self._empty = torch.empty
        self._checked = False

    def reshaped(self, shapes):
        """The same call with its outputs made in `shapes`, as many elements each (a view of the
        same memory, as torch_backend's rows are); ValueError where one has not: the kernel would
        write past it."""
        for shape, (made, _) in zip(shapes, self.outputs):
            if math.prod(shape) != math.prod(made):
                raise ValueError(f"an output of {math.prod(made)} elements {list(made)} given as {list(shape)}")
        return Call(self.kernel, [(tuple(shape), dtype) for shape, (_, dtype) in zip(shapes, self.outputs)], self.device,
                    self.returns_tuple)

    def __call__(self, tensors):
        if not self._checked:
            return self._first(tensors)
        inputs = [t.contiguous() for t in tensors]  # kept alive until the kernel returns
        empty, device = self._empty, self.device
        outputs = [empty(shape, dtype=dtype, device=device) for shape, dtype in self.outputs]
        self.kernel.run(inputs, outputs, device)
        return tuple(outputs) if self.returns_tuple else outputs[0]

    def _first(self, tensors):
        """The call, each output followed by as many elements again holding CANARY, checked after."""
        import torch

        inputs = [t.contiguous() for t in tensors]
        made = [(torch.full((2 * max(1, math.prod(shape)),), self.CANARY, dtype=dtype, device=self.device), shape)
                for shape, dtype in self.outputs]
        outputs = [whole[:math.prod(shape)].view(shape) for whole, shape in made]
        self.kernel.run(inputs, outputs, self.device)
        for index, (whole, shape) in enumerate(made):
            past = whole[math.prod(shape):]
            if not bool((past == self.CANARY).all()):
                raise OutOfBoundsWrite(f"the kernel wrote past its output {index} ({list(shape)}, {whole.dtype}): "
                                       f"{int((past != self.CANARY).sum())} of the {past.numel()} elements after it")
        self._checked = True
        return tuple(outputs) if self.returns_tuple else outputs[0]


@functools.lru_cache(maxsize=None)
def _pointers(count):
    """The ctypes array type of `count` pointers (made once: making it takes microseconds)."""
    return ctypes.c_void_p * count


class Compiled:
    """What prism.compile returns: call it as the module (`compiled(x)`). `program` is the imported
    program (its `.text`), `search` the search's answer (verified families), `kernels` the loaded
    kernels by sizes ({"n": 8} as a sorted tuple of items)."""

    def __init__(self, fn_or_module, example_inputs, target="cpu", dims=None, name=None, client=None, top=None,
                 progress=None, imported=None, eager_plan=True, example_kwargs=None, search_budget=None):
        import torch

        # `imported`: the program already written (torch_backend's partitions, from_graph).
        self.program = _named_by_content(imported or from_torch(fn_or_module, example_inputs, dims=dims, name=name,
                                                                example_kwargs=example_kwargs))
        self._module = fn_or_module if isinstance(fn_or_module, torch.nn.Module) else self.program.module
        self._reference = fn_or_module  # what a new signature's first call is compared with
        self.target, self.top, self.progress = target, top, progress
        self.search_budget = search_budget  # seconds, or None: the daemon's default
        # False: where no fused kernel wins, NoFusedKernel, not the eager plan (torch_backend runs
        # the graph's own ops there).
        self.eager_plan = eager_plan
        self._uri = f"untitled:prism-compile-{os.getpid()}-{next(_COMPILED)}-{self.program.name}"
        self._client = client
        self._own_client = client is None
        self._lock = threading.Lock()
        self.kernels = {}
        # The Call worked out for each signature (_signature) a call's tensors had: a call with
        # one seen before does no more than the Call.
        self._calls = {}
        self._made = {}  # signature -> {input index: the tensor the call makes for it} (a causal mask)
        self._makes = any(kind == "causal" for _, _, kind in self.program.inputs)
        self._prepare()

    # ---- the daemon's side ----------------------------------------------------------------

    def _prepare(self):
        """Opens and searches the program, on a fresh connection when the last one was lost."""
        if self._client is None:
            self._client = Client()
        self._target = _target_of(self._client, self.target)
        self._client.open(text=self.program.text, uri=self._uri)
        budget = {} if self.search_budget is None else {"budget_seconds": self.search_budget}
        self.search = self._client.search(self.program.name, progress=self.progress, **budget)
        if self.search["candidates"] == 0:
            why = self.search.get("stats", {}).get("emptyReason") or "no reason given"
            raise PrismError(None, f"the search found no verified family for '{self.program.name}': {why}\n"
                                   f"the program:\n{self.program.text}")
        shown = self._client.show(self.program.name)
        self._inputs, self._outputs = shown["inputs"], shown["outputs"]
        for value in self._inputs + self._outputs:  # sizes as numbers, dims as names
            value["shape"] = [int(d) if str(d).isdigit() else d for d in value["shape"]]

    def _ask(self, work):
        """`work(client)`; once more on a new connection (and daemon) when prismd went away."""
        try:
            return work(self._client)
        except ConnectionLost:
            if not self._own_client:
                raise
            self._client = None
            self._prepare()
            return work(self._client)

    def _kernel(self, bindings):
        key = tuple(sorted(bindings.items()))
        with self._lock:
            kernel = self.kernels.get(key)
            if kernel is None:
                def tune_and_load(client):
                    tuned = client.tune(self.program.name, bindings, target=self.target, top=self.top,
                                        progress=self.progress)
                    # The eager plan was checked and timed beside the families: where it won, or
                    # was alone in passing its check, it runs.
                    passed = tuned["best"] is not None
                    if not passed and not tuned["baselineMs"] > 0:
                        raise PrismError(None, f"no kernel of '{self.program.name}' passed its check at "
                                               f"{_sizes(bindings)} on {self._target['machine']}; see `tune` in the REPL")
                    eager = not passed or 0 < tuned["speedup"] < 1
                    if eager and not self.eager_plan:
                        raise NoFusedKernel(_no_fused_kernel(self.program.name, bindings, self._target["machine"], tuned))
                    if not passed:
                        warnings.warn(f"no fused kernel for '{self.program.name}' at {_sizes(bindings)} passed its "
                                      f"check on {self._target['machine']}: the eager plan runs", RuntimeWarning, stacklevel=4)
                    elif eager:
                        warnings.warn(f"no fused kernel for '{self.program.name}' at {_sizes(bindings)} beat prism's "
                                      f"eager plan on {self._target['machine']} (the best ran at {tuned['speedup']:.2f}x its "
                                      "speed): the eager plan runs", RuntimeWarning, stacklevel=4)
                    answer = client.library(self.program.name, bindings=bindings, target=self.target, eager=eager or None)
                    return Kernel(answer, tuned)
                kernel = self.kernels[key] = self._ask(tune_and_load)
            return kernel

    # ---- a call ---------------------------------------------------------------------------

    def _bind(self, tensors):
        """The dims' values from the tensors' shapes, after checking device, dtype and rank."""
        import torch

        bindings, device, sized = {}, None, []
        for declared, tensor in zip(self._inputs, tensors):
            name = declared["name"]
            if tensor is MADE_AT_CALL:  # sized by the other inputs' dims
                continue
            if not isinstance(tensor, torch.Tensor):
                raise TypeError(f"{self.program.name}: input '{name}' is a {type(tensor).__name__}, not a tensor")
            if tensor.device.type != self._target["device"]:
                raise ValueError(f"{self.program.name}: input '{name}' is on {tensor.device}; this callable runs "
                                 f"on {self._target['machine']}")
            if device is not None and tensor.device != device:
                raise ValueError(f"{self.program.name}: input '{name}' is on {tensor.device}, an earlier one on {device}")
            device = tensor.device
            want = getattr(torch, _TORCH_DTYPES[declared["dtype"]])
            if tensor.dtype != want:
                raise TypeError(f"{self.program.name}: input '{name}' is {tensor.dtype}, the program takes {want}")
            shape = declared["shape"]
            if tensor.dim() != len(shape):
                raise ValueError(f"{self.program.name}: input '{name}' has {tensor.dim()} dims, the program takes "
                                 f"{len(shape)} ({_shape(shape)})")
            for axis, (size, dim) in enumerate(zip(tensor.shape, shape)):
                if isinstance(dim, int):
                    if size != dim:
                        raise ValueError(f"{self.program.name}: input '{name}' has size {size} on axis {axis}, "
                                         f"the program takes {dim} ({_shape(shape)}); name it in dims= to vary it")
                elif not dim.isidentifier():
                    sized.append((dim, size, name, axis))
                elif bindings.setdefault(dim, size) != size:
                    raise ValueError(f"{self.program.name}: dim '{dim}' is {bindings[dim]} by an earlier input "
                                     f"but {size} by '{name}' (axis {axis})")
        for dim, size, name, axis in _solved_first(sized, bindings):
            if size_of(dim, bindings) != size:
                raise ValueError(f"{self.program.name}: input '{name}' has size {size} on axis {axis}, but "
                                 f"{dim} is {size_of(dim, bindings)} by the other inputs")
        return bindings

    def __call__(self, *args, **kwargs):
        tensors = self.program.arguments(self._module, *args, **kwargs)
        signature = _signature(tensors)
        call = self._calls.get(signature)
        if call is None:
            return self._first_call(args, kwargs, tensors, signature)
        if call is _REFERENCE_RUNS:
            return self._reference(*args, **kwargs)
        calling = self.program.calling
        outputs = call(self._made_filled(tensors, signature))
        return outputs if calling is None else calling.result(outputs)

    def _first_call(self, args, kwargs, tensors, signature):
        """A call with a signature not seen before: the kernel's outputs, compared with the
        module's own on these inputs (agreement.py); where they disagree, the module's, with a
        RuntimeWarning that calls it a bug, and the module runs at these sizes from then on
        (docs/python.md, "prism.compile", "Checks")."""
        import torch

        got = self._work_out(tensors, signature)(self._made_filled(tensors, signature))
        with torch.no_grad():  # on copies: a module that writes into its inputs must not here
            copies = torch.utils._pytree.tree_map(lambda a: a.clone() if isinstance(a, torch.Tensor) else a, (args, kwargs))
            want = self._reference(*copies[0], **copies[1])
        calling = self.program.calling
        compared = want if calling is None else calling.program_outputs(want)
        why = disagreement(got, compared, computes_16_bit(self.program.text, tensors), "the module")
        if why is None:
            return got if calling is None else calling.result(got)
        warnings.warn(f"'{self.program.name}' at {_sizes(self._bind(tensors))}: on this call's inputs {why}; the module "
                      "runs at these sizes (a bug: please report it)", RuntimeWarning, stacklevel=3)
        self._calls[signature] = _REFERENCE_RUNS
        return want

    def call_for(self, *args):
        """The Call that runs `args` as this callable would (checked, and tuned at new sizes, at
        the first call with their signature): torch_backend keeps it for its own calls."""
        return self._call_of(self.program.arguments(self._module, *args))

    def _call_of(self, tensors):
        """The Call for the tensors' signature: the one worked out before, else one worked out now."""
        signature = _signature(tensors)
        return self._calls.get(signature) or self._work_out(tensors, signature)

    def _work_out(self, tensors, signature):
        """The Call for `signature`, after checking the tensors and sizing the outputs."""
        import torch

        bindings = self._bind(tensors)
        outputs = [(tuple(size_of(d, bindings) for d in o["shape"]), getattr(torch, _TORCH_DTYPES[o["dtype"]]))
                   for o in self._outputs]
        device = next((t.device for t in tensors if t is not MADE_AT_CALL), None)
        self._made[signature] = {i: causal_mask_sized(tuple(size_of(d, bindings) for d in declared["shape"]),
                                                      getattr(torch, _TORCH_DTYPES[declared["dtype"]]), device)
                                 for i, (declared, t) in enumerate(zip(self._inputs, tensors)) if t is MADE_AT_CALL}
        call = self._calls[signature] = Call(self._kernel(bindings), outputs, device, self.program.returns_tuple)
        return call

    def _made_filled(self, tensors, signature):
        """The tensors with each input the call makes (a causal mask) in its place."""
        if not self._makes:  # most programs: nothing to look up on a call's hot path
            return tensors
        made = self._made[signature]
        return [made[i] if i in made else t for i, t in enumerate(tensors)]

    def close(self):
        """Closes the connection to prismd (a client given to compile stays open); loaded kernels
        keep working."""
        if self._own_client and self._client is not None:
            self._client.close()
            self._client = None


def _signature(tensors):
    """What a Call is worked out for: each tensor's shape, dtype and device (another value's type:
    _bind refuses it)."""
    return tuple([(t.shape, t.dtype, t.device) if hasattr(t, "data_ptr") else type(t) for t in tensors])


def _no_fused_kernel(name, bindings, machine, tuned):
    """Why a tune left no fused kernel to run, in words."""
    if tuned["best"] is not None:
        return (f"no fused kernel for '{name}' at {_sizes(bindings)} beat the same ops run one by one on {machine} "
                f"(the best ran at {tuned['speedup']:.2f}x their speed)")
    if tuned.get("stats", {}).get("instantiations", 1) == 0:
        return (f"no family of '{name}' can be instantiated at {_sizes(bindings)} on {machine}: every one splits "
                "a dim into tiles that must divide it, or needs more fast memory per block there")
    return f"no fused kernel for '{name}' at {_sizes(bindings)} passed its check on {machine}"


def _named_by_content(program):
    """The program named after its text as well: the daemon keeps one program per name (the last
    opened), so two modules imported under one name would otherwise tune and run each other's
    kernels. The same text gets the same name, so the tuning DB still answers it across runs."""
    digest = hashlib.sha256(program.text.replace(f"program {program.name}(", "program (", 1).encode()).hexdigest()[:8]
    name = f"{program.name}_{digest}"
    program.text = program.text.replace(f"program {program.name}(", f"program {name}(", 1)
    program.name = name
    return program


_SIZE_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
             ast.Div: operator.floordiv}


def size_of(dim, bindings):
    """An output's size: a number, a dim, or an expression of them (a cache's `s40+1`)."""
    if isinstance(dim, int):
        return dim

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return bindings[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _SIZE_OPS:
            return _SIZE_OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"the size {dim!r} is no arithmetic of dims")

    return value(ast.parse(str(dim), mode="eval").body)


def _solved_first(sized, bindings):
    """`sized` (an input's size expression, its size, ...), after binding in `bindings` each dim
    that only such expressions name (an input of `2 * s` rows): from an expression that is linear in
    its one unbound dim. The caller checks every expression against its size."""
    def unbound(dim):
        return {n.id for n in ast.walk(ast.parse(dim, mode="eval")) if isinstance(n, ast.Name)} - set(bindings)

    pending = [(dim, size) for dim, size, *_ in sized]
    while pending:
        pending = [(dim, size) for dim, size in pending if unbound(dim)]
        solvable = [(dim, size) for dim, size in pending if len(unbound(dim)) == 1]
        if not solvable and pending:
            names = sorted(set().union(*(unbound(dim) for dim, _ in pending)))
            raise ValueError(f"the inputs' sizes do not give dim{'s' * (len(names) > 1)} {', '.join(names)}")
        for dim, size in solvable[:1]:
            name = unbound(dim).pop()
            at_zero = size_of(dim, {**bindings, name: 0})
            slope = size_of(dim, {**bindings, name: 1}) - at_zero
            bindings[name] = (size - at_zero) // slope if slope else size  # the caller's check says where it is wrong
    return sized


def _sizes(bindings):
    return " ".join(f"{k}={v}" for k, v in sorted(bindings.items())) or "its sizes"


def _shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def compile(fn_or_module, example_inputs, target="cpu", dims=None, name=None, client=None, top=None, progress=None,
            example_kwargs=None, search_budget=None):
    """`fn_or_module` as a callable on torch tensors that runs prism's best tuned kernel: imported
    (from_torch, with `dims` symbolic and `name`; a module called with keyword arguments, given
    them as `example_kwargs`, is captured by dynamo), searched now (for `search_budget` seconds,
    default the daemon's), tuned on the first call at each new set of sizes (or answered by the
    tuning DB) with `top` families timed. `progress` gets each $/progress value. Forward only:
    results carry no gradient. Returns a Compiled."""
    return Compiled(fn_or_module, example_inputs, target=target, dims=dims, name=name, client=client, top=top,
                    progress=progress, example_kwargs=example_kwargs, search_budget=search_budget)
