"""What a piece's first call at new sizes checks before prism's kernel serves it (docs/python.md,
"The first call's check"): that the kernel wrote nothing past its outputs (compiled.Call) and
that it agrees with the graph's own ops on the call's inputs (agreement.py)."""
import ctypes

import pytest

torch = pytest.importorskip("torch")

from prism.agreement import disagreement  # noqa: E402
from prism.compiled import Call  # noqa: E402
from prism.errors import OutOfBoundsWrite  # noqa: E402


class Writes:
    """A kernel that writes its output's elements, and `past` more after them."""

    def __init__(self, past=0):
        self.past, self.runs = past, 0

    def run(self, inputs, outputs, device):
        self.runs += 1
        out = outputs[0]
        out.copy_(inputs[0].reshape(out.shape))
        if self.past:
            ctypes.memset(out.data_ptr() + out.numel() * out.element_size(), 0x7F, self.past * out.element_size())


def test_a_calls_first_run_gives_the_kernels_outputs():
    x = torch.randn(4, 6)
    call = Call(Writes(), [((4, 6), torch.float32)], None, False)
    assert torch.equal(call([x]), x) and torch.equal(call([x]), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_a_kernel_writing_past_its_output_is_caught_at_the_first_call(dtype):
    x = torch.randn(4, 6).to(dtype)
    call = Call(Writes(past=3), [((4, 6), dtype)], None, False)
    with pytest.raises(OutOfBoundsWrite, match=r"wrote past its output 0 \(\[4, 6\], torch\.\w+\): 3 of the 24"):
        call([x])


def test_outputs_given_other_shapes_must_keep_their_element_counts():
    call = Call(Writes(), [((2, 16, 8), torch.float32)], None, False)
    assert call.reshaped([(32, 8)]).outputs == [((32, 8), torch.float32)]
    with pytest.raises(ValueError, match=r"256 elements \[2, 16, 8\] given as \[2, 8, 8\]"):
        call.reshaped([(2, 8, 8)])


def test_outputs_that_agree_within_their_dtypes_rounding():
    want = torch.randn(8, 16) * 30
    assert disagreement(want + 1e-5, want) is None
    assert disagreement((want, want), (want, want.clone())) is None
    # prism keeps f32 where autocast's ops round to bf16: a bf16 roundoff apart is allowed there.
    rounded = want.bfloat16().float()
    assert disagreement(rounded, want) is not None
    assert disagreement(rounded, want, computes_16_bit=True) is None


def test_outputs_that_disagree_say_how():
    want = torch.randn(2, 8, 8)
    assert "[2, 16, 8]" in disagreement(torch.randn(2, 16, 8), want)
    assert "torch.bfloat16" in disagreement(want.bfloat16(), want)
    assert "of the largest" in disagreement(want + 0.5, want)
    assert "output 1" in disagreement((want, want + 1), (want, want))
    nan = want.clone()
    nan[0, 0, 0] = float("nan")
    assert "NaN or an infinity where the graph's ops gave finite values" in disagreement(nan, want)


def test_elements_the_graphs_ops_leave_non_finite_are_not_compared():
    # A softmax of a row masked whole: NaN in PyTorch's ops, 0 in prism's kernel.
    want = torch.softmax(torch.tensor([[float("-inf")] * 4, [1.0, 2.0, 3.0, 4.0]]), dim=-1)
    got = torch.nan_to_num(want, nan=0.0)
    assert torch.isnan(want[0]).all() and disagreement(got, want) is None
