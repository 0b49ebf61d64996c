"""Values that the API and the sweep both write: the TOML literal of an override, and the range
of a seed. They sit below both so that neither imports the other for them."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Mapping
from typing import Any

MAX_SEED = 2**64 - 1  # seeds are u64 in the core


def numpy_types(*names: str) -> tuple[type, ...]:
    """numpy's scalar types ``names`` if something has imported numpy, else none. A value
    cannot be a numpy scalar before numpy is loaded, so the type checks below need not import
    it: that keeps the command's start-up (``ssdlab --help``) free of numpy's 50 ms."""
    numpy = sys.modules.get("numpy")
    return () if numpy is None else tuple(getattr(numpy, name) for name in names)


_TOML_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            # TOML forbids raw control characters inside a basic string.
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_key(key: str) -> str:
    bare = key and all(ch.isascii() and (ch.isalnum() or ch in "-_") for ch in key)
    return key if bare else _toml_string(key)


def toml_literal(value: Any) -> str:
    """Render a Python value as the TOML literal of a ``path=value`` override.

    Strings are quoted (so ``"16KiB"`` stays a string), booleans become ``true``/``false`` and
    numbers are written as they are; lists and mappings become TOML arrays and inline tables.
    """
    if isinstance(value, (bool, *numpy_types("bool_"))):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return "nan"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        return repr(number)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, Mapping):
        items = ", ".join(f"{_toml_key(str(k))} = {toml_literal(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    raise TypeError(f"cannot write a {type(value).__name__} as a TOML value: {value!r}")
