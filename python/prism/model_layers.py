"""prism.model_manifest: a whole PyTorch model as a batch manifest of its distinct layers
(docs/python.md, "A whole model"). One forward pass on an example records what each submodule is
called with (its positional and keyword arguments); the layers are the largest submodules below
the model that from_torch imports (a module it cannot import is split into its children, a leaf
it cannot import is left out with the reason); layers whose programs are the same text (a
model's repeated decoder blocks) are one program; the token axis becomes the dim `n`, tuned at
each count of `tokens`.
"""
import inspect
import re

from .batch import write_manifest


class ModelLayers:
    """What model_manifest found: `programs`, a list of (Imported, [qualified module names it
    stands for]); `skipped`, a list of (qualified module name, why) for the modules left out;
    `split`, the same for the modules imported as their children instead of whole (a decoder
    layer whose attention did not import, and why); `manifest`, the manifest written (a dict)."""

    def __init__(self, programs, skipped, manifest, split=()):
        self.programs, self.skipped, self.manifest, self.split = programs, skipped, manifest, list(split)


def _recorded_calls(model, example_inputs, example_kwargs):
    """{module: (positional args, keyword args) of its first call} over one forward pass of `model`."""
    import torch

    calls, hooks = {}, []

    def record(module, args, kwargs):
        calls.setdefault(module, (tuple(args), dict(kwargs)))

    for _, module in model.named_modules():
        hooks.append(module.register_forward_pre_hook(record, with_kwargs=True))
    try:
        with torch.no_grad():
            model(*example_inputs, **example_kwargs)
    finally:
        for hook in hooks:
            hook.remove()
    return calls


def _token_dims(module, args, kwargs, token_count):
    """from_torch's dims for `module` called with `args` and `kwargs`: every axis of a tensor
    argument whose size is `token_count` is the dim n (an argument's tuple of tensors, a decoder's
    rotary tables, numbered as from_torch names them: `position_embeddings_0`)."""
    import torch

    names = [p.name for p in inspect.signature(module.forward).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def leaves(name, value):
        return [(f"{name}_{i}", v) for i, v in enumerate(value)] if isinstance(value, (tuple, list)) else [(name, value)]

    dims = {}
    for name, value in [leaf for pair in list(zip(names, args)) + list(kwargs.items()) for leaf in leaves(*pair)]:
        if isinstance(value, torch.Tensor):
            axes = {axis: "n" for axis, size in enumerate(value.shape) if size == token_count}
            if axes:
                dims[name] = axes
    return dims


def _program_name(module, taken):
    """A program name from the module's class ("LlamaMLPBlock" -> "llama_mlp_block"), with a
    number where another program has it."""
    base = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", type(module).__name__).lower()
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def _without_name(text):
    """The program's text with its name left out, to compare two layers' programs."""
    return re.sub(r"^program \w+", "program", text, count=1)


def model_layers(model, example_inputs, token_count, example_kwargs=None):
    """The distinct layers of `model` as (programs, skipped, split) (see ModelLayers), from one
    forward pass on `example_inputs` (a tensor or a tuple of them) and `example_kwargs`."""
    from .fx_import import from_torch

    example_inputs = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    calls = _recorded_calls(model, example_inputs, example_kwargs or {})
    programs, by_text, skipped, split = [], {}, [], []

    def descend(qualified, module):
        for name, child in module.named_children():
            visit(f"{qualified}.{name}" if qualified else name, child)

    def visit(qualified, module):
        if module not in calls:  # a container (nn.ModuleList) or a module this input never reaches
            descend(qualified, module)
            return
        args, kwargs = calls[module]
        try:  # a module called with keywords (a decoder's layers and attention) is captured by dynamo
            imported = from_torch(module, args, dims=_token_dims(module, args, kwargs, token_count),
                                  name=_program_name(module, {p.name for p, _ in programs}), example_kwargs=kwargs or None)
        except Exception as e:  # noqa: BLE001 - UnsupportedOp, or a module torch.fx cannot trace: split it
            why = (qualified, f"{type(e).__name__}: {e}".splitlines()[0])
            (split if list(module.children()) else skipped).append(why)
            descend(qualified, module)
            return
        key = _without_name(imported.text)
        if key in by_text:
            by_text[key][1].append(qualified)
        else:
            by_text[key] = (imported, [qualified])
            programs.append(by_text[key])

    descend("", model)
    return programs, skipped, split


def model_manifest(path, model, example_inputs, tokens, token_count=None, targets=("cpu",), top=None,
                   example_kwargs=None):
    """Writes a batch manifest at `path` (docs/tuning.md, "Batches") for the distinct layers of
    `model` called with `example_inputs` and `example_kwargs` (a transformers model's
    `attention_mask`, `use_cache=False`), each program's source as NAME.prism beside it, each
    tuned at n = every count of `tokens` (a layer without a token axis at its sizes alone).
    `token_count` is the example's number of tokens (default: the first input's first axis):
    pick one no other size of the model equals. Returns a ModelLayers. Raises ValueError when no
    layer imports."""
    if token_count is None:
        first = example_inputs[0] if isinstance(example_inputs, (list, tuple)) else example_inputs
        token_count = first.shape[0]
    programs, skipped, split = model_layers(model, example_inputs, token_count, example_kwargs)
    if not programs:
        raise ValueError("no layer of the model imports: " + "; ".join(f"{name}: {why}" for name, why in split + skipped))
    entries = []
    for imported, _ in programs:
        has_tokens = re.search(r"\[[^\]]*\bn\b", imported.text.split("{", 1)[0]) is not None
        entries.append((imported, [{"n": t} for t in tokens] if has_tokens else [{}]))
    manifest = write_manifest(path, entries, targets=targets, top=top)
    return ModelLayers(programs, skipped, manifest, split)
