"""torchscript_onnx.verify: a report per output name (abs and rel differences, pass/fail), at the
traced inputs and at other sizes along the dynamic axes; a mismatch names its output."""

import configparser
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import torchscript_onnx
from torchscript_onnx import VerificationError, verify
from torchscript_onnx.verification import Comparison, Report, compare_outputs, differences

REPO = Path(__file__).resolve().parents[1]


class TwoOutputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x) + 1, self.linear(x).relu()


class FrozenBatch(torch.nn.Module):
    """float() of a traced size is a constant of the trace: right at the traced batch only."""

    def forward(self, x):
        return x * float(x.shape[0]), x + 1


class Lookup(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(7, 5)

    def forward(self, ids, scale):
        return self.table(ids) * scale


def test_report_names_outputs_with_abs_and_rel_differences():
    torch.manual_seed(0)
    report = verify(TwoOutputs().eval(), (torch.randn(2, 4),), output_names=["shifted", "rectified"])
    assert report.ok
    assert [(c.name, c.shape, c.dtype, c.inputs, c.passed) for c in report.comparisons] == [
        ("shifted", (2, 3), "float32", "traced", True), ("rectified", (2, 3), "float32", "traced", True)]
    for c in report.comparisons:
        assert 0 <= c.max_abs_diff <= 1e-5 and 0 <= c.max_rel_diff <= 1e-4
    assert report.max_abs_diff == max(c.max_abs_diff for c in report.comparisons)
    text = str(report)
    assert text.splitlines()[1].split() == ["inputs", "output", "shape", "dtype", "max", "abs", "diff", "max",
                                            "rel", "diff", "result"]
    assert "shifted" in text and "rectified" in text and "all 2 comparison(s) ok" in text
    report.assert_ok()


def test_a_mismatch_names_its_output():
    def wrong_relu(g, input):  # a deliberately wrong conversion that only the second output uses
        return g.op("Sigmoid", input)

    torch.manual_seed(0)
    model, x = TwoOutputs().eval(), (torch.randn(3, 4),)
    torchscript_onnx.register_custom_op_symbolic("aten::relu", wrong_relu, 9)
    try:
        report = verify(model, x, output_names=["shifted", "rectified"], raise_on_mismatch=False)
        with pytest.raises(VerificationError) as raised:
            verify(model, x, output_names=["shifted", "rectified"])
    finally:
        torchscript_onnx.unregister_custom_op_symbolic("aten::relu", 9)
    assert not report.ok
    assert [c.name for c in report.failures] == ["rectified"]
    assert [c.name for c in report.comparisons if c.passed] == ["shifted"]
    assert report.failures[0].max_abs_diff > 0.1
    with pytest.raises(AssertionError) as asserted:
        report.assert_ok()
    for message in (str(raised.value), str(asserted.value)):
        failing = [line for line in message.splitlines() if "FAIL" in line and line.startswith("traced")]
        assert [line.split()[1] for line in failing] == ["rectified"]


def test_other_sizes_along_dynamic_axes_find_a_size_frozen_by_the_trace():
    report = verify(FrozenBatch(), (torch.randn(4, 2),), input_names=["x"], output_names=["scaled", "shifted"],
                    dynamic_axes={"x": {0: "batch"}, "scaled": {0: "batch"}, "shifted": {0: "batch"}},
                    other_sizes=[{"batch": 5}, {"x": {0: 4}}], raise_on_mismatch=False)
    rows = [(c.inputs, c.name, c.shape, c.passed) for c in report.comparisons]
    assert rows == [
        ("traced", "scaled", (4, 2), True), ("traced", "shifted", (4, 2), True),
        ("batch=5", "scaled", (5, 2), False), ("batch=5", "shifted", (5, 2), True),
        ("x:0=4", "scaled", (4, 2), True), ("x:0=4", "shifted", (4, 2), True),
    ]


SIZE_CASES = [
    # (other_sizes, the shapes of the runs' output)
    ({"n": 6}, [(2, 3, 5), (6, 3, 5)]),
    ({"n": 1, "len": 9}, [(2, 3, 5), (1, 9, 5)]),
    ([{"ids": {1: 1}}, {"len": 4}], [(2, 3, 5), (2, 1, 5), (2, 4, 5)]),
]


@pytest.mark.parametrize("other_sizes, shapes", SIZE_CASES)
def test_other_sizes_make_inputs_of_the_same_dtype(other_sizes, shapes):
    torch.manual_seed(0)
    ids, scale = torch.randint(0, 7, (2, 3)), torch.tensor(0.5)
    report = verify(Lookup().eval(), (ids, scale), input_names=["ids", "scale"],
                    dynamic_axes={"ids": {0: "n", 1: "len"}}, other_sizes=other_sizes)
    assert report.ok and [c.shape for c in report.comparisons] == shapes
    assert {c.dtype for c in report.comparisons} == {"float32"}


@pytest.mark.parametrize("other_sizes, message", [
    ({"batch": 5}, "['batch'] name no dynamic axis"),
    ({"x": {1: 3}}, "axis 1 of input 'x' is not dynamic"),
    ({"x": {0: -1}}, "must be an int >= 0"),
])
def test_other_sizes_refuse_what_is_not_dynamic(other_sizes, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        verify(torch.nn.Linear(2, 2), (torch.randn(3, 2),), input_names=["x"], dynamic_axes={"x": {0: "n"}},
               other_sizes=other_sizes)


DIFF_CASES = [
    # (expected, actual, rtol, atol, max abs, max rel, passed)
    ([1.0, 2.0], [1.0, 2.0], 0, 0, 0.0, 0.0, True),
    ([1.0, -4.0], [1.1, -4.0], 1e-4, 1e-5, 0.1, 0.1, False),
    ([100.0], [100.5], 1e-2, 0, 0.5, 0.005, True),
    ([0.0, 1.0], [1e-6, 1.0], 0, 1e-5, 1e-6, float("inf"), True),
    ([float("nan"), 1.0], [float("nan"), 1.0], 0, 0, 0.0, 0.0, True),
    ([float("nan")], [1.0], 1, 1, float("inf"), float("inf"), False),
    ([float("inf")], [float("inf")], 0, 0, 0.0, 0.0, True),
    ([], [], 0, 0, 0.0, 0.0, True),
]


@pytest.mark.parametrize("want, got, rtol, atol, abs_diff, rel_diff, passed", DIFF_CASES)
def test_differences(want, got, rtol, atol, abs_diff, rel_diff, passed):
    result = differences(np.array(want, dtype=np.float64), np.array(got, dtype=np.float64), rtol, atol)
    assert result == (pytest.approx(abs_diff), pytest.approx(rel_diff), passed)


def test_shape_and_dtype_differences_fail_with_a_note():
    expected = [torch.zeros(2, 3), torch.zeros(4, dtype=torch.int64)]
    actual = [np.zeros((3, 2), np.float32), np.zeros(4, np.int32)]
    first, second = compare_outputs(expected, actual, ["a", "b"], 1e-4, 1e-5)
    assert (first.name, first.passed, second.name, second.passed) == ("a", False, "b", False)
    assert "shape (3, 2) from onnxruntime, (2, 3) from PyTorch" in first.note
    assert "dtype int32 from onnxruntime, int64 from PyTorch" in second.note
    report = Report(17, 0, 0, [first, second])
    assert not report.ok and "FAIL (shape (3, 2)" in str(report)


def test_report_of_no_failures_is_ok():
    report = Report(17, 10, 1, [Comparison("y", (1,), 0.0, 0.0, "float32")])
    assert report.ok and report.failures == [] and report.max_rel_diff == 0.0


def test_verify_is_the_package_function_in_a_fresh_interpreter():
    code = ("import torchscript_onnx, torch; assert callable(torchscript_onnx.verify); "
            "from torchscript_onnx.verify import check, run_onnxruntime, verify; "
            "assert verify is torchscript_onnx.verify; "
            "print(torchscript_onnx.verify(torch.nn.ReLU(), (torch.randn(2),)).ok)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr


def test_docstring_and_readme_name_the_extra_that_installs_onnxruntime():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    assert "onnxruntime" in config["options.extras_require"]["verify"]
    assert 'pip install "torchscript-onnx[verify]"' in " ".join(verify.__doc__.split())
    assert "[verify]" in (REPO / "README.md").read_text()


@pytest.mark.parametrize("capture, label", [
    (lambda m, x: m, "traced"),
    (lambda m, x: torch.jit.script(m), "scripted"),
    (lambda m, x: torch.jit.trace(m, x), "scripted"),  # a ScriptModule: export takes its graph, as an archive's
])
def test_rows_of_the_example_inputs_say_how_the_model_was_captured(capture, label):
    torch.manual_seed(0)
    x = (torch.randn(3, 4),)
    model = capture(TwoOutputs().eval(), x)
    report = verify(model, x, input_names=["x"], dynamic_axes={"x": {0: "n"}}, other_sizes={"n": 5})
    assert [c.inputs for c in report.comparisons] == [label, label, "n=5", "n=5"]
    assert str(report).splitlines()[2].startswith(label)


def test_readme_and_docstring_say_what_verify_does_on_a_mismatch():
    """Both say it raises VerificationError by default and returns the report with
    raise_on_mismatch=False; test_a_mismatch_names_its_output checks that it does."""
    readme = " ".join((REPO / "README.md").read_text().split())
    docstring = " ".join(verify.__doc__.split())
    for text in (readme, docstring):
        assert "raises `VerificationError`" in text.replace("``", "`"), text[:200]
        assert "raise_on_mismatch=False" in text and "returns the report" in text
