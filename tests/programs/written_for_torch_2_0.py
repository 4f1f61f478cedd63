"""A program written for torch 2.0's ONNX exporter, as such programs were written: it imports the
legacy modules, registers a custom symbolic from opset 1 with ``parse_args``, calls a built-in
symbolic of ``symbolic_opset11``, asks ``utils.unconvertible_ops`` and exports without ``dynamo``.

It must run unchanged on a torch without the legacy exporter once ``torchscript_onnx.install()`` ran
(``LEGACY_REMOVED_INSTALL=torchscript_onnx python ../shared/peer/legacy_removed.py <this file>``);
tests/test_install.py runs it on both torches. It checks its own result and exits non-zero if the
file is wrong: ``python written_for_torch_2_0.py [out.onnx]``.
"""

import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
import torch
import torch.onnx.symbolic_opset11
from torch.onnx import symbolic_helper, utils
from torch.onnx.symbolic_helper import parse_args


# stands for a kernel of the program's own: a custom op the exporter cannot know
torch.library.define("torch20demo::scaled_tanh", "(Tensor x, float factor) -> Tensor")


@torch.library.impl("torch20demo::scaled_tanh", "cpu")
def _scaled_tanh(x, factor):
    return torch.tanh(x) * factor


@parse_args("v", "f")
def scaled_tanh_symbolic(g, x, factor):
    scale = g.op("Constant", value_t=torch.tensor(factor, dtype=torch.float32))
    return g.op("Mul", g.op("Tanh", x), scale)


def clamp_through_opset11(g, self, min, max):
    # a custom symbolic that wraps a built-in one, as many projects did
    return torch.onnx.symbolic_opset11.clamp(g, self, min, max)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = torch.ops.torch20demo.scaled_tanh(self.conv(x), 0.5)
        return torch.clamp(y, -0.25, 0.25) + y.mean(dim=(2, 3), keepdim=True)


def main(path: str) -> None:
    model = Model().eval()
    x = torch.randn(2, 3, 8, 8)

    _, missing = utils.unconvertible_ops(model, (x,), opset_version=17)
    assert missing == ["torch20demo::scaled_tanh"], missing

    torch.onnx.register_custom_op_symbolic("torch20demo::scaled_tanh", scaled_tanh_symbolic, 1)
    torch.onnx.register_custom_op_symbolic("aten::clamp", clamp_through_opset11, 1)
    _, missing = utils.unconvertible_ops(model, (x,), opset_version=17)
    assert missing == [], missing

    with torch.onnx.select_model_mode_for_export(model, torch.onnx.TrainingMode.EVAL):
        torch.onnx.export(model, (x,), path, opset_version=17, input_names=["image"], output_names=["out"],
                          dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"}})
    assert symbolic_helper._is_value(x) is False  # the helper module answers as the legacy one did

    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for shape in ((2, 3, 8, 8), (1, 3, 5, 7)):  # the traced size and another
        image = torch.randn(*shape)
        (got,) = session.run(None, {"image": image.numpy()})
        np.testing.assert_allclose(got, model(image).detach().numpy(), rtol=1e-4, atol=1e-5)
    print(f"{path}: written by {proto.producer_name}, opset {proto.opset_import[0].version}, matches eager")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/model.onnx")
