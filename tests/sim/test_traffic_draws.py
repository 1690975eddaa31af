"""The compiled draws (sim/draws.py) against Python's own ``random``: the same words,
Bernoulli draws (``random() < rate``) and bounded integers from the same state, and Traffic's
packets drawn many cycles at a time the same as its per-cycle loop, the generator left in the
same state."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zfabric.sim import draws, traffic
from zfabric.sim.traffic import PATTERNS, Traffic, TrafficConfig

SEEDS = st.integers(min_value=0, max_value=2**64)


def _one_source(mt, cycles, rate, lengths=0):
    """``bernoulli_packets`` for one source sending to itself (a fixed destination): a
    ``random() < rate`` a cycle, and with ``lengths`` a ``randrange(lengths)`` a packet."""
    return draws.bernoulli_packets(mt, 0, cycles, 1, rate, np.zeros(1, np.int64), 0, lengths)


@settings(max_examples=40, deadline=None)
@given(seed=SEEDS, skip=st.integers(0, 700))
def test_words_are_pythons(seed, skip):
    """Every cycle's draw at rate 1 decided on its first word, the second stepped past:
    1500 draws pass twists of the state (624 words), from any point of it, and leave it as
    Python's ``random()`` does."""
    rng = random.Random(seed)
    for _ in range(skip):
        rng.getrandbits(32)
    mt = draws.state_array(rng.getstate())
    assert len(_one_source(mt, 1500, 1.0)) == 1500
    for _ in range(1500):
        rng.random()
    assert mt.tolist() == list(rng.getstate()[1])


@settings(max_examples=40, deadline=None)
@given(seed=SEEDS, n=st.one_of(st.integers(1, 40), st.integers(1, 2**32 - 1)))
def test_bounded_draws_are_randrange(seed, n):
    """A packet's drawn length is ``randrange(n)``'s rejection of ``n.bit_length()`` bits,
    ``n`` = 1 (a bit drawn until it is 0) and 2**k + 1 (nearly half the draws rejected) among
    them; a uniform destination the same below the other endpoints' count."""
    rng = random.Random(seed)
    mt = draws.state_array(rng.getstate())
    for bound in (n, 1, 2**20 + 1):
        lengths = _one_source(mt, 300, 1.0, bound)[:, 3].tolist()
        assert lengths == [(rng.random(), rng.randrange(bound))[1] for _ in range(300)]
    for endpoints in (2, 17, 1025):
        rows = draws.bernoulli_packets(mt, 0, 3, endpoints, 1.0, draws.UNIFORM, 1, 0)
        drawn = [(rng.random(), rng.randrange(endpoints - 1))[1] for _ in range(3 * endpoints)]
        sources = [src for _ in range(3) for src in range(endpoints)]
        assert rows[:, 2].tolist() == [
            d + (d >= src) for d, src in zip(drawn, sources, strict=True)
        ]
    assert mt.tolist() == list(rng.getstate()[1])


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, threshold=st.floats(0, 1), fixed=st.booleans())
def test_a_bernoulli_draw_is_random_below_the_rate(seed, threshold, fixed):
    """Decided on the first word when it can be, the second stepped past: the same cycles
    sending and the same state as ``random() < rate``, a rate at the edge of a first word's
    range (``fixed``: a multiple of 2**-27) too."""
    rate = round(threshold * 2**27) / 2**27 if fixed else threshold
    rng = random.Random(seed)
    mt = draws.state_array(rng.getstate())
    sending = _one_source(mt, 500, rate)[:, 0].tolist()
    assert sending == [cycle for cycle in range(500) if rng.random() < rate]
    assert mt.tolist() == list(rng.getstate()[1])


CONFIGS = {
    "uniform": TrafficConfig(rate=0.3),
    "uniform-lengths": TrafficConfig(rate=0.9, packet_length=(1, 5)),
    "one-length-drawn": TrafficConfig(rate=1.0, packet_length=(3, 3)),
    "transpose": TrafficConfig(pattern="transpose", rate=0.5),
    "bit-reversal": TrafficConfig(pattern="bit-reversal", rate=0.5, packet_length=(2, 6)),
    "bit-complement": TrafficConfig(pattern="bit-complement", rate=0.6),
    "shuffle": TrafficConfig(pattern="shuffle", rate=0.8, packet_length=(1, 3)),
    "tornado": TrafficConfig(pattern="tornado", rate=0.7),
    "neighbour": TrafficConfig(pattern="neighbour", rate=0.2),
    # drawn by the Python loop: the same either way
    "hotspot": TrafficConfig(pattern="hotspot", rate=0.4),
    "zipf": TrafficConfig(pattern="zipf", rate=0.4),
    "poisson": TrafficConfig(rate=0.4, process="poisson"),
}


@pytest.mark.parametrize("endpoints", [5, 16, 1024])
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS)
def test_packets_between_are_packets_at_cycle_by_cycle(config, endpoints, monkeypatch):
    """Chunks of several lengths, then a per-cycle draw after them: the same packets and the
    generator where the per-cycle loop leaves it (every batch compiled, however small)."""
    monkeypatch.setattr(traffic, "COMPILED_DRAWS_FROM", 0)
    cycles = 200 if endpoints < 1024 else 20
    theirs, ours = Traffic(config, endpoints, 7), Traffic(config, endpoints, 7)
    expected = [(cycle, *packet) for cycle in range(cycles) for packet in theirs.packets_at(cycle)]
    drawn = []
    for start, end in ((0, 1), (1, 1), (1, cycles // 2), (cycles // 2, cycles)):
        drawn += ours.packets_between(start, end).tolist()
    assert [tuple(row) for row in drawn] == expected
    assert expected
    assert list(ours.packets_at(cycles)) == list(theirs.packets_at(cycles))


def test_every_pattern_is_drawn_one_way_or_the_other():
    """The compiled draws take the Bernoulli patterns whose destinations are uniform or fixed;
    the others fall back to the Python loop."""
    compiled = {
        pattern
        for pattern in PATTERNS
        if pattern not in ("weighted", "locality")
        and Traffic(TrafficConfig(pattern=pattern), 16)._compiled_draws
    }
    assert compiled == {
        "uniform",
        "transpose",
        "bit-reversal",
        "bit-complement",
        "shuffle",
        "tornado",
        "neighbour",
    }


def test_a_state_of_another_version_is_refused():
    with pytest.raises(ValueError, match="version 3"):
        draws.state_array((2, tuple(range(625)), None))
    assert isinstance(draws.state_array(random.Random(1).getstate()), np.ndarray)
