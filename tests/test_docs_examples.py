"""The Python blocks of the docs marked ``python runnable`` run as written (each in a fresh namespace)."""

from __future__ import annotations

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```python runnable\n(.*?)```", re.S)


def _blocks():
    for path in sorted(DOCS.glob("*.md")):
        for k, code in enumerate(BLOCK.findall(path.read_text())):
            yield pytest.param(code, id=f"{path.name}-{k}")


@pytest.mark.parametrize("code", list(_blocks()))
def test_runnable_doc_block(code):
    exec(compile(code, "<doc>", "exec"), {"__name__": "doc_example"})


def test_some_blocks_are_marked_runnable():
    assert list(_blocks())
