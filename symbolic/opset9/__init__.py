"""Opset 9 conversions, split by topic; ``symbolic.symbolic_opset9`` re-exports them all."""
