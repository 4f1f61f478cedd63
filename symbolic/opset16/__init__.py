"""Opset 16 conversions by topic; ``symbolic.symbolic_opset16`` re-exports them."""
