"""``selection: random`` draws each of a head's usable output ports about equally
(docs/microarchitecture.md, step 2): a dilated Transit direction's two wires split about
half and half, where a round-robin pointer alternates them exactly."""

from __future__ import annotations

from collections import Counter

import pytest
from zfabric.sim.fast import FastModel
from zfabric.sim.model import FabricModel

from zfabric import compile_plan, load_spec


def first_hops(selection: str, engine, packets: int = 400) -> Counter:
    """The first switch's output port of ``packets`` lone one-flit packets from endpoint 0 to
    63 of a bidelta 64, sent one after another through an empty fabric."""
    spec = {
        "name": "b",
        "topology": {"kind": "transit", "form": "bidelta", "stacks": [3]},
        "router": {"selection": selection},
    }
    plan = compile_plan(load_spec(spec))
    model = FastModel(plan, paths=True) if engine is FastModel else FabricModel(plan)
    taken = Counter()
    for _ in range(packets):
        packet = model.offer(0, 63, 1)
        while packet.delivered is None:
            model.step()
        taken[packet.path[0][1]] += 1
    return taken


@pytest.mark.parametrize("engine", [FabricModel, FastModel], ids=["reference", "fast"])
def test_a_dilated_direction_splits_about_evenly(engine):
    """Two usable wires, 400 heads: each drawn 200 times in expectation; 150..250 is over 5
    standard deviations (10) either side. Round-robin gives exactly 200 each."""
    random = first_hops("random", engine)
    assert len(random) == 2 and all(150 <= n <= 250 for n in random.values()), random
    assert sorted(first_hops("round-robin", engine).values()) == [200, 200]
