"""The fast engine is the reference model, cycle for cycle: in lock-step on every router setting,
family and load (a slice here, the whole under ``-m matrix``), on the measurement runs of
``simulate`` and ``replay``, and on deadlocks; a planted allocator bug is caught."""

from __future__ import annotations

import numpy as np
import pytest
from bubble_specs import BUBBLE_NDT
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lockstep import FAMILIES, LOADS, ROUTERS, lockstep, python_kernel, spec
from test_deadlock_promise import proven_plan, specs
from test_model import PARTIAL
from zfabric.sim.fast import FastModel, UnsupportedSetting, kernel, tables
from zfabric.sim.measure import make_model, replay, simulate
from zfabric.sim.model import FabricModel, InvariantError
from zfabric.sim.traffic import TraceEntry, Traffic, TrafficConfig

from zfabric import compile_plan, load_spec
from zfabric.bubble import input_ring

#: the default run's slice: every family once, every router setting value at least once, the
#: three loads, endpoint VCs, multi-flit heads and ejection stalls
SLICE = [
    ("torus-dor", {"stages": 1}, 0.45, {}),
    ("mesh-dor", {"stages": 2, "selection": "first-free"}, 0.9, {}),
    ("torus-duato", {"stages": 3, "selection": "occupancy"}, 0.9, {"buffer_depth": 3}),
    ("ndt-dort", {"stages": 1, "allocator": "separable-2"}, 0.9, {}),
    ("ndt-adaptive", {"stages": 5, "selection": "occupancy"}, 0.45, {}),
    ("ndt-tsdor", {"stages": 4, "injection_vcs": 1}, 0.45, {}),
    ("hyperx-aliod", {"stages": 5}, 0.9, {"buffer_depth": 6}),
    ("hyperx-cliod", {"stages": 3, "allocator": "separable-2"}, 0.45, {}),
    ("hyperz-odim", {"stages": 2, "ejection_vcs": 1}, 0.1, {}),
    ("znode-sliced", {"stages": 1, "head_bits": 3}, 0.45, {"packet_length": 2}),
    ("znode-flat", {"stages": 4, "head_bits": 4}, 0.9, {}),
    ("znode-srcdst", {"stages": 2, "selection": "occupancy"}, 0.9, {}),
    ("znode-updown", {"stages": 3, "head_bits": 5}, 0.1, {"buffer_depth": 5}),
    ("tree-sliced", {"stages": 5, "head_bits": 2}, 0.45, {"packet_length": 1}),
    ("tswitch-optimal", {"stages": 2}, 0.9, {}),
    ("tswitch-bad-r2", {"stages": 4, "selection": "round-robin"}, 0.45, {}),
    ("transit-full", {"stages": 1}, 0.1, {}),
    ("transit-full", {"stages": 3, "selection": "round-robin", "head_bits": 8}, 0.9, {}),
    ("transit-bidelta", {"stages": 2, "selection": "occupancy"}, 0.1, {}),
    ("transit-bidelta", {"stages": 4, "head_bits": 8}, 0.9, {"buffer_depth": 3}),
    ("transit-bidelta", {"stages": 1, "selection": "random"}, 0.9, {}),
    ("znode-sliced", {"stages": 5, "selection": "random"}, 0.45, {}),
    ("hyperx-aliod", {"stages": 3, "selection": "random"}, 0.9, {}),
]


@pytest.mark.parametrize("family, router, rate, fields", SLICE, ids=[s[0] for s in SLICE])
def test_fast_engine_in_lockstep_with_the_reference(family, router, rate, fields):
    shown = lockstep(spec(family, router, **fields), rate)
    assert shown["delivered"] > 10


@pytest.mark.parametrize("family, router, rate, fields", SLICE[::4], ids=[s[0] for s in SLICE[::4]])
def test_lockstep_scanning_every_switch(family, router, rate, fields):
    # the small fabrics' default: every switch and attachment scanned each cycle, no work lists
    shown = lockstep(spec(family, router, **fields), rate, work_lists=False)
    assert shown["delivered"] > 10


@pytest.mark.parametrize("stall", [0.3, 0.8])
def test_lockstep_with_ejection_stalls(stall):
    router = {"stages": 2, "injection_vcs": 2, "ejection_vcs": 2}
    shown = lockstep(spec("hyperx-aliod", router), 0.45, stall=stall)
    assert shown["delivered"] > 10


@pytest.mark.parametrize("rate", LOADS)
def test_lockstep_with_weighted_random_traffic(rate):
    # the Znode thesis's weighted-random traffic on a super node: 2 Znodes of z = (2, 3)
    traffic = {"pattern": "weighted", "zones": (2, 3), "level_weights": (0.3, 0.7)}
    router = {"stages": 2, "selection": "round-robin"}
    shown = lockstep(spec("znode-sliced", router), rate, traffic=traffic)
    assert shown["delivered"] > 10


def test_lockstep_with_packet_lengths_drawn_per_packet():
    router = {"stages": 3, "selection": "round-robin"}
    shown = lockstep(spec("torus-duato", router), 0.45, packet_length=(1, 9))
    assert shown["delivered"] > 10


#: Znodes shaped as the Znode thesis's E6 (every processor attached to all R_1 level-1
#: switches of its zone, R halving per level): most switches idle and most attachments empty in
#: any cycle, where the engine steps only the switches and visits only the attachments at work
E6_LIKE = {
    "z2-2-2-R8-4-2": ([2, 2, 2], [8, 4, 2]),
    "z4-4-R16-8": ([4, 4], [16, 8]),
    "z2-2-4-R16-8-4": ([2, 2, 4], [16, 8, 4]),
}


