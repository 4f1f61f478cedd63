"""Linear algebra at opset 9: matrix-vector products, batched adds, outer, tensordot, cross,
distances and similarities. Einsum (12) and Det (11) register at the opsets that bring the ops.

matmul/mm/bmm/addmm/linear live with the layers in nn.py.

The versions for higher opsets follow, each registered with ``since=N``: opsets 11, 12."""

from __future__ import annotations

import math

import torch

from torchscript_onnx.builder import dtypes, onnx_ops
from torchscript_onnx.builder.ir import Value

from .. import symbolic_helper as sh
from ..registry import declare_opset_requirements, symbolic
from .math import mul
from .operand_types import as_operand, to_floating
from .reduction import axes_of, reduce, sum_dtype, vector_norm

# The conditions under which a conversion here needs more than opset 7 (OPSET.require states
# them) -> the lowest opset that meets each; a registration at 9 serves 7 and 8 where ONNX allows.
OPSET = declare_opset_requirements({}, unlisted={
    "ONNX EyeLike": 9,
    "integer inputs (typed MatMul)": 9,
})


def matmul_typed(g, a: Value, b: Value) -> Value:
    """MatMul of two operands after torch's promotion; integer MatMul needs opset 9."""
    dtype = g.output_dtype() or sh.promote_types(a, b)
    if dtype is not None and not dtypes.is_floating(dtype):
        OPSET.require(g, "integer inputs (typed MatMul)", a)
    if dtype in (torch.int8, torch.uint8, torch.int16, torch.bool):
        # MatMul takes 32/64-bit integers only
        product = g.op("MatMul", onnx_ops.cast(g, a, torch.int64), onnx_ops.cast(g, b, torch.int64))
        return onnx_ops.cast(g, product, dtype)
    return g.op("MatMul", as_operand(g, a, dtype), as_operand(g, b, dtype))


def _scalar(value, default: float = 1.0):
    raw = sh.const(value, None) if value is not None else None
    if raw is None:
        return default
    return raw.item() if isinstance(raw, torch.Tensor) else raw


def scaled_sum(g, self: Value, product: Value, beta, alpha) -> Value:
    """beta * self + alpha * product, as torch's addmm family: a constant beta == 0 ignores self
    (even NaN). beta and alpha may be runtime scalars (0-d tensors passed as Scalar)."""
    dtype = product.dtype
    product = _scaled(g, product, alpha, dtype)
    if _scalar(beta) == 0 and _is_constant(beta):
        return product
    return g.op("Add", _scaled(g, onnx_ops.cast(g, self, dtype), beta, dtype), product)


def _is_constant(value) -> bool:
    return value is None or sh.const(value, None) is not None


def _scaled(g, term: Value, factor, dtype) -> Value:
    if not _is_constant(factor):
        return g.op("Mul", term, onnx_ops.cast(g, factor, dtype))
    scale = _scalar(factor)
    return term if scale == 1 else g.op("Mul", term, g.constant(scale, dtype))


@symbolic("aten::mv")
def mv(g, self, vec):
    """mv(Tensor self, Tensor vec) -> Tensor"""
    return matmul_typed(g, self, vec)


@symbolic("aten::dot")
def dot(g, self, tensor):
    """dot(Tensor self, Tensor tensor) -> Tensor"""
    return matmul_typed(g, self, tensor)


@symbolic("aten::vdot")
def vdot(g, self, other):
    """vdot(Tensor self, Tensor other) -> Tensor (real inputs: the same as dot)"""
    return matmul_typed(g, self, other)


@symbolic("aten::addmv")
def addmv(g, self, mat, vec, beta=None, alpha=None):
    """addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return scaled_sum(g, self, matmul_typed(g, mat, vec), beta, alpha)


@symbolic("aten::baddbmm")
def baddbmm(g, self, batch1, batch2, beta=None, alpha=None):
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return scaled_sum(g, self, matmul_typed(g, batch1, batch2), beta, alpha)


@symbolic("aten::addbmm")
def addbmm(g, self, batch1, batch2, beta=None, alpha=None):
    """addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    products = matmul_typed(g, batch1, batch2)
    return scaled_sum(g, self, reduce(g, "ReduceSum", products, [0], False), beta, alpha)


