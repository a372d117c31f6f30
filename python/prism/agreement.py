"""Whether a piece's kernel and the graph's own ops agree on a call's real inputs: torch_backend
asks it once per piece and sizes, at the first call, before the race (docs/python.md, "The first
call's check"). The tuner proved the program and checked its kernel against the interpreter;
this checks what neither saw: that the program is what the graph computes, on the user's inputs.

disagreement(got, want) is None where they agree, else why not in words: another structure,
shape or dtype; NaN or an infinity where the graph's ops are finite; or a value farther than
the allowance from theirs, relative to their largest. A kernel may be finite where the graph's
ops are not (a softmax of a row masked whole): those elements are not compared.
"""

# Relative to the output's largest finite magnitude. f32 kernels differ from PyTorch's ops by
# their order of summation (about 1e-6 at these sizes); a 16-bit output, or one computed from
# 16-bit values, by the roundings prism's f32 intermediates skip (docs/tuning.md, "Rounding
# 16-bit values otherwise"). Both allowances leave room for that and catch a wrong program.
ALLOWED = {32: 1e-3, 16: 2.0 ** -4}


def disagreement(got, want, computes_16_bit=False):
    """Why `got` (prism's) and `want` (the graph's ops', a tensor or a tuple of them) differ, or
    None. `computes_16_bit`: whether the piece reads or computes 16-bit values (autocast's casts)."""
    gots, wants = _as_tuple(got), _as_tuple(want)
    if len(gots) != len(wants):
        return f"prism's kernel gave {len(gots)} outputs, the graph's ops {len(wants)}"
    for index, (g, w) in enumerate(zip(gots, wants)):
        why = _output_disagreement(g, w, computes_16_bit)
        if why:
            return f"output {index}: {why}" if len(gots) > 1 else why
    return None


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _output_disagreement(got, want, computes_16_bit):
    import torch

    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        return None if type(got) is type(want) else f"prism gave a {type(got).__name__}, the graph a {type(want).__name__}"
    if got.shape != want.shape or got.dtype != want.dtype:
        return (f"prism's kernel gave {list(got.shape)} {got.dtype}, the graph's ops {list(want.shape)} "
                f"{want.dtype}")
    if not want.is_floating_point() or want.numel() == 0:
        return None if torch.equal(got, want) else "prism's kernel gave other values"
    g, w = got.float(), want.float()
    finite = torch.isfinite(w)
    if bool((finite & ~torch.isfinite(g)).any()):
        return "prism's kernel gave NaN or an infinity where the graph's ops are finite"
    if not bool(finite.any()):
        return None
    scale = float(w[finite].abs().max())
    error = float((g - w)[finite].abs().max())
    bits = 16 if computes_16_bit else torch.finfo(want.dtype).bits
    allowed = ALLOWED[32 if bits >= 32 else 16] * max(scale, torch.finfo(torch.float32).tiny)
    if error > allowed:
        return f"prism's kernel is {error:.3g} from the graph's ops, {error / max(scale, 1e-30):.2g} of their largest"
    return None
