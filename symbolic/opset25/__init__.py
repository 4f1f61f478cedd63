"""Opset 25 conversions by topic; ``symbolic.symbolic_opset25`` re-exports them."""
