"""Opset 15 conversions by topic; ``symbolic.symbolic_opset15`` re-exports them."""