@pytest.mark.parametrize("rate", [0.1, 0.9])
@pytest.mark.parametrize("z, r", E6_LIKE.values(), ids=E6_LIKE)
def test_lockstep_on_znodes_with_many_attachments_per_processor(z, r, rate):
    znode = {"name": "e6-like", "topology": {"kind": "znode", "z": z, "R": r}, "routing": "sliced"}
    shown = lockstep(znode, rate)
    assert shown["delivered"] > 10


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("rate", LOADS)
@pytest.mark.parametrize("router", ROUTERS, ids=lambda r: "-".join(map(str, r.values())))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_fast_engine_in_lockstep_matrix(family, router, rate):
    lockstep(spec(family, router), rate, cycles=600)


@pytest.mark.matrix
@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(drawn=specs(), seed=st.integers(1, 1000), rate=st.sampled_from(LOADS))
def test_fast_engine_in_lockstep_on_random_specs(drawn, seed, rate):
    plan = proven_plan(drawn)
    assume(plan is not None)
    lockstep(plan, rate, seed=seed)


# ---- a planted bug ------------------------------------------------------------------------------

#: the output port's round-robin pointer at traversal (step 5), and the same pointer off by one
POINTER = "gps[base + o, RR_OUT] = (p + 1) % n_ports"
OFF_BY_ONE = "gps[base + o, RR_OUT] = (p + 2) % n_ports"
#: a switch is stepped in the cycle after it gets a credit back, after a flit lands in it and
#: after a step of it changed something, and each of these wakes left off
CREDIT_WAKE = "_wake(sws, stepping, stepping_n, ovs[target, OV_SW], woken)"
FLIT_WAKE = "_wake(sws, stepping, stepping_n, ivs[target, IV_SW], woken)"
STEP_WAKE = "_wake(sws, stepping, stepping_n, s, woken)"
#: the same for the credit of an ejection VC, returned by the endpoint taking a flit
EJECTION_WAKE = "_wake(sws, stepping, stepping_n, ovs[ov, OV_SW], cycle + 1)"
#: an input VC's front is looked up in the cycle after a flit lands in it and after its front
#: leaves, and each of these left off
LANDED_FRONT = "_list_front(ivs, st.fronts, st.fronts_n, target, woken)"
POPPED_FRONT = "_list_front(ivs, st.fronts, st.fronts_n, iv, sc[CYCLE] + 1)"
#: a head found waiting on output VCs all held asks again after a release at its switch, the
#: release left uncounted
RELEASE_COUNTED = "st.sw[s, SW_RELEASES] += 1"
#: an endpoint that found no injection credit is looked at again once one comes back, and that
#: left off
ENDPOINT_WAKE = "st.ep_wait[gas[(-1 - target) // n_inj, GA_EP]] = 0"
#: a credit steps its switch if its output VC's holder has a flit to send, or if it is free
#: and the credit is its first (wormhole's one threshold), and each of these left off
HOLDER_WAITING = "return st.iv[owner, IV_CNT] > 0"
FIRST_CREDIT = "credit == 1\n"

PLANTS = {
    "as-is": None,
    "allocator-pointer": ("_traverse", POINTER, OFF_BY_ONE),
    "switch-not-woken-by-a-credit": ("_end_of_cycle", CREDIT_WAKE, "pass"),
    "switch-not-woken-by-a-flit": ("_end_of_cycle", FLIT_WAKE, "pass"),
    "switch-not-woken-after-a-step": ("_step", STEP_WAKE, "pass"),
    "switch-not-woken-by-an-ejection-credit": ("_take", EJECTION_WAKE, "pass"),
    "front-not-looked-up-after-a-landing": ("_end_of_cycle", LANDED_FRONT, "pass"),
    "front-not-looked-up-after-its-front-left": ("_pop", POPPED_FRONT, "pass"),
    "release-not-counted": ("_cross", RELEASE_COUNTED, "pass"),
    "endpoint-not-woken-by-an-injection-credit": ("_end_of_cycle", ENDPOINT_WAKE, "pass"),
    "switch-not-woken-by-a-credit-its-holder-waits-for": (
        "_credit_may_change",
        HOLDER_WAITING,
        "return False",
    ),
    "switch-not-woken-by-a-free-vc-s-first-credit": (
        "_credit_may_change",
        FIRST_CREDIT,
        "False\n",
    ),
}


@pytest.mark.parametrize("plant", PLANTS.values(), ids=PLANTS)
def test_a_planted_bug_fails_the_lockstep(monkeypatch, plant):
    """The kernel run as plain Python (the compiled one untouched), once as it is and once with
    a bug planted: the output arbiter's pointer moving one port too far, a switch left off
    the work list of the cycle after it gets a credit or a flit or changed something, an
    input VC left off the fronts to look up after a flit lands in it or its front leaves, a
    head waiting on held output VCs left waiting after a release, an endpoint short of an
    injection credit left waiting after one comes back, or a credit that a flit at its output
    VC or a head waiting for a free one needs taken as changing nothing: only the planted
    copies are caught.
    The endpoints hold flits back half the time, so local outputs run out of credits too."""
    torus = {"name": "t", "topology": {"kind": "torus", "k": [3, 3]}}
    _planted_lockstep(monkeypatch, torus, plant)


def _planted_lockstep(monkeypatch, fabric, plant, stall: float = 0.5) -> None:
    """The lock-step on ``fabric`` at 0.45 with the endpoints holding flits back a ``stall``
    of the time, the kernel run as Python with ``plant`` (or none): a planted copy must fail
    it, the kernel as it is must pass it."""
    monkeypatch.setattr(FastModel, "_kernel_run", staticmethod(python_kernel(plant)))
    with np.errstate(over="ignore"):  # the hash's 64-bit products wrap, as compiled
        if plant:
            with pytest.raises(AssertionError, match=r"^(cycle|packet) \d+"):
                lockstep(fabric, 0.45, cycles=200, stall=stall)
        else:
            assert lockstep(fabric, 0.45, cycles=200, stall=stall)["delivered"] > 10


