"""Cycle-level reference model of a whole fabric, following docs/microarchitecture.md exactly.

The model takes every route from the plan's routing function (it has no routing of its own)
and is the oracle the RTL is checked against: for the same injection trace both must deliver
every packet in the same cycle. It never imports amaranth.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zfabric.bubble import check_packet_length, entering_pairs
from zfabric.bypass import straight_outputs
from zfabric.deadlock import find_wait_cycle
from zfabric.plan import FabricPlan, PlanView, PortRef
from zfabric.router_settings import lfsr_seed, lfsr_step, low_occupancy, random_pick
from zfabric.routing import head_flits, make_routing

if TYPE_CHECKING:  # the fast engine's model, which a DeadlockWatch watches too
    from ..fast.engine import FastModel, Fronts

__all__ = [
    "FabricModel",
    "Packet",
    "ModelDeadlock",
    "InvariantError",
    "DeadlockWatch",
    "EjectStalls",
]

_MASK64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    """splitmix64's finaliser: a well-spread 64-bit hash of ``x``, the same in every process."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _MASK64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _MASK64
    return x ^ (x >> 31)


class EjectStalls:
    """A deterministic ejection ``ready`` pattern: low with probability ``p`` in each cycle.

    Called as ``ready(endpoint, attachment, cycle)``. Each (endpoint, attachment, cycle) is an
    independent draw, a hash of the four numbers with ``seed``, so the model and the cocotb
    bench (which drives the same pattern into the RTL) agree without sharing any state
    (docs/microarchitecture.md, Endpoints).
    """

    def __init__(self, p: float, seed: int = 1):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
            raise ValueError(f"stall probability must be in [0, 1), not {p!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an integer, not {seed!r}")
        self.p = p
        self.seed = seed
        self._threshold = round(p * (1 << 32))
        self._base = _mix64(seed & _MASK64)

    def __call__(self, endpoint: int, attachment: int, cycle: int) -> bool:
        x = _mix64(self._base ^ (endpoint << 40) ^ (attachment << 32) ^ cycle)
        return (x >> 32) >= self._threshold

    def __repr__(self) -> str:
        return f"EjectStalls({self.p!r}, seed={self.seed!r})"


def input_vc_name(view: PlanView, s: int, p: int, v: int) -> str:
    """Input VC ``v`` of port ``p`` of switch ``s`` as reports name it: the channel that feeds
    it, or the endpoint that injects into it."""
    link = view.in_link[s][p]
    if link is None:
        endpoint = view.plan.endpoints[view.endpoint_at[(s, p)]].name
        return f"{endpoint}->{view.switches[s].name}.p{p}/vc{v}"
    return view.channel_name(link.id, v)


class InvariantError(AssertionError):
    """The model broke one of its own invariants (a bug, never a user error)."""


class ModelDeadlock(RuntimeError):
    """Part or all of the fabric can never move again; ``cycle`` lists the waiting channels.

    ``partial`` is True when other traffic still moved (a knot, see :meth:`FabricModel.knot`).
    """

    def __init__(self, cycle_number: int, cycle: list[str], *, partial: bool = False):
        self.at = cycle_number
        self.cycle = cycle
        self.partial = partial
        what = "partial deadlock" if partial else "deadlock"
        super().__init__(
            f"{what} at cycle {cycle_number}: " + " -> ".join([*cycle, cycle[0]])
            if cycle
            else f"{what} at cycle {cycle_number}"
        )

    def report(self) -> dict[str, Any]:
        """The JSON form results carry: cycle, waiting channels, partial or whole."""
        return {"cycle": self.at, "channels": self.cycle, "partial": self.partial}


@dataclass(eq=False)
class Packet:
    id: int
    src: int
    dst: int
    length: int
    created: int
    payload: tuple = ()  # (src, sequence number) by default: what the checkers compare
    injected: int | None = None  # cycle the head left the source
    delivered: int | None = None  # cycle the tail reached the destination
    hops: int = 0  # switch-to-switch links the head crossed
    flits_delivered: int = 0
    #: (switch, out port) of the head; where the engine keeps no paths (the fast engine's
    #: ``paths=False``) the empty tuple all its packets share, not a list of each one's own
    path: list[tuple[int, int]] | tuple[()] = field(default_factory=list)

    @property
    def latency(self) -> int | None:
        return None if self.delivered is None else self.delivered - self.created


class _Flit:
    """Flit ``index`` of the ``count`` its packet leaves the source with (default: its length):
    the first ``head_flits`` are head flits (docs/microarchitecture.md, *Heads longer than a
    flit*), the first of them carrying the routing head and the payload's first flit, the
    others (``data`` None) only the head's length; the rest carry the payload in order."""

    __slots__ = (
        "packet",
        "index",
        "is_head",
        "is_tail",
        "head",
        "decision",
        "data",
        "head_flits",
        "stripped",
    )

    def __init__(
        self, packet: Packet, index: int, head: Any, count: int | None = None, head_flits: int = 1
    ):
        self.packet = packet
        self.index = index
        self.is_head = index == 0
        self.is_tail = index == (packet.length if count is None else count) - 1
        self.head = head if self.is_head else None
        self.decision = None  # cached route decision while the head waits at a front
        # the payload flit it carries (None: a head flit behind the first)
        self.data = None if 0 < index < head_flits else max(0, index - head_flits + 1)
        # on the first flit: the head flits of its packet at this hop, itself included
        self.head_flits = head_flits if self.is_head else 0
        # a head flit behind the first but the last: the endpoint takes it whatever ``ready``
        # (the first flit is too while it heads several: ``hidden``)
        self.stripped = 0 < index < head_flits - 1

    @property
    def hidden(self) -> bool:
        """Taken by the endpoint without being presented to the user (``ready`` not read): the
        first flit of a head of several flits, and every head flit behind it but the last,
        which is presented as the packet's first beat (docs/microarchitecture.md, *Heads
        longer than a flit*)."""
        return self.head_flits > 1 or self.stripped


