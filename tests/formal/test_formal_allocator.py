"""Allocator: single-cycle grant properties proven for any state, ownership proven with the
assignment invariants (and bounded without them), and planted bugs caught
(hdl/formal/allocator.py states the properties)."""

from __future__ import annotations

import pytest
from amaranth.hdl import Const
from zfabric.hdl.formal.allocator import AllocatorHarness
from zfabric.hdl.formal.state import opened
from zfabric.hdl.router.allocator import Allocator


class PopWithoutGrant(Allocator):
    """Planted bug: input port 0 pops what it picked, granted or not."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.pop[0].eq(self.pick[0])
        return m


class WrongVC(Allocator):
    """Planted bug: output port 0 reports VC 0 whichever VC it granted."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.vc[0].eq(0)
        return m


class SecondWithoutCredit(Allocator):
    """Planted bug (``split``): input VC 0 of port 0 always believes its output VC has two
    credits, so its staged pick is picked again for a second flit without a second credit."""

    def elaborate(self, platform):
        fragment, signals = opened(super().elaborate(platform), platform)
        fragment.add_statements("sync", signals["held_two_0_0"].eq(1))  # the last one wins
        return fragment


class NoRecheck(Allocator):
    """Planted bug (``vc_split``): the VC output stage grants a staged head its output VC
    without checking that no other head took it the cycle before."""

    def _two_cycles(self, m, requesters, stageds, prefix, *, switch, still=None):
        return super()._two_cycles(m, requesters, stageds, prefix, switch=switch)


#: switch allocation in two cycles (``stages: 4``), on 4-flit buffers and credits
SPLIT = {"pipelined": True, "split": True, "buffer_depth": 4}
#: occupancy selection with two levels (the upper VC of every port first, as duato's adaptive
#: VCs before its escape VC), the low-occupancy flags free
OCCUPANCY = {"selection": "occupancy", "levels": (1, 0) * 5}
#: and VC allocation in two cycles (``stages: 5``)
VC_SPLIT = {**SPLIT, "vc_split": True}
#: the allocator settings of each ``stages`` value
STAGES = {1: {}, 3: {"pipelined": True}, 4: SPLIT, 5: VC_SPLIT}
#: a torus-4x4-like switch: one injection VC on the local port, no U-turns
TORUS_LIKE = {
    "in_vcs": (1, 2, 2, 2, 2),
    "out_vcs": (2, 2, 2, 2, 2),
    "turns": {(p, o) for p in range(5) for o in range(5) if p != o or p == 0},
}


@pytest.mark.parametrize(
    "settings",
    [
        {"selection": "first-free"},
        {"selection": "round-robin"},
        {"iterations": 2},
        {"selection": "round-robin", "iterations": 2, "pipelined": True},
        SPLIT,
        OCCUPANCY,
        VC_SPLIT,
    ],
)
def test_grants_proven(sby, settings):
    # 5 ports x 2 VCs, as torus-4x4's switch; the properties hold in any state (induction of
    # depth 1 proves them), depth 3 lets the base case find the planted bug below
    harness = AllocatorHarness(n_ports=5, ownership=False, **settings)
    result = sby(harness, "prove", 3)
    assert result.status == "PASS", result.log


@pytest.mark.formal  # proven unbounded by default (test_ownership_proven)
def test_ownership_bounded(sby):
    result = sby(AllocatorHarness(n_ports=3), "bmc", 8)
    assert result.status == "PASS", result.log


OWNERSHIP_CONFIGS = {
    "3-ports": {"n_ports": 3},
    "torus-round-robin": {**TORUS_LIKE, "selection": "round-robin"},
    "torus-occupancy": {**TORUS_LIKE, **OCCUPANCY},
}
#: the default run proves each configuration and each pipeline depth at least once; every
#: pair under ``-m formal``
OWNERSHIP_DEFAULT = {
    ("3-ports", 1),
    ("torus-round-robin", 3),
    ("torus-occupancy", 4),
    ("torus-round-robin", 5),
}


@pytest.mark.parametrize(
    "config, stages",
    [
        pytest.param(
            name,
            stages,
            id=f"{name}-{stages}",
            marks=() if (name, stages) in OWNERSHIP_DEFAULT else pytest.mark.formal,
        )
        for name in OWNERSHIP_CONFIGS
        for stages in (1, 3, 4, 5)
    ],
)
def test_ownership_proven(sby, config, stages):
    config = OWNERSHIP_CONFIGS[config] | STAGES[stages]
    result = sby(AllocatorHarness(state=True, **config), "prove", 2)
    assert result.status == "PASS", result.log


@pytest.mark.parametrize(
    "stages",
    [1, *(pytest.param(stages, marks=pytest.mark.formal) for stages in (3, 4, 5))],
)
def test_one_port_allocator_proven(sby, stages):
    # what torus, nDT and up*/down* switches build: each head's candidates in one output port
    config = {**TORUS_LIKE, "one_port": True} | STAGES[stages]
    for harness, depth in (
        (AllocatorHarness(ownership=False, **config), 3),
        (AllocatorHarness(state=True, **config), 2),
    ):
        result = sby(harness, "prove", depth)
        assert result.status == "PASS", result.log


