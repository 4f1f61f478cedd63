"""Opset 8 conversions by topic; ``symbolic.symbolic_opset8`` re-exports them."""
