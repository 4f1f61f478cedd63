"""Which ops make a complex value whatever their inputs: a declared table the converter reads.

A scripted graph's values carry no dtype, so the converter asks this table whether an output is
complex (and then returns it as its real and imaginary parts, as a traced one's dtype says).
An op added to ``spectral.py`` or ``complex.py`` whose result is always complex goes here too.
"""

from __future__ import annotations

import torch

# every result of these ops is complex
COMPLEX_RESULTS = frozenset({
    "aten::fft_fft", "aten::fft_ifft", "aten::fft_fft2", "aten::fft_ifft2", "aten::fft_fftn", "aten::fft_ifftn",
    "aten::fft_rfft", "aten::fft_rfft2", "aten::fft_rfftn", "aten::view_as_complex", "aten::complex", "aten::polar",
})
# these make a complex result when their argument of this name is a constant True
COMPLEX_WHEN_TRUE = {"aten::stft": "return_complex"}


def makes_complex(node: torch._C.Node) -> bool:
    """Whether ``node``'s result is complex by what the op is (an fft, view_as_complex, stft with
    return_complex=True), whatever its inputs' types say."""
    kind = node.kind()
    if kind in COMPLEX_RESULTS:
        return True
    flag_name = COMPLEX_WHEN_TRUE.get(kind)
    if flag_name is None:
        return False
    try:
        names = [argument.name for argument in torch._C.parse_schema(node.schema()).arguments]
    except RuntimeError:  # no schema
        return False
    position = names.index(flag_name) if flag_name in names else node.inputsSize()
    if position >= node.inputsSize():
        return False
    flag = node.inputsAt(position)
    return flag.node().kind() == "prim::Constant" and flag.toIValue() is True