class _Endpoint:
    __slots__ = (
        "queue",
        "flits",
        "attachment",
        "vc",
        "pointer",
        "credits",
        "received",
        "presenting",
        "eject_pointer",
    )

    def __init__(self, attachments: int, vcs: int, depth: int, ejection_vcs: int):
        self.queue: deque[Packet] = deque()
        self.flits: deque[_Flit] = deque()  # flits of the packet being injected
        self.attachment = -1
        self.vc = 0  # the local VC of the packet being injected
        self.pointer = 0  # injection pointer: where the next head starts its scan of VCs
        self.credits = [[depth] * vcs for _ in range(attachments)]
        # per attachment, per ejection VC: the receive buffer (with this cycle's arrival)
        self.received: list[list[deque[_Flit]]] = [
            [deque() for _ in range(ejection_vcs)] for _ in range(attachments)
        ]
        # per attachment: the ejection VC whose packet the output stream presents (None: the
        # next one not chosen yet), and the ejection pointer where the next choice starts
        self.presenting: list[int | None] = [None] * attachments
        self.eject_pointer = [0] * attachments


class FabricModel:
    """Simulates every switch, link and endpoint of ``plan`` flit by flit.

    Use :meth:`offer` to queue packets at their source and :meth:`step` to advance one cycle;
    :attr:`delivered` collects packets as their tails arrive, unless ``on_deliver`` is given:
    then each delivered packet goes to that callback and the model keeps none of them (long
    runs stay in bounded memory). :attr:`delivered_count` counts them either way.

    ``eject_ready(endpoint, attachment, cycle)`` says whether the user takes a flit from that
    attachment's output stream in that cycle (for instance :class:`EjectStalls`); None means
    always (docs/microarchitecture.md, Endpoints).
    """

    def __init__(
        self,
        plan: FabricPlan,
        *,
        check_invariants: bool = True,
        on_deliver: Callable[[Packet], None] | None = None,
        eject_ready: Callable[[int, int, int], bool] | None = None,
    ):
        self.plan = plan
        self.view = view = PlanView(plan)
        self.routing = make_routing(view)
        self.depth = plan.buffer_depth
        self._head_bits = plan.router.head_bits  # None: every head rides in one flit
        # switching modes (docs/microarchitecture.md, Switching modes): the credits a free
        # output VC needs before a head takes it (0: wormhole's one credit), and whether a head
        # waits for its whole packet in its input buffer before it is routed
        self._whole = plan.router.whole_packets
        self._stores = plan.router.stores
        # bubble flow control (docs/microarchitecture.md, Bubble flow control): per switch, the
        # (input port, output port, output VC)s on which a head enters a ring and needs room for
        # two longest packets
        self._entering = entering_pairs(view)
        # the straight bypass (docs/microarchitecture.md, Straight bypass): per switch, input
        # port -> the output port it feeds straight (empty without the setting), and per
        # switch stepped this cycle the output ports some buffered flit requests
        self._straight = straight_outputs(view)
        self._bypasses = plan.router.bypasses
        self._requested: dict[int, set[int]] = {}
        self.bypassed = 0  # flits that crossed a switch by the bypass
        self._filled: dict[int, set[tuple[int, int]]] = {}  # and its non-empty input VCs
        self.check_invariants = check_invariants
        self.cycle = 0
        self.delivered: list[Packet] = []
        self.delivered_count = 0
        self._on_deliver = on_deliver if on_deliver is not None else self.delivered.append
        self.in_network = 0  # flits that left a source and have not been delivered
        self._next_id = 0
        self._sequence: dict[int, int] = {}

        # per switch, per port: input VC count (injection links: router.injection_vcs)
        self._injection_vcs = plan.router.injection_vcs
        self._in_vcs = [
            [link.vcs if link else self._injection_vcs for link in view.in_link[s.id]]
            for s in plan.switches
        ]
        self._out_vcs = [
            [link.vcs if link else plan.router.ejection_vcs for link in view.out_link[s.id]]
            for s in plan.switches
        ]
        self._buf = [[[deque() for _ in range(n)] for n in ports] for ports in self._in_vcs]
        self._assign = [[[None] * n for n in ports] for ports in self._in_vcs]
        self._owner = [[[None] * n for n in ports] for ports in self._out_vcs]
        # local outputs too: their credit counts the endpoint's receive buffer (B flits)
        self._credit = [[[self.depth] * n for n in ports] for ports in self._out_vcs]
        self._rr_in = [[0] * len(ports) for ports in self._in_vcs]
        self._rr_out = [[0] * len(ports) for ports in self._out_vcs]
        # router settings (docs/microarchitecture.md, steps 2 to 4)
        # round-robin and occupancy selection keep a selection pointer per input port, random
        # selection an LFSR state;
        # occupancy ranks a head's usable candidates by (priority level, high occupancy)
        # first: per switch, per output port, per VC, the level, and the low-occupancy credit
        self._selection_pointer = plan.router.selection in ("round-robin", "occupancy", "random")
        self._random = plan.router.selection == "random"  # a usable port drawn by the LFSR
        self._occupancy = plan.router.selection == "occupancy"
        self._level = [
            [[self.routing.priority(s, o, w) for w in range(n)] for o, n in enumerate(ports)]
            for s, ports in enumerate(self._out_vcs)
        ]
        self._low = low_occupancy(self.depth)
        # the adaptive output VCs, taken only when empty (step 2, atomic allocation): per
        # switch, the (port, VC)s
        self._atomic = [
            {(o, w) for o, n in enumerate(ports) for w in range(n) if self.routing.atomic(s, o, w)}
            for s, ports in enumerate(self._out_vcs)
        ]
        self._iterations = 2 if plan.router.allocator == "separable-2" else 1
        # stages 2 and 3: a head's route is computed in its first cycle at the front, used from
        # the next; stages 3: a head then acquires its output VC in a VC-allocation cycle of its
        # own, with its own pointers, before it competes for the crossbar
        self._route_stage = plan.router.stages >= 2
        self._vc_stage = plan.router.stages >= 3
        # stages 4: switch allocation in two cycles. Per input port, the staged pick (in VC,
        # output VC) its input stage registered last cycle, which its output stage grants or
        # drops this cycle (docs/microarchitecture.md, Switch allocation in two cycles)
        self._split = plan.router.stages >= 4
        self._staged: list[list[tuple[int, tuple[int, int]] | None]] = [
            [None] * len(ports) for ports in self._in_vcs
        ]
        # stages 5: VC allocation in two cycles too. Per input port, the head (in VC, output VC)
        # its VC input stage registered last cycle, which the VC output stage of this cycle
        # grants if that output VC is still free, or drops (docs/microarchitecture.md, VC
        # allocation in two cycles)
        self._vc_split = plan.router.stages == 5
        self._vc_staged: list[list[tuple[int, tuple[int, int]] | None]] = [
            [None] * len(ports) for ports in self._in_vcs
        ]
        self._va_in = [[0] * len(ports) for ports in self._in_vcs]
        self._va_out = [[0] * len(ports) for ports in self._out_vcs]
        self._routed = False  # some head computed its route this cycle (that is activity)
        # per input port: the output port pointer, or under ``random`` its LFSR state
        self._rr_select = [
            [lfsr_seed(p) if self._random else 0 for p in range(len(ports))]
            for ports in self._in_vcs
        ]
        self._busy: set[int] = set()  # switches with a flit in some input buffer

        self._endpoints = [
            _Endpoint(len(e.attachments), self._injection_vcs, self.depth, plan.router.ejection_vcs)
            for e in plan.endpoints
        ]
        # local input (switch, port) -> (endpoint, attachment index): injection credits go
        # there; local output -> (endpoint, attachment index): ejected flits go there
        self._injection_of = {
            (a.switch, a.port): (e.id, i)
            for e in plan.endpoints
            for i, a in enumerate(e.attachments)
            if e.injects(i)
        }
        self._ejection_of = {
            (a.switch, a.port): (e.id, i)
            for e in plan.endpoints
            for i, a in enumerate(e.attachments)
            if e.ejects(i)
        }
        self._injecting: set[int] = set()
        self._eject_ready = eject_ready
        self._receiving: set[tuple[int, int]] = set()  # (endpoint, attachment) holding flits
        # flits / credits sent this cycle and those on the wires (landing at the end of it)
        # (switch, out port, vc, flit); an injection is (~vc, switch, local port, flit)
        self._sent: list[tuple[int, int, int, _Flit]] = []
        self._wire: list[tuple[int, int, int, _Flit]] = []
        self._credits_sent: list[tuple[int, int, int]] = []  # (switch, in port, vc)
        self._credits_wire: list[tuple[int, int, int]] = []
        # links longer than a cycle: what lands at the end of a later cycle, by that cycle
        self._out_delay = [
            [1 if link is None else link.latency for link in ls] for ls in view.out_link
        ]
        self._in_delay = [
            [1 if link is None else link.latency for link in ls] for ls in view.in_link
        ]
        self._delayed = any(link.latency != 1 for link in plan.links)
        self._later: dict[int, list[tuple[int, int, int, _Flit]]] = {}
        self._credits_later: dict[int, list[tuple[int, int, int]]] = {}
        self._quiet = 0
        self._last_written: dict[tuple[int, int, int], _Flit] = {}

    # ---- traffic in ------------------------------------------------------------------------

    def offer(
        self, src: int, dst: int, length: int | None = None, *, created: int | None = None
    ) -> Packet:
        """Queue a packet at ``src`` created at ``created`` (default: this cycle)."""
        if src == dst:
            raise ValueError(f"packet from endpoint {src} to itself")
        length = length or self.plan.packet_length
        check_packet_length(self.plan, length)
        sequence = self._sequence.get(src, 0)
        self._sequence[src] = sequence + 1
        packet = Packet(self._next_id, src, dst, length, self.cycle if created is None else created)
        packet.payload = (src, sequence)
        self._next_id += 1
        self._endpoints[src].queue.append(packet)
        self._injecting.add(src)
        return packet

    # ---- one cycle -------------------------------------------------------------------------

    def step(self) -> None:
        moved = self._inject()
        for switch in sorted(self._busy):
            moved |= self._switch_cycle(switch)
        if self._bypasses:
            self._bypass()
        # flits or credits on the wires this cycle land at its end: that is activity too
        moved |= bool(self._wire or self._credits_wire or self._later or self._credits_later)
        # a flit taken, or one presented to a user who holds ready low: never a deadlock
        moved |= self._end_of_cycle()
        if moved:
            self._quiet = 0
        else:
            self._quiet += 1
        self.cycle += 1

    def run(self, cycles: int) -> None:
        for _ in range(cycles):
            self.step()

    @property
    def stuck(self) -> bool:
        """True once nothing can ever move again while flits wait in buffers."""
        return self._quiet > 0 and bool(self._busy)

    def _inject(self) -> bool:
        moved = False
        for index in sorted(self._injecting):
            endpoint = self._endpoints[index]
            if not endpoint.flits:
                if not endpoint.queue:
                    self._injecting.discard(index)
                    continue
                packet = endpoint.queue[0]
                if packet.created > self.cycle:
                    continue
                if not self._start(endpoint, index, packet):
                    continue
            which, vc = endpoint.attachment, endpoint.vc
            if endpoint.credits[which][vc] == 0:
                continue
            endpoint.credits[which][vc] -= 1
            attachment = self.plan.endpoints[index].attachments[which]
            self._sent.append((~vc, attachment.switch, attachment.port, endpoint.flits.popleft()))
            self.in_network += 1
            moved = True
        return moved

    def _start(self, endpoint: _Endpoint, index: int, packet: Packet) -> bool:
        """A head's (attachment, VC): the first with a credit, injection choices in order, VCs
        from the injection pointer (docs/microarchitecture.md, Endpoints)."""
        attachments = self.plan.endpoints[index].attachments
        n = self._injection_vcs
        for choice in self.routing.injections(packet.src, packet.dst):
            which = attachments.index(PortRef(choice.switch, choice.port))
            credits = endpoint.credits[which]
            for vc in (v % n for v in range(endpoint.pointer, endpoint.pointer + n)):
                if credits[vc] > 0:
                    endpoint.queue.popleft()
                    endpoint.attachment, endpoint.vc = which, vc
                    endpoint.pointer = (vc + 1) % n
                    heads = self._head_flits(choice.head)
                    count = packet.length + heads - 1
                    endpoint.flits.extend(
                        _Flit(packet, i, choice.head, count, heads) for i in range(count)
                    )
                    packet.injected = self.cycle
                    return True
        return False

    def _switch_cycle(self, s: int) -> bool:
        bufs, assign, credit = self._buf[s], self._assign[s], self._credit[s]
        # per input port: the requesting VCs and the output VC each wants
        requests: list[list[tuple[int, tuple[int, int]]]] = []
        # stages 3: per input port, the heads that request an output VC (VC allocation)
        vc_requests: list[list[tuple[int, tuple[int, int]]]] = []
        for p, vc_bufs in enumerate(bufs):
            wants, vc_wants = [], []
            for v, buf in enumerate(vc_bufs):
                if not buf:
                    continue
                target = assign[p][v]
                if target is None:
                    # a head is routed once all its head flits are in (step 1), under
                    # store-and-forward its whole packet (no head flits then: its length)
                    need = buf[0].packet.length if self._stores else buf[0].head_flits
                    ready = buf[0].decision is not None or len(buf) >= need
                    target = self._select(s, p, v, buf[0]) if ready else None
                    if self._vc_stage:
                        if target is not None:
                            vc_wants.append((v, target))
                        continue
                elif credit[target[0]][target[1]] == 0:
                    target = None
                if target is not None:
                    wants.append((v, target))
            requests.append(wants)
            vc_requests.append(vc_wants)
        if self._bypasses:
            self._requested[s] = {o for wants in requests for _, (o, _) in wants}
            self._filled[s] = {
                (p, v) for p, vc_bufs in enumerate(bufs) for v, b in enumerate(vc_bufs) if b
            }
        staged = False
        if self._split:
            # the output stage grants among last cycle's picks; the input stage picks on this
            # cycle's start state, as if every staged pick crossed now
            picks = self._stage(s, requests)
            requests = [[pick] if pick else [] for pick in self._staged[s]]
            self._staged[s] = picks
            staged = any(picks)
        grants = self._allocate(s, requests, self._rr_in[s], self._rr_out[s])
        acquired = []
        owner = self._owner[s]
        if self._vc_split:
            picks = self._vc_stage_picks(s, vc_requests)
            vc_requests = [[pick] if pick else [] for pick in self._vc_staged[s]]
            self._vc_staged[s] = picks
            # a staged head is consumed this cycle, acquired or dropped by the re-check: the
            # state moves even when nothing is acquired, so the cycle is not a quiet one
            staged = staged or any(picks) or any(vc_requests)
        if self._vc_stage:
            acquired = self._allocate(s, vc_requests, self._va_in[s], self._va_out[s])
        if self._vc_split:
            # the VC output stage's grant moves its pointer, but takes the output VC only if
            # it is still free: another head may have acquired it last cycle
            for p, _v, o, _w in acquired:
                self._va_out[s][o] = (p + 1) % len(bufs)
            acquired = [(p, v, o, w) for p, v, o, w in acquired if self._free(s, p, o, w)]
        for p, v, o, w in acquired:
            assign[p][v] = (o, w)
            owner[o][w] = (p, v)
            self._move_select(s, p, o)
            if not self._vc_split:  # else it moved when the VC input stage picked
                self._va_in[s][p] = (v + 1) % len(bufs[p])
            self._va_out[s][o] = (p + 1) % len(bufs)
        if not grants:
            routed, self._routed = self._routed, False
            return routed or bool(acquired) or staged
        rr_in, rr_out = self._rr_in[s], self._rr_out[s]
        for p, v, o, w in grants:
            flit = bufs[p][v].popleft()
            if flit.is_head:
                self._drop_surplus(s, p, v, flit)
                if not self._vc_stage:
                    self._move_select(s, p, o)
            self._cross(s, p, v, o, w, flit)
            if not self._split:  # else it moved when the input stage picked
                rr_in[p] = (v + 1) % len(bufs[p])
            rr_out[o] = (p + 1) % len(bufs)
        if not any(q for vcs in bufs for q in vcs):
            self._busy.discard(s)
        self._routed = False
        return True

    def _cross(self, s: int, p: int, v: int, o: int, w: int, flit: _Flit) -> None:
        """Step 5 for one flit leaving input VC (p, v) on output VC (o, w): the credit spent,
        a head's owner and next head, a tail's release; the flit and a credit go out."""
        credit, assign, owner = self._credit[s], self._assign[s], self._owner[s]
        credit[o][w] -= 1
        if flit.is_head:
            if not self._vc_stage:
                assign[p][v] = (o, w)
                owner[o][w] = (p, v)
            flit.head = flit.decision.head
            flit.decision = None
            flit.packet.path.append((s, o))
        if flit.is_tail:
            assign[p][v] = None
            owner[o][w] = None
        self._sent.append((s, o, w, flit))
        self._credits_sent.append((s, p, v))

    def _bypass(self) -> None:
        """The straight bypass (docs/microarchitecture.md, Straight bypass): a flit on a link in
        its last cycle crosses its switch now, instead of being written into its input VC's
        FIFO, when it goes straight, that FIFO is empty, its output VC is the one it holds (a
        body or tail) or the one step 2 would give it at the front (a head) with a credit, and
        no buffered flit of the switch requests that output port this cycle. The switches'
        steps left that output port's state as it was at the start of the cycle (nothing
        requested it, so nothing was granted on it)."""
        view, kept = self.view, []
        for item in self._wire:
            s_up, o_up, w, flit = item
            link = None if s_up < 0 else view.out_link[s_up][o_up]
            target = None if link is None else self._straight_target(link, w, flit)
            if target is None:
                kept.append(item)
                continue
            s, p = link.dst.switch, link.dst.port
            self._note_written(s, p, w, flit)
            if flit.is_head:
                flit.packet.hops += 1
            self._cross(s, p, w, *target, flit)
            self.bypassed += 1
        self._wire = kept
        self._requested, self._filled = {}, {}

    def _straight_target(self, link: Any, v: int, flit: _Flit) -> tuple[int, int] | None:
        """The output VC a flit arriving on ``link``'s VC ``v`` bypasses on, or None."""
        s, p = link.dst.switch, link.dst.port
        o = self._straight[s].get(p)
        if o is None or (p, v) in self._filled.get(s, ()) or o in self._requested.get(s, ()):
            return None  # its FIFO held a flit at the start of the cycle, or o is asked
        if not flit.is_head:
            target = self._assign[s][p][v]
            ok = target is not None and target[0] == o and self._credit[s][o][target[1]] > 0
            return target if ok else None
        target = self._select(s, p, v, flit)
        if target is None or target[0] != o:
            flit.decision = None  # it waits at the front like any head: routed there again
            return None
        return target

    def _stage(
        self, s: int, requests: list[list[tuple[int, tuple[int, int]]]]
    ) -> list[tuple[int, tuple[int, int]] | None]:
        """Stages 4, input stage: per input port, the first requesting VC at or after its
        pointer that still requests if the port's staged pick crosses this cycle (that VC needs
        a second flit and a second credit, and its front must not be a tail). It becomes the
        port's staged pick for the next cycle and the pointer moves past it."""
        bufs, credit, rr_in = self._buf[s], self._credit[s], self._rr_in[s]
        picks: list[tuple[int, tuple[int, int]] | None] = []
        for p, wants in enumerate(requests):
            staged = self._staged[s][p]
            if staged is not None:
                v, (o, w) = staged
                leaving, tail = self._leaving(bufs[p][v])
                if len(bufs[p][v]) <= leaving or credit[o][w] < 2 or tail:
                    wants = [want for want in wants if want[0] != v]
            if not wants:
                picks.append(None)
                continue
            n = len(bufs[p])
            pick = min(wants, key=lambda r: (r[0] - rr_in[p]) % n)
            rr_in[p] = (pick[0] + 1) % n
            picks.append(pick)
        return picks

    def _vc_stage_picks(
        self, s: int, requests: list[list[tuple[int, tuple[int, int]]]]
    ) -> list[tuple[int, tuple[int, int]] | None]:
        """Stages 5, VC input stage: per input port, the first head requesting an output VC at
        or after the port's VC-allocation pointer, other than the head the port staged last
        cycle (the VC output stage grants or drops that one now). It becomes the port's staged
        head for the next cycle and the pointer moves past it."""
        picks: list[tuple[int, tuple[int, int]] | None] = []
        for p, wants in enumerate(requests):
            staged = self._vc_staged[s][p]
            if staged is not None:
                wants = [want for want in wants if want[0] != staged[0]]
            if not wants:
                picks.append(None)
                continue
            n, pointer = len(self._buf[s][p]), self._va_in[s]
            pick = min(wants, key=lambda r: (r[0] - pointer[p]) % n)
            pointer[p] = (pick[0] + 1) % n
            picks.append(pick)
        return picks

    def _head_flits(self, head: Any) -> int:
        """Head flits a packet carrying ``head`` travels with (``router.head_bits``)."""
        if self._head_bits is None:
            return 1
        return head_flits(self.routing.head_length(head), self._head_bits)

    def _leaving(self, buf: deque[_Flit]) -> tuple[int, bool]:
        """Flits the front of ``buf`` takes out of it when it crosses (a routed head: itself
        and the surplus head flits behind it), and whether they end the packet."""
        front = buf[0]
        if not front.is_head or front.head_flits == 1:
            return 1, front.is_tail
        leaving = 1 + front.head_flits - self._head_flits(front.decision.head)
        return leaving, any(buf[i].is_tail for i in range(leaving))

    def _drop_surplus(self, s: int, p: int, v: int, flit: _Flit) -> None:
        """A head that crosses takes out of its FIFO the head flits its next head no longer
        needs (the ones right behind it), returning their credits with its own; if they held
        the tail (a one-flit payload), the head ends the packet itself."""
        if flit.head_flits == 1:
            return
        keep = self._head_flits(flit.decision.head)
        buf = self._buf[s][p][v]
        for _ in range(flit.head_flits - keep):
            dropped = buf.popleft()
            if self.check_invariants and (dropped.packet, dropped.data) != (flit.packet, None):
                raise InvariantError(f"packet {flit.packet.id}: a head flit missing at a drop")
            flit.is_tail = flit.is_tail or dropped.is_tail
            self._credits_sent.append((s, p, v))
            self.in_network -= 1
        flit.head_flits = keep

    def _select(self, s: int, p: int, v: int, flit: _Flit) -> tuple[int, int] | None:
        """Step 2 for a head: the output VC it requests among its free candidates (with credit,
        unless VC allocation is a stage of its own: stages 3)."""
        if flit.decision is None:
            flit.decision = self.routing.route(s, p, v, flit.head)
            if self._route_stage:
                self._routed = True
                return None
        owner, credit = self._owner[s], self._credit[s]
        usable = [
            (hop.port, w)
            for hop in flit.decision.hops
            for w in hop.vcs
            if self._free(s, p, hop.port, w) and (self._vc_stage or credit[hop.port][w] > 0)
        ]
        if not usable:
            return None
        if not self._selection_pointer:
            return usable[0]
        pointer, n_ports = self._rr_select[s][p], len(owner)
        if self._random:  # the drawn one of the usable ports, its lowest usable VC
            ports = sorted({o for o, _ in usable})
            pointer = ports[random_pick(pointer, len(ports))]
        if not self._occupancy:
            return min(usable, key=lambda c: ((c[0] - pointer) % n_ports, c[1]))
        level, low = self._level[s], self._low
        return min(
            usable,
            key=lambda c: (
                level[c[0]][c[1]],
                credit[c[0]][c[1]] < low,
                (c[0] - pointer) % n_ports,
                c[1],
            ),
        )

    def _move_select(self, s: int, p: int, o: int) -> None:
        """A head of input port ``p`` took output port ``o``: its selection pointer moves past
        ``o``, or under ``random`` its LFSR steps (docs/microarchitecture.md, step 2)."""
        if self._random:
            self._rr_select[s][p] = lfsr_step(self._rr_select[s][p])
        else:
            self._rr_select[s][p] = (o + 1) % len(self._rr_select[s])

    def _free(self, s: int, p: int, o: int, w: int) -> bool:
        """Output VC (o, w) can be taken by a head of input port ``p``: it has no owner, under
        cut-through and store-and-forward its downstream buffer takes the longest packet whole
        (two of them for a head entering a ring under bubble flow control), and, if it is an
        adaptive VC, that buffer is empty (every credit home)."""
        if self._owner[s][o][w] is not None:
            return False
        credit = self._credit[s][o][w]
        if credit < self._needed(s, p, o, w):
            return False
        return (o, w) not in self._atomic[s] or credit == self.depth

    def _needed(self, s: int, p: int, o: int, w: int) -> int:
        """Credits free output VC (o, w) needs for a head of input port ``p``."""
        return 2 * self._whole if (p, o, w) in self._entering[s] else self._whole

    def _allocate(
        self,
        s: int,
        requests: list[list[tuple[int, tuple[int, int]]]],
        rr_in: list[int],
        rr_out: list[int],
    ) -> list[tuple[int, int, int, int]]:
        """Steps 3 and 4 on the pointers ``rr_in`` and ``rr_out``, once per iteration: (in port,
        in VC, out port, out VC) per grant."""
        n_ports = len(requests)
        grants: list[tuple[int, int, int, int]] = []
        matched_in: set[int] = set()
        matched_out: set[int] = set()
        for _ in range(self._iterations):
            picks: dict[int, list[tuple[int, int, int]]] = {}  # out port -> [(in, vc, out vc)]
            for p, wants in enumerate(requests):
                if p in matched_in:
                    continue
                open_wants = [(v, t) for v, t in wants if t[0] not in matched_out]
                if open_wants:
                    n = len(self._buf[s][p])
                    v, (o, w) = min(open_wants, key=lambda r: (r[0] - rr_in[p]) % n)
                    picks.setdefault(o, []).append((p, v, w))
            if not picks:
                break
            for o, contenders in picks.items():
                p, v, w = min(contenders, key=lambda c: (c[0] - rr_out[o]) % n_ports)
                grants.append((p, v, o, w))
                matched_in.add(p)
                matched_out.add(o)
        return grants

    def _end_of_cycle(self) -> bool:
        """Flits and credits land, and users take flits; whether a user took one or holds one
        back (:meth:`_take`)."""
        view = self.view
        for s, o, w, flit in self._wire:
            if s < 0:  # injection on VC ~s: o is the switch, w its local port
                self._write(o, w, ~s, flit)
                continue
            link = view.out_link[s][o]
            if link is None:
                endpoint, which = self._ejection_of[(s, o)]
                received = self._endpoints[endpoint].received[which][w]
                received.append(flit)
                self._receiving.add((endpoint, which))
                if self.check_invariants and len(received) > self.depth:
                    raise InvariantError(
                        f"endpoint {endpoint}: receive buffer {which}/vc{w} over depth"
                    )
            else:
                if flit.is_head:
                    flit.packet.hops += 1
                self._write(link.dst.switch, link.dst.port, w, flit)
        user = self._take()
        for s, p, v in self._credits_wire:
            link = view.in_link[s][p]
            if link is None:
                endpoint, which = self._injection_of[(s, p)]
                self._endpoints[endpoint].credits[which][v] += 1
            else:
                self._credit[link.src.switch][link.src.port][v] += 1
                if self.check_invariants and (
                    self._credit[link.src.switch][link.src.port][v] > self.depth
                ):
                    raise InvariantError(f"credits over depth on {view.channel_name(link.id, v)}")
        if self._delayed:
            self._schedule()
        else:
            self._wire, self._sent = self._sent, []
            self._credits_wire, self._credits_sent = self._credits_sent, []
        return user

    def _schedule(self) -> None:
        """This cycle's flits and credits onto links of ``latency`` d: they land at the end of
        cycle + d (docs/microarchitecture.md, Link)."""
        for item in self._sent:
            s, o = item[0], item[1]
            delay = 1 if s < 0 else self._out_delay[s][o]
            self._later.setdefault(self.cycle + delay, []).append(item)
        for item in self._credits_sent:
            self._credits_later.setdefault(
                self.cycle + self._in_delay[item[0]][item[1]], []
            ).append(item)
        self._sent, self._credits_sent = [], []
        self._wire = self._later.pop(self.cycle + 1, [])
        self._credits_wire = self._credits_later.pop(self.cycle + 1, [])

    def _flits_in_flight(self) -> list[tuple[int, int, int, _Flit]]:
        """Flits sent this cycle or on a link."""
        return self._sent + self._wire + [item for items in self._later.values() for item in items]

    def _credits_in_flight(self) -> list[tuple[int, int, int]]:
        """Credits returned this cycle or on a credit wire."""
        later = [item for items in self._credits_later.values() for item in items]
        return self._credits_sent + self._credits_wire + later

    def _write(self, s: int, p: int, v: int, flit: _Flit) -> None:
        buf = self._buf[s][p][v]
        buf.append(flit)
        if self.check_invariants and len(buf) > self.depth:
            raise InvariantError(f"{self.view.switches[s].name}.p{p}/vc{v} over depth")
        self._note_written(s, p, v, flit)
        self._busy.add(s)

    def _note_written(self, s: int, p: int, v: int, flit: _Flit) -> None:
        """Check that ``flit`` reaching input VC (p, v) of switch ``s`` (into its FIFO, or past
        it by the bypass) follows the flit before it there in its packet."""
        if self.check_invariants:
            where = f"{self.view.switches[s].name}.p{p}/vc{v}"
            last = self._last_written.get((s, p, v))
            if flit.is_head:
                contiguous = last is None or last.is_tail
            else:
                contiguous = last is not None and last.packet is flit.packet
                # the flits a head dropped (surplus head flits) leave a gap behind it only
                gap = flit.index - last.index
                dropped = gap > 1 and last.is_head and self._head_bits is not None
                contiguous = contiguous and (gap == 1 or dropped)
            if not contiguous:
                raise InvariantError(f"packet {flit.packet.id} not contiguous on {where}")
            self._last_written[(s, p, v)] = flit

    def _take(self) -> bool:
        """Ejection (docs/microarchitecture.md, Endpoints): each attachment presents the front
        flit of the ejection VC it is presenting, choosing one (the first with a flit at or
        after its ejection pointer) when it has none; the user takes it when ``ready`` is high
        (a hidden head flit is taken whatever ``ready``), and its credit is back at the local
        output for the next cycle. A taken tail ends the
        presentation. Returns whether a flit was taken or a presented one held back by the
        user."""
        ready, cycle = self._eject_ready, self.cycle
        active = False
        for endpoint, which in sorted(self._receiving):
            state = self._endpoints[endpoint]
            queues = state.received[which]
            vc = state.presenting[which]
            if vc is None:
                n, start = len(queues), state.eject_pointer[which]
                vc = next((start + i) % n for i in range(n) if queues[(start + i) % n])
                state.presenting[which] = vc
                state.eject_pointer[which] = (vc + 1) % n
            queue = queues[vc]
            if not queue:
                continue  # the presented packet's next flit is still on its way
            active = True
            if ready is not None and not queue[0].hidden and not ready(endpoint, which, cycle):
                continue
            flit = queue.popleft()
            if flit.is_tail:
                state.presenting[which] = None
            if not any(queues):
                self._receiving.discard((endpoint, which))
            attachment = self.plan.endpoints[endpoint].attachments[which]
            self._credit[attachment.switch][attachment.port][vc] += 1
            self._deliver(endpoint, flit)
        return active

    def _deliver(self, endpoint: int, flit: _Flit) -> None:
        packet = flit.packet
        if self.check_invariants:
            if endpoint != packet.dst:
                raise InvariantError(f"packet {packet.id} delivered to endpoint {endpoint}")
            if flit.data not in (None, packet.flits_delivered):
                raise InvariantError(f"packet {packet.id}: flit {flit.index} out of order")
        if flit.data is not None:  # head flits behind the first carry no payload: stripped
            packet.flits_delivered += 1
        self.in_network -= 1
        if flit.is_tail:
            packet.delivered = self.cycle
            self.delivered_count += 1
            self._on_deliver(packet)

    # ---- deadlock report ---------------------------------------------------------------------

    def waiting_cycle(self) -> list[str]:
        """The cycle of input VCs that wait on each other, as channel names (empty if none).

        An input VC waits on the downstream input VC whose buffer it needs a credit for, on
        the input VC that holds the output VC it wants, or, when its buffer is empty mid-packet,
        on the upstream input VC that is still sending it the packet.
        """
        view = self.view
        waits: dict[tuple[int, int, int], set[tuple[int, int, int]]] = {}
        for s, vc_owners in enumerate(self._owner):
            for owners in vc_owners:
                for holder in owners:
                    if holder is None or self._buf[s][holder[0]][holder[1]]:
                        continue
                    # the holder's buffer is empty: its packet is still coming from upstream
                    link = view.in_link[s][holder[0]]
                    if link is not None:
                        upstream = self._owner[link.src.switch][link.src.port][holder[1]]
                        if upstream is not None:
                            waits[(s, *holder)] = {(link.src.switch, *upstream)}
        for s in sorted(self._busy):
            for p, vc_bufs in enumerate(self._buf[s]):
                for v, buf in enumerate(vc_bufs):
                    if buf:
                        waits[(s, p, v)] = self._wait_targets(s, p, v, set())
        return [self._input_vc_name(*node) for node in find_wait_cycle(waits)]

    def _wait_targets(
        self, s: int, p: int, v: int, returning: set[tuple[int, int, int]]
    ) -> set[tuple[int, int, int]]:
        """The input VCs the front flit of buffer (s, p, v) waits on; empty if it could move.

        ``returning`` holds the (switch, output port, VC)s with a credit on its way back: a
        flit waiting for one of those is not blocked.
        """
        buf = self._buf[s][p][v]
        head = self._assign[s][p][v] is None
        if not head:
            wanted = [self._assign[s][p][v]]
        else:
            decision = buf[0].decision or self.routing.route(s, p, v, buf[0].head)
            wanted = [(hop.port, w) for hop in decision.hops for w in hop.vcs]
        targets = set()
        for o, w in wanted:
            # credits: one per flit, under cut-through a head's whole packet (or two)
            needed = max(1, self._needed(s, p, o, w)) if head else 1
            holder = self._owner[s][o][w]
            if holder is not None and holder != (p, v):
                targets.add((s, *holder))
            elif self._credit[s][o][w] < needed and (s, o, w) not in returning:
                link = self.view.out_link[s][o]
                if link is None:
                    return set()  # a local output waits for the user to take flits, no VC
                targets.add((link.dst.switch, link.dst.port, w))
            else:
                return set()  # a free output VC with room: only arbitration holds it
        return targets

    def fronts(self) -> dict[tuple[int, int, int], _Flit]:
        """The front flit of every non-empty input VC, for :meth:`knot` to compare later."""
        return {
            (s, p, v): buf[0]
            for s in sorted(self._busy)
            for p, vc_bufs in enumerate(self._buf[s])
            for v, buf in enumerate(vc_bufs)
            if buf
        }

    def knot(self, earlier: dict[tuple[int, int, int], _Flit]) -> list[str]:
        """A deadlock, whole or partial, as a cycle of channel names (empty if none).

        Candidates are the input VCs whose front flit is the one they held in ``earlier`` (a
        :meth:`fronts` snapshot): they have not moved since. The knot is the largest set of
        candidates that each wait only on members of the set (:meth:`_wait_targets`, credits on
        their way back counted as free): none of them can ever move again, whatever the rest
        of the fabric does. Waiting on a VC whose buffer is empty is never a deadlock (its
        packet's flits are still coming), so such VCs stay out.
        """
        returning = set()
        for s, p, v in self._credits_in_flight():
            link = self.view.in_link[s][p]
            if link is not None:
                returning.add((link.src.switch, link.src.port, v))
        waits = {
            node: self._wait_targets(*node, returning)
            for node, flit in self.fronts().items()
            if earlier.get(node) is flit
        }
        changed = True
        while changed:
            changed = False
            for node in list(waits):
                targets = waits[node]
                if not targets or any(t not in waits for t in targets):
                    del waits[node]
                    changed = True
        return [self._input_vc_name(*node) for node in find_wait_cycle(waits)]

    def _input_vc_name(self, s: int, p: int, v: int) -> str:
        return input_vc_name(self.view, s, p, v)

    def check_deadlock(self) -> None:
        """Raise :class:`ModelDeadlock` if the fabric can never move again."""
        if self.stuck:
            raise ModelDeadlock(self.cycle, self.waiting_cycle())

    # ---- invariants ---------------------------------------------------------------------------

    def check_credits(self) -> None:
        """Credits + buffered + in-flight flits + returning credits = depth, per link VC."""
        view = self.view
        count: dict[tuple[int, int], int] = {}
        for s, o, w, _flit in self._flits_in_flight():
            if s >= 0 and view.out_link[s][o] is not None:
                key = (view.out_link[s][o].id, w)
                count[key] = count.get(key, 0) + 1
        for s, p, v in self._credits_in_flight():
            link = view.in_link[s][p]
            if link is not None:
                count[(link.id, v)] = count.get((link.id, v), 0) + 1
        for link in self.plan.links:
            for v in range(link.vcs):
                held = len(self._buf[link.dst.switch][link.dst.port][v])
                total = self._credit[link.src.switch][link.src.port][v] + held
                total += count.get((link.id, v), 0)
                if total != self.depth:
                    name = view.channel_name(link.id, v)
                    raise InvariantError(f"credits not conserved on {name}: {total}")
        # ejection, per VC: credit + receive buffer + flits sent or on the link = depth
        sent: dict[tuple[int, int, int], int] = {}
        for s, o, w, _flit in self._flits_in_flight():
            if s >= 0 and view.out_link[s][o] is None:
                sent[(s, o, w)] = sent.get((s, o, w), 0) + 1
        for (s, o), (endpoint, which) in self._ejection_of.items():
            for w, received in enumerate(self._endpoints[endpoint].received[which]):
                total = self._credit[s][o][w] + sent.get((s, o, w), 0) + len(received)
                if total != self.depth:
                    name = f"{view.switches[s].name}.p{o}/vc{w}"
                    raise InvariantError(f"credits not conserved on ejection {name}: {total}")
        # injection, per local VC: endpoint credit + buffered + in flight + returning = depth
        out: dict[tuple[int, int, int], int] = {}
        for s, o, w, _flit in self._flits_in_flight():
            if s < 0:
                out[(o, w, ~s)] = out.get((o, w, ~s), 0) + 1
        for s, p, v in self._credits_in_flight():
            if view.in_link[s][p] is None:
                out[(s, p, v)] = out.get((s, p, v), 0) + 1
        for (s, p), (endpoint, which) in self._injection_of.items():
            for v, credit in enumerate(self._endpoints[endpoint].credits[which]):
                total = credit + len(self._buf[s][p][v]) + out.get((s, p, v), 0)
                if total != self.depth:
                    name = self._input_vc_name(s, p, v)
                    raise InvariantError(f"credits not conserved on injection {name}: {total}")


