"""Proven means it never deadlocks: random specs of every family and routing, under random
router settings, run at offered load 1.0, must never freeze (whole or in a knot) and must
drain once injection stops, whenever ``check`` proves them.

The default run draws a slice and runs it in the reference model; ``-m matrix`` draws many
more specs, runs each longer, and runs them in the fast engine (the reference where the fast
engine refuses a setting). A failure prints the spec, so ``zfabric simulate`` can replay it.
"""

from __future__ import annotations

import pytest
from bubble_specs import BUBBLE_NDT
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zfabric.sim.measure import make_model
from zfabric.sim.model import DeadlockWatch
from zfabric.sim.traffic import Traffic, TrafficConfig

from zfabric import SpecError, analyse_routing, compile_plan, load_spec

#: cycles at offered 1.0; then the drain, which fails on a deadlock or on this many cycles
#: without a delivery while packets remain (not on its length: a slow fabric at offered 1.0
#: leaves queues of hundreds of packets per endpoint, drained at its own pace)
SHORT, LONG, STALL = 1000, 4000, 20_000


def _sizes(low: int, high: int, most: int):
    return st.lists(st.integers(low, high), min_size=1, max_size=most)


@st.composite
def topologies(draw) -> tuple[dict, dict]:
    """A small fabric of one family and one of its routings."""
    family = draw(st.sampled_from(["torus", "hyperx", "hyperz", "ndt", "znode", "tree", "transit"]))
    if family == "torus":
        topology = {
            "kind": "torus",
            "k": draw(_sizes(2, 4, 2)),
            "wrap": draw(st.booleans()),
            "vcs": draw(st.integers(1, 2)),
        }
        routing = {"name": draw(st.sampled_from(["dor", "duato"]))}
        if routing["name"] == "dor" and draw(st.booleans()):  # rings of one VC a link
            routing["flow_control"] = "bubble"
            topology.update(wrap=True, vcs=1)
        return topology, routing
    if family == "hyperx":
        topology = {
            "kind": "hyperx",
            "s": draw(st.lists(st.integers(2, 3), min_size=1, max_size=3)),
            "terminals": draw(st.integers(1, 2)),
        }
        return topology, {"name": draw(st.sampled_from(["aliod", "cliod", "odim", "deter"]))}
    if family == "hyperz":
        topology = {
            "kind": "hyperz",
            "s": draw(st.lists(st.integers(2, 3), min_size=1, max_size=2)),
            "z": [2, 2],
            "R": [1, draw(st.integers(1, 2))],
        }
        return topology, {"name": draw(st.sampled_from(["aliod", "cliod", "odim", "deter"]))}
    if family == "ndt":
        topology = {"kind": "ndt", "k": draw(st.lists(st.integers(2, 3), min_size=2, max_size=3))}
        routing = {"name": draw(st.sampled_from(["dort", "dort_adaptive", "tsdor"]))}
        if routing["name"] == "dort" and draw(st.booleans()):
            routing["flow_control"] = "bubble"
        return topology, routing
    if family == "transit":
        form = draw(
            st.sampled_from(
                [
                    {"form": "full"},
                    {"form": "bidelta", "stacks": [2]},
                    {"form": "bidelta", "stacks": [1, 2]},
                ]
            )
        )
        return {"kind": "transit", **form}, {"name": "transit"}
    if family == "tree":
        topology = {"kind": "kary_ntree", "k": draw(st.integers(2, 3)), "n": 2}
        return topology, {"name": draw(st.sampled_from(["sliced", "updown"]))}
    levels = draw(st.integers(1, 2))
    topology = {
        "kind": "znode",
        "z": draw(st.lists(st.integers(2, 3), min_size=levels, max_size=levels)),
        "R": [1] + [draw(st.integers(1, 3)) for _ in range(levels - 1)],
        "znodes": draw(st.integers(1, 2)),
        "vcs": draw(st.integers(1, 2)),
    }
    routing = draw(st.sampled_from(["sliced", "updown", "flat", "source_destination"]))
    return topology, {"name": routing}


@st.composite
def specs(draw) -> dict:
    topology, routing = draw(topologies())
    stages = draw(st.integers(1, 5))
    router = {
        "stages": stages,
        "allocator": draw(st.sampled_from(["separable", "separable-2"]))
        if stages <= 3
        else "separable",
        "selection": draw(st.sampled_from(["round-robin", "first-free", "occupancy"])),
        "injection_vcs": draw(st.sampled_from(["auto", 1, 2, 3])),
        "ejection_vcs": draw(st.sampled_from(["auto", 1, 2])),
    }
    # the bubble needs cut-through; whole-packet switching buffers a packet whole (the
    # bubble: two), so the buffer is drawn from there up
    bubble = routing.get("flow_control") == "bubble"
    switching = (
        "cut_through"
        if bubble
        else draw(st.sampled_from(["wormhole", "cut_through", "store_and_forward"]))
    )
    if switching != "wormhole":
        router["switching"] = switching
    if draw(st.booleans()):
        router["head_bits"] = draw(st.integers(2, 8))
    packet_length = draw(st.sampled_from([1, 2, 4, 7]))
    whole = 0 if switching == "wormhole" else (2 if bubble else 1) * packet_length
    return {
        "name": "fuzz",
        "topology": topology,
        "routing": routing,
        "router": router,
        "buffer_depth": draw(st.integers(max(2, whole), max(6, whole + 2))),
        "packet_length": packet_length,
    }


