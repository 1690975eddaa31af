"""FabricPlan: the compiled, frozen description every back end reads (RTL, model, deadlock proof).

A plan holds switches with their ports, directed links (one per direction of a physical
link, or a single one-way channel), endpoints with their attachments, the routing function's
name and parameters, and the flit and buffer parameters. A port is an input and an output
with the same index; the two sides may face different neighbours (a one-way channel into the
input, another out of the output), an endpoint on one side only, or nothing (an unused side,
declared as such). It never holds a networkx graph; :class:`PlanBuilder` builds one
alongside (for metrics) while the topology is being wired.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import networkx as nx

from .errors import PlanError
from .router_settings import RouterSettings, bypass_routing_clash

__all__ = [
    "ATTACHMENT_MODES",
    "Port",
    "Switch",
    "PortRef",
    "Link",
    "Endpoint",
    "RoutingSpec",
    "FabricPlan",
    "PlanBuilder",
    "PlanView",
    "plan_from_json",
]

#: Port roles. ``local`` ports face endpoints; the rest face other switches.
ROLES = ("local", "internal", "external", "up", "down", "side")


_SCALARS = (str, int, float, bool, type(None))


def _canonical(value: Any) -> Any:
    """JSON-native copy (tuples become lists, dataclasses dicts of their fields), so a plan
    equals its own JSON round trip; one pass, as :func:`dataclasses.asdict`'s deep copy took
    most of the time of a large plan's set-up read back from its cache."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if isinstance(value, (list, tuple)):
        return [item if type(item) in _SCALARS else _canonical(item) for item in value]
    if isinstance(value, dict):
        items = {
            key: item if type(item) in _SCALARS else _canonical(item) for key, item in value.items()
        }
        if all(type(key) is str for key in items):
            return items
        return json.loads(json.dumps(items))  # int keys become strings, as JSON has them
    names = _field_names(kind)
    if names is not None:
        return {name: _canonical(getattr(value, name)) for name in names}
    return json.loads(json.dumps(value))  # scalars of derived types (an IntEnum) as JSON has them


@functools.cache
def _field_names(kind: type) -> tuple[str, ...] | None:
    """The fields of dataclass ``kind`` in their order, or None for any other type."""
    return tuple(f.name for f in fields(kind)) if is_dataclass(kind) else None


@dataclass(frozen=True)
class Port:
    """One bidirectional switch port: an input and an output with the same index."""

    role: str
    dim: int | None = None  # torus dimension of an external port
    sign: int | None = None  # +1 / -1: direction of an external port
    group: int | None = None  # down group (child label) or side group (target Znode id)

    @property
    def label(self) -> str:
        if self.role == "external":
            return f"d{self.dim}{'+' if self.sign > 0 else '-'}"
        if self.group is not None:
            return f"{self.role}{self.group}"
        return self.role


@dataclass(frozen=True)
class Switch:
    id: int
    name: str
    position: dict[str, Any]
    ports: tuple[Port, ...]

    @property
    def radix(self) -> int:
        return len(self.ports)


@dataclass(frozen=True, order=True)
class PortRef:
    switch: int
    port: int


@dataclass(frozen=True)
class Link:
    """A unidirectional channel from an output port to an input port."""

    id: int
    src: PortRef
    dst: PortRef
    vcs: int
    latency: int = 1


#: What an endpoint attachment carries: both ways, or only into the switch input (the endpoint
#: injects there) or only out of the switch output (it receives there).
ATTACHMENT_MODES = ("both", "in", "out")


