"""Spec loader: YAML text or a dict -> a frozen :class:`FabricSpec`, with path-named errors.

Every user error becomes a :class:`~zfabric.errors.SpecError` naming the key path and the bad
value (``topology.k[1]: must be an integer >= 2, got 1``). Topology and routing modules read
their own keys through :class:`Reader`, so unknown keys get a did-you-mean everywhere.

A spec is checked whole: errors in independent keys are collected (up to :data:`MAX_ERRORS`)
and raised together as one SpecError, one line per error. Keys whose meaning depends on a bad
key (the routing of an unknown topology kind, the fabric size of a bad ``k``) are skipped.
Every input is bounded before any work (file size, list lengths, integer sizes, the length of
a value quoted in an error), so a hostile file is refused at once and in one line per error.
"""

from __future__ import annotations

import difflib
import math
import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError
from .router_settings import RouterSettings, parse_router
from .traffic_spec import MAX_PACKET_LENGTH, TrafficSpec, parse_traffic

__all__ = [
    "FabricSpec",
    "Reader",
    "TrafficSpec",
    "load_spec",
    "spec_from_dict",
    "describe",
    "MAX_SWITCHES",
    "MAX_ENDPOINTS",
    "MAX_ERRORS",
    "MAX_LIST_LENGTH",
    "MAX_INTEGER",
    "MAX_SPEC_BYTES",
]

#: Fabrics past these sizes are refused before anything is built (docs/specs.md: 8192 endpoints
#: for the HyperZ scalability series' last point, H_{2,2}(8,4) of the 256-processor Z-node).
MAX_SWITCHES = 32768
MAX_ENDPOINTS = 8192
#: A spec with more errors reports the first ones and says it stopped.
MAX_ERRORS = 20
#: Entries per list: a fabric within the size limits has at most 12 dimensions or useful levels.
MAX_LIST_LENGTH = 64
#: Integers without a range of their own: bounds every product of a list to a few hundred digits.
MAX_INTEGER = 10**6
#: Spec files past this size are refused unread (the examples are about 1 KB).
MAX_SPEC_BYTES = 64 * 1024
#: Characters of a bad value quoted in an error; longer ones end in "…".
VALUE_CHARS = 100

_MISSING = object()


# ---- quoting bad values ------------------------------------------------------------------------


class _Short(reprlib.Repr):
    """``repr`` bounded in depth, entries and digits, so quoting an alias bomb or a 5000-digit
    integer costs microseconds (``repr`` of those takes minutes or raises)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 8
        self.maxdict = 6
        self.maxstring = self.maxother = VALUE_CHARS

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() <= 256:
            return repr(x)
        digits = math.floor(x.bit_length() * math.log10(2)) + 1
        return f"<an integer of about {digits} digits>"


_SHORT = _Short()


def short(value: Any) -> str:
    """``repr(value)`` cut to about :data:`VALUE_CHARS` characters."""
    text = _SHORT.repr(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def describe(value: Any) -> str:
    """A bad value as the user wrote it (cut short), with its type when that is the problem."""
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'} {short(value)}"
    return short(value)


def _key_name(name: str) -> str:
    """A user's key as it appears in a key path (an absurdly long key is cut short)."""
    return name if len(name) <= VALUE_CHARS else name[: VALUE_CHARS - 1] + "…"


def _join(path: str, name: str) -> str:
    return f"{path}.{_key_name(name)}" if path else _key_name(name)


# ---- collecting errors -------------------------------------------------------------------------


class _TooMany(Exception):
    """Raised when error ``MAX_ERRORS + 1`` is found: the check stops there."""


