"""Opset 7 conversions by topic; ``symbolic.symbolic_opset7`` re-exports them."""
