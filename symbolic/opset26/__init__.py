"""Opset 26 conversions by topic; ``symbolic.symbolic_opset26`` re-exports them."""
