"""Opset 20 conversions by topic; ``symbolic.symbolic_opset20`` re-exports them."""