class Errors:
    """The errors found so far in one spec."""

    def __init__(self) -> None:
        self.found: list[SpecError] = []

    def add(self, error: SpecError) -> None:
        for single in error.errors:
            if single not in self.found:
                self.found.append(single)
        if len(self.found) > MAX_ERRORS:
            raise _TooMany

    def attempt(self, read: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """Run ``read``; ``(True, value)`` if it found no error, else ``(False, value or None)``.

        An error ``read`` raises after others were recorded in it is dropped: it may be a
        cross-key check that only failed because a bad key was replaced by its default.
        """
        before = len(self.found)
        try:
            value = read(*args)
        except SpecError as error:
            if len(self.found) == before:
                self.add(error)
            return False, None
        return len(self.found) == before, value


class Reader:
    """Reads one mapping of the spec; remembers the keys taken so :meth:`finish` finds strays.

    With ``errors`` (the loader's), a bad optional key is recorded and its default returned, so
    the other keys are still checked; a bad required key is recorded and raised. Without it,
    the first error is raised.
    """

    def __init__(self, data: Any, path: str, errors: Errors | None = None):
        if not isinstance(data, Mapping):
            raise SpecError(path, f"must be a mapping, got {describe(data)}")
        self.path = path
        self.errors = errors
        self._taken: set[str] = set()
        self._misspelt: set[str] = set()  # present keys a missing key's error already names
        for key in data:
            if not isinstance(key, str):
                where = "keys" if path else "top-level keys"
                self.report(SpecError(path, f"{where} must be strings, got {short(key)}"))
        self.data = {key: value for key, value in data.items() if isinstance(key, str)}

    def report(self, error: SpecError) -> None:
        """Record ``error`` (collecting) or raise it (strict): for checks across keys."""
        if self.errors is None:
            raise error
        self.errors.add(error)

    def _fail(self, error: SpecError) -> SpecError:
        """Record ``error`` when collecting; the caller raises it."""
        if self.errors is not None:
            self.errors.add(error)
        return error

    def key(self, name: str) -> str:
        return _join(self.path, name)

    def has(self, name: str) -> bool:
        return name in self.data

    def skip(self, name: str) -> None:
        """Leave key ``name`` unchecked (its meaning depends on a key that is already bad)."""
        self._taken.add(name)

    def get(self, name: str, check: Callable[[Any, str], Any], default: Any = _MISSING) -> Any:
        self._taken.add(name)
        if name not in self.data:
            if default is _MISSING:
                hint = self._typo_hint(name)
                raise self._fail(SpecError(self.key(name), "missing required key" + hint))
            return default
        try:
            return check(self.data[name], self.key(name))
        except SpecError as error:
            if default is _MISSING or self.errors is None:
                raise self._fail(error) from None
            self.errors.add(error)
            return default

    def sub(self, name: str) -> Reader:
        """The mapping under required key ``name``."""
        self._taken.add(name)
        if name not in self.data:
            hint = self._typo_hint(name)
            raise self._fail(SpecError(self.key(name), "missing required key" + hint))
        return self.section(name)

    def section(self, name: str) -> Reader:
        """The mapping under optional key ``name`` (an empty one when it is absent)."""
        self._taken.add(name)
        try:
            return Reader(self.data.get(name, {}), self.key(name), self.errors)
        except SpecError as error:
            raise self._fail(error) from None

    def _typo_hint(self, name: str) -> str:
        """Point at a present key that looks like a misspelling of the missing one."""
        present = [k for k in self.data if k != name and len(k) <= VALUE_CHARS]
        close = [k for k in present if k.lower() == name.lower()][:1]  # a key's case
        close = close or difflib.get_close_matches(name, present, n=1)
        self._misspelt.update(close)  # reported here: finish() does not report it again
        return f" (found unknown key {close[0]!r}: did you mean {name!r}?)" if close else ""

    def finish(self) -> None:
        for name in self.data:
            if name not in self._taken and name not in self._misspelt:
                close = difflib.get_close_matches(name[:VALUE_CHARS], sorted(self._taken), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                known = ", ".join(sorted(self._taken))
                self.report(SpecError(self.key(name), f"unknown key (known: {known}){hint}"))


# ---- value checks: each takes (value, path) and returns the checked value ----------------------


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[Any, str], int]:
    """An integer in a range; with no maximum, at most :data:`MAX_INTEGER`."""
    if minimum is not None and maximum is not None:
        want = f"an integer in {minimum}..{maximum}"
    elif minimum is not None:
        want = f"an integer >= {minimum}"
    else:
        want = "an integer"

    def check(value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(path, f"must be {want}, got {describe(value)}")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise SpecError(path, f"must be {want}, got {short(value)}")
        if maximum is None and value > MAX_INTEGER:
            raise SpecError(
                path, f"must be at most {MAX_INTEGER} (no fabric needs more), got {short(value)}"
            )
        return value

    return check


def number(low: float, high: float, *, low_open: bool = False) -> Callable[[Any, str], float]:
    """A finite number in ``[low, high]`` (``(low, high]`` if ``low_open``), as a float."""
    want = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"

    def check(value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(path, f"must be {want}, got {describe(value)}")
        below = value <= low if low_open else value < low
        if not math.isfinite(value) or below or value > high:
            raise SpecError(path, f"must be {want}, got {short(value)}")
        return float(value)

    return check


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(path, f"must be true or false, got {describe(value)}")
    return value


def string(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(path, f"must be a non-empty string, got {describe(value)}")
    return value


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
_NAME_RULE = "letters, digits, '.', '_', '+', '-', at most 64, starting with a letter or digit"


def fabric_name(value: Any, path: str) -> str:
    """The fabric's name: it becomes file and folder names (``out/NAME``) and Verilog modules,
    so it may not hold a path separator, a space or a leading dot."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise SpecError(path, f"must be a name ({_NAME_RULE}), got {describe(value)}")
    return value


def name_from_file(stem: str) -> str:
    """The default name of a spec without ``name:``: its file name with every character a name
    may not hold replaced by ``-`` (``my spec.yaml`` is ``my-spec``)."""
    name = re.sub(r"[^A-Za-z0-9._+-]", "-", stem).lstrip("._+-")[:64]
    return name or "fabric"


def choice(options: list[str] | tuple[str, ...]) -> Callable[[Any, str], str]:
    def check(value: Any, path: str) -> str:
        if not isinstance(value, str) or value not in options:
            known = isinstance(value, str) and len(value) <= VALUE_CHARS
            close = difflib.get_close_matches(value, options, n=1) if known else []
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(path, f"must be one of {', '.join(options)}, got {short(value)}{hint}")
        return value

    return check


def int_list(
    minimum: int | None = None, *, length: int | None = None, min_length: int = 1
) -> Callable[[Any, str], tuple[int, ...]]:
    """A list of integers (a bare integer is not accepted: sizes per dimension are explicit).

    Lists longer than :data:`MAX_LIST_LENGTH` are refused before any entry is looked at; every
    bad entry is reported.
    """
    each = integer(minimum)

    def check(value: Any, path: str) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise SpecError(path, f"must be a list of integers, got {describe(value)}")
        if len(value) > MAX_LIST_LENGTH:
            raise SpecError(
                path,
                f"must have at most {MAX_LIST_LENGTH} entries, got {len(value)}: {short(value)}",
            )
        if length is not None and len(value) != length:
            raise SpecError(path, f"must have {length} entries, got {len(value)}: {short(value)}")
        if len(value) < min_length:
            raise SpecError(path, f"must have at least {min_length} entries, got {short(value)}")
        return checked_entries(value, path, each)

    return check


def checked_entries(value: list, path: str, each: Callable[[Any, str], Any]) -> tuple:
    """Every entry of the list ``value`` checked by ``each`` (as ``path[i]``); all the bad
    entries are reported together."""
    items, bad = [], []
    for i, item in enumerate(value):
        try:
            items.append(each(item, f"{path}[{i}]"))
        except SpecError as error:
            bad.append(error)
    if bad:
        raise SpecError.combine(bad)
    return tuple(items)


# ---- the spec ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FabricSpec:
    """A validated spec. ``params`` is the topology's own frozen parameter dataclass."""

    name: str
    topology: str  # registered topology that builds the plan ("znode" for the tree presets)
    kind: str  # what the user wrote ("kary_ntree" expands to "znode", "mesh" to "torus")
    params: Any
    routing: str
    routing_params: Mapping[str, Any]
    flit_width: int = 32
    buffer_depth: int = 4
    packet_length: int = 4  # the fixed packet length (top level, or traffic's single N)
    traffic: TrafficSpec = field(default_factory=TrafficSpec)
    router: RouterSettings = field(default_factory=RouterSettings)


def _parse_topology(topology: Any, reader: Reader) -> Any:
    params = topology.parse(reader)
    reader.finish()
    return params


def _check_size(topology: Any, params: Any, data: Any) -> None:
    """Refuse a fabric too large to build, or one with fewer than two endpoints (``data``: the
    topology section, quoted in the error), which no traffic or switch can use."""
    switches, endpoints = topology.size(params)
    if endpoints < 2:
        raise SpecError(
            "topology",
            f"gives {endpoints} endpoint{'' if endpoints == 1 else 's'}, a fabric needs at"
            f" least 2: {short(dict(data))}",
        )
    for what, count, limit in (
        ("switches", switches, MAX_SWITCHES),
        ("endpoints", endpoints, MAX_ENDPOINTS),
    ):
        if count > limit:
            raise SpecError(
                "topology", f"gives {short(count)} {what}, over the limit of {limit}; refused"
            )


def _routing_name(top: Reader, allowed: list[str]) -> tuple[str, Reader]:
    if top.has("routing") and isinstance(top.data["routing"], Mapping):
        reader = top.sub("routing")
        return reader.get("name", choice(allowed)), reader
    return top.get("routing", choice(allowed), allowed[0]), Reader({}, "routing", top.errors)


def _routing_params(routing: Any, reader: Reader, params: Any) -> Mapping[str, Any]:
    values = routing.parse_params(reader, params)
    reader.finish()
    return values


def _read_spec(data: Any, source: str, errors: Errors) -> FabricSpec | None:
    """Check every key of ``data``, recording errors in ``errors``; the spec if there are none."""
    from .routing import ROUTINGS
    from .topologies import TOPOLOGIES

    top = Reader(data, "", errors)
    name = top.get("name", fabric_name, name_from_file(source))
    top.get("description", string, None)

    kind = topology = params = None
    clean = False
    found, topo = errors.attempt(top.sub, "topology")
    if found:
        found, kind = errors.attempt(topo.get, "kind", choice(sorted(TOPOLOGIES)))
    if found:
        topology = TOPOLOGIES[kind]
        clean, params = errors.attempt(_parse_topology, topology, topo)
        if clean:
            clean, _ = errors.attempt(_check_size, topology, params, topo.data)

    routing, routing_params = None, None
    if topology is None:
        top.skip("routing")  # which routings exist depends on the kind
    else:
        allowed = topology.routing_names(params if clean else None)
        named, got = errors.attempt(_routing_name, top, list(allowed))
        if named and clean:
            routing, reader = got
            _, routing_params = errors.attempt(_routing_params, ROUTINGS[routing], reader, params)

    flit_width = top.get("flit_width", integer(8, 1024), 32)
    buffer_depth = top.get("buffer_depth", integer(2, 1024), 4)
    packet_length = top.get("packet_length", integer(1, MAX_PACKET_LENGTH), None)
    _, traffic = errors.attempt(lambda: parse_traffic(top.section("traffic"), packet_length))
    _, router = errors.attempt(lambda: parse_router(top.section("router")))
    top.finish()
    if errors.found:
        return None
    return FabricSpec(
        name=name,
        topology=topology.builds,
        kind=kind,
        params=params,
        routing=routing,
        routing_params=routing_params,
        flit_width=flit_width,
        buffer_depth=buffer_depth,
        packet_length=traffic.packet_length if isinstance(traffic.packet_length, int) else 4,
        traffic=traffic,
        router=router,
    )


def _checked(read: Callable[[Errors], FabricSpec | None]) -> FabricSpec:
    """Run a whole check; raise every error it found as one SpecError."""
    errors = Errors()
    spec, note = None, None
    try:
        try:
            spec = read(errors)
        except SpecError as error:  # the file, or the top level is not a mapping
            errors.add(error)
    except _TooMany:
        note = f"(stopped after {MAX_ERRORS} errors; fix these and check again)"
    if errors.found:
        raise SpecError.combine(errors.found[:MAX_ERRORS], note)
    assert spec is not None
    return spec


def spec_from_dict(data: Any, source: str = "spec") -> FabricSpec:
    """Validate a spec given as a mapping (``source`` is the default name)."""
    return _checked(lambda errors: _read_spec(data, source, errors))


# ---- reading YAML ------------------------------------------------------------------------------


#: libyaml's parser when PyYAML has it (6x faster: a 56 KB spec in 0.2 s instead of 1.2 s)
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):  # type: ignore[misc, valid-type]
    """``yaml.safe_load``'s loader, with a bad scalar (a date like 2024-13-01, an integer of
    5000 digits) reported as a YAML error at its line instead of a bare ValueError."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as error:
            text = str(error).split(";")[0]
            problem = f"bad value {short(node.value)}: {text}"
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from None


_MERGE = "tag:yaml.org,2002:merge"


def _duplicate_keys(root: yaml.Node) -> list[SpecError]:
    """A duplicate key in any mapping of the document (YAML forbids them; PyYAML keeps the last).

    Walks the node graph once per node (an alias is the node it names), so an alias bomb costs
    no more than its text. ``<<`` merges are not duplicates: explicit keys override merged ones.
    """
    found: list[tuple[int, SpecError]] = []
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                child = path
                if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE:
                    child = _join(path, key.value)
                    line = key.start_mark.line + 1
                    first = lines.setdefault((key.tag, key.value), line)
                    if first != line:
                        message = f"duplicate key (lines {first} and {line}); keep one"
                        found.append((line, SpecError(child, message)))
                stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node.value))
    return [error for _, error in sorted(found, key=lambda pair: pair[0])]


_NESTING = "exceeded maximum nesting depth"
#: libyaml (PyYAML 6.0.4 on) stops at this depth; the pure-Python parser is held to it too
MAX_NESTING = 1000


def _too_deep(text: str) -> yaml.Mark | None:
    """Where the text first nests deeper than MAX_NESTING collections, if it does (counted on
    the parser's events, so an alias adds no depth: it is not nested text)."""
    depth = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                return event.start_mark
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 2 * VALUE_CHARS else text[: 2 * VALUE_CHARS - 1] + "…"


def _parse_yaml(path: Path, errors: Errors) -> Any:
    """The document in file ``path``; file and YAML errors are raised, duplicates recorded."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_SPEC_BYTES + 1)
    except OSError as error:
        raise SpecError("", f"{path}: cannot read: {error.strerror or error}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError("", f"{path}: larger than {MAX_SPEC_BYTES // 1024} KiB: not a spec")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecError(
            "",
            f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}); "
            "a spec is a YAML text file",
        ) from None
    loader = _Loader(text)
    try:
        if (mark := _too_deep(text)) is not None:
            raise yaml.MarkedYAMLError(problem=_NESTING, problem_mark=mark)
        node = loader.get_single_node()
        if node is None:
            raise SpecError("", f"{path}: the spec is empty")
        for error in _duplicate_keys(node):
            errors.add(error)
        return loader.construct_document(node)
    except yaml.reader.ReaderError as error:
        raise SpecError(
            "",
            f"{path}: not a YAML text file: unacceptable character #x{error.character:04x} "
            f"at offset {error.position}",
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        syntax = not isinstance(error, yaml.constructor.ConstructorError)
        what = "YAML syntax error" if syntax else "bad YAML value"
        problem = _one_line(error.problem or error.context or "")
        if problem == _NESTING:  # libyaml's words and ours
            problem = f"nested deeper than {MAX_NESTING} levels"
        raise SpecError("", f"{path}: {what}{where}: {problem}") from None
    except yaml.YAMLError as error:
        raise SpecError("", f"{path}: YAML error: {_one_line(str(error))}") from None
    except RecursionError:
        raise SpecError("", f"{path}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def load_spec(source: str | Path | Mapping[str, Any]) -> FabricSpec:
    """Load a spec from a YAML file path, or validate a dict."""
    if isinstance(source, Mapping):
        return spec_from_dict(source)
    path = Path(source)

    def read(errors: Errors) -> FabricSpec | None:
        data = _parse_yaml(path, errors)
        if not isinstance(data, Mapping):
            raise SpecError("", f"{path}: the spec must be a mapping of keys, got {describe(data)}")
        return _read_spec(data, path.stem, errors)

    return _checked(read)