#: a flit landing behind a head that is not routed yet steps its switch only if the head was
#: short of flits (its head flits, under store-and-forward its packet), and that left off
SHORT_OF_FLITS = "return held < st.pk[slot, PK_COUNT if st.cfg[STORES] else PK_HF]"
SHORT_FABRICS = {
    "head-flits": spec("znode-sliced", {"stages": 1, "head_bits": 3}, packet_length=2),
    "store-and-forward": spec(
        "torus-dor", {"switching": "store_and_forward"}, buffer_depth=4, packet_length=3
    ),
}


@pytest.mark.parametrize("fabric", SHORT_FABRICS.values(), ids=SHORT_FABRICS)
@pytest.mark.parametrize("plant", [None, ("_front_may_change", SHORT_OF_FLITS, "return False")])
def test_a_head_waiting_for_its_flits_is_stepped_when_they_land(monkeypatch, fabric, plant):
    """Heads of several flits, and packets stored whole before they leave: a landing that
    completes what the front head waits for must step its switch (the kernel run as Python,
    once as it is and once with such landings taken as changing nothing)."""
    _planted_lockstep(monkeypatch, fabric, plant)


#: a free output VC's credit steps its switch where it brings the VC to room for a whole packet
#: (cut-through), or home whole (an atomic VC of adaptive routing), and each of these left off
ROOM_FOR_A_PACKET = "or (whole > 0 and (credit == whole or credit == 2 * whole))"
ALL_HOME = "or (st.ov[ov, OV_ATOMIC] != 0 and credit == st.cfg[DEPTH])"
THRESHOLDS = {
    "cut-through": (
        spec("torus-dor", {"switching": "cut_through"}, buffer_depth=4, packet_length=3),
        ROOM_FOR_A_PACKET,
        0.5,
    ),
    "atomic-vcs": (
        spec("hyperx-aliod", {"stages": 2, "injection_vcs": 2, "ejection_vcs": 2}),
        ALL_HOME,
        0.8,
    ),
}


@pytest.mark.parametrize("planted", [False, True], ids=["as-is", "threshold-left-off"])
@pytest.mark.parametrize("case", THRESHOLDS.values(), ids=THRESHOLDS)
def test_a_free_vc_reaching_a_threshold_steps_its_switch(monkeypatch, case, planted):
    """A credit that makes a free output VC usable to a head other than by being its first:
    room for a whole packet under cut-through, every credit home on an atomic VC (the kernel
    run as Python, once as it is and once with such a credit taken as changing nothing)."""
    fabric, line, stall = case
    plant = ("_credit_may_change", line, "") if planted else None
    _planted_lockstep(monkeypatch, fabric, plant, stall)


# ---- deadlocks ---------------------------------------------------------------------------------


def test_both_engines_find_the_same_deadlock():
    ring = {
        "name": "ring",
        "topology": {"kind": "torus", "k": [6]},
        "routing": {"name": "dor", "datelines": False, "tie": "plus"},
        "buffer_depth": 2,
    }
    shown = lockstep(ring, 0.9, cycles=5000, packet_length=8)
    plan = compile_plan(load_spec(ring))
    results = [
        simulate(
            plan,
            Traffic(TrafficConfig(rate=0.9, packet_length=8), 6, 1),
            warmup=100,
            cycles=2000,
            engine=engine,
        )
        for engine in ("reference", "fast")
    ]
    assert results[0].deadlock is not None and not results[0].deadlock["partial"]
    assert results[0].deadlock == results[1].deadlock
    assert shown["cycles"] == results[0].deadlock["cycle"]


def test_both_engines_find_the_same_deadlock_under_cut_through():
    """A ring without dateline classes, 6-flit buffers and 4-flit packets: blocked heads wait
    for a downstream buffer to have room for a whole packet (credits 1 to 3 count as waiting,
    not only 0), and both engines stop at the same deadlock."""
    ring = {
        "name": "ring",
        "topology": {"kind": "torus", "k": [6]},
        "routing": {"name": "dor", "datelines": False, "tie": "plus"},
        "buffer_depth": 6,
        "packet_length": 4,
        "router": {"switching": "cut_through"},
    }
    shown = lockstep(ring, 0.9, cycles=5000)
    plan = compile_plan(load_spec(ring))
    results = [
        simulate(plan, Traffic(TrafficConfig(rate=0.9), 6, 1), warmup=100, cycles=2000, engine=e)
        for e in ("reference", "fast")
    ]
    assert results[0].deadlock is not None
    assert results[0].deadlock == results[1].deadlock
    assert shown["cycles"] < 5000


def test_both_engines_find_the_same_partial_deadlock():
    plan = compile_plan(load_spec(PARTIAL))
    results = [
        simulate(plan, Traffic(TrafficConfig(rate=0.9), 27, 1), warmup=0, cycles=3000, engine=e)
        for e in ("reference", "fast")
    ]
    assert results[0].deadlock is not None and results[0].deadlock["partial"]
    assert results[0].deadlock == results[1].deadlock
    # and cycle for cycle with the work lists on: both watches call the knot at the same cycle,
    # which stops the run while packets are still offered
    assert lockstep(plan, 0.9, cycles=3000)["cycles"] < 3000