class DeadlockWatch:
    """Watches a running model for a deadlock: the whole fabric frozen, or a part of it.

    Call it after every :meth:`FabricModel.step`. A whole-fabric freeze is seen at once; a
    partial deadlock (a knot of VCs that wait on each other while other traffic still moves)
    within ``2 * every`` cycles of forming: every ``every`` cycles the VCs whose front flit has
    not moved since the previous look are checked for a knot (:meth:`FabricModel.knot`).
    """

    def __init__(self, model: FabricModel | FastModel, every: int = 256):
        if every < 1:
            raise ValueError(f"every must be at least 1 cycle, got {every!r}")
        self.model = model
        self.every = every
        #: the model's ``fronts()`` at the last look (None before the first): the reference's
        #: dict, the fast engine's :class:`~zfabric.sim.fast.engine.Fronts` arrays
        self._fronts: dict[tuple[int, int, int], _Flit] | Fronts | None = None

    def __call__(self) -> ModelDeadlock | None:
        """The deadlock found after this cycle, or None."""
        model = self.model
        if model.stuck:
            return ModelDeadlock(model.cycle, model.waiting_cycle())
        if model.cycle % self.every == 0:
            # no knot before a first look; after an empty one, knot finds none (no front stayed)
            channels = [] if self._fronts is None else model.knot(self._fronts)
            if channels:
                return ModelDeadlock(model.cycle, channels, partial=True)
            self._fronts = model.fronts()
        return None