def proven_plan(spec: dict):
    """The plan of ``spec`` if it loads and ``check`` proves it (and is small enough to run
    long), else None: nothing is promised."""
    try:
        plan = compile_plan(load_spec(spec))
    except SpecError:
        return None
    if len(plan.endpoints) > 64 or analyse_routing(plan).cycle is not None:
        return None
    return plan


def run_to_drained(plan, cycles: int, seed: int, rate: float = 1.0, engine: str = "reference"):
    """Offered ``rate`` for ``cycles``, then no new packet until every one is delivered, in
    ``engine`` (the reference steps and is watched every cycle; the fast engine, which the
    lock-step tests hold to the reference cycle for cycle, runs to each cycle the watch looks
    at and stops early where the fabric is stuck)."""
    model, engine = make_model(plan, engine, check_invariants=False)
    watch = DeadlockWatch(model)
    step = watch.every if engine == "fast" else 1
    # mixed lengths where the switch allows them: whole-packet switching and the bubble are
    # built for packets of the spec's length at most (the bubble: exactly)
    mixed = plan.packet_length < 4 and plan.router.longest_packet is None
    lengths = (1, plan.packet_length + 2) if mixed else plan.packet_length
    traffic = Traffic(TrafficConfig(rate=rate, packet_length=lengths), len(plan.endpoints), seed)
    offered = 0
    while model.cycle < cycles:
        until = min(cycles, (model.cycle // step + 1) * step)
        for at in range(model.cycle, until):
            for src, dst, length in traffic.packets_at(at):
                model.offer(src, dst, length, created=at)
                offered += 1
        model.run_until(until) if engine == "fast" else model.step()
        deadlock = watch()
        assert deadlock is None, f"deadlock at cycle {deadlock.at}: {deadlock.cycle}"
    last = model.cycle  # the cycle of the last delivery seen
    while model.delivered_count < offered:
        delivered = model.delivered_count
        model.run_until((model.cycle // step + 1) * step) if engine == "fast" else model.step()
        deadlock = watch()
        assert deadlock is None, f"deadlock while draining at {deadlock.at}: {deadlock.cycle}"
        last = model.cycle if model.delivered_count > delivered else last
        assert model.cycle - last < STALL, (
            f"{offered - model.delivered_count} packets undelivered and none delivered for"
            f" {STALL} cycles ({engine} engine)"
        )
    model.check_credits()


def check_promise(
    plan, spec: dict, cycles: int, seed: int, rate: float = 1.0, engine: str = "reference"
) -> None:
    try:
        run_to_drained(plan, cycles, seed, rate, engine)
    except AssertionError as error:
        raise AssertionError(f"proven spec {spec!r} (traffic seed {seed}): {error}") from None


def check_drawn(spec: dict, cycles: int, seed: int, engine: str = "reference") -> None:
    plan = proven_plan(spec)
    assume(plan is not None)
    check_promise(plan, spec, cycles, seed, engine=engine)


_SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.filter_too_much]}


@settings(max_examples=8, **_SETTINGS)
@given(spec=specs(), seed=st.integers(1, 1000))
def test_proven_fabrics_never_deadlock(spec, seed):
    check_drawn(spec, SHORT, seed)


@pytest.mark.matrix
@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(spec=specs(), seed=st.integers(1, 1000))
def test_proven_fabrics_never_deadlock_matrix(spec, seed):
    check_drawn(spec, LONG, seed, engine="fast")


#: the fabric that froze under ``aliod`` and ``cliod`` with two-cycle allocations: a ring of
#: adaptive side-link VCs, each taken while the next buffer still held a blocked packet's tail
#: (each case below froze before adaptive VCs were taken only when empty)
HYPERX = {"kind": "hyperx", "s": [2, 2, 2], "terminals": 2}


@pytest.mark.parametrize(
    "routing, stages, rate, seed",
    [("aliod", 5, 0.7, 1), ("aliod", 4, 1.0, 3), ("cliod", 5, 1.0, 2)],
)
def test_adaptive_hyperx_drains_past_saturation(routing, stages, rate, seed):
    spec = {
        "name": "hx",
        "topology": HYPERX,
        "routing": {"name": routing},
        "router": {"stages": stages},
        "buffer_depth": 6,
    }
    plan = proven_plan(spec)
    assert plan is not None, "check proves this HyperX deadlock-free"
    check_promise(plan, spec, 3000, seed, rate)


@pytest.mark.parametrize(
    "stages, seed",
    [
        (1, 4),
        pytest.param(3, 5, marks=pytest.mark.slow),
        pytest.param(5, 6, marks=pytest.mark.slow),
    ],
)
def test_the_bubble_ndt_drains_past_saturation(stages, seed):
    """The nDT 2x4x2 under bubble flow control (tests/bubble_specs.py), whose split ring's
    proof needs the bubble, at offered 1.0 at one-, three- and five-stage switches."""
    spec = {**BUBBLE_NDT, "router": {"switching": "cut_through", "stages": stages}}
    plan = proven_plan(spec)
    assert plan is not None, "check proves the bubble nDT deadlock-free"
    check_promise(plan, spec, LONG, seed)
