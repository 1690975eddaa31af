"""Chapter 6's router cost model (sim/wormhole_cost.py) against Table 6.2 and the chapter's
numbers (reference/wormhole-models.md §2.4, §4.3)."""

from __future__ import annotations

import pytest
from zfabric.sim.wormhole_cost import (
    adaptive_delays,
    channel_cycle,
    dor_delays,
    equal_buffer_vcs,
    network_timing,
    routing_delay,
    switching_delay,
)

# Table 6.2 (L1867-1875): topology, N -> V, t_r, t_c under bisection, t_c under pin-out
TABLE_6_2 = {
    ("2D torus", 64): (6, 1.8, 1, 1),
    ("2D torus", 256): (8, 1.9, 1, 1),
    ("2D torus", 1024): (10, 2, 1, 1),
    ("3D torus", 64): (4, 1.7, 4, 3),
    ("3D torus", 256): (5, 1.8, 6.3, 3.8),
    ("3D torus", 1024): (7, 2, 10.1, 4.8),
    ("hypercube", 64): (2, 1.6, 8, 6),
    ("hypercube", 256): (2, 1.7, 32, 16),
    ("hypercube", 1024): (2, 1.8, 128, 40),
}
DIMENSIONS = {"2D torus": 2, "3D torus": 3}


@pytest.mark.parametrize("topology, nodes", list(TABLE_6_2), ids=lambda x: str(x))
def test_table_6_2(topology, nodes):
    vcs, t_r, bisection, pinout = TABLE_6_2[topology, nodes]
    n = DIMENSIONS.get(topology, nodes.bit_length() - 1)
    assert equal_buffer_vcs(topology, nodes) == vcs  # (6.9)-(6.11)
    assert adaptive_delays(topology, n, vcs)[0] == pytest.approx(t_r, abs=0.05)  # (6.13)-(6.15)
    assert channel_cycle(topology, nodes, "bisection") == pytest.approx(bisection, abs=0.05)
    assert channel_cycle(topology, nodes, "pin-out") == pytest.approx(pinout, abs=0.05)


def test_delays_by_hand():
    # (6.1) R = 8: (4.7 + 1.2 x 3) / 4.9 = 8.3/4.9; (6.2) P = 8: (3.4 + 0.6 x 3) / 4.9 = 5.2/4.9
    assert routing_delay(8) == pytest.approx(8.3 / 4.9)
    assert switching_delay(8) == pytest.approx(5.2 / 4.9)
    assert dor_delays(7) == (routing_delay(8), switching_delay(8))  # the cascaded router, V+1


def test_switching_delay_ratios_of_l2004():
    # "with 7 virtual channels ... higher by 33% ... only 10% for the 2D torus": the adaptive
    # crossbar of n V + 1 ports (57 in the 8-D hypercube, 15 in the 2D torus) against V + 1 = 8
    dor = dor_delays(7)[1]
    assert round(100 * (adaptive_delays("hypercube", 8, 7)[1] / dor - 1)) == 33
    assert round(100 * (adaptive_delays("2D torus", 2, 7)[1] / dor - 1)) == 10


def test_network_timing():
    # t_c = 1 and no router delay is the thesis's unit-cycle router: M + h, M + A, M + h
    unit = network_timing(1.0, 0.0, 0.0)
    assert (unit.flit, unit.hop, unit.holding_per_channel, unit.extra) == (1, 1, 1, 0)
    timing = network_timing(4.0, 1.7, 1.2)
    assert timing.zero_load(48, 3) == pytest.approx(48 * 4 + 3 * (1.7 + 1.2 + 4))
    assert timing.holding_per_channel == 4.0
    assert network_timing(4.0, 1.7, 1.2, header_holds=True).holding_per_channel == 6.9
    with pytest.raises(ValueError):
        channel_cycle("4D torus", 256, "bisection")
