"""Writing an output file without harming what stands at its path.

A finished file replaces the old one at once (written beside it, then renamed over it), so a
reader never sees half a file — but only where the path is, or will be, a regular file. A
symlink is followed to the file it names (the link stays); a device, FIFO or socket (``--out
/dev/null``, ``--out /dev/stdout``, a pipe) is written in place, never replaced by a file; a
directory is refused."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


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


def write_output_text(target: Path, text: str) -> Path:
    return write_output(target, lambda p: p.write_text(text, encoding="utf-8"))


def write_output_bytes(target: Path, data: bytes) -> Path:
    return write_output(target, lambda p: p.write_bytes(data))
