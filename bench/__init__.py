"""Benchmark: torchscript_onnx.export against torch.onnx.export (TorchScript and dynamo) on the zoo.

``python -m bench.run`` (see bench/README.md). Everything is reported as ratios measured in one run.
"""
