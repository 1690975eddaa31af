"""Spec loader: YAML text or a dict -> a frozen :class:`FabricSpec`, with path-named errors.

Every user error becomes a :class:`~zfabric.errors.SpecError` naming the key path and the bad
value (``topology.k[1]: must be an integer >= 2, got 1``). Topology and routing modules read
their own keys through :class:`~zfabric.fields.Reader`, so unknown keys get a did-you-mean
everywhere.

A spec is checked whole: errors in independent keys are collected (up to
:data:`~zfabric.fields.MAX_ERRORS`) and raised together as one SpecError, one line per error.
Keys whose meaning depends on a bad key (the routing of an unknown topology kind, the fabric
size of a bad ``k``) are skipped. Every input is bounded before any work (file size, list
lengths, integer sizes, the length of a value quoted in an error), so a hostile file is refused
at once and in one line per error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError
from .fault_spec import FaultSpec, parse_faults
from .fields import (
    MAX_ERRORS,
    VALUE_CHARS,
    Errors,
    Reader,
    TooManyErrors,
    choice,
    describe,
    fabric_name,
    integer,
    join_path,
    name_from_file,
    short,
    string,
)
from .router_settings import RouterSettings, bypass_routing_clash, parse_router
from .traffic_spec import MAX_PACKET_LENGTH, TrafficSpec, parse_traffic

#: a spec's packet length when its traffic names none
DEFAULT_PACKET_LENGTH = 4

__all__ = [
    "FabricSpec",
    "TrafficSpec",
    "load_spec",
    "spec_from_dict",
    "MAX_SWITCHES",
    "MAX_ENDPOINTS",
    "MAX_SPEC_BYTES",
]

#: Fabrics past these sizes are refused before anything is built (docs/specs.md: 8192 endpoints
#: for the HyperZ scalability series' last point, H_{2,2}(8,4) of the 256-processor Z-node).
MAX_SWITCHES = 32768
MAX_ENDPOINTS = 8192
#: Spec files past this size are refused unread (the examples are about 1 KB).
MAX_SPEC_BYTES = 64 * 1024
#: the longest link a spec may ask for, in cycles (a wire pipelined across a large die)
MAX_LINK_LATENCY = 64

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
    link_latency: int = 1  # cycles on every switch-to-switch link (its wire registers)
    packet_length: int = 4  # the fixed packet length (top level, or traffic's single N)
    traffic: TrafficSpec = field(default_factory=TrafficSpec)
    router: RouterSettings = field(default_factory=RouterSettings)
    faults: FaultSpec = field(default_factory=FaultSpec)


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


def _read_spec(
    data: Any, source: str, errors: Errors, size_limit: bool = True
) -> FabricSpec | None:
    """Check every key of ``data``, recording errors in ``errors``; the spec if there are none
    (``size_limit``: refuse a fabric too large to build)."""
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
        if clean and size_limit:
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
    link_latency = top.get("link_latency", integer(1, MAX_LINK_LATENCY), 1)
    packet_length = top.get("packet_length", integer(1, MAX_PACKET_LENGTH), None)
    _, traffic = errors.attempt(lambda: parse_traffic(top.section("traffic"), packet_length))
    _, router = errors.attempt(lambda: parse_router(top.section("router")))
    _, faults = errors.attempt(lambda: parse_faults(top.section("faults")))
    if router is not None and traffic is not None and router.switching != "wormhole":
        router = _whole_packets(router, traffic, buffer_depth, top)
    if router is not None and router.bypasses and routing is not None:
        clash = bypass_routing_clash(routing)
        if clash:
            top.report(SpecError("router.bypass", f"straight {clash}"))
        elif faults:  # a degraded fabric may route by up*/down* tables instead
            top.report(
                SpecError(
                    "router.bypass",
                    "straight cannot be used with faults (a degraded fabric may leave"
                    " dimension order for up*/down* tables)",
                )
            )
    if routing_params and routing_params.get("flow_control") == "bubble":
        _bubble_premises(kind, params, routing, router, traffic, buffer_depth, top)
        if faults:
            top.report(SpecError("faults", "cannot be used with flow_control bubble"))
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
        link_latency=link_latency,
        packet_length=(
            traffic.packet_length
            if isinstance(traffic.packet_length, int)
            # a range's stand-in, which the switches of a switching mode must hold whole
            else min(DEFAULT_PACKET_LENGTH, router.longest_packet or DEFAULT_PACKET_LENGTH)
        ),
        traffic=traffic,
        router=router,
        faults=faults,
    )


def _whole_packets(
    router: RouterSettings, traffic: TrafficSpec, buffer_depth: int, top: Reader
) -> RouterSettings:
    """``router`` with the longest packet its switches must hold whole (the traffic's longest
    ``packet_length``, 4 when it names none); a buffer shallower than that is an error."""
    length = traffic.packet_length
    longest = max(length) if isinstance(length, tuple) else length or DEFAULT_PACKET_LENGTH
    if buffer_depth < longest:
        top.report(
            SpecError(
                "buffer_depth",
                f"{buffer_depth} is shallower than the longest packet ({longest} flits), which"
                f" router.switching {router.switching} holds whole in one buffer; use"
                f" buffer_depth >= {longest}",
            )
        )
    return dataclasses.replace(router, longest_packet=longest)


def _bubble_premises(
    kind: str,
    params: Any,
    routing: str,
    router: RouterSettings | None,
    traffic: TrafficSpec | None,
    buffer_depth: int,
    top: Reader,
) -> None:
    """Report each premise of bubble flow control (:mod:`zfabric.bubble`) the spec breaks: a
    torus of one VC per link (an nDT's VCs are DORT's to check), cut-through switching,
    buffers of two longest packets, packets of one length."""
    why = "flow_control bubble"
    if kind not in ("torus", "ndt"):
        top.report(
            SpecError("routing.flow_control", f"bubble needs a torus or an nDT, not a {kind}")
        )
    elif kind == "ndt" and routing != "dort":
        top.report(SpecError("routing.flow_control", f"bubble on an nDT needs dort, not {routing}"))
    elif kind == "torus" and params.vcs != 1:
        top.report(SpecError("topology.vcs", f"{params.vcs} with {why}, which needs 1"))
    if router is None or traffic is None:
        return
    if router.switching != "cut_through":
        top.report(
            SpecError("router.switching", f"{router.switching} with {why}, which needs cut_through")
        )
        return
    longest = router.whole_packets
    if buffer_depth < 2 * longest:
        top.report(
            SpecError(
                "buffer_depth",
                f"{buffer_depth} with {why}: an entering packet needs room for two longest"
                f" packets; use buffer_depth >= {2 * longest}",
            )
        )
    if isinstance(traffic.packet_length, tuple):
        top.report(
            SpecError(
                "packet_length",
                f"a range with {why}: the bubble argument counts packets of one length",
            )
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
    except TooManyErrors:
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
                    child = join_path(path, key.value)
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


def load_spec(source: str | Path | Mapping[str, Any], *, size_limit: bool = True) -> FabricSpec:
    """Load a spec from a YAML file path, or validate a dict; ``size_limit=False`` takes a
    fabric too large to build, for what reads its parameters only (a closed-form model)."""
    if isinstance(source, Mapping):
        return _checked(lambda errors: _read_spec(source, "spec", errors, size_limit))
    path = Path(source)

    def read(errors: Errors) -> FabricSpec | None:
        data = _parse_yaml(path, errors)
        if not isinstance(data, Mapping):
            raise SpecError("", f"{path}: the spec must be a mapping of keys, got {describe(data)}")
        return _read_spec(data, path.stem, errors, size_limit)

    return _checked(read)
