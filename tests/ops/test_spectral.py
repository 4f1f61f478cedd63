"""Spectral ops: stft (ONNX STFT), fft_rfft/fft/ifft (ONNX DFT; axis an input from 20) and window
functions, one table run against eager PyTorch via onnxruntime. Complex results leave the model
through torch.view_as_real (complex tensors have no ONNX type)."""

import io

import pytest
import torch

from tests.optable import Case, below_min_params, params, run_below_min, run_case
from torchscript_onnx import export

OPSETS = (17, 20)


def randn(*shape):
    return lambda: (torch.randn(*shape),)


def stft_case(name, shape, n_fft, return_complex=True, hann=None, **kwargs):
    def fn(x):
        window = torch.hann_window(hann) if hann else None
        out = torch.stft(x, n_fft, window=window, return_complex=return_complex, **kwargs)
        return torch.view_as_real(out) if return_complex else out
    return Case(name, fn, randn(*shape), min_opset=17, opsets=OPSETS, atol=1e-4)


def fft_case(name, fn, shape, **kwargs):
    return Case(name, lambda x: torch.view_as_real(fn(x)), randn(*shape), min_opset=17, opsets=OPSETS,
                atol=1e-4, **kwargs)

def irfft_case(name, fn, shape, **kwargs):
    return Case(name, fn, randn(*shape), min_opset=17, opsets=OPSETS, atol=1e-4, **kwargs)


