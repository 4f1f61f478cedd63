"""Opset 22 conversions by topic; ``symbolic.symbolic_opset22`` re-exports them."""
