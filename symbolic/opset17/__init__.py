"""Opset 17 conversions by topic; ``symbolic.symbolic_opset17`` re-exports them."""
