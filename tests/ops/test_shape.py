"""Shape and joining ops: one table, run against eager PyTorch through onnxruntime."""

import pytest
import torch

from tests.optable import Case, below_min_params, params, run_below_min, run_case, sample

F32, F16, F64, I64, I32, BOOL = torch.float32, torch.float16, torch.float64, torch.int64, torch.int32, torch.bool
ALL = (F32, I64, BOOL)
DYN = dict(input_names=["x"], dynamic_axes={"x": {0: "batch"}})


def typed(name, fn, shape=(2, 3, 4), dtypes=ALL, **options):
    """One case per dtype on a ``sample`` of ``shape``."""
    cases = []
    for dtype in dtypes:
        def inputs(dtype=dtype):
            return (sample(dtype, "any", shape),)
        cases.append(Case(f"{name}-{str(dtype).replace('torch.', '')}", fn, inputs, **options))
    return cases


def dynamic(name, fn, shape=(2, 3, 4), other=(5, 3, 4), **options):
    """A float case exported with a dynamic batch dim and rerun at another batch size."""
    return Case(f"{name}-dynamic", fn, lambda: (torch.randn(*shape),), export_options=DYN,
                other_inputs=lambda: [(torch.randn(*other),)], **options)


def _x(*shape):
    return lambda: (torch.randn(*shape),)


