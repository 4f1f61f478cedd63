"""Opset 10 conversions by topic; ``symbolic.symbolic_opset10`` re-exports them."""