@symbolic("aten::outer")
def outer(g, self, vec2):
    """outer(Tensor self, Tensor vec2) -> Tensor"""
    dtype = g.output_dtype() or sh.promote_types(self, vec2)
    column = onnx_ops.unsqueeze(g, as_operand(g, self, dtype), [1])
    if dtype == torch.bool:
        return g.op("And", column, vec2)
    return g.op("Mul", column, as_operand(g, vec2, dtype))


@symbolic("aten::addr")
def addr(g, self, vec1, vec2, beta=None, alpha=None):
    """addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return scaled_sum(g, self, outer(g, vec1, vec2), beta, alpha)


@symbolic("aten::inner")
def inner(g, self, other):
    """inner(Tensor self, Tensor other) -> Tensor"""
    if self.rank == 0 or other.rank == 0:
        return mul(g, self, other)
    if other.rank is None:
        sh.value_error("inner: the rank of other must be known", other)
    if other.rank == 1:
        return matmul_typed(g, self, other)
    # contract the last dims: self[..., k] . other[..., k] -> self dims + other's leading dims
    return tensordot(g, self, other, [-1], [-1])


@symbolic("aten::linalg_multi_dot")
def linalg_multi_dot(g, tensors):
    """linalg_multi_dot(Tensor[] tensors) -> Tensor"""
    values = sh.unpack_list(tensors)
    out = values[0]
    for value in values[1:]:
        out = matmul_typed(g, out, value)
    return out


@symbolic("aten::chain_matmul")
def chain_matmul(g, matrices):
    """chain_matmul(Tensor[] matrices) -> Tensor"""
    return linalg_multi_dot(g, matrices)


@symbolic("aten::trace")
def trace(g, self):
    """trace(Tensor self) -> Tensor"""
    out_dtype = g.output_dtype() or sum_dtype(self.dtype)
    x = onnx_ops.cast(g, self, out_dtype)
    OPSET.require(g, "ONNX EyeLike", self)
    diagonal = g.op("Mul", x, g.op("EyeLike", x))
    return reduce(g, "ReduceSum", diagonal, None, False)


@symbolic("aten::linalg_vecdot")
def linalg_vecdot(g, x, y, dim=-1):
    """linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor"""
    dtype = g.output_dtype() or sh.promote_types(x, y)
    product = g.op("Mul", as_operand(g, x, dtype), as_operand(g, y, dtype))
    return reduce(g, "ReduceSum", product, axes_of(dim, product.rank), False)


@symbolic("aten::tensordot")
def tensordot(g, self, other, dims_self, dims_other):
    """tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor"""
    # Move the contracted dims of self last and those of other first, flatten both to 2-D, MatMul,
    # then restore the free dims: every op here exists at opset 9.
    ra, rb = self.rank, other.rank
    if ra is None or rb is None:
        sh.value_error("tensordot: the input ranks must be known", self)
    da = [d % ra for d in sh._get_const(dims_self, "is", "dims_self")]
    db = [d % rb for d in sh._get_const(dims_other, "is", "dims_other")]
    free_a = [d for d in range(ra) if d not in da]
    free_b = [d for d in range(rb) if d not in db]
    a = g.op("Transpose", self, perm_i=free_a + da) if free_a + da != list(range(ra)) else self
    b = g.op("Transpose", other, perm_i=db + free_b) if db + free_b != list(range(rb)) else other
    contracted = [sh.sizes(self)[d] for d in da]
    if all(isinstance(d, int) for d in contracted):
        k = g.constant([math.prod(contracted)], torch.int64)
    else:  # their product at runtime
        k = reduce(g, "ReduceProd", _dims_of(g, self, da), [0], True)
    minus_one = g.constant([-1], torch.int64)
    a2 = g.op("Reshape", a, g.op("Concat", minus_one, k, axis_i=0))
    b2 = g.op("Reshape", b, g.op("Concat", k, minus_one, axis_i=0))
    product = matmul_typed(g, a2, b2)
    shape_a, shape_b = sh.sizes(self), sh.sizes(other)
    free_dims = [shape_a[d] for d in free_a] + [shape_b[d] for d in free_b]
    if all(isinstance(d, int) for d in free_dims):
        return g.op("Reshape", product, g.constant(free_dims, torch.int64))
    parts = [_dims_of(g, self, free_a), _dims_of(g, other, free_b)]
    return g.op("Reshape", product, g.op("Concat", *[p for p in parts if p is not None], axis_i=0))


def _dims_of(g, x: Value, axes: list[int]) -> Value | None:
    if not axes:
        return None
    return g.op("Gather", g.op("Shape", x), g.constant(axes, torch.int64), axis_i=0)


def _cross(g, self, other, dim: int) -> Value:
    dtype = g.output_dtype() or sh.promote_types(self, other)
    a, b = as_operand(g, self, dtype), as_operand(g, other, dtype)
    # (a x b)_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1}, indices mod 3
    next1, next2 = g.constant([1, 2, 0], torch.int64), g.constant([2, 0, 1], torch.int64)
    a1, a2 = g.op("Gather", a, next1, axis_i=dim), g.op("Gather", a, next2, axis_i=dim)
    b1, b2 = g.op("Gather", b, next1, axis_i=dim), g.op("Gather", b, next2, axis_i=dim)
    return g.op("Sub", g.op("Mul", a1, b2), g.op("Mul", a2, b1))


def _broadcast_rank(a: Value, b: Value) -> int:
    if a.rank is None or b.rank is None:
        sh.value_error("cross: the input ranks must be known", a)
    return max(a.rank, b.rank)


@symbolic("aten::linalg_cross")
@sh.parse_args("v", "v", "i")
def linalg_cross(g, self, other, dim=-1):
    """linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor"""
    rank = _broadcast_rank(self, other)
    if self.rank != other.rank:
        sh.value_error("cross: inputs of different ranks are not supported", other)
    return _cross(g, self, other, dim % rank)


@symbolic("aten::cross")
def cross(g, self, other, dim=None):
    """cross(Tensor self, Tensor other, int? dim=None) -> Tensor"""
    rank = _broadcast_rank(self, other)
    if self.rank != other.rank:
        sh.value_error("cross: inputs of different ranks are not supported", other)
    axis = sh.const(dim, None) if dim is not None else None
    if axis is None:  # the first dim of size 3
        sizes = sh.sizes(self)
        axis = next((k for k, d in enumerate(sizes) if d == 3), None)
        if axis is None:
            sh.value_error("cross: no dim of size 3", self)
    return _cross(g, self, other, int(axis) % rank)


# ---------------------------------------------------------------------------------------------
# Distances and similarities


def _p(value, default: float = 2.0) -> float:
    raw = sh.const(value, None) if value is not None else None
    return default if raw is None else float(raw.item() if isinstance(raw, torch.Tensor) else raw)


@symbolic("aten::cdist")
def cdist(g, x1, x2, p=None, compute_mode=None):
    """cdist(Tensor x1, Tensor x2, float p=2, int? compute_mode=None) -> Tensor"""
    rank = x1.rank
    if rank is None or x2.rank != rank:
        sh.value_error("cdist: both inputs need the same known rank", x1)
    # |x1[..., i, :] - x2[..., j, :]|_p over a [..., P, R, M] difference
    diff = g.op("Sub", onnx_ops.unsqueeze(g, x1, [rank - 1]), onnx_ops.unsqueeze(g, x2, [rank - 2]))
    return vector_norm(g, diff, _p(p), [rank], False)


@symbolic("aten::pairwise_distance")
def pairwise_distance(g, x1, x2, p=None, eps=None, keepdim=False):
    """pairwise_distance(Tensor x1, Tensor x2, float p=2, float eps=1e-06, bool keepdim=False) -> Tensor"""
    dtype = g.output_dtype() or sh.promote_types(x1, x2)
    epsilon = _p(eps, 1e-6)
    diff = g.op("Sub", as_operand(g, x1, dtype), as_operand(g, x2, dtype))
    diff = g.op("Add", diff, g.constant(epsilon, dtype))
    rank = diff.rank if diff.rank is not None else max(x1.rank or 0, x2.rank or 0)
    keep = bool(sh._get_const(keepdim, "b", "keepdim"))
    if rank == 0:
        return g.op("Abs", diff)
    return vector_norm(g, diff, _p(p), [rank - 1], keep)


@symbolic("aten::cosine_similarity")
def cosine_similarity(g, x1, x2, dim=None, eps=None):
    """cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor"""
    dtype = g.output_dtype() or sh.promote_types(x1, x2)
    a, b = as_operand(g, x1, dtype), as_operand(g, x2, dtype)
    rank = max(a.rank or 0, b.rank or 0)
    axis = int(sh.const(dim, 1)) if dim is not None else 1
    axis = axis % rank if rank else 0
    epsilon = _p(eps, 1e-8)
    # torch: sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps))) along dim
    norm_a = onnx_ops.clip(g, reduce(g, "ReduceL2", a, [axis - (rank - a.rank)], True), epsilon, None)
    norm_b = onnx_ops.clip(g, reduce(g, "ReduceL2", b, [axis - (rank - b.rank)], True), epsilon, None)
    product = g.op("Mul", g.op("Div", a, norm_a), g.op("Div", b, norm_b))
    return reduce(g, "ReduceSum", product, [axis], False)


# ---------------------------------------------------------------------------------------------
# Opset 11. Linear algebra at opset 11: Det arrives (det, logdet, slogdet).


def _det(g, self):
    if self.rank is not None and self.rank < 2:
        sh.value_error("det: the input must have at least 2 dims", self)
    return g.op("Det", to_floating(g, self))


@symbolic("aten::linalg_det", since=11)
def linalg_det(g, A):  # noqa: N803 - ATen parameter name
    """linalg_det(Tensor A) -> Tensor"""
    return _det(g, A)


@symbolic("aten::det", since=11)
def det(g, self):
    """det(Tensor self) -> Tensor"""
    return _det(g, self)


@symbolic("aten::logdet", since=11)
def logdet(g, self):
    """logdet(Tensor self) -> Tensor"""
    # log of a negative determinant is NaN in both torch and ONNX
    return g.op("Log", _det(g, self))


@symbolic("aten::linalg_slogdet", since=11)
def linalg_slogdet(g, A):  # noqa: N803
    """linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)"""
    value = _det(g, A)
    return g.op("Sign", value), g.op("Log", g.op("Abs", value))


@symbolic("aten::slogdet", since=11)
def slogdet(g, self):
    """slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)"""
    return linalg_slogdet(g, self)


# ---------------------------------------------------------------------------------------------
# Opset 12. Linear algebra at opset 12: Einsum arrives.


@symbolic("aten::einsum", since=12)
def einsum(g, equation, tensors, path=None):
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor"""
    text = sh._get_const(equation, "s", "equation").replace(" ", "")
    operands = sh.unpack_list(tensors)
    dtype = g.output_dtype() or sh.promote_types(*operands)
    if dtype is not None and not (dtypes.is_floating(dtype) or dtype in (torch.int32, torch.int64)):
        # onnxruntime's Einsum computes float, double, int32 and int64: other types go through int64
        values = [onnx_ops.cast(g, as_operand(g, v, dtype), torch.int64) for v in operands]
        return onnx_ops.cast(g, g.op("Einsum", *values, equation_s=text), dtype)
    return g.op("Einsum", *[as_operand(g, v, dtype) for v in operands], equation_s=text)
