"""Writing to a path: through symlinks, keeping the file's mode, into devices and FIFOs in place,
errors that name the path given, and no temporary file left behind by SIGTERM/SIGINT.

Every model written is compared byte for byte with ``Exported.to_bytes()`` (the serializer is
deterministic), and the symlink case also runs in onnxruntime against eager PyTorch.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading

import numpy as np
import onnxruntime as ort
import pytest
import torch

import torchscript_onnx as tso
from torchscript_onnx.pipeline import atomic_files, serialize
from torchscript_onnx.api import build

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 300)  # a 19 KiB weight: external data has something to hold

    def forward(self, x):
        return torch.relu(self.linear(x))


def _model():
    torch.manual_seed(0)
    model = Small().eval()
    inputs = (torch.randn(2, 16),)
    return model, inputs, build(model, inputs)


def _temps(*folders) -> list[str]:
    return [name for folder in folders for name in os.listdir(folder) if name.startswith(atomic_files.TEMP_PREFIX)]


def _run_matches_eager(path, model, inputs) -> None:
    session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: inputs[0].numpy()})[0]
    np.testing.assert_allclose(got, model(*inputs).detach().numpy(), rtol=1e-5, atol=1e-6)


# -- symlinks -----------------------------------------------------------------------------------------

# (link path, what it points to (relative to the link's folder), the file that must receive the model)
SYMLINK_CASES = {
    "to_an_existing_file": ("links/m.onnx", "../real/model.onnx", "real/model.onnx"),
    "dangling": ("links/m.onnx", "../real/new.onnx", "real/new.onnx"),
    "chain_of_two": ("links/m.onnx", "hop.onnx", "real/model.onnx"),  # links/hop.onnx -> ../real/model.onnx
}


@pytest.mark.parametrize("case", SYMLINK_CASES, ids=list(SYMLINK_CASES))
def test_write_through_a_symlink(case, tmp_path):
    link, points_to, receiver = SYMLINK_CASES[case]
    (tmp_path / "links").mkdir()
    (tmp_path / "real").mkdir()
    (tmp_path / "real/model.onnx").write_bytes(b"stale model")
    if case == "chain_of_two":
        os.symlink("../real/model.onnx", tmp_path / "links/hop.onnx")
    os.symlink(points_to, tmp_path / link)
    model, inputs, exported = _model()
    tso.export(model, inputs, tmp_path / link)
    assert os.path.islink(tmp_path / link) and os.readlink(tmp_path / link) == points_to
    assert (tmp_path / receiver).read_bytes() == exported.to_bytes()
    assert not os.path.islink(tmp_path / receiver)
    assert _temps(tmp_path / "links", tmp_path / "real") == []
    _run_matches_eager(tmp_path / link, model, inputs)


def test_external_data_through_symlinks(tmp_path):
    """Each of the pair is written through its own link; the data file is named after the path given."""
    (tmp_path / "snapshot").mkdir()
    (tmp_path / "blobs").mkdir()
    for name, blob in (("m.onnx", "model-blob"), ("m.onnx.data", "data-blob")):
        (tmp_path / "blobs" / blob).write_bytes(b"stale")
        os.symlink(f"../blobs/{blob}", tmp_path / "snapshot" / name)
    model, inputs, exported = _model()
    exported.save(tmp_path / "snapshot/m.onnx", external_data=True)
    assert sorted(os.listdir(tmp_path / "snapshot")) == ["m.onnx", "m.onnx.data"]
    assert all(os.path.islink(tmp_path / "snapshot" / name) for name in ("m.onnx", "m.onnx.data"))
    assert sorted(os.listdir(tmp_path / "blobs")) == ["data-blob", "model-blob"]
    assert (tmp_path / "blobs/data-blob").stat().st_size > 300 * 16 * 4
    _run_matches_eager(tmp_path / "snapshot/m.onnx", model, inputs)


# -- permission bits and owner ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604, 0o755], ids=oct)
def test_an_existing_files_mode_is_kept(mode, tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    os.chmod(path, mode)
    _, _, exported = _model()
    exported.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert path.read_bytes() == exported.to_bytes()


@contextlib.contextmanager
def _umask(mask: int):
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_the_mode_open_gives(mask, tmp_path):
    _, _, exported = _model()
    with _umask(mask):
        exported.save(tmp_path / "m.onnx")
        with open(tmp_path / "by_open", "wb"):
            pass
    assert stat.S_IMODE(os.stat(tmp_path / "m.onnx").st_mode) == 0o666 & ~mask
    assert stat.S_IMODE(os.stat(tmp_path / "m.onnx").st_mode) == stat.S_IMODE(os.stat(tmp_path / "by_open").st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="setting the case up needs root: only root can give a file to another user")
def test_an_existing_files_owner_is_kept(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    os.chown(path, 65534, 65534)
    _, _, exported = _model()
    exported.save(path)
    info = os.stat(path)
    assert (info.st_uid, info.st_gid) == (65534, 65534)
    assert path.read_bytes() == exported.to_bytes()


# -- devices and FIFOs: written in place ---------------------------------------------------------------

def _device(tmp_path, name: str, minor: int) -> str:
    """A private copy of /dev/<name> (char 1, minor) where mknod is allowed, else the system's own."""
    copy = tmp_path / name
    try:
        os.mknod(copy, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        return os.fspath(copy)
    except (OSError, AttributeError):
        return f"/dev/{name}"


def _needs_dev(name: str):
    return pytest.mark.skipif(not os.path.exists(f"/dev/{name}"), reason=f"no /dev/{name} on this platform")


@_needs_dev("null")
def test_dev_null_is_written_in_place(tmp_path):
    null = _device(tmp_path, "null", 3)
    model, inputs, _ = _model()
    tso.export(model, inputs, null)
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert _temps(os.path.dirname(null)) == []


@_needs_dev("full")
def test_dev_full_is_a_clear_error_and_stays_a_device(tmp_path):
    full = _device(tmp_path, "full", 7)
    model, inputs, _ = _model()
    with pytest.raises(OSError) as raised:
        tso.export(model, inputs, full)
    assert raised.value.errno == errno.ENOSPC
    assert repr(full) in str(raised.value) and atomic_files.TEMP_PREFIX not in str(raised.value)
    assert stat.S_ISCHR(os.stat(full).st_mode)
    assert _temps(os.path.dirname(full)) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    model, inputs, exported = _model()
    tso.export(model, inputs, fifo)
    reader.join(timeout=60)
    assert received == [exported.to_bytes()]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe"]


STDOUT_CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {repo!r})
    import torch
    from torchscript_onnx.api import build
    exported = build(torch.nn.Linear(4, 3).eval(), (torch.ones(2, 4),))
    exported.save("/dev/stdout")
    sys.stderr.buffer.write(exported.to_bytes())  # what stdout should have received