# ---- measurement runs --------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.2, 0.9])
def test_simulate_gives_the_same_result_and_records_on_both_engines(rate):
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [4, 4]}}))
    runs = []
    for engine in ("reference", "fast"):
        records = []
        result = simulate(
            plan,
            Traffic(TrafficConfig(rate=rate), 16, 3),
            warmup=300,
            cycles=700,
            drain_limit=500,
            records=records.append,
            engine=engine,
        )
        assert result.engine == engine
        shown = result.to_dict()
        del shown["engine"]
        runs.append((shown, records))
    assert runs[0] == runs[1]
    assert runs[0][0]["packets"] > 100


def test_replay_gives_the_same_result_on_both_engines():
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [4, 4]}}))
    trace = [TraceEntry(cycle, cycle % 16, (cycle * 7 + 3) % 16, 4) for cycle in range(0, 400, 3)]
    trace = [entry for entry in trace if entry.src != entry.dst]
    results = []
    for engine in ("reference", "fast"):
        records = []
        shown = replay(plan, trace, records=records.append, engine=engine).to_dict()
        assert shown.pop("engine") == engine
        results.append((shown, records))
    assert results[0] == results[1]
    assert len(results[0][1]) == len(trace)


def test_packets_offered_as_rows_come_back_as_the_reference_delivers_them():
    """The same traffic offered as rows to a fast model without packets and one packet at a time
    to the reference: the delivered rows are the reference's packets, field by field and in
    its order, the packet slots reused (a table of 256 slots, over five hundred packets); those
    left in the fabric by a cut-short run are the reference's too."""
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [4, 4]}}))
    traffic = Traffic(TrafficConfig(rate=0.4, packet_length=(1, 6)), 16, 5)
    rows = traffic.packets_between(0, 400)
    reference = FabricModel(plan)
    batches = []
    fast = FastModel(plan, paths=False, on_deliver_rows=batches.append)
    for created, src, dst, length in rows.tolist():
        reference.offer(src, dst, length, created=created)
    for start in range(0, 400, 50):  # offered in batches ahead of the cycles that run them
        fast.offer_rows(rows[(start <= rows[:, 0]) & (rows[:, 0] < start + 50)])
        fast.run_until(start + 50)
        reference.run(start + 50 - reference.cycle)
    fields = ("id", "src", "dst", "length", "created", "injected", "delivered", "hops")
    expected = [[getattr(p, name) for name in fields] for p in reference.delivered]
    assert np.concatenate(batches).tolist() == expected
    assert len(expected) > 500
    left = fast.undelivered_rows()
    assert len(left) == len(rows) - len(expected) > 0
    delivered = {p.id for p in reference.delivered}
    assert left[:, 0].tolist() == [i for i in range(len(rows)) if i not in delivered]


def test_a_model_takes_packets_one_way_only():
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [2, 2]}}))
    with pytest.raises(ValueError, match="takes packets by offer_rows"):
        FastModel(plan, on_deliver_rows=lambda rows: None).offer(0, 1)
    with pytest.raises(ValueError, match="offer_rows needs a model given on_deliver_rows"):
        FastModel(plan).offer_rows(np.array([[0, 0, 1, 4]]))
    rows_model = FastModel(plan, on_deliver_rows=lambda rows: None)
    with pytest.raises(ValueError, match="packet from endpoint 2 to itself"):
        rows_model.offer_rows(np.array([[0, 0, 1, 4], [0, 2, 2, 4]]))
    with pytest.raises(ValueError, match="a packet of 0 flits"):
        rows_model.offer_rows(np.array([[0, 0, 1, 0]]))
    with pytest.raises(ValueError, match=r"no endpoint -1 \(0 to 3\)"):
        rows_model.offer_rows(np.array([[0, 0, -1, 4]]))
    with pytest.raises(ValueError, match=r"no endpoint 4 \(0 to 3\)"):
        rows_model.offer_rows(np.array([[0, 4, 1, 4]]))
    with pytest.raises(ValueError, match=r"rows of 4 integers expected, got shape \(4,\)"):
        rows_model.offer_rows(np.array([0, 0, 1, 4]))
    with pytest.raises(ValueError, match=r"rows of 4 integers expected, got shape \(1, 3\)"):
        rows_model.offer_rows(np.array([[0, 0, 1]]))


def test_a_packet_of_no_flit_is_refused_by_every_way_of_offering_it():
    """A negative length (0 in ``offer`` is the plan's default): the reference's deque ran dry
    and the fast engine counted flits that never came; now each refuses it, nothing queued."""
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [2, 2]}}))
    reference, fast = FabricModel(plan), FastModel(plan)
    rows_model = FastModel(plan, on_deliver_rows=lambda rows: None)
    offers = (
        lambda: reference.offer(0, 1, -3),
        lambda: fast.offer(0, 1, -3),
        lambda: fast.offer_many([(0, 0, 1, -3)]),
        lambda: rows_model.offer_rows(np.array([[0, 0, 1, 2], [0, 0, 1, -3]])),
    )
    for offer in offers:
        with pytest.raises(ValueError, match=r"^a packet of -3 flits \(at least 1\)$"):
            offer()
    for model in (reference, fast, rows_model):
        model.run(20)
        assert (model.in_network, model.delivered_count) == (0, 0)


def test_packets_keep_their_paths_only_where_the_engine_keeps_paths():
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [3, 3]}}))
    reference = FabricModel(plan)
    kept, unkept = FastModel(plan), FastModel(plan, paths=False)
    packets = [model.offer(0, 4) for model in (reference, kept, unkept)]
    for model in (reference, kept, unkept):
        model.run(20)
    assert all(packet.delivered is not None for packet in packets)
    assert packets[1].path == packets[0].path and len(packets[0].path) == 3  # 2 hops, ejection
    # without paths no packet holds a list of its own: one object less the collector tracks
    assert packets[2].path == () and packets[2].delivered == packets[0].delivered


