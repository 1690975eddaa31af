# amaranth: UnusedElaboratable=no
"""The allocator's arbiters by exhaustive enumeration against their definitions, and the
split switch allocation of ``stages: 4`` and the split VC allocation of ``stages: 5`` on
hand-built cases.

``round_robin`` picks the first requester at or after the pointer, cyclically, with the pointer
given as a thermometer mask (the bits at and above it set; zero means pointer 0): every request
vector and every pointer of widths 1 to 9 is checked against that definition, and ``after``
(the pointer past a one-hot grant) for every grant. ``Precedence`` (the pointer as precedence
pairs, which the allocator's arbiters use) is checked against the same definition for every
request vector at every pointer its moves reach, widths 1 to 7.
"""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator
from zfabric.hdl.router.allocator import (
    Allocator,
    Precedence,
    after,
    indexed_mux,
    lowest_one,
    round_robin,
)


def _cyclic_first(request: int, pointer: int, width: int) -> int:
    for step in range(width):
        bit = (pointer + step) % width
        if request >> bit & 1:
            return 1 << bit
    return 0


@pytest.mark.parametrize("count", range(1, 10))
def test_indexed_mux_reads_every_index(count):
    """The 2:1 multiplexer tree that replaces ``Array`` indexing: values[i] for every i."""
    m = Module()
    index = Signal(max(1, (count - 1).bit_length()))
    values = [Signal(8, init=(37 * i + 5) % 256) for i in range(count)]
    picked = Signal(8)
    m.d.comb += picked.eq(indexed_mux(index, values))
    found = []

    async def bench(ctx):
        for i in range(count):
            ctx.set(index, i)
            found.append(ctx.get(picked))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert found == [(37 * i + 5) % 256 for i in range(count)]


def test_indexed_mux_refuses_an_index_too_narrow():
    with pytest.raises(ValueError, match="3 values need an index of more than 1 bits"):
        indexed_mux(Signal(1), [Signal(2), Signal(2), Signal(2)])