@pytest.mark.parametrize(
    ("settings", "covers"), [({}, 2), ({"pipelined": True, "state": True}, 2), (SPLIT, 3)]
)
def test_covers_reached(sby, settings, covers):
    # with split switch allocation also: an input VC sends in two cycles running
    state = settings.get("pipelined", False)
    result = sby(AllocatorHarness(n_ports=3, **{"state": state, **settings}), "cover", 8)
    assert result.status == "PASS", result.log
    assert len(result.reached) == covers


def test_pop_without_grant_caught(sby):
    harness = AllocatorHarness(n_ports=3, ownership=False, unit_class=PopWithoutGrant)
    result = sby(harness, "prove", 3)
    assert result.status == "FAIL", result.log


def test_wrong_vc_caught(sby):
    result = sby(AllocatorHarness(n_ports=3, unit_class=WrongVC), "bmc", 8)
    assert result.status == "FAIL", result.log
    harness = AllocatorHarness(n_ports=3, unit_class=WrongVC, state=True, pipelined=True)
    assert sby(harness, "bmc", 8).status == "FAIL"


def test_second_without_credit_caught(sby):
    # without the state invariants: a property on the ports fails (a flit goes out on an
    # output VC without a credit), not only the flag invariant
    harness = AllocatorHarness(n_ports=3, unit_class=SecondWithoutCredit, **SPLIT)
    assert sby(harness, "bmc", 10).status == "FAIL"
    harness = AllocatorHarness(n_ports=3, unit_class=SecondWithoutCredit, state=True, **SPLIT)
    result = sby(harness, "prove", 2)
    assert result.status == "FAIL", result.log


def test_no_recheck_caught(sby):
    # two ports stage heads for one output VC in cycles running: the second takes it too
    harness = AllocatorHarness(n_ports=3, unit_class=NoRecheck, **VC_SPLIT)
    result = sby(harness, "bmc", 8)
    assert result.status == "FAIL", result.log


@pytest.mark.formal
@pytest.mark.parametrize(
    "settings", [{"selection": "round-robin"}, {"selection": "first-free", "iterations": 2}]
)
def test_ownership_bounded_five_ports(sby, settings):
    result = sby(AllocatorHarness(n_ports=5, **settings), "bmc", 8)
    assert result.status == "PASS", result.log


#: a bubble torus switch (one VC a link): a head enters a ring on every output but the local
#: one, unless it arrives on the ring's own input (output 1 continues input 2, 3 continues 4)
PARTNER = {1: 2, 2: 1, 3: 4, 4: 3}
BUBBLE_TORUS = {
    "in_vcs": (1,) * 5,
    "out_vcs": (1,) * 5,
    "turns": TORUS_LIKE["turns"],
    "one_port": True,
    "entering": tuple(sum(1 << o for o in PARTNER if PARTNER[o] != p) for p in range(5)),
}


class InjectionIgnoresBubble(Allocator):
    """Planted bug: the local input (injection) enters a ring with room for one packet."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._entering = (0, *self._entering[1:])


@pytest.mark.parametrize("stages", [1, pytest.param(3, marks=pytest.mark.formal), 4])
def test_a_head_enters_a_ring_only_with_room_for_two_packets_proven(sby, stages):
    result = sby(AllocatorHarness(state=True, **BUBBLE_TORUS | STAGES[stages]), "prove", 2)
    assert result.status == "PASS", result.log


def test_injection_ignoring_the_bubble_caught(sby):
    harness = AllocatorHarness(unit_class=InjectionIgnoresBubble, **BUBBLE_TORUS)
    result = sby(harness, "bmc", 6)
    assert result.status == "FAIL", result.log


# ---- the straight bypass -----------------------------------------------------------------------

#: the torus-like switch with its ring ports paired straight (1 <-> 2, 3 <-> 4), as
#: zfabric.bypass.straight_outputs pairs a torus switch's ports: a one-cycle allocator whose
#: heads have one candidate port
STRAIGHT = {**TORUS_LIKE, "one_port": True, "straight": (-1, 2, 1, 4, 3)}


class NeverAsked(Allocator):
    """Planted bug: the bypass takes its straight output even when a buffered flit requests
    it (no output counted as asked)."""

    def _asked(self, requesters):
        return [Const(0, 1)] * len(self._in_vcs)


def test_bypass_proven(sby):
    """The single-cycle bypass properties in any state, and the ownership ones (a bypassing
    flit on a VC with a credit, a head on a free candidate, a body on its packet's VC) with
    the assignment invariants, unbounded."""
    for harness, depth in (
        (AllocatorHarness(ownership=False, **STRAIGHT), 3),
        (AllocatorHarness(state=True, **STRAIGHT), 2),
    ):
        result = sby(harness, "prove", depth)
        assert result.status == "PASS", result.log


def test_bypass_covered(sby):
    result = sby(AllocatorHarness(state=True, **STRAIGHT), "cover", 6)
    assert result.status == "PASS", result.log
    assert len(result.reached) == 3


def test_a_bypass_beside_a_grant_is_caught(sby):
    harness = AllocatorHarness(ownership=False, unit_class=NeverAsked, **STRAIGHT)
    result = sby(harness, "prove", 3)
    assert result.status == "FAIL", result.log
