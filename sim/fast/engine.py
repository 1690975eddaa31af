"""The fast engine: the reference model's cycles (docs/microarchitecture.md) on flat arrays, each
cycle one compiled call (:mod:`.kernel`), the routing decisions memoised in tables.

The routing function stays the plan's own pure Python one: each decision is computed once per
routing state (:meth:`~zfabric.routing.base.RoutingFunction.state_key`), when a head first
needs it, and kept in a table the compiled cycle reads by raw state (switch, input VC, head).
:class:`FastModel` offers :class:`~zfabric.sim.model.FabricModel`'s interface (``offer``,
``step``, the deadlock checks, the credit check), and :meth:`FastModel.run_until` runs many
cycles per call, which is where its speed comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from zfabric.deadlock import find_wait_cycle
from zfabric.plan import FabricPlan, PlanView, PortRef
from zfabric.router_settings import low_occupancy
from zfabric.routing import Decision, head_flits, make_routing

from ..model import EjectStalls, InvariantError, Packet
from ..model.fabric_model import input_vc_name
from . import kernel as k

__all__ = ["FastModel", "UnsupportedSetting", "fast_refusal"]

#: a FIFO entry is ``slot << 16 | index``: packets of up to this many flits on a link
MAX_FLITS = 1 << 16

_SELECTIONS = {"first-free": k.FIRST_FREE, "round-robin": k.ROUND_ROBIN, "occupancy": k.OCCUPANCY}

#: why :meth:`FastModel.run_until` stopped, by the kernel's status
STOPS = {k.UNTIL: "until", k.STUCK: "stuck", k.WATCH: "watch", k.SETTLED: "settled"}

_ERRORS = {
    k.FIFO_OVER: "input VC {} over depth",
    k.RECEIVE_OVER: "receive buffer {} over depth",
    k.CREDIT_OVER: "credits over depth on output VC {}",
    k.WRONG_ENDPOINT: "packet in slot {} delivered to another endpoint",
    k.OUT_OF_ORDER: "packet in slot {}: flit out of order",
    k.SURPLUS: "packet in slot {}: a head flit missing at a drop",
}


class UnsupportedSetting(ValueError):
    """The fast engine does not run this configuration (the reference model does)."""


def fast_refusal(plan: FabricPlan, eject_ready: Any = None) -> str | None:
    """Why the fast engine cannot run ``plan`` with ``eject_ready``, or None if it can."""
    for link in plan.links:
        if link.latency != 1:
            return f"link {link.id}: only latency 1 is modelled, got {link.latency}"
    if eject_ready is not None and not isinstance(eject_ready, EjectStalls):
        return "an ejection ready function other than EjectStalls"
    return None


class FastModel:
    """Simulates every switch, link and endpoint of ``plan`` flit by flit, cycle-identical to
    :class:`~zfabric.sim.model.FabricModel` (same arguments). ``paths``: keep each packet's
    ``path`` (the switches and output ports of its head), as the reference always does; a run
    that never reads it may turn it off."""

    engine = "fast"

    def __init__(
        self,
        plan: FabricPlan,
        *,
        check_invariants: bool = True,
        on_deliver: Callable[[Packet], None] | None = None,
        eject_ready: Callable[[int, int, int], bool] | None = None,
        paths: bool = True,
        watch_every: int = 256,
    ):
        refusal = fast_refusal(plan, eject_ready)
        if refusal:
            raise UnsupportedSetting(f"the fast engine does not run {refusal}")
        self.plan = plan
        self.view = view = PlanView(plan)
        self.routing = make_routing(view)
        self.depth = plan.buffer_depth
        self.delivered: list[Packet] = []
        self._on_deliver = on_deliver if on_deliver is not None else self.delivered.append
        self._next_id = 0
        self._sequence: dict[int, int] = {}
        self._packets: list[Packet | None] = []
        self._free: list[int] = []
        self._offers: list[tuple[int, int, int, int, int, int, int, int]] = []
        self._heads: dict[Hashable, int] = {}
        self._head_list: list[Any] = []
        self._pairs: dict[tuple[int, int], int] = {}
        self._decisions: dict[Hashable, int] = {}
        self._counts = {"dec": 0, "cand": 0, "inj": 0, "hash": 0}
        self._arrays = self._build(check_invariants, paths, eject_ready, watch_every)
        self._st = k.State(**self._arrays)

    # ---- the arrays ----------------------------------------------------------------------

    def _build(self, checks: bool, paths: bool, eject_ready, watch_every: int) -> dict:
        plan, view, rf, router = self.plan, self.view, self.routing, self.plan.router
        n_inj, n_ej, depth = router.injection_vcs, router.ejection_vcs, self.depth
        ga_of = {
            (a.switch, a.port): (e.id, i, index)
            for index, (e, i, a) in enumerate(
                (e, i, a) for e in plan.endpoints for i, a in enumerate(e.attachments)
            )
        }
        sw_port0, sw_nports, port_iv0, port_niv, port_ov0, port_nov = [], [], [], [], [], []
        iv_sw, iv_gp, ov_gp, ov_local, ov_vc = [], [], [], [], []
        #: (switch, port, vc) of every input VC, for the misses and the reports
        self._iv_spv: list[tuple[int, int, int]] = []
        for s in plan.switches:
            sw_port0.append(len(port_iv0))
            sw_nports.append(s.radix)
            for p in range(s.radix):
                gp = len(port_iv0)
                in_link, out_link = view.in_link[s.id][p], view.out_link[s.id][p]
                port_iv0.append(len(iv_sw))
                port_niv.append(in_link.vcs if in_link else n_inj)
                for v in range(port_niv[-1]):
                    iv_sw.append(s.id)
                    iv_gp.append(gp)
                    self._iv_spv.append((s.id, p, v))
                port_ov0.append(len(ov_gp))
                port_nov.append(out_link.vcs if out_link else n_ej)
                for w in range(port_nov[-1]):
                    ov_gp.append(gp)
                    ov_local.append(p)
                    ov_vc.append(w)
        n_iv, n_ov, n_gp = len(iv_sw), len(ov_gp), len(port_iv0)
        n_ga = len(ga_of)

        def iv_of(switch: int, port: int, vc: int) -> int:
            return port_iv0[sw_port0[switch] + port] + vc

        def ov_of(switch: int, port: int, vc: int) -> int:
            return port_ov0[sw_port0[switch] + port] + vc

        iv_credit = np.zeros(n_iv, np.int64)
        for iv, (s, p, v) in enumerate(self._iv_spv):
            link = view.in_link[s][p]
            if link is not None:
                iv_credit[iv] = ov_of(link.src.switch, link.src.port, v)
            elif (s, p) in ga_of:
                iv_credit[iv] = -1 - (ga_of[(s, p)][2] * n_inj + v)
        # a local port no endpoint is attached to ejects into no receive buffer (never used)
        ov_dst = np.full(n_ov, -1 - n_ga * n_ej, np.int64)
        ov_level = np.zeros(n_ov, np.int64)
        ov_adaptive = np.zeros(n_ov, np.int64)
        for ov in range(n_ov):
            s, p, w = iv_sw[port_iv0[ov_gp[ov]]], ov_local[ov], ov_vc[ov]
            link = view.out_link[s][p]
            if link is not None:
                ov_dst[ov] = iv_of(link.dst.switch, link.dst.port, w)
                ov_adaptive[ov] = rf.adaptive and not rf.is_escape(link.id, w)
            elif (s, p) in ga_of:
                ov_dst[ov] = -1 - (ga_of[(s, p)][2] * n_ej + w)
            ov_level[ov] = rf.priority(s, p, w)
        ga_ep, ga_which, ga_iv0, ga_ov0 = (np.zeros(n_ga, np.int64) for _ in range(4))
        for (s, p), (e, i, ga) in ga_of.items():
            ga_ep[ga], ga_which[ga] = e, i
            ga_iv0[ga], ga_ov0[ga] = iv_of(s, p, 0), ov_of(s, p, 0)
        ep_att0 = np.zeros(len(plan.endpoints), np.int64)
        first = 0
        for e in plan.endpoints:
            ep_att0[e.id] = first
            first += len(e.attachments)
        radix = max(sw_nports)
        n_ep = len(plan.endpoints)
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
        stall = np.zeros(2, np.uint64)
        if stalls:
            stall[0], stall[1] = eject_ready._base, eject_ready._threshold

        def full(n: int, value: int = -1) -> np.ndarray:
            return np.full(n, value, np.int64)

        wire_flits = n_gp + n_ep
        wire_credits = n_gp * depth
        packets = 256
        return {
            "sw_port0": np.array(sw_port0, np.int64),
            "sw_nports": np.array(sw_nports, np.int64),
            "port_iv0": np.array(port_iv0, np.int64),
            "port_niv": np.array(port_niv, np.int64),
            "port_ov0": np.array(port_ov0, np.int64),
            "port_nov": np.array(port_nov, np.int64),
            "iv_sw": np.array(iv_sw, np.int64),
            "iv_gp": np.array(iv_gp, np.int64),
            "iv_credit": iv_credit,
            "ov_gp": np.array(ov_gp, np.int64),
            "ov_local": np.array(ov_local, np.int64),
            "ov_vc": np.array(ov_vc, np.int64),
            "ov_dst": ov_dst,
            "ov_level": ov_level,
            "ov_adaptive": ov_adaptive,
            "ep_att0": ep_att0,
            "ga_ep": ga_ep,
            "ga_which": ga_which,
            "ga_iv0": ga_iv0,
            "ga_ov0": ga_ov0,
            "buf": full(n_iv * depth),
            "buf_head": full(n_iv, 0),
            "buf_cnt": full(n_iv, 0),
            "assign": full(n_iv),
            "decision": full(n_iv),
            "pending": full(n_iv),
            "owner": full(n_ov),
            "credit": full(n_ov, depth),
            "rr_in": full(n_gp, 0),
            "rr_out": full(n_gp, 0),
            "va_in": full(n_gp, 0),
            "va_out": full(n_gp, 0),
            "rr_sel": full(n_gp, 0),
            "staged_v": full(n_gp),
            "staged_ov": full(n_gp),
            "vstaged_v": full(n_gp),
            "vstaged_ov": full(n_gp),
            "sw_cnt": full(len(sw_port0), 0),
            "req": full(n_iv),
            "vreq": full(n_iv),
            "matched_in": full(radix, 0),
            "matched_out": full(radix, 0),
            "pick_v": full(radix),
            "pick_o": full(radix),
            "best": full(radix),
            "best_d": full(radix, 0),
            "g_gp": full(2 * radix, 0),
            "g_v": full(2 * radix, 0),
            "g_ov": full(2 * radix, 0),
            "a_gp": full(2 * radix, 0),
            "a_v": full(2 * radix, 0),
            "a_ov": full(2 * radix, 0),
            "ep_slot": full(n_ep),
            "ep_next": full(n_ep, 0),
            "ep_which": full(n_ep, 0),
            "ep_vc": full(n_ep, 0),
            "ep_ptr": full(n_ep, 0),
            "ep_qhead": full(n_ep),
            "ep_qtail": full(n_ep),
            "inj_credit": full(n_ga * n_inj, depth),
            "rb": full(n_ga * n_ej * depth),
            "rb_head": full(n_ga * n_ej, 0),
            "rb_cnt": full(n_ga * n_ej, 0),
            "ga_cnt": full(n_ga, 0),
            "presenting": full(n_ga),
            "eject_ptr": full(n_ga, 0),
            **{name: full(packets, 0) for name in k.State._fields if name.startswith("pk_")},
            "wf_kind": np.zeros((2, wire_flits), np.int64),
            "wf_target": np.zeros((2, wire_flits), np.int64),
            "wf_flit": np.zeros((2, wire_flits), np.int64),
            "wf_n": full(2, 0),
            "wc_target": np.zeros((2, wire_credits), np.int64),
            "wc_n": full(2, 0),
            "dl_slot": full(max(4096, 4 * n_ga), 0),
            "pl_slot": full(max(16384, 4 * n_ov), 0),
            "pl_sw": full(max(16384, 4 * n_ov), 0),
            "pl_port": full(max(16384, 4 * n_ov), 0),
            "ms_iv": full(n_iv, 0),
            "ms_head": full(n_iv, 0),
            "dec_start": full(256, 0),
            "dec_n": full(256, 0),
            "cand_ov": full(1024, 0),
            "cand_port": full(1024, 0),
            "cand_vc": full(1024, 0),
            "dec_next_head": full(256, 0),
            "dec_next_hf": full(256, 0),
            "hash_keys": full(1024),
            "hash_vals": full(1024, 0),
            "inj_start": full(256, 0),
            "inj_n": full(256, 0),
            "inj_which": full(256, 0),
            "inj_head": full(256, 0),
            "inj_hf": full(256, 0),
            "cfg": cfg,
            "sc": full(k.SC_SIZE, 0),
            "stall": stall,
        }

    def _grow(self, names: tuple[str, ...], needed: int) -> None:
        """Make the arrays ``names`` (of one length) hold at least ``needed`` entries."""
        size = len(self._arrays[names[0]])
        if needed <= size:
            return
        while size < needed:
            size *= 2
        for name in names:
            old = self._arrays[name]
            new = np.zeros(size, old.dtype)
            new[: len(old)] = old
            self._arrays[name] = new
        self._st = k.State(**self._arrays)

    # ---- traffic in ----------------------------------------------------------------------

    def offer(
        self,
        src: int,
        dst: int,
        length: int | None = None,
        *,
        created: int | None = None,
        watched: bool = False,
    ) -> Packet:
        """Queue a packet at ``src`` created at ``created`` (default: this cycle); ``watched``
        packets are the ones :meth:`run_until`'s ``settle_after`` waits for."""
        if src == dst:
            raise ValueError(f"packet from endpoint {src} to itself")
        length = length or self.plan.packet_length
        pair = self._pair(src, dst)
        start, n = self._arrays["inj_start"][pair], self._arrays["inj_n"][pair]
        if length + max(self._arrays["inj_hf"][start : start + n]) > MAX_FLITS:
            raise UnsupportedSetting(f"the fast engine carries packets of < {MAX_FLITS} flits")
        sequence = self._sequence.get(src, 0)
        self._sequence[src] = sequence + 1
        cycle = self.cycle if created is None else created
        packet = Packet(self._next_id, src, dst, length, cycle)
        packet.payload = (src, sequence)
        self._next_id += 1
        if not self._free:
            start = len(self._packets)
            names = tuple(name for name in k.State._fields if name.startswith("pk_"))
            self._grow(names, start + 1)
            size = len(self._arrays["pk_id"])
            self._packets.extend([None] * (size - start))
            self._free.extend(range(size - 1, start - 1, -1))
        slot = self._free.pop()
        self._packets[slot] = packet
        self._offers.append((slot, packet.id, src, dst, length, cycle, pair, watched))
        return packet

    def _pair(self, src: int, dst: int) -> int:
        """The injection choices of (``src``, ``dst``), in the tables."""
        pair = self._pairs.get((src, dst))
        if pair is not None:
            return pair
        attachments = self.plan.endpoints[src].attachments
        choices = self.routing.injections(src, dst)
        pair = len(self._pairs)
        first = self._counts["inj"]
        self._grow(("inj_start", "inj_n"), pair + 1)
        self._grow(("inj_which", "inj_head", "inj_hf"), first + len(choices))
        a = self._arrays
        a["inj_start"][pair], a["inj_n"][pair] = first, len(choices)
        for i, choice in enumerate(choices):
            a["inj_which"][first + i] = attachments.index(PortRef(choice.switch, choice.port))
            a["inj_head"][first + i] = self._head_id(choice.head)
            a["inj_hf"][first + i] = self._head_flits(choice.head)
        self._counts["inj"] = first + len(choices)
        self._pairs[(src, dst)] = pair
        return pair

    def _head_id(self, head: Any) -> int:
        number = self._heads.get(head)
        if number is None:
            number = self._heads[head] = len(self._head_list)
            self._head_list.append(head)
        return number

    def _head_flits(self, head: Any) -> int:
        bits = self.plan.router.head_bits
        return 1 if bits is None else head_flits(self.routing.head_length(head), bits)

    def _flush_offers(self) -> None:
        if not self._offers:
            return
        columns = [np.array(column, np.int64) for column in zip(*self._offers, strict=True)]
        self._offers = []
        k.push_packets(self._st, *columns)

    # ---- routing decisions -----------------------------------------------------------------

    def _fill_misses(self) -> None:
        """Route the heads the table missed: one routing call per routing state."""
        sc = self._arrays["sc"]
        n_iv = len(self._iv_spv)
        misses = zip(
            self._arrays["ms_iv"][: sc[k.N_MISS]].tolist(),
            self._arrays["ms_head"][: sc[k.N_MISS]].tolist(),
            strict=True,
        )
        for iv, head_id in misses:
            s, p, v = self._iv_spv[iv]
            head = self._head_list[head_id]
            state = self.routing.state_key(s, p, v, head)
            number = self._decisions.get(state)
            if number is None:
                number = self._add_decision(s, self.routing.route(s, p, v, head))
                self._decisions[state] = number
            self._insert(head_id * n_iv + iv, number)
        sc[k.N_MISS] = 0

    def _add_decision(self, s: int, decision: Decision) -> int:
        number, first = self._counts["dec"], self._counts["cand"]
        candidates = [(hop.port, w) for hop in decision.hops for w in hop.vcs]
        self._grow(("dec_start", "dec_n", "dec_next_head", "dec_next_hf"), number + 1)
        self._grow(("cand_ov", "cand_port", "cand_vc"), first + len(candidates))
        a = self._arrays
        base = a["sw_port0"][s]
        for i, (port, w) in enumerate(candidates):
            a["cand_ov"][first + i] = a["port_ov0"][base + port] + w
            a["cand_port"][first + i] = port
            a["cand_vc"][first + i] = w
        a["dec_start"][number], a["dec_n"][number] = first, len(candidates)
        a["dec_next_head"][number] = self._head_id(decision.head)
        a["dec_next_hf"][number] = self._head_flits(decision.head)
        self._counts["dec"], self._counts["cand"] = number + 1, first + len(candidates)
        return number

    def _insert(self, key: int, value: int) -> None:
        """Raw state ``key`` -> decision ``value`` in the table (doubled past half full)."""
        keys = self._arrays["hash_keys"]
        if 2 * (self._counts["hash"] + 1) > len(keys):
            new_keys = np.full(2 * len(keys), -1, np.int64)
            new_vals = np.zeros(2 * len(keys), np.int64)
            k.hash_rehash(keys, self._arrays["hash_vals"], new_keys, new_vals)
            self._arrays["hash_keys"], self._arrays["hash_vals"] = new_keys, new_vals
            self._st = k.State(**self._arrays)
        k.hash_insert(self._arrays["hash_keys"], self._arrays["hash_vals"], key, value)
        self._counts["hash"] += 1

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
        self._flush_offers()
        settle = -1 if settle_after is None else settle_after
        while True:
            status = k.run(self._st, until, settle)
            self._read_logs()
            if status == k.MISS:
                self._fill_misses()
            elif status == k.INVARIANT:
                sc = self._arrays["sc"]
                raise InvariantError(_ERRORS[int(sc[k.ERROR])].format(int(sc[k.ERROR_AT])))
            elif status != k.LOGS:
                return STOPS[status]

    def _read_logs(self) -> None:
        """Paths and deliveries the kernel logged: into the packets, to ``on_deliver``."""
        a, sc = self._arrays, self._arrays["sc"]
        packets = self._packets
        n = int(sc[k.N_PATH_LOG])
        if n:
            rows = zip(
                a["pl_slot"][:n].tolist(),
                a["pl_sw"][:n].tolist(),
                a["pl_port"][:n].tolist(),
                strict=True,
            )
            for slot, switch, port in rows:
                packets[slot].path.append((switch, port))
            sc[k.N_PATH_LOG] = 0
        n = int(sc[k.N_DELIVERED_LOG])
        if not n:
            return
        slots = a["dl_slot"][:n]
        rows = zip(
            slots.tolist(),
            a["pk_injected"][slots].tolist(),
            a["pk_delivered"][slots].tolist(),
            a["pk_hops"][slots].tolist(),
            a["pk_done"][slots].tolist(),
            strict=True,
        )
        sc[k.N_DELIVERED_LOG] = 0
        for slot, injected, delivered, hops, done in rows:
            packet = packets[slot]
            packets[slot] = None
            self._free.append(slot)
            packet.injected, packet.delivered = injected, delivered
            packet.hops, packet.flits_delivered = hops, done
            self._on_deliver(packet)

    def finish(self) -> None:
        """Bring the packets still in the fabric up to date (injection cycle, hops, flits
        delivered), as the reference's are at every cycle."""
        a = self._arrays
        for slot, packet in enumerate(self._packets):
            if packet is not None:
                injected = int(a["pk_injected"][slot])
                packet.injected = None if injected < 0 else injected
                packet.hops = int(a["pk_hops"][slot])
                packet.flits_delivered = int(a["pk_done"][slot])

    # ---- deadlock report ---------------------------------------------------------------------

    def fronts(self) -> dict[int, int]:
        """The front flit of every non-empty input VC (by input VC index), for :meth:`knot`."""
        a = self._arrays
        ivs = np.flatnonzero(a["buf_cnt"])
        codes = a["buf"][ivs * self.depth + a["buf_head"][ivs]]
        flits = a["pk_id"][codes >> 16] * MAX_FLITS + (codes & (MAX_FLITS - 1))
        return dict(zip(ivs.tolist(), flits.tolist(), strict=True))

    def knot(self, earlier: dict[int, int]) -> list[str]:
        """A deadlock, whole or partial, as a cycle of channel names (empty if none): as
        :meth:`zfabric.sim.model.FabricModel.knot`, on ``earlier``, a :meth:`fronts` snapshot."""
        a = self._arrays
        returning = set()
        for phase in (0, 1):
            targets = a["wc_target"][phase, : a["wc_n"][phase]]
            returning.update(targets[targets >= 0].tolist())
        waits = {
            iv: self._wait_targets(iv, returning)
            for iv, flit in self.fronts().items()
            if earlier.get(iv) == flit
        }
        changed = True
        while changed:
            changed = False
            for node in list(waits):
                targets = waits[node]
                if not targets or any(t not in waits for t in targets):
                    del waits[node]
                    changed = True
        return [self._name(iv) for iv in find_wait_cycle(waits)]

    def waiting_cycle(self) -> list[str]:
        """The cycle of input VCs that wait on each other, as channel names (empty if none)."""
        a = self._arrays
        owner, counts = a["owner"], a["buf_cnt"]
        waits: dict[int, set[int]] = {}
        for ov in np.flatnonzero(owner >= 0).tolist():
            holder = int(owner[ov])
            upstream_ov = int(a["iv_credit"][holder])
            if counts[holder] or upstream_ov < 0:
                continue
            # the holder's buffer is empty: its packet is still coming from upstream
            if owner[upstream_ov] >= 0:
                waits[holder] = {int(owner[upstream_ov])}
        for iv in np.flatnonzero(counts).tolist():
            waits[iv] = self._wait_targets(iv, set())
        return [self._name(iv) for iv in find_wait_cycle(waits)]

    def check_deadlock(self) -> None:
        """Raise :class:`~zfabric.sim.model.ModelDeadlock` if the fabric can never move again."""
        from ..model import ModelDeadlock

        if self.stuck:
            raise ModelDeadlock(self.cycle, self.waiting_cycle())

    def _wait_targets(self, iv: int, returning: set[int]) -> set[int]:
        """The input VCs the front flit of ``iv`` waits on; empty if it could move.
        ``returning``: the output VCs with a credit on its way back."""
        a = self._arrays
        if a["assign"][iv] >= 0:
            wanted = [int(a["assign"][iv])]
        elif a["decision"][iv] >= 0:
            d = int(a["decision"][iv])
            start = int(a["dec_start"][d])
            wanted = a["cand_ov"][start : start + a["dec_n"][d]].tolist()
        else:
            s, p, v = self._iv_spv[iv]
            front = int(a["buf"][iv * self.depth + a["buf_head"][iv]])
            head = self._head_list[int(a["pk_head"][front >> 16])]
            base = a["port_ov0"][a["sw_port0"][s] :]
            decision = self.routing.route(s, p, v, head)
            wanted = [int(base[hop.port]) + w for hop in decision.hops for w in hop.vcs]
        targets = set()
        for ov in wanted:
            holder = int(a["owner"][ov])
            if holder >= 0 and holder != iv:
                targets.add(holder)
            elif a["credit"][ov] == 0 and ov not in returning:
                downstream = int(a["ov_dst"][ov])
                if downstream < 0:
                    return set()  # a local output waits for the user to take flits, no VC
                targets.add(downstream)
            else:
                return set()  # a free output VC with room: only arbitration holds it
        return targets

    def _name(self, iv: int) -> str:
        return input_vc_name(self.view, *self._iv_spv[iv])

    # ---- invariants ---------------------------------------------------------------------------

    def check_credits(self) -> None:
        """Credits + buffered + in-flight flits + returning credits = depth, per link VC, per
        ejection VC (with its receive buffer) and per injection VC."""
        a = self._arrays
        n_iv, n_ov = len(a["buf_cnt"]), len(a["credit"])
        flits_to_iv = np.zeros(n_iv, np.int64)
        flits_to_rb = np.zeros(len(a["rb_cnt"]), np.int64)
        credits_to_ov = np.zeros(n_ov, np.int64)
        credits_to_inj = np.zeros(len(a["inj_credit"]), np.int64)
        for phase in (0, 1):
            n = a["wf_n"][phase]
            kinds, targets = a["wf_kind"][phase, :n], a["wf_target"][phase, :n]
            np.add.at(flits_to_iv, targets[kinds != 2], 1)
            np.add.at(flits_to_rb, targets[kinds == 2], 1)
            credits = a["wc_target"][phase, : a["wc_n"][phase]]
            np.add.at(credits_to_ov, credits[credits >= 0], 1)
            np.add.at(credits_to_inj, -1 - credits[credits < 0], 1)
        ov_dst = a["ov_dst"]
        links = np.flatnonzero(ov_dst >= 0)
        total = (
            a["credit"][links]
            + a["buf_cnt"][ov_dst[links]]
            + flits_to_iv[ov_dst[links]]
            + credits_to_ov[links]
        )
        bad = total != self.depth
        if bad.any():
            iv = int(ov_dst[links[bad][0]])
            raise InvariantError(f"credits not conserved on {self._name(iv)}: {total[bad][0]}")
        ejections = np.flatnonzero(ov_dst < 0)
        rbs = -1 - ov_dst[ejections]
        attached = rbs < len(a["rb_cnt"])  # a local port no endpoint is attached to has none
        ejections, rbs = ejections[attached], rbs[attached]
        total = a["credit"][ejections] + a["rb_cnt"][rbs] + flits_to_rb[rbs]
        bad = total != self.depth
        if bad.any():
            ov = int(ejections[bad][0])
            s = int(a["iv_sw"][a["port_iv0"][a["ov_gp"][ov]]])
            name = f"{self.view.switches[s].name}.p{a['ov_local'][ov]}/vc{a['ov_vc'][ov]}"
            raise InvariantError(f"credits not conserved on ejection {name}: {total[bad][0]}")
        n_inj = self.plan.router.injection_vcs
        ivs = a["ga_iv0"].repeat(n_inj) + np.tile(np.arange(n_inj), len(a["ga_iv0"]))
        total = a["inj_credit"] + a["buf_cnt"][ivs] + flits_to_iv[ivs] + credits_to_inj
        bad = np.flatnonzero(total != self.depth)
        if len(bad):
            raise InvariantError(
                f"credits not conserved on injection {self._name(int(ivs[bad[0]]))}:"
                f" {int(total[bad[0]])}"
            )
