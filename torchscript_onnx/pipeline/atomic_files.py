"""Files written whole or not at all: a temporary file beside each target, renamed over it only when
complete, through a symlink to its final target and keeping an existing file's mode; devices and
FIFOs written in place. Several files (a model and its external data) are all written before any is
renamed, and put back as they were if a rename fails or SIGTERM/SIGINT arrives meanwhile.

``save_files`` takes (target, write(stream)) pairs: what goes into each file is the serializer's
business, where and how safely it lands is this module's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import signal
import stat
import threading
from collections.abc import Iterator

from . import progress


TEMP_PREFIX = ".torchscript-onnx-"


@dataclasses.dataclass(frozen=True)
class _Target:
    """Where one file goes. ``given``: the path as the caller gave it, named in every error;
    ``real``: the file the bytes end up in (a symlink's final target: the link stays a link and
    points at the new file); ``mode``/``owner``: an existing regular file's permission bits and
    owner, given to its replacement; ``direct``: an existing device, FIFO or socket, written in
    place as ``open(path, "wb")`` would (no temporary file, no rename: a device is never replaced)."""

    given: str
    real: str
    mode: int | None = None
    owner: tuple[int, int] | None = None
    direct: bool = False

    @property
    def folder(self) -> str:
        return os.path.dirname(self.real)


# Links whose target is an open file descriptor (the kernel's "magic" links): what they open is
# the descriptor's file or pipe, which a rename beside them could not reach, so they are written in place.
FD_LINK_FOLDERS = ("/proc/", "/dev/fd/")


def _through_fd_link(path: str) -> bool:
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on a chain of links
        if current.startswith(FD_LINK_FOLDERS):
            return True
        if not os.path.islink(current):
            return False
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    return False


def file_target(path: str, what: str = "f") -> _Target:
    try:
        info = os.stat(path)  # what opening the path reaches, as the kernel follows its links
    except OSError:  # a new file (or a path that cannot be: creating it raises the error)
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{what} is a directory, not a file path", path)
    if info is not None and (not stat.S_ISREG(info.st_mode) or _through_fd_link(path)):
        return _Target(path, path, direct=True)  # a device, FIFO, socket, /dev/stdout: in place
    real = os.path.realpath(path)
    if info is None:
        return _Target(path, real)
    if not _writable(path):  # as open(path, "wb") refuses it: a rename must not get around that
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    return _Target(path, real, stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid))


def _writable(path: str) -> bool:
    if os.access in os.supports_effective_ids:
        return os.access(path, os.W_OK, effective_ids=True)
    return os.access(path, os.W_OK)


def _named(error: OSError, target: _Target) -> OSError:
    """``error`` from writing ``target``, naming the path the caller gave (not a temporary file)."""
    text = str(error)
    if error.filename == target.given and not error.filename2:
        return error
    if error.filename is None and target.given in text and TEMP_PREFIX not in text:
        return error
    reason = error.strerror or text
    if os.path.abspath(target.real) != os.path.abspath(target.given):
        reason += f" (writing {target.real!r}, which it links to)"
    try:
        if error.errno is not None:
            return type(error)(error.errno, reason, target.given)
        return type(error)(f"{reason}: {target.given!r}")
    except Exception:  # an OSError subclass with another constructor
        return OSError(error.errno, reason, target.given)


class _Interrupted(BaseException):
    """SIGTERM/SIGINT arrived during a write while its handler was the default one (end the
    process): raised to unwind the write, so its temporary files are removed, before
    ``_SignalGuard`` delivers the signal again."""


class _SignalGuard:
    """Within ``with``: a SIGTERM or SIGINT that would end the process first unwinds the write (its
    ``finally`` removes the temporaries, a half-replaced pair is put back), then is delivered again
    with the handler it had, so the process ends as it would have. A Python handler (SIGINT's
    ``KeyboardInterrupt``, a user's) runs as it would have; ignored signals stay ignored. Only the
    main thread can install handlers; elsewhere this does nothing."""

    SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT") if hasattr(signal, name))

    def __init__(self, temps: list[str]) -> None:
        self.temps = temps  # removed again on the way out, should the signal have cut the cleanup short
        self.previous: dict = {}
        self.received = None
        self.deferring = False
        self.pending: list[int] = []

    def __enter__(self) -> _SignalGuard:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                handler = signal.getsignal(signum)
                if handler is signal.SIG_IGN or handler is None:  # ignored, or not installed from Python
                    continue
                try:
                    signal.signal(signum, self._handle)
                except (ValueError, OSError):
                    continue
                self.previous[signum] = handler
        return self

    def _handle(self, signum, frame) -> None:
        if self.deferring:
            self.pending.append(signum)
            return
        handler = self.previous[signum]
        if callable(handler):
            handler(signum, frame)  # e.g. KeyboardInterrupt, which unwinds the write
        elif self.received is None:
            self.received = signum
            raise _Interrupted(f"signal {signum} during the write")

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A block no signal cuts short (renames and their undoing, the cleanup): a signal that
        arrives meanwhile is handled right after it."""
        outer, self.deferring = self.deferring, True
        try:
            yield
        finally:
            self.deferring = outer
        if not outer:
            while self.pending:
                self._handle(self.pending.pop(0), None)

    def __exit__(self, *exc) -> bool:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        if self.received is not None:
            for tmp in self.temps:
                _remove(tmp)
            signal.raise_signal(self.received)  # the default action again: the process ends here
        return False


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # gone already, or not ours to remove: the original error matters more
        pass


def _open_temp(target: _Target, temps: list[str]) -> int:
    """A new temporary file beside ``target.real`` (so that renaming it is atomic): for a new file
    created with mode 0o666 less the umask, as ``open()`` creates files; replacing a file, readable
    by the writer only until ``_keep_mode`` gives it the old file's mode."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    mode = 0o666 if target.mode is None else 0o600
    for _ in range(100):
        tmp = os.path.join(target.folder, f"{TEMP_PREFIX}{os.urandom(6).hex()}.tmp")
        temps.append(tmp)  # before it exists: a signal right after the open still finds it
        try:
            return os.open(tmp, flags, mode)
        except FileExistsError:
            temps.remove(tmp)
        except BaseException:
            temps.remove(tmp)
            raise
    raise FileExistsError(errno.EEXIST, "no free temporary file name beside it", target.given)


def _keep_mode(tmp: str, target: _Target) -> None:
    """Give the replacement the replaced file's owner (when allowed) and permission bits."""
    if target.owner is not None and hasattr(os, "chown"):
        info = os.stat(tmp)
        if (info.st_uid, info.st_gid) != target.owner:
            try:
                os.chown(tmp, *target.owner)
            except OSError:  # only root may give a file away: the writer owns the new file
                pass
    os.chmod(tmp, target.mode)


def _write_file(target: _Target, temps: list[str], write, bar) -> str | None:
    """Write ``target``: in place when it is a device or FIFO (returns None), else to a temporary
    file beside it (returned, for ``_rename``)."""
    try:
        if target.direct:
            with open(target.real, "wb") as stream:
                write(progress.CountingStream(stream, bar) if bar else stream)
            return None
        fd = _open_temp(target, temps)
        tmp = temps[-1]
        with os.fdopen(fd, "wb") as stream:
            write(progress.CountingStream(stream, bar) if bar else stream)
        if target.mode is not None:
            _keep_mode(tmp, target)
        return tmp
    except OSError as error:
        named = _named(error, target)
        if named is error:
            raise
        raise named from error


def _rename(tmp: str, target: _Target, temps: list[str]) -> None:
    try:
        os.replace(tmp, target.real)
    except OSError as error:
        raise _named(error, target) from error
    temps.remove(tmp)


def save_files(files: list[tuple[_Target, object]], total: int) -> None:
    """Write ``files`` ((target, write(stream)) pairs), each complete before any is renamed into
    place; the last rename completes the save. If a rename fails (or a signal ends the process
    meanwhile), the files replaced before it are put back and the new ones removed."""
    bar = progress.write_bar(total, os.path.basename(files[-1][0].given))
    temps: list[str] = []
    with _SignalGuard(temps) as guard:
        try:
            written = [(target, _write_file(target, temps, write, bar)) for target, write in files]
            with guard.deferred():
                _replace_all([(target, tmp) for target, tmp in written if tmp is not None], temps)
        finally:
            if bar is not None:
                bar.close()
            with guard.deferred():
                for tmp in temps:
                    _remove(tmp)
                del temps[:]


def _replace_all(written: list[tuple[_Target, str]], temps: list[str]) -> None:
    """Rename each temporary over its target; all but the last target are first moved to a backup,
    put back if a later rename fails."""
    steps: list[tuple[_Target, str, str | None]] = []  # (target, temporary, backup of what it replaced)
    try:
        for k, (target, tmp) in enumerate(written):
            backup = None
            if k < len(written) - 1 and os.path.lexists(target.real):
                os.close(_open_temp(target, temps))
                backup = temps[-1]
                os.replace(target.real, backup)
            steps.append((target, tmp, backup))
            _rename(tmp, target, temps)
    except BaseException:
        for target, tmp, backup in reversed(steps):
            if backup is not None:
                os.replace(backup, target.real)
                temps.remove(backup)
            elif tmp not in temps:  # renamed into place where there was no file: remove it again
                _remove(target.real)
        raise
