import contextlib
import os
import sys

import pytest

# Tests import the package from the checkout even without an install, and the tests' own helper
# modules (legacy_symbolics, torch_without_legacy) by name.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from torch_without_legacy import legacy_exporter_removed  # noqa: E402


@pytest.fixture(params=["with legacy", "without legacy"])
def installed_on_both_torches(request):
    """The test runs twice: after ``torchscript_onnx.install()`` on today's torch, and on a torch
    without its TorchScript-based exporter (tests/torch_without_legacy.py). Uninstalled afterwards."""
    import torchscript_onnx

    with legacy_exporter_removed() if request.param == "without legacy" else contextlib.nullcontext():
        torchscript_onnx.install()
        try:
            yield request.param
        finally:
            torchscript_onnx.uninstall()
