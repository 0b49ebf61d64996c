"""What the importers of other simulators' configs share (docs/import.md).

An importer reads a foreign file into an :class:`Imported`: the ssdlab config as TOML sections
of ``(key, value, comment)`` lines (each comment names the foreign setting it came from), the
flows of each scenario, the command lines of trace replays, and one warning per foreign setting
that could not be carried over. :func:`write_imported` writes the config TOML and the flows
files and checks that the config loads. Bad input raises :class:`ImportInputError`: one line
naming the file, the line, the element or key, the value and what was expected.

The input is untrusted: XML is read with expat directly, and a document type declaration (the
door to entity expansion and external entities) is refused before any of it is expanded.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import xml.parsers.expat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _core
from .._core import ConfigError
from ..files import read_input_text, write_output_text


class ImportInputError(ConfigError):
    """A foreign config ssdlab cannot read or model: the message is one line naming the file,
    the line, the element or key, its value and what was expected."""


Value = str | int | float | bool | list[str]


@dataclass
class Imported:
    """An imported config: ``sections`` maps a TOML table name (``"nand.timing"``) to its lines
    ``(key, value, comment)``, in order; ``flows`` holds each scenario's flows (job field
    dicts), ``replays`` each trace scenario's ``ssdlab run`` arguments after the config;
    ``warnings`` one line per setting not carried over; ``header`` the file's opening comment."""

    source: str
    flow_source: str = ""
    header: list[str] = field(default_factory=list)
    sections: dict[str, list[tuple[str, Value, str]]] = field(default_factory=dict)
    flows: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    replays: list[tuple[str, list[str]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def set(self, section: str, key: str, value: Value, comment: str = "") -> None:
        lines = self.sections.setdefault(section, [])
        for i, (k, _, _) in enumerate(lines):
            if k == key:
                lines[i] = (key, value, comment)
                return
        lines.append((key, value, comment))

    def get(self, section: str, key: str) -> Value | None:
        for k, v, _ in self.sections.get(section, []):
            if k == key:
                return v
        return None

    def warn(self, where: str, value: object, why: str, source: str | None = None) -> None:
        """One warning line: the file (``source``, else the config's), the foreign setting, its
        value, why it was not carried over."""
        self.warnings.append(f"{source or self.source}: {where} = {value}: {why}")


# --------------------------------------------------------------------------------------------
# reading XML safely


@dataclass
class XmlElement:
    """An element of a parsed XML file: its tag, text, children and the line it starts on."""

    tag: str
    line: int
    text: str = ""
    children: list[XmlElement] = field(default_factory=list)


def read_xml(path: str | os.PathLike[str], what: str) -> XmlElement:
    """The root element of the XML file ``path`` (a ``what``, for messages). A document type
    declaration, an entity declaration or malformed XML is an :class:`ImportInputError` naming
    the file and the line."""
    name = os.fspath(path)
    text = read_input_text(name, what, ImportInputError)
    parser = xml.parsers.expat.ParserCreate()
    stack: list[XmlElement] = []
    root: list[XmlElement] = []

    class Refused(Exception):
        pass

    def doctype(*_: object) -> None:
        raise Refused(
            "a document type declaration (<!DOCTYPE ...>), refused: entities and"
            " external references are not read from an untrusted file"
        )

    def entity(*_: object) -> None:
        raise Refused("an entity declaration (<!ENTITY ...>), refused")

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = XmlElement(tag, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(element)
        else:
            root.append(element)
        stack.append(element)

    def end(tag: str) -> None:
        stack.pop()

    def chars(data: str) -> None:
        if stack:
            stack[-1].text += data

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.ExternalEntityRefHandler = lambda *_: 0  # type: ignore[assignment]
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(text, True)
    except Refused as e:
        raise ImportInputError(f"{name}, line {parser.CurrentLineNumber}: {e}") from None
    except xml.parsers.expat.ExpatError as e:
        message = xml.parsers.expat.ErrorString(e.code)
        raise ImportInputError(
            f"{name}, line {e.lineno}: malformed XML ({message}), expected a {what}"
        ) from None
    if not root:
        raise ImportInputError(f"{name}: no XML element, expected a {what}")
    return root[0]


# --------------------------------------------------------------------------------------------
# values


class Reader:
    """Parses a foreign setting's text, raising one-line errors that name ``where`` (the file,
    the line, the element or key)."""

    def __init__(self, where: str, value: str) -> None:
        self.where = where
        self.value = value.strip()

    def fail(self, expected: str) -> ImportInputError:
        return ImportInputError(f"{self.where}: got {self.value!r}, expected {expected}")

    def integer(self, low: int = 0, high: int = 2**32 - 1) -> int:
        text = self.value
        if not text or not (text.isdigit() or (text[0] in "+-" and text[1:].isdigit())):
            raise self.fail(f"a whole number from {low} to {high}")
        number = int(text)
        if not low <= number <= high:
            raise self.fail(f"a whole number from {low} to {high}")
        return number

    def real(self, low: float, high: float) -> float:
        try:
            number = float(self.value)
        except ValueError:
            raise self.fail(f"a number from {low} to {high}") from None
        if not math.isfinite(number) or not low <= number <= high:
            raise self.fail(f"a number from {low} to {high}")
        return number

    def boolean(self, true: tuple[str, ...], false: tuple[str, ...]) -> bool:
        text = self.value.lower()
        if text in true:
            return True
        if text in false:
            return False
        raise self.fail(" or ".join(repr(t) for t in (true[0], false[0])))

    def choice(self, choices: dict[str, Any], upper: bool = True) -> Any:
        key = self.value.upper() if upper else self.value
        if key not in choices:
            raise self.fail("one of " + ", ".join(choices))
        return choices[key]


def duration(ps: int) -> str:
    """A duration in picoseconds as ssdlab's unit text, in the largest unit that keeps it
    whole (``75000000`` → ``"75us"``)."""
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps % scale == 0 and ps >= scale:
            return f"{ps // scale}{unit}"
    return "0ns" if ps == 0 else f"{ps}ps"


def size(n: int) -> str:
    """A byte count as ssdlab's unit text, in the largest binary unit that keeps it whole."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % scale == 0 and n >= scale:
            return f"{n // scale}{unit}"
    return f"{n}B"


# --------------------------------------------------------------------------------------------
# writing


def _toml_value(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's


def _lines(rows: list[tuple[str, Value, str]]) -> list[str]:
    out = []
    for key, value, comment in rows:
        line = f"{key} = {_toml_value(value)}"
        if comment:
            line = f"{line:<28}# {_one_line(comment)}"
        out.append(line)
    return out


def _one_line(text: str) -> str:
    """A comment's text on one line (a file name may hold a line break)."""
    return " ".join(text.splitlines())


def config_toml(imported: Imported) -> str:
    out = [f"# {_one_line(line)}" if line else "#" for line in imported.header]
    for name, rows in imported.sections.items():
        if name == "meta":
            out += ["[meta]", *_lines(rows)]
            break
    for name, rows in imported.sections.items():
        if name != "meta":
            out += ["", f"[{name}]", *_lines(rows)]
    return "\n".join(out) + "\n"


def flows_toml(source: str, label: str, flows: list[dict[str, Any]]) -> str:
    out = [f"# {label} of {_one_line(source)}, imported by `ssdlab import` (docs/import.md)."]
    for flow in flows:
        out += ["", "[[flow]]"]
        for key, value in flow.items():
            if isinstance(value, dict):
                items = ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items())
                out.append(f"{key} = {{ {items} }}")
            else:
                out.append(f"{key} = {_toml_value(value)}")
    return "\n".join(out) + "\n"


def resolve(imported: Imported) -> str:
    """The config's canonical JSON as the core resolves it; a config the core refuses is an
    :class:`ImportInputError` naming the foreign file and the core's reason."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "imported.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(config_toml(imported))
        try:
            return _core.resolve_config(path, [])
        except _core.SsdlabError as e:
            # The core's error names the temporary file as its origin (a part, as data): the
            # rest of the message is said of the config.
            reason = str(e).removeprefix(e.origin) if e.origin else f": {e}"
            raise ImportInputError(
                f"{imported.source}: ssdlab cannot model this drive: the config{reason}"
                + _origin(imported, e.field)
            ) from None


def _origin(imported: Imported, field: str | None) -> str:
    """`` (from <the foreign setting>)`` for the config field a core error names (its
    ``field``): the comment the importer wrote beside that field."""
    if not field:
        return ""
    section, _, key = field.rpartition(".")
    for k, _, comment in imported.sections.get(section, []):
        if k == key and comment:
            return f" (ssdlab's {field} comes from {comment})"
    return ""


@dataclass
class Written:
    """What :func:`write_imported` wrote: the config file and each scenario's file or command."""

    config: Path | None
    config_text: str
    flows: list[Path]
    commands: list[str]


def output_paths(out: Path | None) -> tuple[Path | None, Path | None]:
    """The config file and the directory for flows files from ``-o``: a ``.toml`` path is the
    config (flows files beside it); any other path is a directory that gets ``config.toml``."""
    if out is None:
        return None, None
    if out.suffix == ".toml":
        return out, out.parent
    return out / "config.toml", out


def write_imported(
    imported: Imported,
    out: Path | None,
    check: Callable[[Path], None],
) -> Written:
    """Write the config (to ``out``, or nowhere: the text is returned for standard output) and
    each scenario's flows file beside it; ``check(path)`` loads the written config (a
    ConfigError there names the file). Without ``out`` and with flows, an error asks for -o."""
    text = config_toml(imported)
    resolve(imported)
    config_path, folder = output_paths(out)
    if config_path is None:
        scenarios = len(imported.flows) + len(imported.replays)
        if scenarios:
            raise ImportInputError(
                f"{imported.flow_source}: the workload's {scenarios} scenario(s) are written as"
                " files (and run with commands that name them): expected -o DIR (or -o"
                " CONFIG.toml)"
            )
        return Written(None, text, [], [])
    assert folder is not None
    folder.mkdir(parents=True, exist_ok=True)
    write_output_text(config_path, text)
    check(config_path)
    stem = config_path.stem
    flow_paths = []
    commands = []
    for label, flows in imported.flows:
        path = folder / f"{stem}-{label}.toml"
        write_output_text(path, flows_toml(imported.flow_source, label, flows))
        flow_paths.append(path)
        commands.append(f"ssdlab run {config_path} --job {path}")
    for _, args in imported.replays:
        commands.append(" ".join(["ssdlab", "run", str(config_path), *args]))
    return Written(config_path, text, flow_paths, commands)