""")


@_needs_dev("stdout")
@pytest.mark.parametrize("stdout_is", ["pipe", "file"])
def test_dev_stdout_is_written_in_place(stdout_is, tmp_path):
    """/dev/stdout links to the descriptor's pipe or file: the model goes there, as open() sends it."""
    command = [sys.executable, "-c", STDOUT_CHILD.format(repo=REPO)]
    if stdout_is == "pipe":
        child = subprocess.run(command, capture_output=True, timeout=300)
        received = child.stdout
    else:
        with open(tmp_path / "stdout.bin", "wb") as stdout:
            child = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, timeout=300)
        received = (tmp_path / "stdout.bin").read_bytes()
        assert os.listdir(tmp_path) == ["stdout.bin"]
    assert child.returncode == 0, child.stderr[-2000:]
    assert received == child.stderr and len(received) > 48


# -- errors name the path given -------------------------------------------------------------------------

@contextlib.contextmanager
def _as_nobody():
    """Root bypasses permission bits: run the block with the effective uid of ``nobody``."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def test_read_only_folder_names_the_target():
    folder = tempfile.mkdtemp(prefix="tso-readonly-")  # under /tmp: reachable by nobody, unlike tmp_path
    try:
        os.chmod(folder, 0o555)
        path = os.path.join(folder, "m.onnx")
        model, inputs, exported = _model()
        torch.onnx.export(model, inputs, io.BytesIO(), dynamo=False)  # legacy's lazy imports, while readable
        with _as_nobody():
            if os.access in os.supports_effective_ids:
                assert not os.access(folder, os.W_OK, effective_ids=True)
            with pytest.raises(PermissionError) as ours:
                tso.export(model, inputs, path)
            with pytest.raises(PermissionError) as legacy:
                torch.onnx.export(model, inputs, path, dynamo=False)
        assert type(ours.value) is type(legacy.value)  # `except PermissionError` keeps working
        assert str(ours.value) == f"[Errno 13] Permission denied: {path!r}" == str(legacy.value)
        assert os.listdir(folder) == []
    finally:
        os.chmod(folder, 0o755)
        os.rmdir(folder)


def _under_a_file(tmp):
    (tmp / "file.txt").write_bytes(b"x")
    return tmp / "file.txt" / "m.onnx"


def _a_folder(tmp):
    (tmp / "dir.onnx").mkdir()
    return tmp / "dir.onnx"


def test_read_only_file_is_refused_as_open_refuses_it():
    """A rename could replace a file its owner made read-only; legacy's open() refuses: so do we."""
    folder = tempfile.mkdtemp(prefix="tso-readonly-file-")
    try:
        os.chmod(folder, 0o777)
        path = os.path.join(folder, "m.onnx")
        with open(path, "wb") as file:
            file.write(b"kept")
        os.chmod(path, 0o444)
        os.chown(path, 65534, 65534) if os.geteuid() == 0 else None
        model, inputs, _ = _model()
        torch.onnx.export(model, inputs, io.BytesIO(), dynamo=False)  # legacy's lazy imports, while readable
        with _as_nobody():
            with pytest.raises(PermissionError) as ours:
                tso.export(model, inputs, path)
            with pytest.raises(PermissionError) as legacy:
                torch.onnx.export(model, inputs, path, dynamo=False)
        assert str(ours.value) == f"[Errno 13] Permission denied: {path!r}" == str(legacy.value)
        assert os.listdir(folder) == ["m.onnx"]
        with open(path, "rb") as file:
            assert file.read() == b"kept"
    finally:
        os.chmod(folder, 0o755)
        os.unlink(os.path.join(folder, "m.onnx"))
        os.rmdir(folder)


