"""What ``torch.onnx._internal.torchscript_exporter._globals`` was: the legacy exporter's ``GLOBALS``.

``install()`` puts this module under that name on a torch without the legacy exporter, because
code outside it still reads ``GLOBALS``: libraries (``GLOBALS.in_onnx_export``), torch's own
``is_in_onnx_export()``, and the tracer, which reads ``GLOBALS.autograd_inlining`` for every
``autograd.Function`` it records (and then keeps the ops the Function ran, which export inlines).
Capture sets ``in_onnx_export`` while it traces, as it sets torch's own flag.
"""

from __future__ import annotations

from .builder.options import DEFAULT_OPSET, OperatorExportTypes, TrainingMode


class ExportGlobals:
    """The legacy exporter's global state, with its attribute names and defaults."""

    def __init__(self) -> None:
        self.export_onnx_opset_version = DEFAULT_OPSET
        self.training_mode = TrainingMode.EVAL
        self.in_onnx_export = False
        self.export_training = False
        self.operator_export_type = OperatorExportTypes.ONNX
        self.onnx_shape_inference = True
        self.autograd_inlining = True


GLOBALS = ExportGlobals()
