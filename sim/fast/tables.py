"""What the fast engine knows of a plan before its first cycle, shared by every model of that
plan in a process (a sweep's points, a study's): the index layout of switches, ports, VCs and
attachments, and the routing function's decisions and injection choices, memoised.

The decisions are kept by content, not by state: a decision's candidates are (port, VC) pairs
of the switch at hand and its next head is "unchanged" where ``route`` keeps the head, so every
switch and destination DOR or DORT sends the same way shares one row, and a fabric has a
handful of them whatever the traffic. The compiled cycle finds a raw state's (head, input VC)
decision in a hash table: one ``route`` call per raw state, the first time a head needs one,
and that entry (two integers) is all a new state costs. A source and destination's injection
choices are found when its first packet is offered; a raw state missing from the table when
a head needs it returns the cycle to Python, which decides it and states below it (up to a
bound), so a packet's next hops seldom miss again. A run saves the tables in
the set-up cache (:meth:`FabricTables.save`, keyed by the plan), and the next run of that plan
starts from them.

Under uniform traffic at thousands of endpoints nearly every packet brings a new pair and its
raw states, so both memos have a budget proportional to the fabric: past
:data:`STATES_PER_IV` raw states an input VC the hash table keeps only the states a look-up
found since it last did so (the decisions stay, so a state dropped and met again costs one
``route`` call; the states of the traffic at hand stay), and past :data:`PAIRS_PER_ENDPOINT`
pairs an endpoint the pairs no queued packet still needs are dropped and the rest renumbered
in every model of the plan.
"""

from __future__ import annotations

import inspect
import json
import weakref
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np

from zfabric.bubble import asks_bubble, input_ring, output_rings
from zfabric.bypass import straight_outputs
from zfabric.plan import FabricPlan, PlanView
from zfabric.router_settings import lfsr_seed
from zfabric.routing import head_flits, make_routing
from zfabric.setup_cache import entry, store

from . import kernel as k

__all__ = ["FabricTables", "tables_for"]

_SHARED: dict[int, FabricTables] = {}


def tables_for(plan: FabricPlan) -> FabricTables:
    """The tables of ``plan``, made once per plan object and kept while it lives; its routing
    tables read from the set-up cache when a run of this plan saved them."""
    tables = _SHARED.get(id(plan))
    if tables is None or tables.plan is not plan:
        tables = _SHARED[id(plan)] = FabricTables(plan)
        tables.load()
        weakref.finalize(plan, _SHARED.pop, id(plan), None)
    return tables