# ---- what the fast engine refuses --------------------------------------------------------------


def test_an_arbitrary_ready_function_is_refused_and_simulate_falls_back():
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [2, 2]}}))

    def ready(endpoint, attachment, cycle):
        return cycle % 2 == 0

    with pytest.raises(UnsupportedSetting, match="ready function other than EjectStalls"):
        FastModel(plan, eject_ready=ready)
    model, engine = make_model(plan, "fast", eject_ready=ready)
    assert engine == "reference" and isinstance(model, FabricModel)


def test_a_run_past_the_last_cycle_its_rows_hold_is_refused():
    """The port and VC rows hold cycle numbers in 32 bits: a run to beyond 2**31 - 1 cycles
    is refused before any cycle is run, not wrapped."""
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [2, 2]}}))
    model = FastModel(plan)
    with pytest.raises(UnsupportedSetting, match="at most 2147483647 cycles"):
        model.run_until(2**31)
    assert model.cycle == 0


def test_release_counts_past_what_a_held_mark_holds_start_again(monkeypatch):
    """A switch counts its releases without bound (up to one per output port a cycle: 2**31
    of them within a run of 2**31 / radix cycles), an input VC's HELD mark in 32 bits. Counts
    planted 2 short of the field's largest value: each switch's starts again from 0, its
    marks cleared, the lock-step passes (endpoints holding flits back half the time, so heads
    wait on held output VCs), and heads are still marked against the new counts (passed over
    until a release), which wrapped marks never matched."""
    planted = kernel.HELD_MAX - 2
    build = FastModel._build

    def planting(self, *args):
        arrays = build(self, *args)
        arrays["sw"][:, kernel.SW_RELEASES] = planted
        return arrays

    marked, restarted = [], []

    def run(st, until, settle_after):
        status = kernel.run(st, until, settle_after)
        again = st.sw[:, kernel.SW_RELEASES] < planted
        switch = st.iv[:, kernel.IV_SW]
        held = st.iv[:, kernel.IV_HELD] == st.sw[switch, kernel.SW_RELEASES]
        marked.append(int(np.count_nonzero(held & (st.iv[:, kernel.IV_CNT] > 0) & again[switch])))
        restarted.append(int(np.count_nonzero(again)))
        return status

    monkeypatch.setattr(FastModel, "_build", planting)
    monkeypatch.setattr(FastModel, "_kernel_run", staticmethod(run))
    torus = {"name": "t", "topology": {"kind": "torus", "k": [3, 3]}}
    assert lockstep(torus, 0.9, cycles=300, stall=0.5)["delivered"] > 100
    assert restarted[-1] == 9
    assert sum(marked) > 0


@pytest.mark.parametrize("where", ["link", "ejection", "injection"])
def test_a_lost_credit_is_caught(where):
    """A credit taken from a link's output VC, an ejection's or an injection's counter, in
    the middle of traffic: the check names the kind of VC."""
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [3, 3]}}))
    model = FastModel(plan)
    for src in range(9):
        model.offer(src, (src + 4) % 9)
    model.run(20)
    model.check_credits()
    ovs = model._arrays["ov"]
    if where == "injection":
        model._arrays["inj_credit"][0] -= 1
    else:
        links = ovs[:, kernel.OV_DST] >= 0
        ovs[np.flatnonzero(links if where == "link" else ~links)[0], kernel.CREDIT] -= 1
    named = {"link": "on s", "ejection": "on ejection", "injection": "on injection"}[where]
    with pytest.raises(InvariantError, match=f"credits not conserved {named}"):
        model.check_credits()


# ---- the routing tables in the set-up cache ----------------------------------------------------


def test_a_second_run_reads_the_routing_tables_and_routes_nothing(tmp_path, monkeypatch):
    from zfabric.sim.fast.tables import FabricTables

    monkeypatch.setenv("ZFABRIC_SETUP_DIR", str(tmp_path))
    spec = {"name": "t", "topology": {"kind": "torus", "k": [4, 4]}, "routing": "duato"}

    def run():
        plan = compile_plan(load_spec(spec))  # a new plan object: new tables, read from disk
        traffic = Traffic(TrafficConfig(rate=0.4), 16, 2)
        return simulate(plan, traffic, warmup=200, cycles=600, engine="fast").to_dict()

    first = run()
    assert [p.suffix for p in tmp_path.glob("tables-*")] == [".npz"]

    def decide(self, iv, head_id):
        raise AssertionError("a decision was made again")

    monkeypatch.setattr(FabricTables, "_decide", decide)
    assert run() == first


def test_dor_decisions_stay_few_whatever_pairs_come(tmp_path, monkeypatch):
    """A decision names no switch and DOR keeps its head, so on a torus 8x8 (two dateline
    classes of one VC, balanced) every decision is one hop: a ring port (2 dimensions x 2
    directions) with class 0, class 1 or both (entering a ring where either may be taken), or
    port 0, the local one, with its ejection VCs. At most 4 x 3 + 1 = 13 decisions, however
    many source-destination pairs come, also to tables read back from the set-up cache; the
    raw states keep growing with the pairs (the cache keeps those a look-up found)."""
    monkeypatch.setenv("ZFABRIC_SETUP_DIR", str(tmp_path))  # empty tables
    spec = {"name": "t", "topology": {"kind": "torus", "k": [8, 8]}}

    def offer_all(sources):
        """A new plan object (its tables read from the cache), every pair from ``sources``."""
        model = FastModel(compile_plan(load_spec(spec)), paths=False)
        read = model._tables._counts["hash"]
        for src in sources:
            for dst in range(64):
                if dst != src:
                    model.offer(src, dst)
        while model.delivered_count < len(sources) * 63 and model.cycle < 20_000:
            model.run(500)
        assert model.delivered_count == len(sources) * 63
        model.finish()  # saves the tables
        shared = model._tables
        found = int(np.count_nonzero((shared.hash_keys >= 0) & (shared.hash_used != 0)))
        return read, shared._counts["dec"], shared._counts["hash"], found

    _, decisions, states, found = offer_all(range(0, 64, 2))
    assert decisions <= 13
    read, more_decisions, more_states, _ = offer_all(range(1, 64, 2))
    assert 0 < read == found <= states
    assert more_decisions == decisions
    assert more_states > states


