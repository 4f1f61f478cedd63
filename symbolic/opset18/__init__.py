"""Opset 18 conversions by topic; ``symbolic.symbolic_opset18`` re-exports them."""