@dataclass(frozen=True)
class Endpoint:
    """A terminal; multi-homed endpoints (Znode processors) have several attachments.

    ``modes`` says per attachment what it carries (:data:`ATTACHMENT_MODES`); empty means
    every attachment carries both ways. An endpoint whose injection and ejection are on
    different switches has ``in`` and ``out`` attachments.
    """

    id: int
    name: str
    attachments: tuple[PortRef, ...]
    modes: tuple[str, ...] = ()

    def mode(self, index: int) -> str:
        return self.modes[index] if self.modes else "both"

    def injects(self, index: int) -> bool:
        """Whether the endpoint injects through attachment ``index``."""
        return self.mode(index) != "out"

    def ejects(self, index: int) -> bool:
        """Whether the endpoint receives through attachment ``index``."""
        return self.mode(index) != "in"

    @property
    def ejections(self) -> tuple[PortRef, ...]:
        """The attachments the endpoint receives through."""
        return tuple(a for i, a in enumerate(self.attachments) if self.ejects(i))


@dataclass(frozen=True)
class RoutingSpec:
    name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FabricPlan:
    name: str
    topology: str
    topology_params: dict[str, Any]
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    endpoints: tuple[Endpoint, ...]
    routing: RoutingSpec
    flit_width: int = 32
    buffer_depth: int = 4
    packet_length: int = 4
    router: RouterSettings = RouterSettings()

    @functools.cached_property
    def link_latency(self) -> int:
        """Cycles on the longest switch-to-switch link (1: every link takes one); computed
        once per plan, as the limits' walk reads it for every source-destination pair."""
        return max((link.latency for link in self.links), default=1)

    def to_dict(self) -> dict[str, Any]:
        data = _canonical(self)
        for endpoint in data["endpoints"]:  # two-way attachments only: written as before modes
            if not endpoint["modes"]:
                del endpoint["modes"]
        return data

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @functools.cached_property
    def json_digest(self) -> bytes:
        """SHA-256 of :meth:`to_json`, computed once per plan: every set-up cache entry of
        the plan is keyed by it, and at 1024 endpoints the JSON takes tens of milliseconds."""
        return hashlib.sha256(self.to_json().encode()).digest()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FabricPlan:
        try:
            plan = cls(
                name=data["name"],
                topology=data["topology"],
                topology_params=data["topology_params"],
                switches=tuple(
                    Switch(s["id"], s["name"], s["position"], tuple(Port(**p) for p in s["ports"]))
                    for s in data["switches"]
                ),
                links=tuple(
                    Link(
                        link["id"],
                        PortRef(**link["src"]),
                        PortRef(**link["dst"]),
                        link["vcs"],
                        link["latency"],
                    )
                    for link in data["links"]
                ),
                endpoints=tuple(
                    Endpoint(
                        e["id"],
                        e["name"],
                        tuple(PortRef(**a) for a in e["attachments"]),
                        tuple(e.get("modes", ())),
                    )
                    for e in data["endpoints"]
                ),
                routing=RoutingSpec(data["routing"]["name"], data["routing"]["params"]),
                flit_width=data["flit_width"],
                buffer_depth=data["buffer_depth"],
                packet_length=data["packet_length"],
                # plans written before the router section had the only switch there was then:
                # first-free selection (every key of a router section is written since)
                router=RouterSettings.from_dict(data.get("router", {"selection": "first-free"})),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise PlanError(f"malformed plan: {error!r}") from None
        router = plan.router
        if router.switching != "wormhole" and not (
            router.longest_packet is not None and router.longest_packet <= plan.buffer_depth
        ):  # what the spec reader refuses: the buffers must hold the longest packet
            raise PlanError(
                f"malformed plan: router switching {router.switching} needs a longest_packet of"
                f" at most the buffer depth {plan.buffer_depth}, got {router.longest_packet!r}"
            )
        clash = bypass_routing_clash(plan.routing.name) if router.bypasses else None
        if clash:  # what the spec reader refuses
            raise PlanError(f"malformed plan: router bypass straight {clash}")
        return plan


def plan_from_json(text: str) -> FabricPlan:
    return FabricPlan.from_dict(json.loads(text))


class PlanBuilder:
    """Wires a topology: switches, links and endpoint attachments.

    Every physical link becomes two :class:`Link` channels (:meth:`connect`); a one-way
    channel is one (:meth:`channel`). Each side of a port (its input, its output) is used
    exactly once, or declared unused (:meth:`leave_unused`). The same wiring is mirrored into
    a networkx ``MultiGraph`` (nodes ``("sw", id)`` and ``("ep", id)``) used by the metrics,
    built when first read (a plan alone does not need it); an edge that carries one way only
    has ``one_way=(from, to)``.
    """

    def __init__(self) -> None:
        self._switches: list[Switch] = []
        self._links: list[Link] = []
        self._attachments: dict[int, list[PortRef]] = {}
        self._modes: dict[int, list[str]] = {}
        self._endpoint_names: dict[int, str] = {}
        self._used: set[tuple[int, int, str]] = set()  # (switch, port, "in" | "out")
        self._wiring: list[tuple] = []  # (node,), (node, node) or (node, node, attributes)
        self._graph = nx.MultiGraph()
        self._replayed = 0  # how much of ``_wiring`` ``_graph`` holds

    @property
    def graph(self) -> nx.MultiGraph:
        """The wiring so far as a networkx ``MultiGraph``."""
        for item in self._wiring[self._replayed :]:
            if len(item) == 1:
                self._graph.add_node(item[0])
            else:
                self._graph.add_edge(item[0], item[1], **(item[2] if len(item) == 3 else {}))
        self._replayed = len(self._wiring)
        return self._graph

    def add_switch(self, name: str, position: dict[str, Any], ports: list[Port]) -> int:
        switch_id = len(self._switches)
        self._switches.append(Switch(switch_id, name, _canonical(position), tuple(ports)))
        self._wiring.append((("sw", switch_id),))
        return switch_id

    def _claim(self, ref: PortRef, sides: tuple[str, ...], role: str | None = None) -> None:
        switch, port = ref.switch, ref.port
        ports = self._switches[switch].ports
        if not 0 <= port < len(ports):
            raise PlanError(f"{self._switches[switch].name} has no port {port}")
        for side in sides:
            if (switch, port, side) in self._used:
                where = f"{self._switches[switch].name}.p{port}"
                raise PlanError(
                    f"{where if len(sides) == 2 else f'{where} {side}put'} is used twice"
                )
        if role is not None and ports[port].role != role:
            raise PlanError(f"{self._switches[switch].name}.p{port} is not a {role} port")
        self._used.update((switch, port, side) for side in sides)

    def connect(
        self, a: int, a_port: int, b: int, b_port: int, vcs: int, *, latency: int = 1
    ) -> None:
        """A physical link between two switch ports: one channel each way, ``vcs`` VCs each."""
        ends = PortRef(a, a_port), PortRef(b, b_port)
        for ref in ends:
            self._claim(ref, ("in", "out"))
        for src, dst in (ends, ends[::-1]):
            self._links.append(Link(len(self._links), src, dst, vcs, latency))
        self._wiring.append((("sw", a), ("sw", b)))

    def channel(
        self, a: int, a_port: int, b: int, b_port: int, vcs: int, *, latency: int = 1
    ) -> None:
        """A one-way channel from output ``a_port`` of ``a`` to input ``b_port`` of ``b``."""
        src, dst = PortRef(a, a_port), PortRef(b, b_port)
        self._claim(src, ("out",))
        self._claim(dst, ("in",))
        self._links.append(Link(len(self._links), src, dst, vcs, latency))
        self._wiring.append((("sw", a), ("sw", b), {"one_way": (("sw", a), ("sw", b))}))

    def attach(
        self, endpoint: int, switch: int, port: int, name: str | None = None, *, mode: str = "both"
    ) -> None:
        """Attach ``endpoint`` to a port: both ways (a ``local`` port), or ``mode`` ``in`` (it
        injects into that input) or ``out`` (it receives from that output), any role."""
        if mode not in ATTACHMENT_MODES:
            raise PlanError(f"attachment mode {mode!r}: one of {', '.join(ATTACHMENT_MODES)}")
        ref = PortRef(switch, port)
        if mode == "both":
            self._claim(ref, ("in", "out"), "local")
        else:
            self._claim(ref, (mode,))
        refs = self._attachments.setdefault(endpoint, [])
        modes = self._modes.setdefault(endpoint, [])
        if ref in refs:  # the other side of a port already attached: one attachment, both ways
            modes[refs.index(ref)] = "both"
        else:
            refs.append(ref)
            modes.append(mode)
        self._endpoint_names.setdefault(endpoint, name or f"ep{endpoint}")
        ends = ("ep", endpoint), ("sw", switch)
        if mode == "both":
            self._wiring.append(ends)
        else:
            self._wiring.append((*ends, {"one_way": ends if mode == "in" else ends[::-1]}))

    def leave_unused(self, switch: int, port: int, side: str) -> None:
        """Declare one side (``in`` or ``out``) of a port unused: it faces nothing (the root of
        a partial tree). Routes never take an unused output; the proof checks it."""
        if side not in ("in", "out"):
            raise PlanError(f"side {side!r}: in or out")
        self._claim(PortRef(switch, port), (side,))

    def build(self, **plan_fields: Any) -> FabricPlan:
        if sorted(self._attachments) != list(range(len(self._attachments))):
            raise PlanError("endpoint ids must be 0..N-1")
        if len(self._used) < 2 * sum(switch.radix for switch in self._switches):  # unique claims
            switch, index, side = next(
                (switch, index, side)
                for switch in self._switches
                for index in range(switch.radix)
                for side in ("in", "out")
                if (switch.id, index, side) not in self._used
            )
            raise PlanError(
                f"{switch.name}.p{index} ({switch.ports[index].label}) {side}put is"
                " unused (declare it with leave_unused)"
            )
        endpoints = tuple(
            Endpoint(
                i,
                self._endpoint_names[i],
                tuple(self._attachments[i]),
                () if set(self._modes[i]) == {"both"} else tuple(self._modes[i]),
            )
            for i in range(len(self._attachments))
        )
        params = dict(plan_fields)
        params["topology_params"] = _canonical(params["topology_params"])
        params["routing"] = RoutingSpec(
            params["routing"].name, _canonical(params["routing"].params)
        )
        return FabricPlan(
            switches=tuple(self._switches),
            links=tuple(self._links),
            endpoints=endpoints,
            **params,
        )


class PlanView:
    """Fast lookups over a plan for routing functions, the deadlock proof and the model."""

    def __init__(self, plan: FabricPlan):
        self.plan = plan
        self.switches = plan.switches
        #: out_link[switch][port] -> Link leaving that port, or None for local ports
        self.out_link: list[list[Link | None]] = [[None] * s.radix for s in plan.switches]
        self.in_link: list[list[Link | None]] = [[None] * s.radix for s in plan.switches]
        for link in plan.links:
            self.out_link[link.src.switch][link.src.port] = link
            self.in_link[link.dst.switch][link.dst.port] = link
        #: endpoint_at[(switch, port)] -> endpoint id for local ports
        self.endpoint_at: dict[tuple[int, int], int] = {
            (a.switch, a.port): e.id for e in plan.endpoints for a in e.attachments
        }
        #: ejection_at[(switch, port)] -> the endpoint that receives from that output
        self.ejection_at: dict[tuple[int, int], int] = {
            (a.switch, a.port): e.id
            for e in plan.endpoints
            for i, a in enumerate(e.attachments)
            if e.ejects(i)
        }
        self.ports_by_role: list[dict[str, list[int]]] = []
        for switch in plan.switches:
            by_role: dict[str, list[int]] = {}
            for index, port in enumerate(switch.ports):
                by_role.setdefault(port.role, []).append(index)
            self.ports_by_role.append(by_role)

    def channel_name(self, link_id: int, vc: int) -> str:
        link = self.plan.links[link_id]
        switch = self.switches[link.src.switch]
        return f"{switch.name}.p{link.src.port}({switch.ports[link.src.port].label})/vc{vc}"
