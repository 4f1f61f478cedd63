"""Opset 24 conversions by topic; ``symbolic.symbolic_opset24`` re-exports them."""
