"""Opset 13 conversions by topic; ``symbolic.symbolic_opset13`` re-exports them."""