# (how the bad path is made, the OSError subclass expected)
BAD_PATH_CASES = {
    "parent_is_a_file": (_under_a_file, NotADirectoryError),
    "name_too_long": (lambda tmp: tmp / ("n" * 300 + ".onnx"), OSError),
    "target_is_a_folder": (_a_folder, IsADirectoryError),
}


@pytest.mark.parametrize("external_data", [False, True], ids=["one_file", "external"])
@pytest.mark.parametrize("case", BAD_PATH_CASES, ids=list(BAD_PATH_CASES))
def test_errors_name_the_target_not_a_temporary(case, external_data, tmp_path):
    make, expected = BAD_PATH_CASES[case]
    path = make(tmp_path)
    before = sorted(os.listdir(tmp_path))
    _, _, exported = _model()
    with pytest.raises(expected) as raised:
        exported.save(str(path), external_data=external_data)
    text = str(raised.value)
    assert str(path) in text or f"{path}.data" in text
    assert atomic_files.TEMP_PREFIX not in text
    assert sorted(os.listdir(tmp_path)) == before


def test_handlers_are_restored_and_other_threads_can_write(tmp_path):
    _, _, exported = _model()
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    exported.save(tmp_path / "main.onnx")
    assert {s: signal.getsignal(s) for s in before} == before
    errors = []

    def save_in_thread():
        try:
            exported.save(tmp_path / "thread.onnx")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    thread = threading.Thread(target=save_in_thread)
    thread.start()
    thread.join()
    assert errors == []
    assert (tmp_path / "thread.onnx").read_bytes() == exported.to_bytes()


