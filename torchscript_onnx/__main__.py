"""``python -m torchscript_onnx``: the torchscript-onnx command."""

from .cli import run

run()
