"""Complex intermediates: an fft/stft result used through abs, angle, real, imag, view_as_real and
complex arithmetic converts (a complex tensor is a real (..., 2) tensor inside the converter), run
against eager PyTorch via onnxruntime at several signal sizes. Complex values that would reach a
graph output or an op without a complex lowering are refused with a message saying what to do."""

import io

import pytest
import torch

from tests.optable import Case, Fn, params, run_case
from torchscript_onnx import SymbolicValueError, audit, export

OPSETS = (17, 20)  # DFT takes its axis as an input from 20
BATCH = {"input_names": ["x"], "dynamic_axes": {"x": [0]}}


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def positive(*shape):  # the DC bin lies on the positive real axis, so its angle is 0 whatever the sign of 0
    return lambda: (torch.rand(*shape) + 0.5,)


def spectral(name, fn, inputs, **kwargs):
    return Case(name, fn, inputs, min_opset=17, opsets=OPSETS, atol=1e-4, **kwargs)


def hann_stft(x, n_fft=16, hop=4):
    return torch.stft(x, n_fft, hop_length=hop, window=torch.hann_window(n_fft), return_complex=True)


CASES = [
    *[spectral(f"rfft_abs_{n}", lambda x: torch.fft.rfft(x).abs(), randn(3, n)) for n in (8, 15, 64)],
    spectral("rfft_abs_dynamic_batch", lambda x: torch.fft.rfft(x).abs(), randn(3, 20),
             export_options=BATCH, other_inputs=lambda: [(torch.randn(1, 20),), (torch.randn(6, 20),)]),
    spectral("rfft_abs_dim0_ortho", lambda x: torch.fft.rfft(x, dim=0, norm="ortho").abs(), randn(12, 3)),
    *[spectral(f"fft_real_{n}", lambda x: torch.fft.fft(x).real, randn(2, n)) for n in (9, 32)],
    *[spectral(f"fft_imag_{n}", lambda x: torch.fft.fft(x).imag, randn(2, n)) for n in (9, 32)],
    spectral("rfft_real_imag_sum", lambda x: torch.fft.rfft(x).real + 2 * torch.fft.rfft(x).imag, randn(4, 10)),
    *[spectral(f"stft_magnitude_{n}", lambda x: hann_stft(x).abs(), randn(2, n)) for n in (64, 100)],
    spectral("stft_magnitude_1d", lambda x: hann_stft(x, 32, 8).abs(), randn(256)),
    spectral("stft_power_dynamic_batch", lambda x: hann_stft(x).abs() ** 2, randn(2, 80),
             export_options=BATCH, other_inputs=lambda: [(torch.randn(5, 80),)]),
    spectral("stft_log_magnitude", lambda x: torch.log(hann_stft(x).abs() + 1e-3), randn(2, 64)),
    *[spectral(f"rfft_angle_{n}", lambda x: torch.fft.rfft(x).angle(), positive(3, n)) for n in (9, 33)],
    spectral("view_as_complex_angle", lambda t: torch.view_as_complex(t).angle(), randn(4, 5, 2)),
    spectral("view_as_complex_real_imag", lambda t: torch.view_as_complex(t).real * torch.view_as_complex(t).imag,
             randn(4, 5, 2)),
    spectral("cross_spectrum", lambda x, y: torch.view_as_real(torch.fft.rfft(x) * torch.fft.rfft(y).conj()),
             lambda: (torch.randn(2, 16), torch.randn(2, 16))),
    spectral("spectrum_ratio", lambda x, y: (torch.fft.rfft(x) / torch.fft.rfft(y)).abs(),
             lambda: (torch.randn(2, 15), torch.randn(2, 15)), rtol=1e-3),
    spectral("spectrum_affine", lambda x: torch.view_as_real(2 * torch.fft.rfft(x) - 1 + torch.fft.rfft(x) / 4),
             randn(3, 12)),
    spectral("spectrum_plus_real", lambda x, w: (torch.fft.rfft(x) + w).abs(),
             lambda: (torch.randn(2, 14), torch.randn(8))),
    spectral("spectrum_times_real", lambda x, w: (torch.fft.rfft(x) * w).angle(),
             lambda: (torch.rand(2, 15) + 0.5, torch.rand(8) + 0.1)),
    spectral("spectrum_neg_sub", lambda x: torch.view_as_real(-torch.fft.fft(x) - torch.fft.fft(x) * 3), randn(2, 6)),
    spectral("spectrum_slice_abs", lambda x: torch.fft.rfft(x)[..., 1:6].abs(), randn(3, 20)),
    spectral("spectrum_select_abs", lambda x: torch.fft.rfft(x)[:, 2].abs(), randn(3, 20)),
    spectral("stft_transpose_abs", lambda x: hann_stft(x).transpose(1, 2).abs(), randn(2, 64)),
    Case("angle_of_real", lambda x: torch.angle(x), lambda: (torch.tensor([[-2.0, 0.0, 3.0], [1.5, -0.5, 7.0]]),),
         min_opset=9),
    Case("real_of_real", lambda x: torch.real(x) * 2, randn(2, 3)),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_complex(case, opset):
    run_case(case, opset)


REFUSED = [
    # (model, message fragment): complex values that cannot leave the model or enter the op
    (lambda x: torch.fft.rfft(x), "return torch.view_as_real(x) or x.abs() instead"),
    (lambda x: hann_stft(x), "return torch.view_as_real(x) or x.abs() instead"),
    (lambda x: torch.fft.rfft(x).exp().abs(), "aten::exp of a complex tensor has no conversion"),
]


@pytest.mark.parametrize("fn,message", REFUSED)
def test_complex_refused_with_next_step(fn, message):
    with pytest.raises(SymbolicValueError, match="complex") as info:
        export(Fn(fn), (torch.randn(2, 64),), io.BytesIO(), opset_version=17)
    assert message in str(info.value)
    assert "not supported" not in str(info.value)  # the old, garbled wording
    report = audit(Fn(fn), (torch.randn(2, 64),), opset_version=17)
    assert [issue.category for issue in report.issues] == ["complex"]
    assert message in report.issues[0].message


class ScriptedStft(torch.nn.Module):
    def forward(self, x):
        return torch.stft(x, n_fft=16, center=False, return_complex=True)


class ScriptedFft(torch.nn.Module):
    def forward(self, x):
        return torch.fft.fft(x)


@pytest.mark.parametrize("model", [ScriptedStft(), ScriptedFft()], ids=["stft", "fft"])
def test_a_scripted_complex_output_is_refused(model):
    """A scripted graph carries no dtypes: the complex output is known by the op that makes it."""
    with pytest.raises(SymbolicValueError, match="return torch.view_as_real"):
        export(torch.jit.script(model), (torch.randn(1, 32),), io.BytesIO(), opset_version=17)


class FirstColumn(torch.nn.Module):
    def forward(self, x):
        return x[:, 0]


def test_a_scripted_model_passing_a_complex_input_through_is_refused():
    """No op makes the complex value: it is the input's, known from the example's dtype."""
    with pytest.raises(SymbolicValueError, match="return torch.view_as_real"):
        export(torch.jit.script(FirstColumn()), (torch.randn(4, 3, dtype=torch.cfloat),), io.BytesIO(),
               opset_version=17)