#: the source of the tables' layout, besides the compiler's (part of the cache key)
_SOURCES = (Path(__file__),)
#: what the saved routing tables' meaning depends on in the compiled cycle (part of the cache
#: key): their columns and the hash's probe, so an edit elsewhere in it keeps them valid
_LAYOUT = {
    "columns": {
        name: getattr(k, name)
        for name in dir(k)
        if name.split("_")[0] in ("DEC", "CAND", "PAIR", "INJ") and name != "INJ_VCS"
    },
    "hash": [inspect.getsource(f.py_func) for f in (k.hash_home, k.hash_slot)] + [int(k._GOLDEN)],
    # the raw states kept as a list of those found, not as the table
    "states": "found",
    # how the compiled cycle reads a decision: a candidate's output VC, "unchanged" heads
    "reading": [inspect.getsource(f.py_func) for f in (k._cand_ov, k._next_head, k._next_hf)],
}
#: the routing tables a model's compiled cycle holds (:meth:`FabricTables.routing_arrays`);
#: the pairs' keys, widest heads and hash table beside them are read from the tables each time
KERNEL_TABLES = ("dec", "cand", "hash_keys", "hash_vals", "hash_used", "pair", "inj")
#: the states :meth:`FabricTables.fill` decides beyond the misses it is given, at most
AHEAD = 64
#: the hash table's values, decision numbers: a fabric has far fewer than 2**31 decisions, and
#: the table is a raw state's only cost (a key of 8 bytes and this value, at most half full)
_DECISION = np.int32
#: the pair hash table's values, pair numbers (at most the pair budget, far below 2**31)
_PAIR = np.int32
#: the raw states the hash table holds before it drops those not found since it last did: this many
#: per input VC, and at least :data:`MIN_STATES` (the table's slots, twice the states, a power of
#: two: 13 bytes a slot). Under uniform 0.1 the E6 Znode (165,888 input VCs) decided about 1.4
#: million states per 1000 cycles while a new pair's states were decided ahead of its packets
#: (21.7 million after 16,000 cycles): 64 an input VC, 10.6 million, held the 6000 cycles of its
#: studies' windows from empty tables then; the floor, 4.2 million, holds the torus
#: 32x32's 2.8 million after 32,000 cycles. At 8192 endpoints (147,456 input VCs on the torus
#: 16x8x8x8) it is 9.4 million, at most 416 MiB of table
STATES_PER_IV = 64
MIN_STATES = 1 << 22
#: the pairs whose injection choices are kept, per endpoint, at least :data:`MIN_PAIRS` (the
#: E6 Znode's 2000 cycles of uniform 0.1 meet 51,000 pairs): at thousands of endpoints uniform
#: traffic brings a new pair with nearly every packet, so a larger memo would seldom be hit
PAIRS_PER_ENDPOINT = 64
MIN_PAIRS = 1 << 17


def _hashable(value: Any) -> Any:
    """A head read back from JSON: its lists tuples again."""
    return tuple(_hashable(item) for item in value) if isinstance(value, list) else value


def _table(rows: int, fields: int, value: int = -1) -> np.ndarray:
    return np.full((rows, fields), value, np.int64)


def _power_of_two(n: int) -> int:
    """The least power of two >= ``n``."""
    return 1 << max(0, n - 1).bit_length()


