"""Spec loader: YAML text or a dict -> a frozen :class:`FabricSpec`, with path-named errors.

Every user error becomes a :class:`~zfabric.errors.SpecError` naming the key path and the bad
value (``topology.k[1]: must be an integer >= 2, got 1``). Topology and routing modules read
their own keys through :class:`Reader`, so unknown keys get a did-you-mean everywhere.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError

__all__ = ["FabricSpec", "Reader", "load_spec", "MAX_SWITCHES", "MAX_ENDPOINTS"]

#: Fabrics past these sizes are refused before anything is built.
MAX_SWITCHES = 4096
MAX_ENDPOINTS = 4096

_MISSING = object()


def describe(value: Any) -> str:
    """A bad value as the user wrote it, with its type when that is the problem."""
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'} {value!r}"
    return repr(value)


class Reader:
    """Reads one mapping of the spec; remembers the keys taken so :meth:`finish` finds strays."""

    def __init__(self, data: Any, path: str):
        if not isinstance(data, Mapping):
            raise SpecError(path, f"must be a mapping, got {describe(data)}")
        for key in data:
            if not isinstance(key, str):
                raise SpecError(path, f"keys must be strings, got {key!r}")
        self.data = data
        self.path = path
        self._taken: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, check: Callable[[Any, str], Any], default: Any = _MISSING) -> Any:
        self._taken.add(name)
        if name not in self.data:
            if default is _MISSING:
                raise SpecError(self.key(name), "missing required key" + self._typo_hint(name))
            return default
        return check(self.data[name], self.key(name))

    def sub(self, name: str) -> Reader:
        self._taken.add(name)
        if name not in self.data:
            raise SpecError(self.key(name), "missing required key" + self._typo_hint(name))
        return Reader(self.data[name], self.key(name))

    def _typo_hint(self, name: str) -> str:
        """Point at a present key that looks like a misspelling of the missing one."""
        close = difflib.get_close_matches(name, [k for k in self.data if k != name], n=1)
        return f" (found unknown key {close[0]!r}: did you mean {name!r}?)" if close else ""

    def finish(self) -> None:
        for name in self.data:
            if name not in self._taken:
                close = difflib.get_close_matches(name, sorted(self._taken), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                known = ", ".join(sorted(self._taken))
                raise SpecError(self.key(name), f"unknown key (known: {known}){hint}")


# ---- value checks: each takes (value, path) and returns the checked value ----------------------


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[Any, str], int]:
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
            raise SpecError(path, f"must be {want}, got {value!r}")
        return value

    return check


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(path, f"must be true or false, got {describe(value)}")
    return value


def string(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(path, f"must be a non-empty string, got {describe(value)}")
    return value


def choice(options: list[str]) -> Callable[[Any, str], str]:
    def check(value: Any, path: str) -> str:
        if value not in options:
            close = difflib.get_close_matches(str(value), options, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(path, f"must be one of {', '.join(options)}, got {value!r}{hint}")
        return value

    return check


def int_list(
    minimum: int | None = None, *, length: int | None = None, min_length: int = 1
) -> Callable[[Any, str], tuple[int, ...]]:
    """A list of integers (a bare integer is not accepted: sizes per dimension are explicit)."""
    each = integer(minimum)

    def check(value: Any, path: str) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise SpecError(path, f"must be a list of integers, got {describe(value)}")
        if length is not None and len(value) != length:
            raise SpecError(path, f"must have {length} entries, got {len(value)}: {value!r}")
        if len(value) < min_length:
            raise SpecError(path, f"must have at least {min_length} entries, got {value!r}")
        return tuple(each(item, f"{path}[{i}]") for i, item in enumerate(value))

    return check


# ---- the spec ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FabricSpec:
    """A validated spec. ``params`` is the topology's own frozen parameter dataclass."""

    name: str
    topology: str  # registered topology that builds the plan ("znode" for the tree presets)
    kind: str  # what the user wrote ("kary_ntree" expands to "znode")
    params: Any
    routing: str
    routing_params: Mapping[str, Any]
    flit_width: int = 32
    buffer_depth: int = 4
    packet_length: int = 4


def spec_from_dict(data: Any, source: str = "spec") -> FabricSpec:
    from .routing import ROUTINGS
    from .topologies import TOPOLOGIES

    top = Reader(data, "")
    name = top.get("name", string, source)
    top.get("description", string, None)
    topo = top.sub("topology")
    kind = topo.get("kind", choice(sorted(TOPOLOGIES)))
    topology = TOPOLOGIES[kind]
    params = topology.parse(topo)
    topo.finish()

    switches, endpoints = topology.size(params)
    for what, count, limit in (
        ("switches", switches, MAX_SWITCHES),
        ("endpoints", endpoints, MAX_ENDPOINTS),
    ):
        if count > limit:
            raise SpecError("topology", f"gives {count} {what}, over the limit of {limit}; refused")

    allowed = list(topology.routings)
    if top.has("routing") and isinstance(top.data["routing"], Mapping):
        routing_reader = top.sub("routing")
        routing_name = routing_reader.get("name", choice(allowed))
    else:
        routing_name = top.get("routing", choice(allowed), allowed[0])
        routing_reader = Reader({}, "routing")
    routing_params = ROUTINGS[routing_name].parse_params(routing_reader, params)
    routing_reader.finish()

    spec = FabricSpec(
        name=name,
        topology=topology.builds,
        kind=kind,
        params=params,
        routing=routing_name,
        routing_params=routing_params,
        flit_width=top.get("flit_width", integer(8, 1024), 32),
        buffer_depth=top.get("buffer_depth", integer(2, 1024), 4),
        packet_length=top.get("packet_length", integer(1, 4096), 4),
    )
    top.finish()
    return spec


def load_spec(source: str | Path | Mapping[str, Any]) -> FabricSpec:
    """Load a spec from a YAML file path, or validate a dict."""
    if isinstance(source, Mapping):
        return spec_from_dict(source)
    path = Path(source)
    try:
        text = path.read_text()
    except OSError as error:
        raise SpecError("", f"{path}: cannot read: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SpecError("", f"{path}: YAML syntax error{where}: {error.problem}") from None
    except yaml.YAMLError as error:
        raise SpecError("", f"{path}: YAML error: {error}") from None
    if data is None:
        raise SpecError("", f"{path}: the spec is empty")
    return spec_from_dict(data, path.stem)
