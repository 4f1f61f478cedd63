"""Opset 11 conversions by topic; ``symbolic.symbolic_opset11`` re-exports them."""
