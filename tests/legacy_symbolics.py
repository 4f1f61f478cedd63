"""Custom symbolics written the way projects write them for torch.onnx (dynamo=False).

Only the imports differ from the torch.onnx original: test_compat.py also loads this file with
``torchscript_onnx`` replaced by ``torch.onnx`` and checks both exporters agree.
"""

import torch

from torchscript_onnx import symbolic_helper
from torchscript_onnx import symbolic_opset9
from torchscript_onnx.symbolic_helper import parse_args


@parse_args("v", "i", "none")
def softmax_as_exp_norm(g, self, dim, dtype=None):
    assert self.type().dim() == 2 and dim in (1, -1)  # LogSoftmax below opset 13 flattens to 2-D
    return g.op("Exp", g.op("LogSoftmax", self, axis_i=dim))


def gelu_through_builtin(g, self, approximate="none"):
    # calls a built-in symbolic, as many custom files do
    return symbolic_opset9.gelu(g, self, "none")


def flatten_by_static_sizes(g, input, start_dim, end_dim):
    start_dim = symbolic_helper._maybe_get_const(start_dim, "i")
    end_dim = symbolic_helper._maybe_get_const(end_dim, "i")
    sizes = symbolic_helper._get_tensor_sizes(input)
    assert sizes == input.type().sizes()
    rank = len(sizes)
    end_dim = end_dim + rank if end_dim < 0 else end_dim
    flat = 1
    for d in sizes[start_dim:end_dim + 1]:
        flat *= d
    shape = sizes[:start_dim] + [flat] + sizes[end_dim + 1:]
    return g.op("Reshape", input, g.op("Constant", value_t=torch.tensor(shape, dtype=torch.int64)))


def cat_reversed(g, tensor_list, dim):
    tensors = symbolic_helper._unpack_list(tensor_list)
    dim = symbolic_helper._get_const(dim, "i", "dim")
    return g.op("Concat", *tensors, axis_i=dim)


def addmm_checked(g, self, mat1, mat2, beta, alpha):
    if symbolic_helper._is_none(self):
        return g.op("MatMul", mat1, mat2)
    assert mat1.type().scalarType() == "Float"
    assert mat1.type().dim() == 2
    beta = symbolic_helper._maybe_get_const(beta, "f")
    alpha = symbolic_helper._maybe_get_const(alpha, "f")
    return g.op("Gemm", mat1, mat2, self, beta_f=beta, alpha_f=alpha)


def relu_if_not_from_constant(g, self):
    # x.node().kind() names the producer in legacy terms ("onnx::Add", "prim::Param", ...)
    kind = self.node().kind()
    assert isinstance(kind, str) and "::" in kind
    return g.op("Relu", self)


def custom_gelu_with_type(g, self):
    out = g.op("com.microsoft::Gelu", self)
    out.setType(self.type())
    return out


REGISTRATIONS = [
    ("::softmax", softmax_as_exp_norm, 11),
    ("::gelu", gelu_through_builtin, 9),
    ("::flatten", flatten_by_static_sizes, 9),
    ("::cat", cat_reversed, 9),
    ("::addmm", addmm_checked, 9),
    ("::relu", relu_if_not_from_constant, 9),
    ("tso_legacy::fast_gelu", custom_gelu_with_type, 9),
]