@pytest.mark.parametrize("width", range(1, 10))
def test_round_robin_and_lowest_one_exhaustive(width):
    m = Module()
    request, mask = Signal(width), Signal(width)
    rr = round_robin(m, request, mask)
    low = lowest_one(m, request)
    following = Signal(width)
    m.d.comb += following.eq(after(request))
    # every thermometer mask: pointer p sets bits p..width-1; the zero mask is pointer 0 too
    masks = [(((1 << width) - 1) >> p) << p for p in range(width)] + [0]
    mismatches = []

    async def bench(ctx):
        for pointer_mask in masks:
            pointer = (pointer_mask & -pointer_mask).bit_length() - 1 if pointer_mask else 0
            for value in range(1 << width):
                ctx.set(request, value)
                ctx.set(mask, pointer_mask)
                expected = _cyclic_first(value, pointer, width)
                if ctx.get(rr) != expected or ctx.get(low) != _cyclic_first(value, 0, width):
                    mismatches.append((value, pointer_mask, ctx.get(rr), expected))
            # a one-hot grant at bit i: the pointer after it is i + 1, bits above i set
            for bit in range(width):
                ctx.set(request, 1 << bit)
                if ctx.get(following) != ((1 << width) - 1) >> (bit + 1) << (bit + 1):
                    mismatches.append(("after", bit, ctx.get(following)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("width", range(1, 8))
def test_precedence_pairs_grant_round_robin_exhaustive(width):
    m = Module()
    request, moved, when = Signal(width), Signal(width), Signal()
    order = Precedence(width, "order")
    grant = order.grant(m, request, "grant")
    order.move(m, moved, when)
    mismatches = []

    async def bench(ctx):
        # the pointer starts at 0; a move past a grant to g puts it at g + 1 (cyclically), and
        # a cycle without ``when`` leaves it where it is
        pointers = [0, *range(1, width), 0, 0] if width > 1 else [0]  # one requester: no pairs
        for step, pointer in enumerate(pointers):
            if step:
                stay = step == len(pointers) - 1
                ctx.set(moved, 1 << (pointer - 1) % width)
                ctx.set(when, 0 if stay else 1)
                await ctx.tick()
                ctx.set(when, 0)
            for value in range(1 << width):
                ctx.set(request, value)
                if ctx.get(grant) != _cyclic_first(value, pointer, width):
                    mismatches.append((pointer, value, ctx.get(grant)))

    sim = Simulator(m)
    if width > 1:
        sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize(
    "more, two, tail, pops",
    [
        # a second flit and a second credit: the staged VC is picked again at once, one flit
        # per cycle from cycle 2 (head acquires at 0, picked at 1, crosses at 2)
        (1, 1, 0, [0, 0, 1, 1, 1, 1]),
        # one flit or one credit left behind the staged one: picked every other cycle
        (0, 1, 0, [0, 0, 1, 0, 1, 0]),
        (1, 0, 0, [0, 0, 1, 0, 1, 0]),
        # a tail at the front: picked once, it crosses and releases the output VC
        (1, 1, 1, [0, 0, 1, 0, 0, 0]),
    ],
)
def test_split_switch_allocation_stages_a_pick(more, two, tail, pops):
    """``split`` (stages: 4, docs/microarchitecture.md): input VC (0, 0) acquires output VC
    (1, 0) in VC allocation at cycle 0, its input port picks it at 1 and it crosses at 2; it
    is picked again while its last pick is still crossing only if it has a second flit
    (``more``), a second credit (``spare2``/``keep2``, held one cycle) and no tail at its
    front. The head flag drops after cycle 0: the rest of the packet follows."""
    alloc = Allocator(in_vcs=(2, 2), out_vcs=(2, 2), pipelined=True, split=True)
    seen = []

    async def bench(ctx):
        ctx.set(alloc.valid[0], 0b01)
        ctx.set(alloc.head[0], 0b01)
        ctx.set(alloc.cand[0][0], 0b0100)  # output port 1, VC 0
        ctx.set(alloc.free, 0b1111)
        ctx.set(alloc.ready, 0b1111)
        ctx.set(alloc.spare, 0b1111)
        ctx.set(alloc.more[0], more)
        for name in ("spare2", "keep2"):
            ctx.set(getattr(alloc, name), 0b1111 if two else 0)
        for cycle in range(len(pops)):
            seen.append(ctx.get(alloc.pop[0]))
            if cycle == 0:
                assert ctx.get(alloc.acquire) == 0b0100
            if seen[-1]:
                assert ctx.get(alloc.grant[1]) == 0b01 and ctx.get(alloc.vc[1]) == 0
            await ctx.tick()
            ctx.set(alloc.head[0], 0)
            ctx.set(alloc.tail[0], tail)

    sim = Simulator(alloc)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == pops


@pytest.mark.parametrize(
    "free, acquires, picks",
    [
        # output VC (1, 0) stays free until port 0's head takes it at 1 (then it is owned):
        # both heads staged at 0, port 0 wins at 1 (pointer at port 0), port 1's is dropped
        # and finds no free candidate after; port 0 is picked for the crossbar at 2, so its
        # staged pick shows at 3 (and, its flit never leaving here, every other cycle)
        ([0b1111, 0b1111, 0b1011, 0b1011, 0b1011], [0, 4, 0, 0, 0], [[0, 0, 0, 1, 0], [0] * 5]),
        # another head took (1, 0) at the end of 0 and released it at the end of 1: port 0
        # wins the arbiter at 1 but the re-check drops it (no acquire), the pointer moves
        # past port 0 all the same; both heads are staged again at 2 and port 1 wins at 3
        (
            [0b1111, 0b1011, 0b1111, 0b1111, 0b1011, 0b1011],
            [0, 0, 0, 4, 0, 0],
            [[0] * 6, [0, 0, 0, 0, 0, 1]],
        ),
    ],
    ids=["acquired", "taken-meanwhile"],
)
def test_vc_allocation_in_two_cycles_rechecks_after_the_arbiter(free, acquires, picks):
    """``vc_split`` (stages: 5, docs/microarchitecture.md): the heads of input VCs (0, 0) and
    (1, 0) both want output VC (1, 0); the VC input stage stages each port's head, the VC
    output stage grants one the next cycle and the grant acquires only if (1, 0) is still
    ``free``. ``free`` is driven as the output unit would show it, cycle by cycle."""
    alloc = Allocator(in_vcs=(2, 2), out_vcs=(2, 2), pipelined=True, split=True, vc_split=True)
    seen_acquires, seen_picks = [], [[], []]

    async def bench(ctx):
        for port in (0, 1):
            ctx.set(alloc.valid[port], 0b01)
            ctx.set(alloc.head[port], 0b01)
            ctx.set(alloc.cand[port][0], 0b0100)  # output port 1, VC 0
        for name in ("ready", "spare", "spare2", "keep2"):
            ctx.set(getattr(alloc, name), 0b1111)
        for value in free:
            ctx.set(alloc.free, value)
            seen_acquires.append(ctx.get(alloc.acquire))
            for port in (0, 1):
                seen_picks[port].append(ctx.get(alloc.pick[port]))
            await ctx.tick()

    sim = Simulator(alloc)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen_acquires == acquires
    assert seen_picks == picks


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"pipelined": True},
        {"pipelined": True, "split": True},
        {"pipelined": True, "split": True, "vc_split": True},
    ],
    ids=["stages-1", "stages-3", "stages-4", "stages-5"],
)
def test_one_port_grants_as_the_general_allocator(settings):
    """``one_port`` is a shorter path to the same grants: two allocators, one told that every
    head's candidates lie in one output port and one not, get the same random inputs (each
    input VC's candidates a random nonempty set of one random port's VCs; free, credit,
    front flags at random) for 300 cycles, and every output agrees in every cycle."""
    in_vcs = out_vcs = (1, 2, 2, 2, 2)
    base = [sum(out_vcs[:o]) for o in range(len(out_vcs))]
    general = Allocator(in_vcs=in_vcs, out_vcs=out_vcs, **settings)
    narrow = Allocator(in_vcs=in_vcs, out_vcs=out_vcs, one_port=True, **settings)
    m = Module()
    m.submodules.general, m.submodules.narrow = general, narrow
    rng = random.Random(11)
    n_ovc = sum(out_vcs)
    inputs = ["free", "ready", "spare"] + (["spare2", "keep2"] if settings.get("split") else [])
    outputs = ["pick", "pop", "grant", "vc"]
    mismatches = []
    pops = []  # flits popped per cycle: the comparison covers traffic, not idle cycles

    async def bench(ctx):
        for cycle in range(300):
            for name in inputs:
                value = rng.getrandbits(n_ovc)
                ctx.set(getattr(general, name), value)
                ctx.set(getattr(narrow, name), value)
            for port, n in enumerate(in_vcs):
                for name in ("valid", "head", "tail") + (
                    ("more",) if settings.get("split") else ()
                ):
                    value = rng.getrandbits(n)
                    ctx.set(getattr(general, name)[port], value)
                    ctx.set(getattr(narrow, name)[port], value)
                for vc in range(n):
                    out = rng.randrange(len(out_vcs))
                    cand = (rng.randrange(1, 1 << out_vcs[out])) << base[out]
                    ctx.set(general.cand[port][vc], cand)
                    ctx.set(narrow.cand[port][vc], cand)
            for name in outputs + (["acquire"] if settings.get("pipelined") else []):
                ours, theirs = getattr(narrow, name), getattr(general, name)
                if name != "acquire":
                    ours, theirs = list(ours), list(theirs)
                else:
                    ours, theirs = [ours], [theirs]
                for a, b in zip(ours, theirs, strict=True):
                    if ctx.get(a) != ctx.get(b):
                        mismatches.append((cycle, name, ctx.get(a), ctx.get(b)))
            pops.append(sum(bin(ctx.get(pop)).count("1") for pop in general.pop))
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, mismatches[:5]
    # traffic enough to mean something; with ``vc_split`` half the re-checks of a staged
    # head meet its output VC's random ``free`` bit at 0, so fewer heads acquire
    assert sum(pops) > (150 if settings.get("vc_split") else 300), sum(pops)


