"""The deadlock and delivery proof on randomly generated specs (DESIGN.md, verification layer 2).

Each generated fabric must compile, deliver every packet to the right endpoint within a bound,
and have an acyclic channel dependency graph; a spec the loader refuses must be refused with a
SpecError naming a key, never a crash.
"""

from __future__ import annotations

import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from zfabric import SpecError, analyse_routing, compile_plan, load_spec


def proven(topology: dict, routing=None) -> None:
    spec = {"name": "random", "topology": topology}
    if routing:
        spec["routing"] = routing
    try:
        loaded = load_spec(spec)
    except SpecError as error:
        assert error.path.startswith("topology"), error
        assume(False)  # refused cleanly; hypothesis warns if most draws end here
    plan = compile_plan(loaded)
    analysis = analyse_routing(plan)
    assert analysis.cycle is None, analysis.cycle
    n = len(plan.endpoints)
    assert sum(analysis.min_hops.values()) == analysis.pairs == n * (n - 1)  # all pairs routed


sizes = st.lists(st.integers(2, 5), min_size=1, max_size=3)


@settings(max_examples=25, deadline=None)
@given(k=sizes, wrap=st.booleans(), vcs=st.integers(1, 3))
def test_random_tori_and_meshes(k, wrap, vcs):
    proven({"kind": "torus", "k": k, "wrap": wrap, "vcs": vcs})


@settings(max_examples=20, deadline=None)
@given(k=st.lists(st.integers(2, 4), min_size=2, max_size=4), external_vcs=st.sampled_from([2, 4]))
def test_random_twin_tori_with_cbest(k, external_vcs):
    proven({"kind": "ndt", "k": k}, {"name": "dort", "external_vcs": external_vcs})


@st.composite
def znode_specs(draw):
    n = draw(st.integers(1, 3))
    z = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    R = [draw(st.sampled_from([1, 2, 3, 4])) for _ in range(n)]
    psi = [1] + [draw(st.integers(1, 2)) for _ in range(n - 1)]
    znodes = draw(st.integers(1, 3))
    spec = {
        "kind": "znode",
        "z": z,
        "R": R,
        "psi": psi,
        "pattern": draw(st.sampled_from(["butterfly", "omega"])),
        "layers": draw(st.integers(1, 2)),
        "znodes": znodes,
        "side": [draw(st.integers(0, 1)) for _ in range(n - 1)] + [1],
        "vcs": draw(st.integers(1, 2)),
    }
    return spec


@settings(max_examples=40, deadline=None)
@given(
    spec=znode_specs(),
    routing=st.sampled_from(["sliced", "updown", "flat", "source_destination"]),
)
def test_random_znodes(spec, routing):
    assume(spec["znodes"] * math.prod(spec["z"]) >= 2)
    proven(spec, routing)