class FabricTables:
    """The layout of ``plan`` (``sw``, ``gp``, ``iv``, ``ov``, ``ga`` tables with their
    constant columns filled) and its routing tables (``dec``, ``cand``, ``hash_*``, ``pair``,
    ``inj``; the pairs' keys, widest heads and hash table beside them). ``version`` counts the
    times a routing table the compiled cycle holds (:data:`KERNEL_TABLES`) was replaced (by a
    bigger one, or by the pairs' compaction): a model holding the old arrays must take the new
    ones."""

    def __init__(self, plan: FabricPlan):
        self.plan = plan
        self.view = view = PlanView(plan)
        self.routing = rf = make_routing(view)
        router = plan.router
        n_inj, n_ej, depth = router.injection_vcs, router.ejection_vcs, plan.buffer_depth
        attachments = [(e.id, i, a) for e in plan.endpoints for i, a in enumerate(e.attachments)]
        #: the attachments an endpoint injects through (the rest only receive)
        self.injecting = [plan.endpoints[e].injects(i) for e, i, _ in attachments]
        # a local input -> the attachment injecting there; a local output -> the one receiving
        inject_ga_of = {
            (a.switch, a.port): ga for ga, (_, _, a) in enumerate(attachments) if self.injecting[ga]
        }
        eject_ga_of = {
            (a.switch, a.port): ga
            for ga, (e, i, a) in enumerate(attachments)
            if plan.endpoints[e].ejects(i)
        }
        n_ga = len(attachments)
        sw, gp_rows, gp_switch, iv_rows, ov_rows = [], [], [], [], []
        #: (switch, port, vc) of every input VC, for the misses and the reports
        self.iv_spv: list[tuple[int, int, int]] = []
        for s in plan.switches:
            sw.append((len(gp_rows), s.radix))
            for p in range(s.radix):
                in_link, out_link = view.in_link[s.id][p], view.out_link[s.id][p]
                n_in = in_link.vcs if in_link else n_inj
                n_out = out_link.vcs if out_link else n_ej
                gp_rows.append((len(iv_rows), n_in, len(ov_rows), n_out))
                gp_switch.append(s.id)
                for v in range(n_in):
                    iv_rows.append((s.id, len(gp_rows) - 1))
                    self.iv_spv.append((s.id, p, v))
                for w in range(n_out):
                    ov_rows.append((len(gp_rows) - 1, p, w))
        n_iv, n_ov = len(iv_rows), len(ov_rows)
        self.sw = _table(len(sw), k.SW_FIELDS, 0)
        self.sw[:, [k.SW_PORT0, k.SW_NPORTS]] = sw
        self.gp = _table(len(gp_rows), k.GP_FIELDS)
        self.gp[:, [k.GP_IV0, k.GP_NIV, k.GP_OV0, k.GP_NOV]] = gp_rows
        self.gp[:, [k.RR_IN, k.RR_OUT, k.VA_IN, k.VA_OUT, k.RR_SEL]] = 0
        if plan.router.selection == "random":  # each input port's LFSR, from its seed
            self.gp[:, k.RR_SEL] = [lfsr_seed(p) for s in plan.switches for p in range(s.radix)]
        self.iv = _table(n_iv, k.IV_FIELDS)
        self.iv[:, [k.IV_SW, k.IV_GP]] = iv_rows
        self.iv[:, [k.IV_HEAD, k.IV_CNT]] = 0
        for iv, (s, p, v) in enumerate(self.iv_spv):
            link = view.in_link[s][p]
            if link is not None:
                self.iv[iv, k.IV_CREDIT_TO] = self.ov_of(link.src.switch, link.src.port, v)
            elif (s, p) in inject_ga_of:
                self.iv[iv, k.IV_CREDIT_TO] = -1 - (inject_ga_of[(s, p)] * n_inj + v)
        self.ov = _table(n_ov, k.OV_FIELDS)
        self.ov[:, [k.OV_GP, k.OV_PORT, k.OV_VC]] = ov_rows
        self.ov[:, k.CREDIT] = depth
        # a local port no endpoint is attached to ejects into no receive buffer (never used)
        self.ov[:, k.OV_DST] = -1 - n_ga * n_ej
        for ov, (gp, p, w) in enumerate(ov_rows):
            s = gp_switch[gp]
            link = view.out_link[s][p]
            if link is not None:
                self.ov[ov, k.OV_DST] = self.iv_of(link.dst.switch, link.dst.port, w)
            elif (s, p) in eject_ga_of:
                self.ov[ov, k.OV_DST] = -1 - (eject_ga_of[(s, p)] * n_ej + w)
            self.ov[ov, k.OV_ATOMIC] = rf.atomic(s, p, w)
            self.ov[ov, k.OV_LEVEL] = rf.priority(s, p, w)
            self.ov[ov, k.OV_SW] = s
        self.ov[:, k.OV_RING] = 0
        self.gp[:, k.GP_RING] = 0
        if asks_bubble(plan):  # the rings of bubble flow control (zfabric.bubble)
            rings = [output_rings(view, s) for s in range(len(view.switches))]
            for ov, (gp, p, w) in enumerate(ov_rows):
                ring = rings[gp_switch[gp]].get((p, w))
                if ring is not None:
                    self.ov[ov, k.OV_RING] = 1 + 2 * ring[0] + (ring[1] > 0)
            for gp, s in enumerate(gp_switch):
                ring = input_ring(view, s, gp - self.sw[s, k.SW_PORT0])
                if ring is not None:
                    self.gp[gp, k.GP_RING] = 1 + 2 * ring[0] + (ring[1] > 0)
        # the straight bypass (zfabric.bypass): the output each input feeds straight
        self.gp[:, k.GP_STRAIGHT] = -1
        self.gp[:, k.GP_ASKED] = -1
        for s, outputs in enumerate(straight_outputs(view)):
            for p, o in outputs.items():
                self.gp[self.sw[s, k.SW_PORT0] + p, k.GP_STRAIGHT] = self.sw[s, k.SW_PORT0] + o
        self.ga = _table(n_ga, k.GA_FIELDS, 0)
        self.ga[:, k.PRESENTING] = -1
        for ga, (e, i, a) in enumerate(attachments):
            self.ga[ga, [k.GA_EP, k.GA_WHICH]] = e, i
            self.ga[ga, [k.GA_IV0, k.GA_OV0]] = (
                self.iv_of(a.switch, a.port, 0),
                self.ov_of(a.switch, a.port, 0),
            )
        # the routing tables, grown on demand
        self.dec = _table(256, k.DEC_FIELDS, 0)
        self.cand = _table(1024, k.CAND_FIELDS, 0)
        self.hash_keys = np.full(1024, -1, np.int64)
        self.hash_vals = np.zeros(1024, _DECISION)
        #: per slot: whether the kernel's look-up found its state since the table last dropped
        #: the states not found
        self.hash_used = np.zeros(1024, np.uint8)
        #: the raw states the hash table holds before it drops those not found; never below
        #: what one cycle may need at once (a head looked up per input VC, at its front or
        #: landing in it empty) and two fills' closures, so a cycle's states stay until it runs
        self.state_budget = max(MIN_STATES, STATES_PER_IV * n_iv, n_iv + 2 * AHEAD)
        self.pair = _table(256, k.PAIR_FIELDS, 0)
        self.inj = _table(256, k.INJ_FIELDS, 0)
        #: per pair: its key, source * endpoints + destination, and the most head flits of
        #: its choices; the pairs' own hash table, key -> pair number
        self.pair_keys = np.zeros(256, np.int64)
        self.widest = np.zeros(256, np.int64)
        self.pair_hash_keys = np.full(1024, -1, np.int64)
        self.pair_hash_vals = np.zeros(1024, _PAIR)
        #: the pairs kept before the ones no queued packet needs are dropped
        self.pair_budget = max(MIN_PAIRS, PAIRS_PER_ENDPOINT * len(plan.endpoints))
        #: the models of this plan, whose queued packets' pair numbers a compaction renumbers
        self._models: weakref.WeakSet = weakref.WeakSet()
        self.version = 0
        self._counts = {"dec": 0, "cand": 0, "inj": 0, "hash": 0, "pair": 0}
        #: raw states inserted since the tables were made or read; the times the hash table
        #: dropped the states not found, and the pair tables were compacted
        self.inserted = self.pruned = self.compacted = 0
        self._heads: dict[Hashable, int] = {}
        self.head_list: list[Any] = []
        #: per endpoint, (switch, port) -> the index of its attachment there
        self._attachment_of = [
            {(a.switch, a.port): i for i, a in enumerate(e.attachments)} for e in plan.endpoints
        ]
        #: a decision's content (its candidates, next head and head flits) -> its number
        self._decisions: dict[tuple, int] = {}
        #: per decision: its candidates (port, VC) and next head id (-1: the head stays)
        self._candidates: list[tuple[tuple[int, int], ...]] = []
        self._next_head: list[int] = []
        self._ov_dst = self.ov[:, k.OV_DST].tolist()
        #: the edits a later run would otherwise make again (raw states inserted, pairs added
        #: or compacted), and how many of them the set-up cache holds (saved or read)
        self._edits = self._saved = 0
        self._port_ov0 = [
            self.gp[start : start + n, k.GP_OV0].tolist()
            for start, n in self.sw[:, [k.SW_PORT0, k.SW_NPORTS]].tolist()
        ]

    def iv_of(self, switch: int, port: int, vc: int) -> int:
        return int(self.gp[self.sw[switch, k.SW_PORT0] + port, k.GP_IV0]) + vc

    def ov_of(self, switch: int, port: int, vc: int) -> int:
        return int(self.gp[self.sw[switch, k.SW_PORT0] + port, k.GP_OV0]) + vc

    def routing_arrays(self) -> dict[str, np.ndarray]:
        """The routing tables as :class:`~.kernel.State` names them."""
        return {name: getattr(self, name) for name in KERNEL_TABLES}

    def _grow(self, name: str, needed: int) -> None:
        """Make table ``name`` hold at least ``needed`` rows (doubling it)."""
        old = getattr(self, name)
        size = len(old)
        if needed <= size:
            return
        while size < needed:
            size *= 2
        new = np.zeros((size, *old.shape[1:]), old.dtype)
        new[: len(old)] = old
        setattr(self, name, new)
        if name in KERNEL_TABLES:
            self.version += 1

    # ---- heads and injections --------------------------------------------------------------

    def head_id(self, head: Any) -> int:
        number = self._heads.get(head)
        if number is None:
            number = self._heads[head] = len(self.head_list)
            self.head_list.append(head)
        return number

    def head_flits(self, head: Any) -> int:
        """Head flits a packet carrying ``head`` travels with (``router.head_bits``)."""
        bits = self.plan.router.head_bits
        return 1 if bits is None else head_flits(self.routing.head_length(head), bits)

    def pairs_of(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The pair numbers of the packets from ``src`` to ``dst`` (arrays of endpoints), the
        new pairs' injection choices added (after a compaction if the budget is reached)."""
        keys = src.astype(np.int64) * len(self.plan.endpoints) + dst.astype(np.int64)
        found = self._look_up(keys)
        missing = found < 0
        if missing.any():
            new = np.unique(keys[missing])
            if self._counts["pair"] + len(new) > self.pair_budget:
                self._compact(np.unique(found[~missing]))
            for key in new.tolist():
                self._add_pair(*divmod(key, len(self.plan.endpoints)))
            self._insert_pairs(new)
            found = self._look_up(keys)
        return found

    def pair_of(self, src: int, dst: int) -> int:
        """:meth:`pairs_of` for one packet: one compiled look-up (numpy's arrays cost more than
        they save for a packet at a time, as :meth:`~.engine.FastModel.offer` gives them)."""
        key = src * len(self.plan.endpoints) + dst
        pair = k.hash_get(self.pair_hash_keys, self.pair_hash_vals, key)
        if pair < 0:
            if self._counts["pair"] + 1 > self.pair_budget:
                self._compact(np.empty(0, np.int64))
            pair = self._counts["pair"]
            self._add_pair(src, dst)
            if 2 * (pair + 1) > len(self.pair_hash_keys):
                self._rebuild_pair_hash()
            else:
                k.hash_insert(self.pair_hash_keys, self.pair_hash_vals, key, pair)
        return pair

    def _look_up(self, keys: np.ndarray) -> np.ndarray:
        found = np.empty(len(keys), np.int64)
        k.hash_lookup_many(self.pair_hash_keys, self.pair_hash_vals, keys, found)
        return found

    def _add_pair(self, src: int, dst: int) -> None:
        """The injection choices of (``src``, ``dst``) as the next pair. The states its packets
        reach are decided as the cycles miss them: a packet injects through one of a pair's
        choices (on the E6 Znode, the first of 128 with a credit), and deciding states below
        the others ahead of it took most of a new pair's time (a window of 6000 cycles of the
        E6 Znode at uniform 0.1, 64 states ahead of each new pair: 78 cycles/s, none: 171)."""
        attachment_of = self._attachment_of[src]
        choices = self.routing.injections(src, dst)
        pair, first = self._counts["pair"], self._counts["inj"]
        for name in ("pair", "pair_keys", "widest"):
            self._grow(name, pair + 1)
        self._grow("inj", first + len(choices))
        self.pair[pair] = first, len(choices)
        self.pair_keys[pair] = src * len(self.plan.endpoints) + dst
        flits = [self.head_flits(choice.head) for choice in choices]
        self.widest[pair] = max(flits)
        for i, choice in enumerate(choices):
            self.inj[first + i] = (
                attachment_of[(choice.switch, choice.port)],
                self.head_id(choice.head),
                flits[i],
            )
        self._counts["inj"] = first + len(choices)
        self._counts["pair"] = pair + 1
        self._edits += 1

    def _insert_pairs(self, keys: np.ndarray) -> None:
        """The last ``len(keys)`` pairs into the pair hash table (at most half full)."""
        count = self._counts["pair"]
        if 2 * count > len(self.pair_hash_keys):
            self._rebuild_pair_hash()
            return
        numbers = np.arange(count - len(keys), count, dtype=_PAIR)
        k.hash_insert_many(self.pair_hash_keys, self.pair_hash_vals, keys, numbers)

    def _rebuild_pair_hash(self) -> None:
        """The pair hash table made anew from ``pair_keys``, at most half full."""
        count = self._counts["pair"]
        size = _power_of_two(max(1024, 2 * count))
        self.pair_hash_keys = np.full(size, -1, np.int64)
        self.pair_hash_vals = np.zeros(size, _PAIR)
        k.hash_insert_many(
            self.pair_hash_keys,
            self.pair_hash_vals,
            self.pair_keys[:count],
            np.arange(count, dtype=_PAIR),
        )

    def register(self, model: Any) -> None:
        """Let ``model`` hold pair numbers: a compaction asks it for those its queued packets
        need (``queued_pairs()``) and renumbers them (``renumber_pairs(new_of_old)``)."""
        self._models.add(model)

    def _compact(self, keep: np.ndarray) -> None:
        """Drop every pair but ``keep`` and those a model's queued packets still need (a
        packet reads its pair only when it starts injecting), renumbered in order; the pair
        budget at least twice the pairs kept, so compactions stay rare."""
        count = self._counts["pair"]
        needed = [keep.astype(np.int64)] + [model.queued_pairs() for model in self._models]
        kept = np.unique(np.concatenate(needed))
        new_of_old = np.full(count, -1, np.int64)
        new_of_old[kept] = np.arange(len(kept))
        rows = self.pair[kept]
        n = rows[:, k.PAIR_N]
        starts = np.cumsum(n) - n
        taken = np.repeat(rows[:, k.PAIR_START] - starts, n) + np.arange(int(n.sum()))
        size = max(256, 2 * len(kept))
        for name, chosen in (("inj", taken), ("pair_keys", kept), ("widest", kept)):
            old = getattr(self, name)
            new = np.zeros((max(256, 2 * len(chosen)), *old.shape[1:]), old.dtype)
            new[: len(chosen)] = old[chosen]
            setattr(self, name, new)
        self.pair = _table(size, k.PAIR_FIELDS, 0)
        self.pair[: len(kept), k.PAIR_START] = starts
        self.pair[: len(kept), k.PAIR_N] = n
        self._counts["pair"], self._counts["inj"] = len(kept), len(taken)
        self._rebuild_pair_hash()
        self.pair_budget = max(self.pair_budget, 2 * len(kept))
        self.compacted += 1
        self._edits += 1
        self.version += 1
        for model in self._models:
            model.renumber_pairs(new_of_old)

    # ---- decisions ---------------------------------------------------------------------------

    def fill(self, misses: list[tuple[int, int]]) -> None:
        """Decide each missed raw state (input VC, head id), then states reachable from them,
        at most :data:`AHEAD` more: the closure spares the cycles a return to Python per
        hop, but where a head has many ways (a Znode's adaptive up links below hundreds of
        injection attachments) deciding all of them costs more than the misses it saves."""
        n_iv = len(self.iv_spv)
        added: set[int] = set()  # decided here, in the hash table at the end

        def known(key: int) -> bool:
            table = self.hash_keys
            return key in added or bool(table[k.hash_slot(table, key)] == key)

        keys, values = [], []
        stack: list[tuple[int, int]] = []

        def decide(iv: int, head_id: int) -> None:
            key = head_id * n_iv + iv
            if known(key):
                return
            number = self._decide(iv, head_id)
            added.add(key)
            keys.append(key)
            values.append(number)
            next_head = self._next_head[number]
            if next_head < 0:
                next_head = head_id
            stack.extend((downstream, next_head) for downstream in self._leads_to(iv, number))

        for iv, head_id in misses:
            decide(iv, head_id)
        bound = len(keys) + AHEAD
        while stack and len(keys) < bound:
            decide(*stack.pop())
        if keys:
            self._insert(keys, values)

    def _leads_to(self, iv: int, number: int) -> list[int]:
        """The input VCs the candidates of decision ``number`` lead to from input VC ``iv``."""
        dst = self._ov_dst
        return [target for target in (dst[ov] for ov in self.requested(iv, number)) if target >= 0]

    def requested(self, iv: int, number: int) -> list[int]:
        """The output VCs decision ``number`` offers a head at input VC ``iv``."""
        ov0 = self._port_ov0[self.iv_spv[iv][0]]
        return [ov0[port] + vc for port, vc in self._candidates[number]]

    def decision(self, iv: int, head: Any) -> int:
        """The decision of a head at input VC ``iv`` (made now if it is new)."""
        return self._decide(iv, self.head_id(head))

    def _decide(self, iv: int, head_id: int) -> int:
        s, p, v = self.iv_spv[iv]
        decision = self.routing.route(s, p, v, self.head_list[head_id])
        candidates = tuple((hop.port, w) for hop in decision.hops for w in hop.vcs)
        next_head = self.head_id(decision.head)
        if next_head == head_id:
            content = (candidates, -1, -1)
        else:
            content = (candidates, next_head, self.head_flits(decision.head))
        number = self._decisions.get(content)
        if number is None:
            number = self._decisions[content] = self._add_decision(content)
        return number

    def _add_decision(self, content: tuple) -> int:
        """A new decision row: (candidates, next head id, its head flits)."""
        candidates, next_head, next_hf = content
        number, first = self._counts["dec"], self._counts["cand"]
        self._grow("dec", number + 1)
        self._grow("cand", first + len(candidates))
        self.cand[first : first + len(candidates)] = np.reshape(candidates, (-1, k.CAND_FIELDS))
        row = self.dec[number]
        row[k.DEC_START], row[k.DEC_N] = first, len(candidates)
        row[k.DEC_NEXT_HEAD], row[k.DEC_NEXT_HF] = next_head, next_hf
        self._candidates.append(candidates)
        self._next_head.append(next_head)
        self._counts["dec"], self._counts["cand"] = number + 1, first + len(candidates)
        return number

    def _insert(self, keys: list[int], values: list[int]) -> None:
        """Raw states ``keys`` -> decisions ``values`` in the hash table (kept at most half
        full, doubled as needed). If they would take it past :attr:`state_budget`, the table
        first drops every state no look-up found since it last did so (they are decided again
        when met); if those found fill more than half the budget, it drops them too, so a
        pruning always leaves room for half the budget and the table never holds more."""
        count = self._counts["hash"] + len(keys)
        size = len(self.hash_keys)
        if count > self.state_budget and self._counts["hash"]:
            self.pruned += 1
            # in place: a second table while pruning would double the memory the budget bounds
            found = (self.hash_keys >= 0) & (self.hash_used != 0)
            kept = int(np.count_nonzero(found))
            kept_keys, kept_values = (
                (self.hash_keys[found], self.hash_vals[found])
                if 2 * kept <= self.state_budget
                else (self.hash_keys[:0], self.hash_vals[:0])
            )
            del found
            self.hash_keys.fill(-1)
            self.hash_used.fill(0)
            k.hash_insert_many(self.hash_keys, self.hash_vals, kept_keys, kept_values)
            count = len(kept_keys) + len(keys)
        if 2 * count > size:
            while 2 * count > size:
                size *= 2
            self._grow_states(size)
        k.hash_insert_many(
            self.hash_keys, self.hash_vals, np.array(keys, np.int64), np.array(values, _DECISION)
        )
        self._counts["hash"] = count
        self.inserted += len(keys)
        self._edits += 1

    def _grow_states(self, size: int) -> None:
        """The hash table remade with ``size`` slots, its states and their found marks kept."""
        keys, values = np.full(size, -1, np.int64), np.zeros(size, _DECISION)
        used = np.zeros(size, np.uint8)
        k.hash_move(self.hash_keys, self.hash_vals, self.hash_used, keys, values, used)
        self.hash_keys, self.hash_vals, self.hash_used = keys, values, used
        self.version += 1

    # ---- the set-up cache --------------------------------------------------------------------

    def _entry(self) -> Path:
        return entry("tables", self.plan, inputs=_LAYOUT, sources=_SOURCES, suffix="npz")

    def save(self) -> None:
        """Keep the routing tables in the set-up cache if they changed since read or saved:
        raw states inserted, or pairs added or compacted (a head the JSON cannot hold keeps
        them out). Of the raw states, those a look-up found (or read from the cache), as a
        list, not the table's empty slots."""
        if self._edits == self._saved:
            return
        try:
            heads = json.dumps(self.head_list)
        except TypeError:
            return
        counts = self._counts
        found = (self.hash_keys >= 0) & (self.hash_used != 0)
        arrays = {
            "heads": np.array(heads),
            "dec": self.dec[: counts["dec"]],
            "cand": self.cand[: counts["cand"]],
            "state_keys": self.hash_keys[found],
            "state_values": self.hash_vals[found],
            "pair": self.pair[: counts["pair"]],
            "inj": self.inj[: counts["inj"]],
            "pair_keys": self.pair_keys[: counts["pair"]],
            "widest": self.widest[: counts["pair"]],
        }
        store(self._entry(), lambda file: np.savez(file, **arrays))
        self._saved = self._edits

    def load(self) -> None:
        """Start from the routing tables a run of this plan saved (none, or unreadable: empty)."""
        try:
            with np.load(self._entry(), allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            heads = [_hashable(head) for head in json.loads(str(arrays.pop("heads")))]
        except (OSError, ValueError, KeyError):
            return
        self.head_list = heads
        self._heads = {head: number for number, head in enumerate(heads)}
        for name in ("dec", "cand", "pair", "inj", "pair_keys", "widest"):
            loaded = arrays[name]
            table = np.zeros((max(256, 2 * len(loaded)), *loaded.shape[1:]), np.int64)
            table[: len(loaded)] = loaded
            setattr(self, name, table)
        # the states read count as found: the run that saved them found them
        keys, values = arrays["state_keys"], arrays["state_values"]
        known = len(keys)
        size = 1024
        while size < 2 * known:
            size *= 2
        self.hash_keys, self.hash_vals = np.full(size, -1, np.int64), np.zeros(size, _DECISION)
        k.hash_insert_many(self.hash_keys, self.hash_vals, keys, values.astype(_DECISION))
        self.hash_used = (self.hash_keys >= 0).astype(np.uint8)
        decisions = len(arrays["dec"])
        self._candidates, self._next_head, self._decisions = [], [], {}
        cand = arrays["cand"].tolist()
        for number, row in enumerate(arrays["dec"].tolist()):
            start, next_head = row[k.DEC_START], row[k.DEC_NEXT_HEAD]
            candidates = tuple(tuple(pv) for pv in cand[start : start + row[k.DEC_N]])
            self._decisions[(candidates, next_head, row[k.DEC_NEXT_HF])] = number
            self._candidates.append(candidates)
            self._next_head.append(next_head)
        self._counts = {
            "dec": decisions,
            "cand": len(arrays["cand"]),
            "inj": len(arrays["inj"]),
            "hash": known,
            "pair": len(arrays["pair"]),
        }
        self._rebuild_pair_hash()
        self.inserted = known
        self._saved = self._edits
        self.version += 1
