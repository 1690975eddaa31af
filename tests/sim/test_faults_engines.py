"""Degraded fabrics in the fast engine and the reference model, cycle for cycle
(tests/sim/lockstep.py): up*/down* tables on a torus with a dead link, and Transit's own routing
with a dead chip's dead ends masked."""

from __future__ import annotations

import pytest
from lockstep import lockstep

DEGRADED = {
    "torus-dead-link": {
        "topology": {"kind": "torus", "k": [4, 4]},
        "faults": {"links": [{"between": ["sw0_0", "sw1_0"]}]},
    },
    "transit-dead-chips": {
        "topology": {"kind": "transit", "form": "full"},
        "faults": {"chips": ["t1u0l2n0c2", "t1u0u5"]},
    },
}


@pytest.mark.parametrize("rate", [0.1, 0.9])
@pytest.mark.parametrize("name", list(DEGRADED))
def test_degraded_fabrics_run_alike_in_both_engines(name, rate):
    shown = lockstep({"name": name, **DEGRADED[name]}, rate, packet_length=(1, 6))
    assert shown["delivered"] > 20
