"""dynamic_axes: both legacy forms, clear errors where legacy only warned, and exported models that
are right for every size along a dynamic axis.

Differences from the legacy exporter (documented here and in the user guide): a name in
``dynamic_axes`` that is neither an input nor an output, and an axis out of range for the value's
rank, are errors before any work (legacy warned and ignored them).
"""

from __future__ import annotations

import io
import os

import onnx
import pytest
import torch
from torch import nn

from tests.optable import Case, params, run_case
from torchscript_onnx import audit, build, export

os.environ["HF_HUB_OFFLINE"] = "1"


def _dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def _export(model, args, **options) -> onnx.ModelProto:
    buffer = io.BytesIO()
    export(model, args, buffer, **options)
    return onnx.load_from_string(buffer.getvalue())


class Add(nn.Module):
    def forward(self, x, y):
        return x + y, (x * y).sum(1)


X, Y = torch.randn(2, 3), torch.randn(2, 3)


def test_dict_form_names_dims_on_inputs_and_outputs():
    proto = _export(Add(), (X, Y), input_names=["x", "y"], output_names=["sum", "reduced"],
                    dynamic_axes={"x": {0: "batch"}, "y": {0: "batch", 1: "width"}, "sum": {0: "batch"},
                                  "reduced": {0: "batch"}})
    dims = {v.name: _dims(v) for v in list(proto.graph.input) + list(proto.graph.output)}
    assert dims == {"x": ["batch", 3], "y": ["batch", "width"], "sum": ["batch", 3], "reduced": ["batch"]}


def test_list_form_generates_legacy_names():
    proto = _export(Add(), (X, Y), input_names=["x", "y"], output_names=["sum"],
                    dynamic_axes={"x": [0, 1], "sum": [1]})
    dims = {v.name: _dims(v) for v in list(proto.graph.input) + list(proto.graph.output)}
    assert dims["x"] == ["x_dynamic_axes_1", "x_dynamic_axes_2"]
    assert dims["sum"] == [2, "sum_dynamic_axes_1"]