# -- SIGTERM / SIGINT during the write --------------------------------------------------------------------

# The child exports a model with 256 MiB of weights; its first weight write prints "writing" and
# sleeps, so the parent signals it in the middle of the write, while the temporary file exists.
CHILD = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {repo!r})
    import torch
    from torchscript_onnx.pipeline import serialize
    from torchscript_onnx.api import build

    class Big(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(8192, 8192))  # 256 MiB
        def forward(self, x):
            return x @ self.weight

    handler = {handler!r}
    if handler == "default":
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    elif handler == "exits_3":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    exported = build(Big().eval(), (torch.ones(1, 8192),))
    write_raw = serialize._write_raw
    def slow_write_raw(stream, field, pieces):
        if field.nbytes > 2**20:
            stream.write(bytes(2**20))
            print("writing", flush=True)
            time.sleep(120)
        write_raw(stream, field, pieces)
    serialize._write_raw = slow_write_raw
    exported.save({path!r}, external_data={external_data!r})
    print("finished", flush=True)
""")

# (signal, the child's handler setting, external data, expected return code)
SIGNAL_CASES = {
    "sigterm": (signal.SIGTERM, "python", False, -signal.SIGTERM),
    "sigterm_external_pair": (signal.SIGTERM, "python", True, -signal.SIGTERM),
    "sigint_keyboard_interrupt": (signal.SIGINT, "python", False, -signal.SIGINT),
    "sigint_default_action": (signal.SIGINT, "default", False, -signal.SIGINT),
    "sigterm_user_handler_exits": (signal.SIGTERM, "exits_3", False, 3),
}


@pytest.mark.parametrize("case", SIGNAL_CASES, ids=list(SIGNAL_CASES))
def test_a_signal_during_the_write_leaves_no_temporary(case, tmp_path):
    signum, handler, external_data, returncode = SIGNAL_CASES[case]
    path = tmp_path / "m.onnx"
    path.write_bytes(b"previous model")
    if external_data:
        (tmp_path / "m.onnx.data").write_bytes(b"previous data")
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    script = CHILD.format(repo=REPO, handler=handler, path=os.fspath(path), external_data=external_data)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        line = child.stdout.readline()
        assert line == "writing\n", child.stderr.read()
        assert len(_temps(tmp_path)) == 1  # the write is under way, in a temporary file
        child.send_signal(signum)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == returncode, child.stderr.read()
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before


# The child's SIGTERM arrives while the old data file is being moved aside, the most delicate
# moment of replacing a pair: the renames finish first, then the process ends.
RENAME_CHILD = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {repo!r})
    import torch
    from torchscript_onnx.pipeline import atomic_files
    from torchscript_onnx.api import build

    torch.manual_seed(0)
    exported = build(torch.nn.Linear(16, 300).eval(), (torch.ones(2, 16),))
    replace = os.replace
    def replace_then_signal(src, dst):
        replace(src, dst)
        if os.path.basename(dst).startswith(atomic_files.TEMP_PREFIX):  # the old data file, moved aside
            os.kill(os.getpid(), signal.SIGTERM)
    atomic_files.os.replace = replace_then_signal
    exported.save({path!r}, external_data=True)
    print("survived", flush=True)
""")


def test_a_signal_while_a_pair_is_renamed_lets_the_renames_finish(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"previous model")
    (tmp_path / "m.onnx.data").write_bytes(b"previous data")
    child = subprocess.run([sys.executable, "-c", RENAME_CHILD.format(repo=REPO, path=os.fspath(path))],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGTERM, child.stderr[-2000:]
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnx.data"]
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 300).eval()
    _run_matches_eager(path, model, (torch.randn(2, 16),))