CASES = [
    stft_case("stft_hann", (2, 64), 16, hop_length=4, hann=16),
    stft_case("stft_1d", (64,), 16, hop_length=4, hann=16),
    stft_case("stft_real_output", (2, 64), 16, return_complex=False, hop_length=4, hann=16),
    stft_case("stft_no_window_default_hop", (2, 64), 16),
    stft_case("stft_short_window", (2, 64), 16, hop_length=5, win_length=10, hann=10),
    stft_case("stft_no_center", (2, 64), 16, hop_length=4, hann=16, center=False),
    stft_case("stft_constant_pad", (2, 64), 16, hop_length=4, hann=16, pad_mode="constant"),
    stft_case("stft_normalized", (2, 64), 16, hop_length=4, hann=16, normalized=True),
    stft_case("stft_twosided", (2, 64), 16, hop_length=4, hann=16, onesided=False),
    fft_case("rfft", torch.fft.rfft, (3, 32)),
    fft_case("rfft_dim0_n", lambda x: torch.fft.rfft(x, n=12, dim=0), (16, 3)),
    fft_case("rfft_ortho", lambda x: torch.fft.rfft(x, norm="ortho"), (2, 20)),
    fft_case("rfft_forward", lambda x: torch.fft.rfft(x, norm="forward"), (2, 20)),
    fft_case("fft_real", torch.fft.fft, (3, 16)),
    fft_case("ifft_of_rfft", lambda x: torch.fft.ifft(torch.fft.rfft(x, dim=0), dim=0), (9, 2)),
    fft_case("fft_then_ifft", lambda x: torch.fft.ifft(torch.fft.fft(x, dim=1), dim=1, norm="ortho"), (2, 8, 3)),
    fft_case("fft_of_rfft", lambda x: torch.fft.fft(torch.fft.rfft(x), norm="forward"), (2, 10)),
    fft_case("rfft2", torch.fft.rfft2, (2, 6, 8)),
    fft_case("rfft2_dims_ortho", lambda x: torch.fft.rfft2(x, dim=(0, 2), norm="ortho"), (6, 2, 8)),
    fft_case("fft2", torch.fft.fft2, (2, 5, 6)),
    fft_case("fft2_of_rfft", lambda x: torch.fft.fft2(torch.fft.rfft(x, dim=0)), (6, 4, 5)),
    irfft_case("irfft_of_rfft", lambda x: torch.fft.irfft(torch.fft.rfft(x), n=x.size(-1)), (3, 16)),
    irfft_case("irfft_of_rfft_odd", lambda x: torch.fft.irfft(torch.fft.rfft(x), n=x.size(-1)), (3, 15)),
    irfft_case("irfft_default_n", lambda t: torch.fft.irfft(torch.view_as_complex(t)), (3, 9, 2)),
    irfft_case("irfft_n_smaller", lambda t: torch.fft.irfft(torch.view_as_complex(t), n=7), (2, 9, 2)),
    irfft_case("irfft_n_larger", lambda t: torch.fft.irfft(torch.view_as_complex(t), n=21), (2, 5, 2)),
    irfft_case("irfft_dim0_ortho", lambda t: torch.fft.irfft(torch.view_as_complex(t), n=10, dim=0, norm="ortho"),
               (6, 3, 2)),
    irfft_case("irfft_forward", lambda t: torch.fft.irfft(torch.view_as_complex(t), norm="forward"), (2, 7, 2)),
    irfft_case("irfft_real_input", lambda x: torch.fft.irfft(x, n=12), (2, 5)),
    irfft_case("irfft_dynamic_batch", lambda t: torch.fft.irfft(torch.view_as_complex(t), n=16), (2, 9, 2),
               export_options={"input_names": ["t"], "dynamic_axes": {"t": [0]}},
               other_inputs=lambda: [(torch.randn(5, 9, 2),)]),
    irfft_case("irfft2_of_rfft2", lambda x: torch.fft.irfft2(torch.fft.rfft2(x), s=x.shape[-2:]), (2, 6, 7)),
    irfft_case("irfft2_default", lambda t: torch.fft.irfft2(torch.view_as_complex(t)), (2, 4, 5, 2)),
    irfft_case("irfftn_s_dims", lambda t: torch.fft.irfftn(torch.view_as_complex(t), s=(5, 6, 8), norm="ortho"),
               (4, 6, 5, 2)),
    irfft_case("hfft", lambda t: torch.fft.hfft(torch.view_as_complex(t), n=10), (2, 6, 2)),
    irfft_case("hfft_ortho_dim0", lambda t: torch.fft.hfft(torch.view_as_complex(t), dim=0, norm="ortho"), (5, 3, 2)),
    fft_case("ihfft", lambda x: torch.fft.ihfft(x).resolve_conj(), (2, 10)),
    fft_case("ihfft_forward_n", lambda x: torch.fft.ihfft(x, n=7, norm="forward").resolve_conj(), (2, 10)),
    irfft_case("conj_roundtrip", lambda t: torch.view_as_real(torch.view_as_complex(t).conj().resolve_conj()),
               (3, 4, 2)),
    Case("resolve_conj_real", lambda x: x.conj().resolve_conj().resolve_neg() * 2, randn(2, 3)),
    Case("hamming_window", lambda x: x * torch.hamming_window(x.shape[-1]), randn(2, 10)),
    Case("hamming_window_alpha", lambda x: x * torch.hamming_window(10, False, 0.6, 0.4), randn(2, 10)),
    Case("blackman_window", lambda x: x * torch.blackman_window(x.shape[-1], periodic=False), randn(2, 10)),
    Case("blackman_window_dynamic", lambda x: x * torch.blackman_window(x.shape[-1]), randn(2, 10),
         min_opset=9, opsets=(17,), export_options={"input_names": ["x"], "dynamic_axes": {"x": [1]}},
         other_inputs=lambda: [(torch.randn(2, 7),)]),
    Case("bartlett_window", lambda x: x * torch.bartlett_window(x.shape[-1]), randn(2, 9)),
    Case("bartlett_window_symmetric", lambda x: x * torch.bartlett_window(7, False, dtype=torch.float64), randn(7)),
    # runtime lengths: lengths 1 (torch's window is [1]) and 2 checked too
    *[Case(f"{name}_runtime_length", fn, randn(2, 10), min_opset=9, opsets=(17,),
           export_options={"input_names": ["x"], "dynamic_axes": {"x": [1]}},
           other_inputs=lambda: [(torch.randn(2, 7),), (torch.randn(2, 1),), (torch.randn(2, 2),)])
      for name, fn in [
          ("hann", lambda x: x * torch.hann_window(x.shape[-1])),
          ("hann_symmetric", lambda x: x * torch.hann_window(x.shape[-1], False)),
          ("hamming", lambda x: x * torch.hamming_window(x.shape[-1])),
          ("hamming_alpha_beta", lambda x: x * torch.hamming_window(x.shape[-1], False, 0.6, 0.3)),
          ("blackman", lambda x: x * torch.blackman_window(x.shape[-1])),
          ("blackman_symmetric", lambda x: x * torch.blackman_window(x.shape[-1], False)),
          ("bartlett", lambda x: x * torch.bartlett_window(x.shape[-1])),
          ("bartlett_symmetric", lambda x: x * torch.bartlett_window(x.shape[-1], False)),
      ]],
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_spectral(case, opset):
    run_case(case, opset)


# A scripted graph keeps the window length a runtime size even without dynamic axes.
WINDOWS = [case for case in CASES
           if ("window" in case.name or "runtime_length" in case.name) and "stft" not in case.name]


@pytest.mark.parametrize("case,opset", params(WINDOWS))
def test_windows_scripted(case, opset):
    run_case(case, opset, script=True)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_spectral_below_min(case, opset):
    run_below_min(case, opset)


@pytest.mark.parametrize("fn", [lambda x: torch.fft.rfft(x), lambda x: torch.fft.rfft(x).exp(),
                                lambda x: torch.stft(x, 8, window=torch.ones(8), return_complex=True)])
def test_complex_result_needs_view_as_real(fn):
    from tests.optable import Fn

    with pytest.raises(Exception, match="view_as_real"):
        export(Fn(fn), (torch.randn(2, 32),), io.BytesIO(), opset_version=17)
