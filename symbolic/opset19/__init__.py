"""Opset 19 conversions by topic; ``symbolic.symbolic_opset19`` re-exports them."""