def test_offering_a_new_pair_decides_no_state(tmp_path, monkeypatch):
    """A new pair's injection choices are found as its first packet is offered, its states
    decided only as the cycle misses them: a packet injects through one choice, and deciding
    states below the others ahead of it cost more than the misses (empty tables)."""
    monkeypatch.setenv("ZFABRIC_SETUP_DIR", str(tmp_path))
    model = FastModel(compile_plan(load_spec(spec("znode-sliced", {"stages": 2}))))
    shared = model._tables
    decided = []
    decide = tables.FabricTables._decide
    monkeypatch.setattr(
        tables.FabricTables, "_decide", lambda self, *key: decided.append(key) or decide(self, *key)
    )
    model.offer(0, 5)
    assert shared._counts["pair"] == 1 and not decided
    model.run(100)
    assert model.delivered_count == 1 and decided


def test_a_run_that_only_adds_pairs_saves_them(tmp_path, monkeypatch):
    """A pair dropped by a compaction keeps its raw states (found, so saved), and offered again
    brings none: a run that only adds it (and compacts the pairs) saves the tables, and the
    next run of the plan finds the pair there, deciding nothing. Nothing decided ahead (each
    state is a miss, found when the cycle runs again) and a budget of one pair."""
    monkeypatch.setenv("ZFABRIC_SETUP_DIR", str(tmp_path))  # empty tables
    monkeypatch.setattr(tables, "AHEAD", 0)
    monkeypatch.setattr(tables, "PAIRS_PER_ENDPOINT", 0)
    monkeypatch.setattr(tables, "MIN_PAIRS", 1)
    torus = {"name": "t", "topology": {"kind": "torus", "k": [3, 3]}}

    def run(*pairs):
        """A new plan object (its tables read from the cache), a packet of each pair in
        turn, each delivered before the next is offered; the tables as they were read."""
        model = FastModel(compile_plan(load_spec(torus)))
        shared = model._tables
        read = shared._counts["pair"], shared._counts["hash"], shared.inserted
        for src, dst in pairs:
            model.offer(src, dst)
            model.run(100)
        assert model.delivered_count == len(pairs)
        model.finish()  # saves the tables
        return read, shared

    _, first = run((0, 4), (0, 8))  # (0, 4) compacted away as (0, 8) comes
    assert first.compacted == 1
    (pairs, states, _), second = run((0, 4))
    assert (pairs, states) == (1, first._counts["hash"])  # read: the pair (0, 8), the states
    assert second.inserted == states  # no state inserted: only a pair added (and compacted)
    assert second.compacted == 1

    def decide(*_):
        raise AssertionError("decided again")

    monkeypatch.setattr(tables.FabricTables, "_add_pair", decide)
    monkeypatch.setattr(tables.FabricTables, "_decide", decide)
    (pairs, _, _), third = run((0, 4))
    assert pairs == 1
    assert third.inserted == states


def test_the_tables_version_moves_only_when_an_array_the_kernel_holds_is_replaced():
    # a model re-binds its compiled state when the version moves; the pairs' keys and widest
    # heads are read from the tables, never held
    shared = tables.FabricTables(compile_plan(load_spec(spec("torus-dor", {"stages": 1}))))
    for name in ("pair_keys", "widest", "pair", "inj", "dec", "cand"):
        version, held = shared.version, shared.routing_arrays()
        shared._grow(name, len(getattr(shared, name)) + 1)
        replaced = [n for n, array in shared.routing_arrays().items() if array is not held[n]]
        assert replaced == ([name] if name in held else [])
        assert shared.version == version + len(replaced)


@pytest.mark.parametrize("family", ["znode-sliced", "torus-duato"])
def test_lockstep_when_every_state_is_decided_on_a_miss(family, monkeypatch, tmp_path):
    # nothing decided ahead: each state's first head stops the kernel and is decided mid-run;
    # an empty set-up cache, so no tables another test of this plan saved are read
    monkeypatch.setenv("ZFABRIC_SETUP_DIR", str(tmp_path))
    monkeypatch.setattr(tables, "AHEAD", 0)
    misses = []
    fill = tables.FabricTables.fill

    def counted(self, states):
        misses.extend(states)
        fill(self, states)

    monkeypatch.setattr(tables.FabricTables, "fill", counted)
    shown = lockstep(spec(family, {"stages": 2}), 0.45)
    assert shown["delivered"] > 10
    assert misses


# ---- the routing tables' budgets ---------------------------------------------------------------


@pytest.fixture
def tiny_budgets(monkeypatch, tmp_path):
    """Budgets of 4 pairs and the fewest raw states the tables allow (one per input VC, nothing
    decided ahead), whatever the fabric: the hash table drops its states and the pairs are compacted
    many times in a short run (an empty set-up cache, so no saved tables are read)."""
    monkeypatch.setenv("ZFABRIC_SETUP_DIR", str(tmp_path))
    monkeypatch.setattr(tables, "STATES_PER_IV", 0)
    monkeypatch.setattr(tables, "MIN_STATES", 0)
    monkeypatch.setattr(tables, "AHEAD", 0)
    monkeypatch.setattr(tables, "PAIRS_PER_ENDPOINT", 0)
    monkeypatch.setattr(tables, "MIN_PAIRS", 4)


