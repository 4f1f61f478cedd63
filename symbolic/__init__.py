"""The conversions (``ops/``), their registry, the helpers symbolics use, and the legacy facades
``symbolic_opset7`` ... ``symbolic_opset26``. Installed as ``torchscript_onnx.symbolic``: the source
folder sits at the top of the repository, the package links it in."""

if __name__ != "torchscript_onnx.symbolic":
    # A second copy of these modules would hold a second registry, blind to the first's entries.
    raise ImportError(f"import the conversions as torchscript_onnx.symbolic, not as {__name__!r}")

# symbolic_helper first: legacy_helpers and legacy_lowerings, which it re-exports, build on it.
from . import symbolic_helper  # noqa: E402, F401