CASES = [
    # views and reshapes
    *typed("view", lambda x: x.view(6, 4)),
    *typed("reshape_neg", lambda x: x.reshape(-1, 2)),
    dynamic("view_size", lambda x: x.view(x.size(0), -1)),
    dynamic("reshape_size", lambda x: x.reshape(x.shape[0] * 3, 4)),
    *typed("view_as", lambda x: x.view_as(x.view(4, 6)) + 0 if x.dtype != torch.bool else x.view_as(x.view(4, 6))),
    *typed("flatten", lambda x: x.flatten()),
    *typed("flatten_1", lambda x: x.flatten(1)),
    Case("flatten_mid", lambda x: x.flatten(1, 2), _x(2, 3, 4, 5)),
    dynamic("flatten", lambda x: x.flatten(1)),
    dynamic("flatten_all", lambda x: x.flatten()),
    *typed("unflatten", lambda x: x.unflatten(2, (2, 2))),
    dynamic("unflatten", lambda x: x.unflatten(1, (3, 1))),
    Case("reshape_empty", lambda x: x[:0].reshape(0, 2, 6), _x(2, 3, 4), opsets=(14,)),
    Case("reshape_as", lambda x, y: x.reshape_as(y), lambda: (torch.randn(2, 6), torch.randn(3, 4))),
    Case("shape_as_tensor", lambda x: torch._shape_as_tensor(x) + 0, _x(2, 3)),
    Case("stride", lambda x: x * x.stride(0) - x.stride(1) + x.stride()[2], _x(2, 3, 4)),  # scripted: aten::stride
    Case("reshape_from_tensor", lambda x: torch._reshape_from_tensor(x, torch._shape_as_tensor(x[0].t())), _x(1, 3, 4)),
    *typed("squeeze", lambda x: x.view(2, 1, 12, 1).squeeze(), opsets=(13,)),
    Case("squeeze_dim", lambda x: x.squeeze(1), _x(2, 1, 3)),
    Case("squeeze_dims", lambda x: x.squeeze((1, 3)), _x(2, 1, 3, 1)),
    Case("squeeze_noop", lambda x: x.squeeze(0), _x(2, 1, 3)),
    Case("squeeze_dynamic_one", lambda x: x.squeeze(0), _x(1, 3), opsets=(13,), export_options=DYN,
         other_inputs=lambda: [(torch.randn(1, 3),)]),
    Case("squeeze_dynamic_kept", lambda x: x.squeeze(0) * 2, _x(2, 3), opsets=(13,), export_options=DYN,
         other_inputs=lambda: [(torch.randn(4, 3),)]),
    dynamic("squeeze_all", lambda x: x[:, :1].squeeze(), opsets=(13,)),
    *typed("unsqueeze", lambda x: x.unsqueeze(-1), opsets=(13,)),
    Case("unsqueeze_0", lambda x: x.unsqueeze(0), _x(3)),
    *typed("permute", lambda x: x.permute(2, 0, 1)),
    *typed("transpose", lambda x: x.transpose(0, -1)),
    *typed("t", lambda x: x[0].t()),
    Case("t_1d", lambda x: x.t(), _x(3)),
    *typed("mT", lambda x: x.mT),
    Case("numpy_T", lambda x: x.T, _x(2, 3, 4)),
    Case("mH", lambda x: x.mH, _x(2, 3, 4)),
    *typed("movedim", lambda x: torch.movedim(x, 0, -1)),
    Case("movedim_list", lambda x: torch.movedim(x, (0, 1), (2, 0)), _x(2, 3, 4)),
    Case("swapaxes", lambda x: torch.swapaxes(x, 0, 2), _x(2, 3, 4)),
    Case("swapdims", lambda x: x.swapdims(1, 2), _x(2, 3, 4)),
    dynamic("permute", lambda x: x.permute(1, 0, 2)),
    # expand, repeat, tile
    *typed("expand", lambda x: x[:, :1].expand(2, 5, 4), min_opset=8),
    Case("expand_neg", lambda x: x.expand(3, -1, -1), _x(1, 2, 4), min_opset=8),
    Case("expand_new_dims", lambda x: x.expand(2, 3, 4), _x(4), min_opset=8),
    dynamic("expand", lambda x: x[:, :1].expand(-1, 6, 4), min_opset=8),
    dynamic("expand_size", lambda x: x[:, :1].expand(x.size(0), 6, 4), min_opset=8),
    *typed("expand_as", lambda x: x[:1].expand_as(x), min_opset=8),
    dynamic("expand_as", lambda x: x[:1].expand_as(x), min_opset=8),
    *typed("broadcast_to", lambda x: torch.broadcast_to(x[:, :1], (2, 3, 4)), min_opset=8),
    *typed("repeat", lambda x: x.repeat(2, 1, 3)),
    Case("repeat_more_dims", lambda x: x.repeat(2, 1, 2), _x(3, 4)),
    dynamic("repeat", lambda x: x.repeat(1, 2, 1)),
    *typed("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1)),
    Case("repeat_interleave_flat", lambda x: x.repeat_interleave(3), _x(2, 3)),
    Case("repeat_interleave_const", lambda x: x.repeat_interleave(torch.tensor([1, 0, 2]), dim=1), _x(2, 3)),
    Case("repeat_interleave_tensor", lambda x, r: x.repeat_interleave(r, dim=0),
         lambda: (torch.randn(3, 2), torch.tensor([2, 0, 3])), min_opset=11),
    dynamic("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1)),
    *typed("tile", lambda x: x.tile((2,))),
    Case("tile_more", lambda x: x.tile((2, 1, 2)), _x(3, 4)),
    *typed("unfold", lambda x: x.unfold(2, 2, 1)),
    Case("unfold_step", lambda x: x.unfold(0, 3, 2), _x(7, 2)),
    dynamic("unfold", lambda x: x.unfold(1, 2, 1)),
    *typed("as_strided", lambda x: x.as_strided((3, 2), (4, 2), 1)),
    *typed("broadcast_tensors", lambda x: torch.broadcast_tensors(x, x[0, :, :1]), min_opset=8),
    dynamic("broadcast_tensors", lambda x: torch.broadcast_tensors(x[:, :1], x[0]), min_opset=8),
    # joining
    *typed("cat", lambda x: torch.cat([x, x * 1 if x.dtype != torch.bool else x], 1)),
    Case("cat_mixed", lambda x, y: torch.cat([x, y], 0), lambda: (torch.randn(2, 3), torch.arange(6).view(2, 3))),
    Case("cat_empty", lambda x, y: torch.cat([x, y], 0), lambda: (torch.randn(3), torch.randn(0))),
    dynamic("cat", lambda x: torch.cat([x, x], 0)),
    *typed("stack", lambda x: torch.stack([x, x], -1)),
    Case("stack_mixed", lambda x, y: torch.stack([x, y]), lambda: (torch.randn(2, 3), torch.arange(6).view(2, 3))),
    dynamic("stack", lambda x: torch.stack([x, x], 1)),
    *typed("hstack", lambda x: torch.hstack([x, x])),
    Case("hstack_1d", lambda x: torch.hstack([x, x]), _x(3)),
    *typed("vstack", lambda x: torch.vstack([x[0, 0], x[0, 1]])),
    Case("dstack", lambda x: torch.dstack([x, x]), _x(2, 3)),
    Case("atleast_1d", lambda x: torch.atleast_1d(x.sum()), _x(2, 3)),
    Case("atleast_2d", lambda x: torch.atleast_2d(x[0]), _x(2, 3)),
    Case("atleast_3d", lambda x: torch.atleast_3d(x), _x(2, 3)),
    Case("atleast_3d_1d", lambda x: torch.atleast_3d(x[0]), _x(2, 3)),
    Case("atleast_2d_list", lambda x: torch.atleast_2d(x[0, 0], x[0]), _x(2, 3)),
    *typed("meshgrid", lambda x: torch.meshgrid(x[0, :, 0], x[0, 0], indexing="ij"), min_opset=8),
    Case("meshgrid_xy", lambda x, y: torch.meshgrid(x, y, indexing="xy"),
         lambda: (torch.randn(3), torch.randn(4)), min_opset=8),
    Case("meshgrid_3", lambda x, y: torch.meshgrid(x, y, x, indexing="ij"),
         lambda: (torch.randn(3), torch.randn(4)), min_opset=8),
    # splitting
    *typed("split", lambda x: x.split(2, 2)),
    Case("split_uneven", lambda x: x.split(2), _x(5, 2), opsets=(13, 18)),
    Case("split_sizes", lambda x: x.split([1, 3], 1), _x(2, 4), opsets=(13, 18)),
    *typed("split_with_sizes", lambda x: torch.split(x, [1, 2], 1), opsets=(13, 18)),
    Case("split_zero", lambda x: torch.split(x, [0, 2, 2], 1), _x(2, 4)),
    dynamic("split", lambda x: x.split(2, 2)),
    dynamic("split_batch", lambda x: x.split(2, 0), shape=(4, 3), other=(3, 3)),
    Case("unsafe_split", lambda x: torch._VF.unsafe_split(x, 2, 1), _x(2, 5)),
    Case("unsafe_split_with_sizes", lambda x: torch._VF.unsafe_split_with_sizes(x, [1, 4], 1), _x(2, 5)),
    *typed("tensor_split", lambda x: x.tensor_split(3, 2), opsets=(13,)),
    Case("tensor_split_indices", lambda x: x.tensor_split([1, 4, 3], 1), _x(2, 5)),
    *typed("chunk", lambda x: x.chunk(2, -1), opsets=(13, 18)),
    Case("chunk_fewer", lambda x: x.chunk(4, 1), _x(2, 6)),
    dynamic("chunk_batch", lambda x: x.chunk(2, 0), shape=(4, 3), other=(6, 3), min_opset=10),
    Case("unsafe_chunk", lambda x: torch._VF.unsafe_chunk(x, 2, 1), _x(2, 4)),
    *typed("unbind", lambda x: x.unbind(1), opsets=(13,)),
    dynamic("unbind", lambda x: x.unbind(2)),
    Case("unbind_dynamic_dim", lambda x: x.unbind(0), _x(2, 3), export_options=DYN,
         other_inputs=lambda: [(torch.randn(2, 3),)]),
    *typed("narrow", lambda x: x.narrow(1, 1, 2)),
    Case("narrow_neg", lambda x: x.narrow(-1, -3, 2), _x(2, 5)),
    Case("narrow_tensor", lambda x: x.narrow(1, torch.tensor(1), 2), _x(2, 5)),
    dynamic("narrow", lambda x: x.narrow(2, 1, 2)),
    # reordering
    *typed("flip", lambda x: x.flip(0, 2), opsets=(10,)),
    dynamic("flip", lambda x: x.flip(1)),
    dynamic("flip_batch", lambda x: x.flip(0), min_opset=10),
    Case("fliplr", lambda x: torch.fliplr(x), _x(2, 3), opsets=(10,)),
    *typed("roll", lambda x: x.roll(1, 2)),
    Case("roll_multi", lambda x: x.roll((1, -2), (0, 1)), _x(3, 4)),
    Case("roll_flat", lambda x: x.roll(3), _x(3, 4)),
    Case("roll_big", lambda x: x.roll(7, 1), _x(3, 4)),
    dynamic("roll", lambda x: x.roll(1, 2)),
    *typed("rot90", lambda x: x.rot90(1, (1, 2)), opsets=(10,)),
    Case("rot90_2", lambda x: x.rot90(2), _x(3, 4), opsets=(10,)),
    Case("rot90_3", lambda x: x.rot90(-1, (0, 1)), _x(3, 4), opsets=(10,)),
    # diagonals and triangles
    *typed("diagonal", lambda x: x.diagonal(0, 1, 2)),
    Case("diagonal_offset", lambda x: x.diagonal(1), _x(3, 4)),
    Case("diagonal_neg_offset", lambda x: x.diagonal(-1, 0, 2), _x(3, 2, 4)),
    dynamic("diagonal", lambda x: x.diagonal(0, 1, 2)),
    *typed("diag", lambda x: torch.diag(x[0, 0])),
    Case("diag_offset", lambda x: torch.diag(x, -2), _x(3)),
    Case("diag_2d", lambda x: torch.diag(x, 1), _x(3, 4)),
    *typed("tril", lambda x: x.tril(), min_opset=9, opsets=(14,)),
    *typed("tril_narrow", lambda x: x.tril(), dtypes=(torch.int8, torch.int16), min_opset=9, opsets=(14,)),
    Case("tril_k", lambda x: x.tril(-1), _x(4, 4), min_opset=9, opsets=(14,)),
    *typed("triu", lambda x: x.triu(1), min_opset=9, opsets=(14,)),
    dynamic("triu", lambda x: x.triu(), min_opset=9, opsets=(14,)),
    Case("tril_dynamic_matrix", lambda x: x.tril(), _x(3, 4), min_opset=14,
         export_options=dict(input_names=["x"], dynamic_axes={"x": {0: "n"}}),
         other_inputs=lambda: [(torch.randn(5, 4),)]),
    # casts
    *typed("to_int32", lambda x: x.to(torch.int32)),
    *typed("to_float", lambda x: x.to(torch.float32)),
    *typed("to_bool", lambda x: x.to(torch.bool)),
    Case("to_other", lambda x, y: x.to(y), lambda: (torch.randn(3), torch.arange(3))),
    # ``other`` made from sizes, so known at export time: its dtype still decides
    Case("to_other_constant", lambda x: x.to(torch.ones(x.shape, dtype=torch.bool)) & (x > 0), _x(2, 3)),
    Case("to_device_dtype", lambda x: x.to("cpu", torch.float64), _x(3)),
    Case("to_same", lambda x: x.to(torch.float32), _x(3)),
    Case("type_as", lambda x, y: x.type_as(y), lambda: (torch.randn(3) * 5, torch.arange(3))),
    *typed("float", lambda x: x.float(), dtypes=(I64, BOOL)),
    Case("long", lambda x: x.long(), lambda: (torch.randn(4) * 5,)),
    Case("int", lambda x: x.int(), lambda: (torch.randn(4) * 5,)),
    Case("bool", lambda x: x.bool(), lambda: (torch.tensor([0.0, 1.5, -2.0]),)),
    Case("half", lambda x: x.half(), lambda: (torch.randn(4),), rtol=1e-3, atol=1e-3),
    Case("double", lambda x: x.double(), lambda: (torch.randn(4),)),
]


@pytest.mark.parametrize("case,opset", params(CASES))
def test_shape_op(case, opset):
    run_case(case, opset)


@pytest.mark.parametrize("case,opset", below_min_params(CASES))
def test_shape_op_below_min_opset(case, opset):
    run_below_min(case, opset)


def _constant_pieces(kind: str, attr: str):
    """A capture that turns traced ``aten::chunk``/``aten::split`` + ListUnpack into ``kind``, as JIT
    passes do for scripted code (prim::ConstantChunk, prim::ConstantSplit)."""
    from torchscript_onnx.pipeline import capture as capture_mod

    original = capture_mod.capture

    def capture(*args, **kwargs):
        captured = original(*args, **kwargs)
        graph = captured.graph
        for node in [n for n in graph.nodes() if n.kind() in ("aten::chunk", "aten::split")]:
            unpack = next(u.user for u in node.output().uses())
            count, dim = node.inputsAt(1).toIValue(), node.inputsAt(2).toIValue()
            new = graph.create(kind, [node.inputsAt(0)], unpack.outputsSize())
            new.i_(attr, count)
            new.i_("dim", dim)
            new.insertBefore(unpack)
            for k in range(unpack.outputsSize()):
                new.outputsAt(k).setType(unpack.outputsAt(k).type())
                unpack.outputsAt(k).replaceAllUsesWith(new.outputsAt(k))
            unpack.destroy()
            node.destroy()
        return captured

    return capture


@pytest.mark.parametrize("kind,attr,fn", [
    ("prim::ConstantChunk", "chunks", lambda x: x.chunk(3, 1)),
    ("prim::ConstantSplit", "split_size", lambda x: x.split(2, 1)),
])
@pytest.mark.parametrize("opset", [9, 13, 18])
def test_constant_chunk_and_split(kind, attr, fn, opset, monkeypatch):
    from torchscript_onnx.pipeline import capture as capture_mod

    monkeypatch.setattr(capture_mod, "capture", _constant_pieces(kind, attr))
    run_case(Case(kind, lambda x: [p * 2 for p in fn(x)], _x(2, 5)), opset)


def _op_types(fn, inputs, opset=17, **options):
    import io

    import onnx

    from torchscript_onnx import export

    buffer = io.BytesIO()
    export(Case("m", fn, None).module(), inputs, buffer, opset_version=opset, **options)
    return [n.op_type for n in onnx.load_from_string(buffer.getvalue()).graph.node]


@pytest.mark.parametrize("fn", [
    lambda x: x.view(x.size(0), -1),
    lambda x: x.flatten(1),
    lambda x: x[:, :1].expand(x.size(0), 6, 4),
    lambda x: x.narrow(2, 1, 2),
    lambda x: x.unflatten(1, (3, 1)),
    lambda x: x.repeat_interleave(2, dim=1),
])
def test_static_shapes_fold(fn):
    assert "Shape" not in _op_types(fn, (torch.randn(2, 3, 4),))


def test_dynamic_sizes_stay_runtime():
    assert "Shape" in _op_types(lambda x: x.view(x.size(0), -1), (torch.randn(2, 3, 4),), **DYN)
