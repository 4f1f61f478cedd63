"""The builder: the ONNX graph under construction and everything a symbolic function writes it with.

The IR (``ir``: Graph, Node, Value with dtype, shape and known constant; ``compat``: the legacy
torch._C.Value surface), the graph context symbolics receive (``context``), the shape rules
(``shapes``), build-time folding (``folding``), the ONNX ops whose schema moved between opsets
(``onnx_ops``), dtypes, errors, the export options, lazy initializers (``lazy``, ``heap``) and the
walks over TorchScript graphs that both the symbolics and the converter use (``jit_walk``,
``mutation``). It imports nothing of the package outside this folder (tests/test_layers.py).
"""
