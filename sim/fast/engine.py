"""The fast engine: the reference model's cycles (docs/microarchitecture.md) on flat arrays,
compiled (:mod:`.kernel`), the routing decisions memoised in tables (:mod:`.tables`).

The routing function stays the plan's own pure Python one: each decision is computed once per
routing state (:meth:`~zfabric.routing.base.RoutingFunction.state_key`), when a head first
needs it, and kept in a table the compiled cycle reads by raw state (switch, input VC, head).
:class:`FastModel` offers :class:`~zfabric.sim.model.FabricModel`'s interface (``offer``,
``step``, the deadlock checks, the credit check), and :meth:`FastModel.run_until` runs many
cycles per call, which is where its speed comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from zfabric.bubble import check_packet_length
from zfabric.deadlock import find_wait_cycle
from zfabric.plan import FabricPlan
from zfabric.router_settings import low_occupancy

from ..model import EjectStalls, InvariantError, ModelDeadlock, Packet
from ..model.fabric_model import input_vc_name
from . import kernel as k
from .tables import tables_for

__all__ = ["FastModel", "RECORD_FIELDS", "UnsupportedSetting", "fast_refusal"]

#: a FIFO entry is ``slot << 16 | index``: packets of up to this many flits on a link
MAX_FLITS = 1 << 16
#: the type of the port and VC tables' fields: indices, credits, pointers and cycle numbers
#: all fit in 32 bits, so a row is one cache line, and a switch's step reads half the lines
#: (the E6 Znode's cycle 5 % faster than with 64-bit rows). A cycle number must fit too:
#: a run stops before :data:`LAST_CYCLE`
ROW_TYPE = np.int32
LAST_CYCLE = np.iinfo(ROW_TYPE).max
#: the packet slots the kernel's table starts with (doubled as needed)
PACKET_SLOTS = 256
#: the columns of :meth:`FastModel.undelivered_rows` and of ``on_deliver_rows``' arrays: the
#: kernel's packet table's first ones (``kernel.RECORD``)
RECORD_FIELDS = ("id", "src", "dst", "length", "created", "injected", "delivered", "hops")
#: from this many switches the cycle steps only the switches and visits only the attachments
#: at work (:mod:`.kernel`'s work lists): measured faster on the 17,440-switch E6 Znode, slower
#: on the 1024-switch torus at 0.1 (nearly every switch busy); none measured in between
WORK_LISTS_FROM = 4096

_SELECTIONS = {
    "first-free": k.FIRST_FREE,
    "round-robin": k.ROUND_ROBIN,
    "occupancy": k.OCCUPANCY,
    "random": k.RANDOM,
}

#: why :meth:`FastModel.run_until` stopped, by the kernel's status
STOPS = {k.UNTIL: "until", k.STUCK: "stuck", k.WATCH: "watch", k.SETTLED: "settled"}

#: the kernel's invariant errors; ``{}`` is what it names (an index, or a packet's slot)
_ERRORS = {
    k.FIFO_OVER: "input VC {} over depth",
    k.RECEIVE_OVER: "receive buffer {} over depth",
    k.CREDIT_OVER: "credits over depth on output VC {}",
    k.WRONG_ENDPOINT: "packet {} delivered to another endpoint",
    k.OUT_OF_ORDER: "packet {}: flit out of order",
    k.SURPLUS: "packet {}: a head flit missing at a drop",
}
_BY_SLOT = (k.WRONG_ENDPOINT, k.OUT_OF_ORDER, k.SURPLUS)


def _rows(table: np.ndarray) -> np.ndarray:
    """``table`` (``gp``, ``iv`` or ``ov``) as :data:`ROW_TYPE`, starting on a 64-byte
    boundary: each 16-field row one whole cache line."""
    raw = np.empty(table.size * ROW_TYPE().itemsize + 64, np.uint8)
    start = -raw.ctypes.data % 64
    rows = raw[start : start + table.size * ROW_TYPE().itemsize].view(ROW_TYPE)
    rows = rows.reshape(table.shape)
    rows[...] = table
    return rows


class Fronts(NamedTuple):
    """The deadlock watch's look at the input VCs: the non-empty ones in order and the flit at
    each one's front (its packet's id x MAX_FLITS + its index: a slot's next packet differs)."""

    ivs: np.ndarray
    flits: np.ndarray


