"""Symbolic functions: one module per opset where lowerings change, plus the registry."""