#: fabrics with many more raw states than input VCs (heads x input VCs), at loads where
#: packets queue at their sources while pairs are compacted
BUDGET_CASES = {
    "ring-dor": ({"kind": "torus", "k": [12]}, "dor", {"stages": 1}, 0.45),
    "torus-dor": ({"kind": "torus", "k": [6, 6]}, "dor", {"stages": 1}, 0.45),
    "znode-sliced": (FAMILIES["znode-sliced"][0], "sliced", {"stages": 2, "head_bits": 3}, 0.9),
    "tree-sliced": ({"kind": "kary_ntree", "k": 4, "n": 2}, "sliced", {"stages": 5}, 0.45),
}


@pytest.mark.parametrize("case", BUDGET_CASES.values(), ids=BUDGET_CASES)
def test_lockstep_with_the_tables_pruned_and_compacted_mid_run(tiny_budgets, case):
    topology, routing, router, rate = case
    spec = {"name": "t", "topology": topology, "routing": routing, "router": router}
    plan = compile_plan(load_spec(spec))
    assert lockstep(plan, rate)["delivered"] > 100
    shared = tables.tables_for(plan)
    assert shared.pruned >= 3
    assert shared.compacted >= 10
    assert shared._counts["hash"] <= shared.state_budget
    assert shared._counts["pair"] <= shared.pair_budget


def test_packets_offered_as_rows_survive_compactions(tiny_budgets):
    """Rows offered ten cycles at a time and run fifty at a time (so a compaction renumbers
    packets in the kernel's queues and in offers not yet handed to it) come back as the
    reference delivers the same packets, field by field and in its order."""
    plan = compile_plan(load_spec({"name": "t", "topology": {"kind": "torus", "k": [6, 6]}}))
    rows = Traffic(TrafficConfig(rate=0.3), 36, 5).packets_between(0, 400)
    reference = FabricModel(plan)
    batches = []
    fast = FastModel(plan, paths=False, on_deliver_rows=batches.append)
    for created, src, dst, length in rows.tolist():
        reference.offer(src, dst, length, created=created)
    for start in range(0, 400, 10):
        fast.offer_rows(rows[(start <= rows[:, 0]) & (rows[:, 0] < start + 10)])
        if start % 50 == 40:
            fast.run_until(start + 10)
    reference.run(400)
    fields = ("id", "src", "dst", "length", "created", "injected", "delivered", "hops")
    expected = [[getattr(p, name) for name in fields] for p in reference.delivered]
    assert np.concatenate(batches).tolist() == expected
    assert len(expected) > 500
    assert tables.tables_for(plan).compacted >= 10


def _keep_one_slot_unrenumbered(renumber):
    def planted(self, new_of_old):
        slots = self._queued()[-1:]
        stale = self._arrays["pk"][slots, kernel.PK_PAIR].copy()
        renumber(self, new_of_old)
        self._arrays["pk"][slots, kernel.PK_PAIR] = stale

    return planted


def _forget_unflushed_offers(queued_pairs):
    def planted(self):
        offers, self._offers = self._offers, []
        try:
            return queued_pairs(self)
        finally:
            self._offers = offers

    return planted


PAIR_PLANTS = {
    "a-queued-packet-not-renumbered": ("renumber_pairs", _keep_one_slot_unrenumbered),
    "offers-not-handed-to-the-kernel-not-kept": ("queued_pairs", _forget_unflushed_offers),
}


@pytest.mark.parametrize("plant", PAIR_PLANTS.values(), ids=PAIR_PLANTS)
def test_a_planted_compaction_bug_fails_the_lockstep(tiny_budgets, monkeypatch, plant):
    """A compaction that leaves one queued packet's old pair number, or that drops the pairs of
    packets offered in this cycle and not yet handed to the kernel: the lock-step catches
    either (a packet that starts with another pair's choices, or none)."""
    name, make = plant
    monkeypatch.setattr(FastModel, name, make(getattr(FastModel, name)))
    with pytest.raises((AssertionError, InvariantError)):
        lockstep(spec("torus-dor", {"stages": 1}), 0.45)


# ---- switching modes ---------------------------------------------------------------------------


@pytest.mark.parametrize("switching", ["cut_through", "store_and_forward"])
def test_lockstep_under_each_switching_mode(switching):
    """Cut-through and store-and-forward (docs/microarchitecture.md, Switching modes) near the
    knee with packets of 1 to 6 flits in 6-flit buffers, ejection stalls keeping local outputs
    short of a whole packet's credits."""
    fields = {"buffer_depth": 6, "traffic": {"packet_length": [1, 6]}}
    torus = spec("torus-dor", {"switching": switching, "stages": 3}, **fields)
    shown = lockstep(torus, 0.45, packet_length=(1, 6), stall=0.3)
    assert shown["delivered"] > 50


#: the cut-through compare one credit short: a head may take an output VC with L - 1 credits
SHORT_BY_ONE = ("_room", "return credit >= whole and", "return credit >= whole - 1 and")
#: store-and-forward's wait for the whole packet at the request left off
NO_WAIT = ("_requests", "need = pks[slot, PK_COUNT] if stores else pks[slot, PK_HF]",
           "need = pks[slot, PK_HF]")  # fmt: skip


