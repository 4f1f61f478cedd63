"""Opset 12 conversions by topic; ``symbolic.symbolic_opset12`` re-exports them."""
