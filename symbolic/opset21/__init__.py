"""Opset 21 conversions by topic; ``symbolic.symbolic_opset21`` re-exports them."""
