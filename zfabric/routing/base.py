"""The routing-function contract shared by the deadlock proof, the model and the RTL generator.

A routing function is a pure object built from a :class:`~zfabric.plan.PlanView`. For a head
flit at ``switch`` that arrived on ``in_port`` / ``in_vc`` carrying ``head``, :meth:`route`
returns the candidate output ports in priority order, each with the VCs it may take on the
next link, and the head the next switch sees (sliced headers shrink at every hop). A
candidate on a ``local`` port delivers to the endpoint attached there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, NamedTuple

from ..errors import SpecError
from ..fields import Reader
from ..plan import FabricPlan, PlanView
from ..symmetry import Symmetry

__all__ = [
    "Hop",
    "Decision",
    "Injection",
    "RoutingFunction",
    "routing",
    "ROUTINGS",
    "make_routing",
    "routing_head_width",
    "head_flits",
    "fixed_head_flits",
    "multi_flit_heads",
    "MAX_VCS",
    "class_vcs",
    "require_route_unit",
]

#: VCs a link may carry (the spec's limit; the flit's VC field is sized from the plan)
MAX_VCS = 16


class Hop(NamedTuple):
    port: int
    vcs: tuple[int, ...]


class Decision(NamedTuple):
    hops: tuple[Hop, ...]  # candidates in priority order; one for deterministic routing
    head: Any  # the head as the next switch sees it


class Injection(NamedTuple):
    switch: int
    port: int  # the local port the source endpoint injects through
    head: Any


class RoutingFunction:
    """Base class: subclasses set ``name`` and implement :meth:`injections` and :meth:`route`."""

    name: ClassVar[str]
    #: what ``route`` depends on besides switch and head; see :meth:`state_key`
    uses_input_port: ClassVar[bool] = False
    uses_input_vc: ClassVar[bool] = False
    #: every decision offers one output port (perhaps several VCs of it): the ``router:``
    #: selection rules then pick alike (docs/microarchitecture.md, step 2), so switches build
    #: the cheaper first-free selection whatever the setting
    one_port: ClassVar[bool] = False
    #: the routing offers adaptive channels besides its escape sub-function
    #: (:meth:`is_escape`): the proof checks Duato's condition instead of Dally and Seitz's
    adaptive: ClassVar[bool] = False
    #: the RTL's route unit for this routing handles heads of several flits
    #: (``router.head_bits``); when not, the commands that build RTL refuse a spec that sets
    #: it (:func:`require_route_unit`)
    rtl_head_bits: ClassVar[bool] = True
    #: the routing offers no candidate and no injection that dead-ends, on any plan (its
    #: tables are computed from the plan's channels): a degraded plan needs no mask
    avoids_dead_ends: ClassVar[bool] = False

    def __init__(self, view: PlanView):
        self.view = view
        self.params = view.plan.routing.params
        #: the VCs of every ejection link (``router.ejection_vcs``): a delivery may take any
        self.ejection_vcs = tuple(range(view.plan.router.ejection_vcs))

    @classmethod
    def parse_params(cls, reader: Reader, topology_params: Any) -> dict[str, Any]:
        """Validate the user's routing options (``routing: {name: ..., ...}``); none by default."""
        return {}

    @classmethod
    def head_width(cls, plan: FabricPlan) -> int:
        """Bits of the routing head a head flit carries: by default a destination endpoint id."""
        return max(1, (len(plan.endpoints) - 1).bit_length())

    def head_value(self, head: Any) -> int:
        """The bits a head flit carries for ``head`` (the RTL's ``head`` field): the head itself,
        or the value of a (value, width) head (sliced)."""
        return head[0] if isinstance(head, tuple) else head

    def head_of_value(self, value: int, width: int) -> Any:
        """The head a head flit whose ``width``-bit head field holds ``value`` carries (the
        inverse of :meth:`head_value`, for checking a route unit over every value)."""
        return value

    def head_length(self, head: Any) -> int:
        """Bits of ``head`` as the routing writes it (docs/microarchitecture.md, *Heads longer
        than a flit*): the class's :meth:`head_width` for a head no switch rewrites, shorter
        where the head shrinks on the way (sliced)."""
        return self._plan_head_width

    @functools.cached_property
    def _plan_head_width(self) -> int:
        """:meth:`head_width` of this routing's plan, once (the analysis asks per state)."""
        return self.head_width(self.view.plan)

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        """Where ``src`` may inject a packet for ``dst`` and with which head (all choices)."""
        raise NotImplementedError

    def route(self, switch: int, in_port: int, in_vc: int, head: Any) -> Decision:
        raise NotImplementedError

    def state_key(self, switch: int, in_port: int, in_vc: int, head: Any) -> Hashable:
        """The inputs ``route`` really depends on: the proof walks one state per key."""
        return (
            switch,
            in_port if self.uses_input_port else None,
            in_vc if self.uses_input_vc else None,
            head,
        )

    def symmetries(self) -> tuple[Symmetry, ...]:
        """Automorphisms of the plan (:mod:`zfabric.symmetry`) this routing commutes with: for
        each g, ``route`` at g's image of a state toward destination d gives g's image of its
        decision there toward g(d) (ports and VCs mapped, the same hops in the same order, a
        hop's VCs as a set), and ``injections`` likewise. The set-up then walks one destination
        per orbit. A declaration: the tests hold it against the full walk. None by default."""
        return ()

    def port_symmetries(self) -> tuple[Symmetry, ...]:
        """Automorphisms the routing commutes with when VCs are ignored: its ports (in order)
        and injections map, no port it offers depends on the VC a packet holds, and each
        decision offers as many VCs on a link as its image does. What reads links and not
        channels (a pattern's link loads, hop counts) may use them. :meth:`symmetries` by
        default."""
        return self.symmetries()

    def is_escape(self, link: int, vc: int) -> bool:
        """Whether channel (``link``, ``vc``) belongs to the escape sub-function (Duato's C1).

        Deterministic routings have no other channels: every channel is an escape channel, and
        the proof is Dally and Seitz's (an acyclic channel dependency graph).
        """
        return True

    def priority(self, switch: int, port: int, vc: int) -> int:
        """Priority level of output VC (``port``, ``vc``) of ``switch`` (0 first) for selection
        by occupancy (docs/microarchitecture.md, step 2): a head takes a candidate of the first
        level that has a usable one. A property of the output VC alone, never of the head, so
        a switch holds it as constants; every decision lists its candidates by non-decreasing
        level (the tests check it). By default an adaptive routing's escape VCs come after its
        adaptive ones (the reference's "else the deterministic output", ndt.md §3.5) and a
        deterministic routing has one level."""
        link = self.view.out_link[switch][port]
        return int(self.adaptive and link is not None and self.is_escape(link.id, vc))

    def atomic(self, switch: int, port: int, vc: int) -> bool:
        """Whether a head may take output VC (``port``, ``vc``) of ``switch`` only when it is
        empty (docs/microarchitecture.md, step 2): no owner and every place of the downstream
        buffer free. True for the adaptive channels of an adaptive routing: Duato's proof
        assumes a packet on an adaptive channel can reach that buffer's front, where the escape
        channels are offered, so an adaptive buffer never holds flits of two packets (J. Duato,
        "A new theory of deadlock-free adaptive routing in wormhole networks", IEEE TPDS 4(12),
        1993, its assumption on queue allocation). Escape channels and local ports never wait
        for that: the escape channels' dependencies are all in the proof's graph."""
        link = self.view.out_link[switch][port]
        return self.adaptive and link is not None and not self.is_escape(link.id, vc)

    def local_hop(self, switch: int, dst: int) -> Hop:
        """The hop that delivers to endpoint ``dst`` from ``switch`` (which must host it)."""
        endpoint = self.view.plan.endpoints[dst]
        for index, attachment in enumerate(endpoint.attachments):
            if attachment.switch == switch and endpoint.ejects(index):
                return Hop(attachment.port, self.ejection_vcs)
        raise LookupError(f"endpoint {dst} is not attached to switch {switch}")