def test_output_dims_follow_inputs_without_naming_the_output():
    proto = _export(Add(), (X, Y), input_names=["x", "y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert [_dims(v) for v in proto.graph.output] == [["batch", 3], ["batch"]]


@pytest.mark.parametrize("axes, message, strict", [
    ({"z": {0: "b"}}, "Provided key z", True),    # legacy: a warning, then ignored (tests/test_legacy_signature.py)
    ({"x": {2: "batch"}}, "axis 2", False),       # legacy: an IndexError deep inside, or ignored
    ({"sum": {-3: "batch"}}, "axis -3", False),
])
def test_unknown_axis_is_an_error_and_unknown_name_with_strict(axes, message, strict):
    with pytest.raises(ValueError, match=message):
        export(Add(), (X, Y), io.BytesIO(), input_names=["x", "y"], output_names=["sum"], dynamic_axes=axes,
               strict=strict)


@pytest.mark.parametrize("axes, name", [({"x": {2: "batch"}}, "x"), ({"sum": {5: "batch"}}, "sum")])
def test_an_axis_the_value_lacks_writes_nothing_and_audit_names_it(axes, name, tmp_path):
    path = tmp_path / "m.onnx"
    with pytest.raises(ValueError, match=rf"dynamic_axes\['{name}'\] has axis"):
        export(Add(), (X, Y), str(path), input_names=["x", "y"], output_names=["sum"], dynamic_axes=axes)
    assert not path.exists() and not list(tmp_path.iterdir())
    if name == "sum":  # an output's rank is known after conversion: audit reports it as an issue
        report = audit(Add(), (X, Y), input_names=["x", "y"], output_names=["sum"], dynamic_axes=axes)
        (issue,) = report.issues
        assert issue.category == "dynamic_axes" and "axes the value has" in issue.next_step()
    else:  # an input's rank is known before any work: an argument error, as from export
        with pytest.raises(ValueError, match="dynamic_axes"):
            audit(Add(), (X, Y), input_names=["x", "y"], output_names=["sum"], dynamic_axes=axes)


def test_malformed_dynamic_axes_is_a_type_error():
    with pytest.raises(TypeError):
        export(Add(), (X, Y), io.BytesIO(), input_names=["x", "y"], dynamic_axes={"x": "batch"})


# ---------------------------------------------------------------------------------------------
# Size arithmetic that must stay a runtime computation along dynamic dims


def _dyn(*names, axes=(0, 1)):
    return {"input_names": list(names), "dynamic_axes": {n: list(axes) for n in names}}


def _x(b=2, s=6, h=4):
    return (torch.randn(b, s, h),)


def _others():
    return [_x(3, 10), _x(1, 2)]


SIZE_CASES = [
    Case("view_by_sizes", lambda x: x.view(x.size(0), x.size(1), 2, 2).transpose(1, 2), _x,
         export_options=_dyn("x"), other_inputs=_others),
    Case("reshape_minus_one", lambda x: x.reshape(x.size(0), -1), _x, export_options=_dyn("x"), other_inputs=_others),
    Case("flatten_unflatten", lambda x: x.flatten(0, 1).unflatten(0, (x.size(0), x.size(1))), _x,
         export_options=_dyn("x"), other_inputs=_others),
    Case("expand_by_sizes", lambda x: x[:, :1].expand(x.size(0), x.size(1), 4), _x, min_opset=8,
         export_options=_dyn("x"), other_inputs=_others),
    Case("expand_as", lambda x: x.mean(1, keepdim=True).expand_as(x), _x, min_opset=8,
         export_options=_dyn("x"), other_inputs=_others),
    Case("repeat", lambda x: x.repeat(2, 1, 3), _x, export_options=_dyn("x"), other_inputs=_others),
    Case("arange_of_size", lambda x: x + torch.arange(x.size(1)).unsqueeze(-1), _x, min_opset=11,
         export_options=_dyn("x"), other_inputs=_others),
    Case("new_zeros_of_size", lambda x: x.new_zeros(x.size()) + x.new_ones(x.size(0), 1, 1), _x, min_opset=9,
         export_options=_dyn("x"), other_inputs=_others),
    Case("like_ops", lambda x: torch.zeros_like(x) + torch.ones_like(x) * 2 + torch.full_like(x, 3.0), _x,
         min_opset=9, export_options=_dyn("x"), other_inputs=_others),
    Case("slice_by_size", lambda x: x[:, : x.size(1) // 2] * 2, _x, min_opset=10,
         export_options=_dyn("x"), other_inputs=_others),
    Case("narrow_by_size", lambda x: x.narrow(1, 1, x.size(1) - 1), _x, min_opset=10,
         export_options=_dyn("x"), other_inputs=_others),
    Case("split_by_sizes", lambda x: x.split([1, x.size(1) - 1], dim=1), _x, min_opset=13,
         export_options=_dyn("x"), other_inputs=_others),
    Case("mask_from_sizes", lambda x: x.masked_fill(
        torch.arange(x.size(1)).unsqueeze(-1) >= x.size(1) - 1, 0.0).sum(-1), _x,
         min_opset=11, export_options=_dyn("x"), other_inputs=_others),
    Case("size_arithmetic_to_tensor", lambda x: x * (x.size(0) * x.size(1)) / torch.tensor(x.size(1)), _x,
         min_opset=9, export_options=_dyn("x"), other_inputs=_others),
]


@pytest.mark.parametrize("case, opset", params(SIZE_CASES))
def test_size_arithmetic_stays_dynamic(case, opset):
    run_case(case, opset)


# ---------------------------------------------------------------------------------------------
# Transformer models: no dynamic dim baked in, and static exports fold the shape arithmetic


def _zoo():
    pytest.importorskip("transformers", reason="transformers is in the test extra")
    from bench.transformers_zoo import ZOO

    return ZOO

BATCH, SEQ = 7, 11  # sizes no model dim uses, so a baked-in copy is visible
BAKED_MODELS = ["bert", "gpt2", "llama_padded", "nn_transformer_encoder"]


@pytest.mark.parametrize("name", BAKED_MODELS)
def test_no_dynamic_dim_is_baked_into_shapes(name):
    entry = _zoo()[name]
    model, args = entry.model(), entry.inputs(BATCH, SEQ)
    proto = _export(model, args, opset_version=17, input_names=entry.input_names, output_names=entry.output_names,
                    dynamic_axes=entry.dynamic_axes)
    named = {dim for axes in entry.dynamic_axes.values() for dim in axes.values()}
    for value in list(proto.graph.input) + list(proto.graph.output):
        axes = entry.dynamic_axes.get(value.name, {})
        dims = _dims(value)
        assert all(dims[axis] == dim_name for axis, dim_name in axes.items()), (value.name, dims)
        assert {d for d in dims if isinstance(d, str)} <= named, (value.name, dims)
    inferred = onnx.shape_inference.infer_shapes(proto)
    for value in list(inferred.graph.value_info) + list(inferred.graph.output):
        dims = _dims(value)
        assert BATCH not in dims and SEQ not in dims, f"{value.name}: {dims} holds a traced size"
    # Every Reshape target and Expand shape is computed or free of the traced sizes.
    constants = {n.output[0]: onnx.numpy_helper.to_array(n.attribute[0].t) for n in proto.graph.node
                 if n.op_type == "Constant" and n.attribute[0].name == "value"}
    constants.update({i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer})
    for node in proto.graph.node:
        if node.op_type in ("Reshape", "Expand", "ConstantOfShape", "Tile") and node.input[-1] in constants:
            target = constants[node.input[-1]].tolist()
            assert BATCH not in target and SEQ not in target, f"{node.name} uses {target}"


@pytest.mark.parametrize("name", ["bert", "llama_padded"])
def test_static_export_folds_shape_arithmetic(name):
    entry = _zoo()[name]
    model, args = entry.model(), entry.inputs(BATCH, SEQ)
    dynamic = build(model, args, opset_version=17, input_names=entry.input_names, output_names=entry.output_names,
                    dynamic_axes=entry.dynamic_axes).graph
    static = build(model, args, opset_version=17, input_names=entry.input_names,
                   output_names=entry.output_names).graph
    shape_ops = ("Shape", "Gather", "Range", "Concat", "Unsqueeze")
    assert len(static.nodes) < len(dynamic.nodes)
    assert not any(n.op_type == "Shape" for n in static.nodes)
    assert any(n.op_type == "Shape" for n in dynamic.nodes)
    assert sum(n.op_type in shape_ops for n in static.nodes) < sum(n.op_type in shape_ops for n in dynamic.nodes)