class UnsupportedSetting(ValueError):
    """The fast engine does not run this configuration (the reference model does)."""


def fast_refusal(plan: FabricPlan, eject_ready: Any = None) -> str | None:
    """Why the fast engine cannot run ``plan`` with ``eject_ready``, or None if it can."""
    for link in plan.links:
        if link.latency != 1:
            return (
                f"link {link.id} takes {link.latency} cycles: the reference model runs long links"
            )
    if plan.router.selection == "random" and max(s.radix for s in plan.switches) > 62:
        return "random selection on switches of more than 62 ports"
    if eject_ready is not None and not isinstance(eject_ready, EjectStalls):
        return "an ejection ready function other than EjectStalls"
    return None


class FastModel:
    """Simulates every switch, link and endpoint of ``plan`` flit by flit, cycle-identical to
    :class:`~zfabric.sim.model.FabricModel` (same arguments). ``paths``: keep each packet's
    ``path`` (the switches and output ports of its head), as the reference always does; a run
    that never reads it may turn it off. ``watched``: the packets created in this window of
    cycles are those :meth:`run_until`'s ``settle_after`` waits for. ``work_lists``: step only
    the switches at work (default: from :data:`WORK_LISTS_FROM` switches on); the cycles are
    the same either way. ``on_deliver_rows``: packets are offered as rows
    (:meth:`offer_rows`), no :class:`~zfabric.sim.model.Packet` made, and each batch of
    delivered ones goes to it as an array of :data:`RECORD_FIELDS` rows, in the reference's
    order (no paths kept): a measurement of many packets without Python's work per packet."""

    #: the compiled cycles (a test plants a bug in a copy of them)
    _kernel_run = staticmethod(k.run)

    def __init__(
        self,
        plan: FabricPlan,
        *,
        check_invariants: bool = True,
        on_deliver: Callable[[Packet], None] | None = None,
        eject_ready: Callable[[int, int, int], bool] | None = None,
        paths: bool = True,
        watched: tuple[int, int] | None = None,
        watch_every: int = 256,
        work_lists: bool | None = None,
        on_deliver_rows: Callable[[np.ndarray], None] | None = None,
    ):
        refusal = fast_refusal(plan, eject_ready)
        if refusal:
            raise UnsupportedSetting(f"the fast engine does not run {refusal}")
        self.plan = plan
        paths = paths and on_deliver_rows is None
        self._tables = tables = tables_for(plan)
        #: per attachment, whether it injects (the credit check's)
        self._injecting = np.array(self._tables.injecting, np.bool_)
        self.view, self.routing = tables.view, tables.routing
        self.depth = plan.buffer_depth
        self._watched = watched or (0, 0)
        self._paths = paths
        self.delivered: list[Packet] = []
        self._on_deliver = on_deliver if on_deliver is not None else self.delivered.append
        self._on_deliver_rows = on_deliver_rows
        self._next_id = 0
        self._sequence: dict[int, int] = {}
        #: queued for the kernel: (id, created, src, dst, length, pair, watched) per packet,
        #: tuples from :meth:`offer_many` with their packets, arrays from :meth:`offer_rows`
        self._offers: list[tuple[int, int, int, int, int, int, int]] = []
        self._offered: list[Packet] = []
        self._offer_arrays: list[np.ndarray] = []
        #: the packet lengths offered so far, which the plan carries
        self._carried: set[int] = set()
        if work_lists is None:
            work_lists = len(plan.switches) >= WORK_LISTS_FROM
        self._arrays = self._build(check_invariants, paths, eject_ready, watch_every, work_lists)
        self._packets: list[Packet | None] = [None] * len(self._arrays["pk"])  # by slot
        self._version = tables.version
        self._st = k.State(**self._arrays)
        tables.register(self)

    # ---- the arrays ----------------------------------------------------------------------

    def _build(self, checks: bool, paths: bool, eject_ready, watch_every: int, lists: bool):
        tables, router, depth = self._tables, self.plan.router, self.depth
        n_inj, n_ej = router.injection_vcs, router.ejection_vcs
        n_iv, n_ov, n_gp = len(tables.iv), len(tables.ov), len(tables.gp)
        n_ga, n_ep = len(tables.ga), len(self.plan.endpoints)
        ep = np.zeros((n_ep, k.EP_FIELDS), np.int64)
        ep[:, [k.EP_SLOT, k.EP_QHEAD, k.EP_QTAIL]] = -1
        ep[:, k.EP_ATT0] = np.cumsum([0] + [len(e.attachments) for e in self.plan.endpoints])[:-1]
        radix = int(tables.sw[:, k.SW_NPORTS].max())
        stalls = isinstance(eject_ready, EjectStalls)
        cfg = np.zeros(k.CFG_SIZE, np.int64)
        cfg[k.DEPTH], cfg[k.INJ_VCS], cfg[k.EJ_VCS] = depth, n_inj, n_ej
        cfg[k.ITERATIONS] = 2 if router.allocator == "separable-2" else 1
        cfg[k.ROUTE_STAGE] = router.stages >= 2
        cfg[k.VC_STAGE] = router.stages >= 3
        cfg[k.SPLIT] = router.stages >= 4
        cfg[k.VC_SPLIT] = router.stages == 5
        cfg[k.SELECTION] = _SELECTIONS[router.selection]
        cfg[k.LOW] = low_occupancy(depth)
        cfg[k.PATHS], cfg[k.STALLS], cfg[k.CHECKS] = paths, stalls, checks
        cfg[k.WATCH_EVERY] = watch_every
        cfg[k.N_IV] = n_iv
        cfg[k.LISTS] = lists
        cfg[k.WHOLE], cfg[k.STORES] = router.whole_packets, router.stores
        cfg[k.BYPASS] = router.bypasses
        sc = np.zeros(k.SC_SIZE, np.int64)
        sc[k.N_FREE] = PACKET_SLOTS
        stall = np.zeros(2, np.uint64)
        if stalls:
            stall[0], stall[1] = eject_ready._base, eject_ready._threshold

        def table(rows: int, fields: int) -> np.ndarray:
            return np.zeros((rows, fields), np.int64)

        return {
            "sw": tables.sw.copy(),
            "gp": _rows(tables.gp),
            "iv": _rows(tables.iv),
            "ov": _rows(tables.ov),
            "ep": ep,
            "ga": tables.ga.copy(),
            "rbs": table(n_ga * n_ej, k.RB_FIELDS),
            "pk": table(PACKET_SLOTS, k.PK_FIELDS),
            "buf": np.full(n_iv * depth, -1, np.int64),
            "rb": np.full(n_ga * n_ej * depth, -1, np.int64),
            "inj_credit": np.full(n_ga * n_inj, depth, np.int64),
            "scratch": table(radix, k.SCRATCH_FIELDS),
            "grants": table(2 * radix, k.GRANT_FIELDS),
            "wf": np.zeros((2, n_gp + n_ep, k.WF_FIELDS), np.int64),
            "wf_n": np.zeros(2, np.int64),
            # a port sends at most a flit and its surplus head flits (< B) per cycle
            "wc": np.zeros((2, n_gp * depth), np.int64),
            "wc_n": np.zeros(2, np.int64),
            "dl": np.zeros(max(4096, 4 * n_ga), np.int64),
            "pl": table(max(16384, 4 * n_ov), k.PL_FIELDS),
            "ms": table(n_iv, k.MS_FIELDS),
            **tables.routing_arrays(),
            "cfg": cfg,
            "sc": sc,
            "stall": stall,
            "stepping": np.zeros((2, len(tables.sw)), np.int64),
            "stepping_n": np.zeros(2, np.int64),
            "taking": np.zeros(n_ga, np.int64),
            "merged": np.zeros(n_ga, np.int64),
            "fronts": np.zeros((2, n_iv), np.int64),
            "fronts_n": np.zeros(2, np.int64),
            "front_keys": np.zeros(n_iv, np.int64),
            "ep_wait": np.zeros(n_ep, np.int64),
            # the free packet slots, a stack: the last popped first
            "free": np.arange(PACKET_SLOTS - 1, -1, -1, dtype=np.int64),
        }

    def _state(self) -> k.State:
        """The arrays the kernel takes, with the routing tables' latest."""
        if self._version != self._tables.version:
            self._arrays.update(self._tables.routing_arrays())
            self._version = self._tables.version
            self._st = k.State(**self._arrays)
        return self._st

    def _room_for(self, packets: int) -> None:
        """Double the packet table until ``packets`` more slots are free."""
        a = self._arrays
        while a["sc"][k.N_FREE] < packets:
            n_free, old = int(a["sc"][k.N_FREE]), len(a["pk"])
            pk = np.zeros((2 * old, k.PK_FIELDS), np.int64)
            pk[:old] = a["pk"]
            free = np.empty(2 * old, np.int64)
            free[:n_free] = a["free"][:n_free]
            free[n_free : n_free + old] = np.arange(2 * old - 1, old - 1, -1)
            a["pk"], a["free"] = pk, free
            a["sc"][k.N_FREE] = n_free + old
            self._packets.extend([None] * old)
            self._st = k.State(**a)

    # ---- traffic in ----------------------------------------------------------------------

    def offer(
        self,
        src: int,
        dst: int,
        length: int | None = None,
        *,
        created: int | None = None,
    ) -> Packet:
        """Queue a packet at ``src`` created at ``created`` (default: this cycle)."""
        return self.offer_many([(self.cycle if created is None else created, src, dst, length)])[0]

    def offer_many(self, rows: Iterable[tuple[int, int, int, int | None]]) -> list[Packet]:
        """:meth:`offer` for each (created, src, dst, length) in turn: many at a time, as a
        source of traffic makes them, for less of Python's work per packet."""
        if self._on_deliver_rows is not None:
            raise ValueError("a model given on_deliver_rows takes packets by offer_rows")
        plan, default = self.plan, self.plan.packet_length
        endpoints, tables, get = len(plan.endpoints), self._tables, k.hash_get
        lengths = self._carried
        sequences, offers = self._sequence, self._offers
        first, last = self._watched
        paths = self._paths
        made = []
        for created, src, dst, length in rows:
            if not (0 <= src < endpoints and 0 <= dst < endpoints):
                outside = dst if 0 <= src < endpoints else src
                raise ValueError(f"no endpoint {outside} (0 to {endpoints - 1})")
            if src == dst:
                raise ValueError(f"packet from endpoint {src} to itself")
            length = length or default
            if length not in lengths:  # a length the plan carries is checked once
                check_packet_length(plan, length)
                lengths.add(length)
            # the compiled look-up here, not in a method: a packet's Python is the cost; a new
            # pair may compact the pairs (the packets before it are in offers, renumbered)
            pair = get(tables.pair_hash_keys, tables.pair_hash_vals, src * endpoints + dst)
            if pair < 0:
                pair = tables.pair_of(src, dst)
            if length + tables.widest[pair] > MAX_FLITS:
                raise UnsupportedSetting(f"the fast engine carries packets of < {MAX_FLITS} flits")
            sequence = sequences.get(src, 0)
            sequences[src] = sequence + 1
            # without paths, the empty tuple every packet shares in place of a list of its own
            path = [] if paths else ()
            packet = Packet(self._next_id, src, dst, length, created, (src, sequence), path=path)
            self._next_id += 1
            offers.append((packet.id, created, src, dst, length, pair, first <= created < last))
            made.append(packet)
        self._offered.extend(made)
        return made

    def offer_rows(self, rows: np.ndarray) -> None:
        """Queue the packets of ``rows`` (created, src, dst, length; an integer array of 4
        columns) as :meth:`offer_many` does, with no :class:`~zfabric.sim.model.Packet`: their
        ids follow in order, their deliveries go to ``on_deliver_rows``."""
        if self._on_deliver_rows is None:
            raise ValueError("offer_rows needs a model given on_deliver_rows")
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != 4 or rows.dtype.kind not in "iu":
            raise ValueError(f"rows of 4 integers expected, got shape {rows.shape} of {rows.dtype}")
        if not len(rows):
            return
        created, src, dst, length = (rows[:, c] for c in range(4))
        endpoints = len(self.plan.endpoints)
        for ends in (src, dst):
            outside = (ends < 0) | (ends >= endpoints)
            if outside.any():
                raise ValueError(f"no endpoint {ends[outside][0]} (0 to {endpoints - 1})")
        if (src == dst).any():
            raise ValueError(f"packet from endpoint {src[src == dst][0]} to itself")
        for each in np.unique(length).tolist():
            check_packet_length(self.plan, each)
        pairs = self._tables.pairs_of(src, dst)
        if (length + self._tables.widest[pairs]).max() > MAX_FLITS:
            raise UnsupportedSetting(f"the fast engine carries packets of < {MAX_FLITS} flits")
        first, last = self._watched
        offers = np.empty((len(rows), 7), np.int64)
        offers[:, 0] = np.arange(self._next_id, self._next_id + len(rows))
        offers[:, 1:5] = rows
        offers[:, 5] = pairs
        offers[:, 6] = (first <= created) & (created < last)
        self._next_id += len(rows)
        self._offer_arrays.append(offers)

    def _flush_offers(self) -> None:
        """Hand the queued packets to the kernel, their slots found."""
        if self._offers:
            self._push(np.array(self._offers, np.int64), self._offered)
            self._offers, self._offered = [], []
        if self._offer_arrays:
            self._push(np.concatenate(self._offer_arrays), None)
            self._offer_arrays = []

    def _queued(self) -> np.ndarray:
        """The packet slots of packets at their sources, not started: the ones whose pair
        number the kernel reads yet (when one starts)."""
        a = self._arrays
        queued = a["pk"][:, k.PK_INJECTED] < 0
        queued[a["free"][: a["sc"][k.N_FREE]]] = False
        return np.flatnonzero(queued)

    def queued_pairs(self) -> np.ndarray:
        """The pair numbers the packets offered and not started still need."""
        slots = self._queued()
        listed = np.array([offer[5] for offer in self._offers], np.int64)
        columns = [offers[:, 5] for offers in self._offer_arrays]
        return np.concatenate([self._arrays["pk"][slots, k.PK_PAIR], listed, *columns])

    def renumber_pairs(self, new_of_old: np.ndarray) -> None:
        """Pair numbers after the tables' compaction: pair ``p`` is now ``new_of_old[p]``."""
        pk, slots = self._arrays["pk"], self._queued()
        pk[slots, k.PK_PAIR] = new_of_old[pk[slots, k.PK_PAIR]]
        for offers in self._offer_arrays:
            offers[:, 5] = new_of_old[offers[:, 5]]
        # in place: offer_many may be appending to this list while a new pair compacts
        self._offers[:] = [
            (*offer[:5], int(new_of_old[offer[5]]), offer[6]) for offer in self._offers
        ]

    def _push(self, offers: np.ndarray, packets: list[Packet] | None) -> None:
        self._room_for(len(offers))
        slots = np.empty(len(offers), np.int64)
        a = self._arrays
        k.push_packets(a["pk"], a["ep"], a["ep_wait"], a["sc"], a["free"], offers, slots)
        if packets is not None:
            for slot, packet in zip(slots.tolist(), packets, strict=True):
                self._packets[slot] = packet

    # ---- cycles ----------------------------------------------------------------------------

    @property
    def cycle(self) -> int:
        return int(self._arrays["sc"][k.CYCLE])

    @property
    def in_network(self) -> int:
        """Flits that left a source and have not been delivered."""
        return int(self._arrays["sc"][k.IN_NETWORK])

    @property
    def delivered_count(self) -> int:
        return int(self._arrays["sc"][k.DELIVERED])

    @property
    def stuck(self) -> bool:
        """True once nothing can ever move again while flits wait in buffers."""
        sc = self._arrays["sc"]
        return bool(sc[k.QUIET] > 0 and sc[k.BUSY] > 0)

    def step(self) -> None:
        self.run_until(self.cycle + 1)

    def run(self, cycles: int) -> None:
        self.run_until(self.cycle + cycles)

    def run_until(self, until: int, settle_after: int | None = None) -> str:
        """Run cycles up to ``until``, stopping early after a cycle the caller must see: the
        fabric stuck (``"stuck"``), a multiple of ``watch_every`` (``"watch"``: where
        :class:`~zfabric.sim.model.DeadlockWatch` looks for a knot), or, from cycle
        ``settle_after`` on, no watched packet left undelivered (``"settled"``). Delivered
        packets go to ``on_deliver`` in the reference's order."""
        if until > LAST_CYCLE:
            raise UnsupportedSetting(f"the fast engine runs at most {LAST_CYCLE} cycles")
        self._flush_offers()
        settle = -1 if settle_after is None else settle_after
        while True:
            status = self._kernel_run(self._state(), until, settle)
            self._read_logs()
            if status == k.MISS:
                sc = self._arrays["sc"]
                self._tables.fill(self._arrays["ms"][: sc[k.N_MISS]].tolist())
                sc[k.N_MISS] = 0
            elif status == k.INVARIANT:
                sc = self._arrays["sc"]
                error, at = int(sc[k.ERROR]), int(sc[k.ERROR_AT])
                if error in _BY_SLOT:
                    at = int(self._arrays["pk"][at, k.PK_ID])
                raise InvariantError(_ERRORS[error].format(at))
            elif status != k.LOGS:
                return STOPS[status]

    def _read_logs(self) -> None:
        """Paths and deliveries the kernel logged: into the packets, to ``on_deliver``."""
        a, sc = self._arrays, self._arrays["sc"]
        packets = self._packets
        n = int(sc[k.N_PATH_LOG])
        if n:
            for slot, switch, port in a["pl"][:n].tolist():
                packets[slot].path.append((switch, port))
            sc[k.N_PATH_LOG] = 0
        n = int(sc[k.N_DELIVERED_LOG])
        if not n:
            return
        slots = a["dl"][:n]
        sc[k.N_DELIVERED_LOG] = 0
        if self._on_deliver_rows is not None:
            self._on_deliver_rows(a["pk"][slots, : k.RECORD])
            return
        columns = [k.PK_INJECTED, k.PK_DELIVERED, k.PK_HOPS, k.PK_DONE]
        rows = a["pk"][slots][:, columns].tolist()
        for slot, (injected, delivered, hops, done) in zip(slots.tolist(), rows, strict=True):
            packet = packets[slot]
            packets[slot] = None
            packet.injected, packet.delivered = injected, delivered
            packet.hops, packet.flits_delivered = hops, done
            self._on_deliver(packet)

    def undelivered_rows(self) -> np.ndarray:
        """The packets offered and not delivered, as :data:`RECORD_FIELDS` rows by id (an
        injection cycle of -1: still at its source; delivered -1)."""
        a = self._arrays
        self._flush_offers()
        live = np.ones(len(a["pk"]), bool)
        live[a["free"][: a["sc"][k.N_FREE]]] = False
        rows = a["pk"][live, : k.RECORD]
        return rows[np.argsort(rows[:, 0], kind="stable")]

    def finish(self) -> None:
        """Bring the packets still in the fabric up to date (injection cycle, hops, flits
        delivered), as the reference's are at every cycle, and keep the routing tables in the
        set-up cache for the next run of this plan."""
        self._tables.save()
        pk = self._arrays["pk"]
        for slot, packet in enumerate(self._packets):
            if packet is not None:
                injected = int(pk[slot, k.PK_INJECTED])
                packet.injected = None if injected < 0 else injected
                packet.hops = int(pk[slot, k.PK_HOPS])
                packet.flits_delivered = int(pk[slot, k.PK_DONE])

    # ---- deadlock report ---------------------------------------------------------------------

    def _front(self, iv: int) -> int:
        row = self._arrays["iv"][iv]
        return int(self._arrays["buf"][iv * self.depth + row[k.IV_HEAD]])

    def fronts(self) -> Fronts:
        """The front flit of every non-empty input VC, for :meth:`knot`."""
        a = self._arrays
        ivs, codes = np.empty(len(a["iv"]), np.int64), np.empty(len(a["iv"]), np.int64)
        n = k.front_codes(self._state(), ivs, codes)
        ivs, codes = ivs[:n], codes[:n]
        flits = a["pk"][codes >> 16, k.PK_ID] * MAX_FLITS + (codes & (MAX_FLITS - 1))
        return Fronts(ivs, flits)

    def knot(self, earlier: Fronts) -> list[str]:
        """A deadlock, whole or partial, as a cycle of channel names (empty if none): as
        :meth:`zfabric.sim.model.FabricModel.knot`, on ``earlier``, a :meth:`fronts` snapshot."""
        a = self._arrays
        returning = set()
        for phase in (0, 1):
            targets = a["wc"][phase, : a["wc_n"][phase]]
            returning.update(targets[targets >= 0].tolist())
        now = self.fronts()
        _, here, there = np.intersect1d(now.ivs, earlier.ivs, True, True)
        still = now.ivs[here[now.flits[here] == earlier.flits[there]]]
        spv = self._tables.iv_spv
        waits = {spv[iv]: self._wait_targets(iv, returning) for iv in still.tolist()}
        changed = True
        while changed:
            changed = False
            for node in list(waits):
                targets = waits[node]
                if not targets or any(t not in waits for t in targets):
                    del waits[node]
                    changed = True
        return [input_vc_name(self.view, *node) for node in find_wait_cycle(waits)]

    def waiting_cycle(self) -> list[str]:
        """The cycle of input VCs that wait on each other, as channel names (empty if none).
        The wait graph is the reference's, its nodes (switch, port, VC) inserted in its order,
        so both name the same cycle from the same channel (unless the reference's set of busy
        switches iterates out of order)."""
        a = self._arrays
        spv = self._tables.iv_spv
        owner, counts = a["ov"][:, k.OWNER], a["iv"][:, k.IV_CNT]
        waits: dict[tuple[int, int, int], set[tuple[int, int, int]]] = {}
        for ov in np.flatnonzero(owner >= 0).tolist():
            holder = int(owner[ov])
            upstream = int(a["iv"][holder, k.IV_CREDIT_TO])
            if counts[holder] or upstream < 0:
                continue
            # the holder's buffer is empty: its packet is still coming from upstream
            if owner[upstream] >= 0:
                waits[spv[holder]] = {spv[int(owner[upstream])]}
        for iv in np.flatnonzero(counts).tolist():
            waits[spv[iv]] = self._wait_targets(iv, set())
        return [input_vc_name(self.view, *node) for node in find_wait_cycle(waits)]

    def check_deadlock(self) -> None:
        """Raise :class:`~zfabric.sim.model.ModelDeadlock` if the fabric can never move again."""
        if self.stuck:
            raise ModelDeadlock(self.cycle, self.waiting_cycle())

    def _wait_targets(self, iv: int, returning: set[int]) -> set[tuple[int, int, int]]:
        """The input VCs (switch, port, VC) the front flit of ``iv`` waits on; empty if it
        could move. ``returning``: the output VCs with a credit on its way back."""
        a = self._arrays
        row = a["iv"][iv]
        head = row[k.ASSIGN] < 0
        if not head:
            wanted = [int(row[k.ASSIGN])]
        else:
            number = row[k.DECISION]
            if number < 0:
                head = self._tables.head_list[int(a["pk"][self._front(iv) >> 16, k.PK_HEAD])]
                number = self._tables.decision(iv, head)
            wanted = self._tables.requested(iv, number)
        spv = self._tables.iv_spv
        targets = set()
        whole, input_ring = self.plan.router.whole_packets, a["gp"][row[k.IV_GP], k.GP_RING]
        for ov in wanted:
            # credits: one per flit, under cut-through a head's whole packet (two entering a
            # ring under bubble flow control)
            ring = a["ov"][ov, k.OV_RING]
            entering = ring and ring != input_ring
            needed = max(1, 2 * whole if entering else whole) if head else 1
            holder = int(a["ov"][ov, k.OWNER])
            if holder >= 0 and holder != iv:
                targets.add(spv[holder])
            elif a["ov"][ov, k.CREDIT] < needed and ov not in returning:
                downstream = int(a["ov"][ov, k.OV_DST])
                if downstream < 0:
                    return set()  # a local output waits for the user to take flits, no VC
                targets.add(spv[downstream])
            else:
                return set()  # a free output VC with room: only arbitration holds it
        return targets

    def _name(self, iv: int) -> str:
        return input_vc_name(self.view, *self._tables.iv_spv[iv])

    # ---- invariants ---------------------------------------------------------------------------

    def check_credits(self) -> None:
        """Credits + buffered + in-flight flits + returning credits = depth, per link VC, per
        ejection VC (with its receive buffer) and per injection VC."""
        a = self._arrays
        kind, at, total = k.unconserved_credit(
            self._state(),
            self._injecting,
            np.zeros(len(a["iv"]), np.int64),
            np.zeros(len(a["rbs"]), np.int64),
            np.zeros(len(a["ov"]), np.int64),
            np.zeros(len(a["inj_credit"]), np.int64),
        )
        if kind == 0:
            name = self._name(int(a["ov"][at, k.OV_DST]))
            raise InvariantError(f"credits not conserved on {name}: {total}")
        if kind == 1:
            s = self._tables.iv_spv[int(a["gp"][a["ov"][at, k.OV_GP], k.GP_IV0])][0]
            name = f"{self.view.switches[s].name}.p{a['ov'][at, k.OV_PORT]}"
            name += f"/vc{a['ov'][at, k.OV_VC]}"
            raise InvariantError(f"credits not conserved on ejection {name}: {total}")
        if kind == 2:
            name = self._name(at)
            raise InvariantError(f"credits not conserved on injection {name}: {total}")