def class_vcs(vc_class: int, per_class: int) -> tuple[int, ...]:
    """The VCs of class ``vc_class`` on a link with ``per_class`` VCs per class.

    Classes are contiguous blocks (class c holds VCs c*per_class .. (c+1)*per_class - 1), so
    one VC per class keeps the class number as the VC. A packet may take any VC of its class:
    VCs of one class are interchangeable for the proof (they have the same dependencies), and
    the switch takes the first free one with a credit, ascending.
    """
    return tuple(range(vc_class * per_class, (vc_class + 1) * per_class))


ROUTINGS: dict[str, type[RoutingFunction]] = {}


def routing(name: str) -> Callable[[type[RoutingFunction]], type[RoutingFunction]]:
    """Register a routing function class under ``name``."""

    def register(cls: type[RoutingFunction]) -> type[RoutingFunction]:
        cls.name = name
        ROUTINGS[name] = cls
        return cls

    return register


def make_routing(view: PlanView) -> RoutingFunction:
    """The plan's routing function; on a degraded plan (routing param ``degraded``, set by
    :func:`zfabric.faults.degrade`) with its dead ends masked (:class:`DeadEndsMasked`)."""
    cls = ROUTINGS[view.plan.routing.name]
    if view.plan.routing.params.get("degraded") and not cls.avoids_dead_ends:
        return _masked(cls)(view)
    return cls(view)


