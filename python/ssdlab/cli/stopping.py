"""Why a command stopped early: a signal's reason, kept for the partial result that the run or
sweep commands print and write. Its own module so that the commands and the entry point that
installs the handler both read it without importing each other."""

from __future__ import annotations

from types import FrameType

#: The reason a signal gave, when one stopped the command (empty: none, or Ctrl-C).
STOPPED_BY: dict[str, str] = {}


def stop_reason() -> str:
    """What a partial result says stopped it: SIGTERM's reason, else Ctrl-C's."""
    return STOPPED_BY.get("reason", "interrupted by SIGINT (Ctrl-C)")


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM stops a command as Ctrl-C does, with its own reason."""
    STOPPED_BY["reason"] = "terminated by SIGTERM"
    raise KeyboardInterrupt
