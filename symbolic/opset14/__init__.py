"""Opset 14 conversions by topic; ``symbolic.symbolic_opset14`` re-exports them."""