class DeadEndsMasked(RoutingFunction):
    """A routing on a degraded fabric that offers only the candidates from which every route
    still delivers, and injects only where it does.

    The family's rules stay; a switch just masks the outputs (and VCs) a fault turned into a
    dead end, for this destination, as a route unit's per-head candidate mask would (a Transit
    chip retrying on its direction's other output, a processor retrying on its other input; a
    Znode climbing through another up port or layer). A candidate is kept when the state it
    leads to is a delivery or offers a kept candidate itself; a state on a loop counts as a dead
    end. The proof then checks the masked routing like any other.
    """

    def __init__(self, view: PlanView):
        super().__init__(view)
        self._leads_on: dict[Hashable, bool] = {}
        self._open: set[Hashable] = set()

    def symmetries(self) -> tuple[Symmetry, ...]:
        """None: a fault breaks the family's symmetries."""
        return ()

    def port_symmetries(self) -> tuple[Symmetry, ...]:
        return ()

    def injections(self, src: int, dst: int) -> tuple[Injection, ...]:
        vcs = range(self.view.plan.router.injection_vcs)
        return tuple(
            injection
            for injection in super().injections(src, dst)
            if all(
                self._delivers((injection.switch, injection.port, vc, injection.head)) for vc in vcs
            )
        )

    def route(self, switch: int, in_port: int, in_vc: int, head: Any) -> Decision:
        decision = super().route(switch, in_port, in_vc, head)
        hops = []
        for hop in decision.hops:
            link = self.view.out_link[switch][hop.port]
            if link is None:  # an endpoint's output, unless its attachment is dead
                if (switch, hop.port) in self.view.ejection_at:
                    hops.append(hop)
                continue
            vcs = tuple(
                vc
                for vc in hop.vcs
                if self._delivers((link.dst.switch, link.dst.port, vc, decision.head))
            )
            if vcs:
                hops.append(Hop(hop.port, vcs))
        return Decision(tuple(hops), decision.head)

    def _delivers(self, state: tuple[int, int, int, Any]) -> bool:
        key = self.state_key(*state)
        if key not in self._leads_on:
            if key in self._open:
                return False
            self._open.add(key)
            self._leads_on[key] = bool(self.route(*state).hops)
            self._open.discard(key)
        return self._leads_on[key]


@functools.cache
def _masked(cls: type[RoutingFunction]) -> type[RoutingFunction]:
    """``cls`` with :class:`DeadEndsMasked` before it (the same name: it is the same routing)."""
    return type(cls.__name__, (DeadEndsMasked, cls), {"__doc__": cls.__doc__})


def head_flits(bits: int, head_bits: int | None) -> int:
    """Head flits of a packet whose routing head is ``bits`` long, when a flit carries
    ``head_bits`` of it (``router.head_bits``; None: the whole head rides in the first flit).
    Never fewer than one: the first flit leads the packet even when nothing is left to route."""
    if head_bits is None:
        return 1
    return max(1, -(-bits // head_bits))


def multi_flit_heads(plan: FabricPlan) -> bool:
    """Whether some head of ``plan`` travels as more than one flit (``router.head_bits``
    narrower than the widest head)."""
    return head_flits(routing_head_width(plan), plan.router.head_bits) > 1


def fixed_head_flits(plan: FabricPlan) -> int | None:
    """Head flits of every packet at every hop of ``plan`` when its routing's heads keep their
    length to the endpoint (:meth:`RoutingFunction.head_length` not overridden), else None
    (``sliced``: the head shrinks, so its head flits vary from hop to hop)."""
    if ROUTINGS[plan.routing.name].head_length is not RoutingFunction.head_length:
        return None
    return head_flits(routing_head_width(plan), plan.router.head_bits)


def routing_head_width(plan: FabricPlan) -> int:
    """Bits of the routing head in the low payload bits of ``plan``'s head flits."""
    return ROUTINGS[plan.routing.name].head_width(plan)


def require_route_unit(spec: Any, command: str) -> None:
    """Refuse (a SpecError) before any work what the RTL cannot build from ``spec``: a degraded
    fabric that keeps its family's routing with dead ends masked (its up*/down* tables are
    built, as table route units), heads of several flits for a routing whose route unit has no
    head-flit logic, or an adaptive routing under first-free selection (a route unit's mask
    cannot hold its priority order, hdl/router/route). ``command``: what would build it, for
    the message."""
    if spec.faults:
        from ..topologies import compile_plan  # the topologies import the routings

        routing_name = compile_plan(spec).routing.name
        if not ROUTINGS[routing_name].avoids_dead_ends:
            raise SpecError(
                "faults",
                f"the degraded fabric keeps {spec.routing!r} with its dead ends masked, which"
                f" its route units do not hold: zfabric {command} builds a degraded fabric with"
                " faults.routing: table (check and simulate take either)",
            )
        return
    routing = ROUTINGS[spec.routing]
    if spec.router.head_bits is not None and not routing.rtl_head_bits:
        raise SpecError(
            "router.head_bits",
            f"{spec.router.head_bits} with the routing {spec.routing!r}: zfabric {command}"
            " builds its heads whole in the first flit only (leave head_bits out; check and"
            " simulate can)",
        )
    if (spec.routing_params or {}).get("flow_control") == "bubble":
        if spec.router.stages == 5:
            raise SpecError(
                "router.stages",
                f"5 with flow_control bubble: zfabric {command} builds the bubble rule at stages"
                " 1 to 4 (check and simulate run it at 5)",
            )
    if routing.adaptive and spec.router.selection == "first-free":
        raise SpecError(
            "router.selection",
            f"'first-free' with the adaptive routing {spec.routing!r}: zfabric {command}"
            " builds it with 'round-robin' or 'occupancy' only (check and simulate can)",
        )
