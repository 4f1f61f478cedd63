"""Legacy import path: ``torchscript_onnx.symbolic_helper`` is ``torchscript_onnx.symbolic.symbolic_helper``
(its ``__all__``: the named API and every name of the legacy exporter's ``symbolic_helper``)."""

from .symbolic.symbolic_helper import *  # noqa: F401,F403
from .symbolic.symbolic_helper import __all__  # noqa: F401
