"""Whether a kernel and what it was imported from agree on a call's real inputs: torch_backend
asks it of a piece and the graph's own ops once per sizes, at the first call, before the race
(docs/python.md, "The first call's check"); prism.compile of its kernel and the module, at the
first call at each new sizes. The tuner proved the program and checked its kernel against the
interpreter; this checks what neither saw: that the program is what PyTorch computes, on the
user's inputs.

disagreement(got, want) is None where they agree, else why not in words: another structure,
shape or dtype; NaN or an infinity where the reference is finite; or a value farther than
the allowance from the reference's, relative to its largest. A kernel may be finite where the
reference is not (a softmax of a row masked whole): those elements are not compared.
"""
import re

# Relative to the output's largest finite magnitude. f32 kernels differ from PyTorch's ops by
# their order of summation (about 1e-6 at these sizes); a 16-bit output, or one computed from
# 16-bit values, by the roundings prism's f32 intermediates skip (docs/tuning.md, "Rounding
# 16-bit values otherwise"). Both allowances leave room for that and catch a wrong program.
ALLOWED = {32: 1e-3, 16: 2.0 ** -4}


def disagreement(got, want, computes_16_bit=False, reference="the graph's ops"):
    """Why `got` (prism's) and `want` (`reference`'s, a tensor or a tuple of them) differ, or
    None. `computes_16_bit`: whether the piece reads or computes 16-bit values (autocast's casts)."""
    gots, wants = _as_tuple(got), _as_tuple(want)
    if len(gots) != len(wants):
        return f"prism's kernel gave {len(gots)} outputs, {reference} {len(wants)}"
    for index, (g, w) in enumerate(zip(gots, wants)):
        why = _output_disagreement(g, w, computes_16_bit, reference)
        if why:
            return f"output {index}: {why}" if len(gots) > 1 else why
    return None


def computes_16_bit(program_text, inputs):
    """Whether a program reads 16-bit tensors among `inputs` or casts to 16 bits (autocast's casts,
    written in)."""
    import torch

    sixteen = (torch.float16, torch.bfloat16)
    return any(getattr(a, "dtype", None) in sixteen for a in inputs) or bool(re.search(r"\bb?f16\(", program_text))


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _output_disagreement(got, want, computes_16_bit, reference):
    import torch

    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        return None if type(got) is type(want) else f"prism gave a {type(got).__name__}, {reference} a {type(want).__name__}"
    if got.shape != want.shape or got.dtype != want.dtype:
        return (f"prism's kernel gave {list(got.shape)} {got.dtype}, {reference} {list(want.shape)} "
                f"{want.dtype}")
    if not want.is_floating_point() or want.numel() == 0:
        return None if torch.equal(got, want) else "prism's kernel gave other values"
    g, w = got.float(), want.float()
    finite = torch.isfinite(w)
    if bool((finite & ~torch.isfinite(g)).any()):
        return f"prism's kernel gave NaN or an infinity where {reference} gave finite values"
    if not bool(finite.any()):
        return None
    scale = float(w[finite].abs().max())
    error = float((g - w)[finite].abs().max())
    bits = 16 if computes_16_bit else torch.finfo(want.dtype).bits
    allowed = ALLOWED[32 if bits >= 32 else 16] * max(scale, torch.finfo(torch.float32).tiny)
    if error > allowed:
        return f"prism's kernel is {error:.3g} from {reference}, {error / max(scale, 1e-30):.2g} of the largest"
    return None
