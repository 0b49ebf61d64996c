"""Reading the small text files a user names (job, fio and sweep files) with a bound; writing an
output file without harming what stands at its path.

A finished file replaces the old one at once (written beside it, then renamed over it), so a
reader never sees half a file — but only where the path is, or will be, a regular file. A
symlink is followed to the file it names (the link stays); a device, FIFO or socket (``--out
/dev/null``, ``--out /dev/stdout``, a pipe) is written in place, never replaced by a file; a
directory is refused."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ssdlab._core import MAX_CONFIG_FILE_BYTES

#: The most a job, fio or sweep file may hold: the config file's bound, one constant on the Rust
#: side (``config::MAX_CONFIG_FILE_BYTES``). A path such as /dev/zero or a large file named by
#: mistake is refused at once instead of read until memory runs out.
MAX_INPUT_FILE_BYTES: int = MAX_CONFIG_FILE_BYTES


def read_input_text(
    path: str | os.PathLike[str], what: str, error: Callable[[str], Exception]
) -> str:
    """The text of ``path``, a ``what`` ("sweep file") the user named: a regular file or a pipe
    (``/dev/stdin``), UTF-8 with or without a byte-order mark, at most
    :data:`MAX_INPUT_FILE_BYTES`. Anything else raises ``error(message)``, one line naming the
    path."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read(MAX_INPUT_FILE_BYTES + 1)
    except FileNotFoundError:
        raise error(f"{name}: no such {what}") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, expected a {what}") from None
    except OSError as e:
        raise error(f"{name}: cannot read: {e.strerror}") from None
    if len(data) > MAX_INPUT_FILE_BYTES:
        raise error(
            f"{name}: more than {MAX_INPUT_FILE_BYTES} bytes, expected a {what} of a few KiB"
            " (is it the right file?)"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{name}: not UTF-8 text (byte {e.start}), expected a {what}") from None


def write_output(target: Path, write: Callable[[Path], None]) -> Path:
    """Write ``target`` by calling ``write(path)`` on the path to write to; returns ``target``.
    An error without a file name (a full disk, a quota) is raised again naming ``target``."""
    resolved = Path(os.path.realpath(target))
    if resolved.is_dir():
        raise IsADirectoryError(21, "is a directory, expected a file path", str(target))
    temporary = resolved.with_name(f".{resolved.name}.{os.getpid()}.tmp")
    try:
        if resolved.exists() and not resolved.is_file():
            write(resolved)  # a device, FIFO or socket: in place
            return target
        try:
            write(temporary)
            os.replace(temporary, resolved)
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as error:
        # The user named `target`, not our temporary file.
        if error.filename in (None, str(temporary)):
            raise type(error)(error.errno, error.strerror, str(target)) from error
        raise
    return target


def check_output_path(target: Path) -> None:
    """Raise the OSError that writing ``target`` later would raise, where it can be known now:
    a directory at the path, a folder that does not exist or cannot be written. For a command
    that writes its output only when it stops (``ssdlab serve --json``), so that a bad path does
    not lose the session's result."""
    resolved = Path(os.path.realpath(target))
    if resolved.is_dir():
        raise IsADirectoryError(21, "is a directory, expected a file path", str(target))
    if resolved.exists():
        if resolved.is_file() and not os.access(resolved, os.W_OK):
            raise PermissionError(13, "cannot be written", str(target))
        return
    folder = resolved.parent
    if not folder.is_dir():
        raise FileNotFoundError(2, f"no such folder {folder}", str(target))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(13, f"the folder {folder} cannot be written", str(target))


def write_output_text(target: Path, text: str) -> Path:
    return write_output(target, lambda p: p.write_text(text, encoding="utf-8"))


def write_output_bytes(target: Path, data: bytes) -> Path:
    return write_output(target, lambda p: p.write_bytes(data))
