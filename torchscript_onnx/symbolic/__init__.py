"""The conversions (``ops/``), their registry, the helpers symbolics use, and the legacy facades
``symbolic_opset7`` ... ``symbolic_opset26``."""

# symbolic_helper first: legacy_helpers and legacy_lowerings, which it re-exports, build on it.
from . import symbolic_helper  # noqa: F401