@pytest.mark.parametrize("one_port", [False, True], ids=["general", "one-port"])
def test_occupancy_selection_against_its_definition(one_port):
    """``selection="occupancy"`` (docs/microarchitecture.md, step 2): one input VC offers a
    single-flit head every cycle with random candidates (all in one random port when
    ``one_port``), output VCs free, with credit and low at random; the output VC it is granted
    must be the usable candidate of least (level, not low, distance of its port from the
    selection pointer, VC), and the pointer moves past each port taken. The levels are
    ``duato``'s on a torus switch (escape VCs 0 and 1 of each link after its adaptive 2 and 3)."""
    out_vcs = (2, 4, 4, 4, 4)
    in_vcs = (1, 4, 4, 4, 4)
    base = [sum(out_vcs[:o]) for o in range(len(out_vcs))]
    flat = [(o, w) for o, n in enumerate(out_vcs) for w in range(n)]
    levels = [0] * out_vcs[0] + [int(w < 2) for o, w in flat if o]
    if one_port:
        levels = [0] * len(flat)  # a one-port routing is deterministic: one level
    alloc = Allocator(
        in_vcs=in_vcs, out_vcs=out_vcs, selection="occupancy", levels=levels, one_port=one_port
    )
    rng = random.Random(5)
    n_ovc = len(flat)
    pointer, taken, mismatches = 0, [], []

    async def bench(ctx):
        nonlocal pointer
        ctx.set(alloc.valid[1], 0b0001)
        ctx.set(alloc.head[1], 0b0001)
        ctx.set(alloc.tail[1], 0b0001)
        for cycle in range(400):
            state = {name: rng.getrandbits(n_ovc) for name in ("free", "ready", "low")}
            state["free"] |= rng.getrandbits(n_ovc)  # mostly free: more choices to make
            if one_port:
                out = rng.randrange(len(out_vcs))
                cand = rng.randrange(1, 1 << out_vcs[out]) << base[out]
            else:
                cand = rng.getrandbits(n_ovc)
            for name, value in state.items():
                ctx.set(getattr(alloc, name), value)
            ctx.set(alloc.spare, state["ready"])
            ctx.set(alloc.cand[1][0], cand)
            usable = [i for i in range(n_ovc) if (cand & state["free"] & state["ready"]) >> i & 1]
            expected = min(
                usable,
                key=lambda i: (
                    levels[i],
                    not state["low"] >> i & 1,
                    (flat[i][0] - pointer) % len(out_vcs),
                    flat[i][1],
                ),
                default=None,
            )
            got = [
                (o, ctx.get(alloc.vc[o])) for o in range(len(out_vcs)) if ctx.get(alloc.grant[o])
            ]
            want = [] if expected is None else [flat[expected]]
            if got != want:
                mismatches.append((cycle, got, want))
            if want:
                taken.append(want[0])
                if not one_port:
                    pointer = (want[0][0] + 1) % len(out_vcs)
            await ctx.tick()

    sim = Simulator(alloc)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert not mismatches, mismatches[:5]
    # the rule was exercised: grants in most cycles, in several ports and on several VCs
    assert len(taken) > 200 and len({o for o, _ in taken}) == len(out_vcs)
    assert len({w for _, w in taken}) == max(out_vcs)
