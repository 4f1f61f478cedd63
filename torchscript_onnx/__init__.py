"""torchscript-onnx: a stand-alone TorchScript -> ONNX exporter, compatible with
the legacy TorchScript-based ``export(..., dynamo=False)`` of PyTorch, for ONNX opsets 7 to 26."""

import sys as _sys

from .api import __version__, build, export, export_to_pretty_string
from .pipeline.capture import is_in_onnx_export, select_model_mode_for_export
from .builder.errors import (CheckerError, OnnxExporterError, OnnxExporterWarning, OpsetRequirementError, SymbolicValueError,
                     UnsupportedOperatorError)
from .install import install, installed, uninstall
from .builder.options import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, OperatorExportTypes, TrainingMode
from .registration import register_custom_op_symbolic, supported_ops, unregister_custom_op_symbolic

__all__ = [
    "DEFAULT_OPSET", "MAX_OPSET", "MIN_OPSET", "CheckerError", "OnnxExporterError", "OnnxExporterWarning",
    "OperatorExportTypes", "OpsetRequirementError", "install", "installed", "uninstall",
    "SymbolicValueError", "TrainingMode", "UnsupportedOperatorError", "__version__", "build", "export",
    "export_to_pretty_string", "is_in_onnx_export", "register_custom_op_symbolic",
    "select_model_mode_for_export", "supported_ops", "unregister_custom_op_symbolic",
]

from .audit import AuditReport, audit, unconvertible_ops  # noqa: E402
from . import verification as _verification  # noqa: E402
from .verification import VerificationError, VerificationReport, verify  # noqa: E402

# ``torchscript_onnx.verify`` is the function; the module it lived in as ``torchscript_onnx/verify.py``
# is ``verification`` now, and stays importable by its old name (``from torchscript_onnx.verify import
# check``): the import system finds it in sys.modules and leaves the package's ``verify`` alone.
_sys.modules[__name__ + ".verify"] = _verification

from .builder import errors  # noqa: E402

# ``torchscript_onnx.errors``, like ``torch.onnx.errors``, is where programs look for the exception
# classes (``from torchscript_onnx.errors import OnnxExporterError``, ``tso.errors.OnnxExporterWarning``);
# the module lives in the builder now and is found under its old name the same way.
_sys.modules[__name__ + ".errors"] = errors

__all__ += ["AuditReport", "audit", "unconvertible_ops", "VerificationError", "VerificationReport", "verify"]


def __getattr__(name: str):
    """``from torchscript_onnx import symbolic_opset9``, the legacy import path with the package renamed."""
    if name.startswith("symbolic_opset") and name[len("symbolic_opset"):].isdigit():
        import importlib

        try:
            return importlib.import_module(f"torchscript_onnx.symbolic.{name}")
        except ModuleNotFoundError:
            pass
    raise AttributeError(f"module 'torchscript_onnx' has no attribute {name!r}")