@pytest.mark.parametrize(
    "switching, plant",
    [
        ("cut_through", None),
        ("store_and_forward", None),
        ("cut_through", SHORT_BY_ONE),
        ("store_and_forward", NO_WAIT),
    ],
    ids=["cut-through-as-is", "store-and-forward-as-is", "credits-short-by-one", "no-wait"],
)
def test_a_planted_switching_bug_fails_the_lockstep(monkeypatch, switching, plant):
    """The kernel as plain Python, as it is and with the mode's condition weakened: only the
    planted copies are caught."""
    monkeypatch.setattr(FastModel, "_kernel_run", staticmethod(python_kernel(plant)))
    fields = {"buffer_depth": 4, "packet_length": 4}
    torus = spec("torus-dor", {"switching": switching}, **fields)
    with np.errstate(over="ignore"):  # the hash's 64-bit products wrap, as compiled
        if plant:
            with pytest.raises(AssertionError, match=r"^(cycle|packet) \d+"):
                lockstep(torus, 0.45, cycles=200)
        else:
            assert lockstep(torus, 0.45, cycles=200)["delivered"] > 10


# ---- bubble flow control -----------------------------------------------------------------------

#: the 1-VC torus whose + rings are cyclic without the bubble (docs/microarchitecture.md,
#: Bubble flow control), 8-flit buffers, 4-flit packets
BUBBLE = {
    "name": "torus-bubble",
    "topology": {"kind": "torus", "k": [4, 4]},
    "routing": {"name": "dor", "flow_control": "bubble", "tie": "plus"},
    "buffer_depth": 8,
    "packet_length": 4,
}
#: the entering rule weakened: a head entering a ring asks L credits, as a continuing one
ENTERING_AS_CONTINUING = (
    "_needed",
    "return 2 * whole if ring and ring != st.gp[gp, GP_RING] else whole",
    "return whole",
)


@pytest.mark.parametrize("stages, rate", [(1, 0.35), (3, 0.9), (4, 0.45)])
def test_lockstep_under_bubble_flow_control(stages, rate):
    """Near the knee (about 0.38) and past it: heads entering a ring wait for 2L credits in
    both engines alike, and neither deadlocks."""
    torus = {**BUBBLE, "router": {"switching": "cut_through", "stages": stages}}
    assert lockstep(torus, rate, cycles=400)["delivered"] > 100


@pytest.mark.parametrize("stages, rate", [(1, 0.05), (1, 0.2), (3, 0.9), (4, 0.35)])
def test_lockstep_under_bubble_flow_control_on_an_ndt(stages, rate):
    """The nDT 2x4x2 (knee about 0.225), whose split dimension's rings take the internal
    link's ring VC: low, near and past the knee, both engines alike, neither deadlocks."""
    ndt = {**BUBBLE_NDT, "router": {"switching": "cut_through", "stages": stages}}
    assert lockstep(ndt, rate, cycles=400)["delivered"] > 50


def test_a_planted_ndt_ring_bug_fails_the_lockstep(monkeypatch):
    """The fast engine's tables with the internal link's input on no ring: a head that came
    round the split ring on the internal link's ring VC then enters the ring again, asking 2L
    where the reference asks L, and the lock-step sees it."""

    def no_internal_ring(view, switch, port):
        if view.switches[switch].ports[port].role == "internal":
            return None
        return input_ring(view, switch, port)

    monkeypatch.setattr(tables, "input_ring", no_internal_ring)
    ndt = {**BUBBLE_NDT, "router": {"switching": "cut_through"}}
    with pytest.raises(AssertionError, match=r"^(cycle|packet) \d+"):
        lockstep(ndt, 0.2, cycles=400)


@pytest.mark.parametrize("plant", [None, ENTERING_AS_CONTINUING], ids=["as-is", "entering-as-L"])
def test_a_planted_bubble_bug_fails_the_lockstep(monkeypatch, plant):
    """The kernel as plain Python, as it is and with the entering rule weakened to L: only the
    planted copy is caught."""
    monkeypatch.setattr(FastModel, "_kernel_run", staticmethod(python_kernel(plant)))
    torus = {**BUBBLE, "router": {"switching": "cut_through"}}
    with np.errstate(over="ignore"):  # the hash's 64-bit products wrap, as compiled
        if plant:
            with pytest.raises(AssertionError, match=r"^(cycle|packet) \d+"):
                lockstep(torus, 0.45, cycles=300)
        else:
            assert lockstep(torus, 0.45, cycles=300)["delivered"] > 10


@given(
    values=st.lists(st.integers(-(2**40), 2**40), max_size=300),
    before=st.integers(0, 5),
    after=st.integers(0, 5),
)
@settings(max_examples=200, deadline=None)
def test_the_kernels_sort_sorts_its_slice_and_nothing_else(values, before, after):
    # the work lists' heapsort (numpy's sort needs the runtime the kernel is compiled without)
    array = np.array([7] * before + values + [-7] * after, np.int64)
    kernel._sort(array, before, before + len(values))
    assert array.tolist() == [7] * before + sorted(values) + [-7] * after


@given(
    first=st.lists(st.integers(-(2**40), 2**40), max_size=50),
    second=st.lists(st.integers(-(2**40), 2**40), max_size=50),
    after=st.integers(0, 5),
)
@settings(max_examples=200, deadline=None)
def test_the_kernels_merge_merges_two_runs_in_place(first, second, after):
    # the attachments' list: the run the last cycle left in order, then those listed since
    runs = sorted(first) + sorted(second)
    array = np.array(runs + [-7] * after, np.int64)
    merged = np.full(len(runs), 99, np.int64)
    kernel._merge(array, len(first), len(runs), merged)
    assert array.tolist() == sorted(runs) + [-7] * after
    if not first or not second or sorted(runs) == runs:  # nothing to merge: nothing copied
        assert merged.tolist() == [99] * len(runs)
