"""Opset 23 conversions by topic; ``symbolic.symbolic_opset23`` re-exports them."""
