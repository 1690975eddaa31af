"""Allocator: requests, input round-robin, output round-robin, candidate selection.

This is steps 2 to 5 of docs/microarchitecture.md for the control state: which input VC of
each port sends, which input each output takes, which output VC a head acquires, and how the
round-robin pointers and the input VCs' assignments move. The router settings choose the
selection rule (first free candidate, round-robin per input port over output ports, or by
occupancy: priority level, then low occupancy, then round-robin) and the number of separable
iterations (one, or a second for what the first left unmatched).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zfabric.router_settings import LFSR_TAPS, SELECTIONS, lfsr_seed

__all__ = [
    "Allocator",
    "Precedence",
    "lowest_one",
    "round_robin",
    "after",
    "one_hot_index",
    "indexed_mux",
]


def _signal(m: Module, value, name: str) -> Signal:
    """``value`` as a named comb signal (shared sub-expressions stay shared in simulation)."""
    if isinstance(value, Signal):
        return value
    signal = Signal(len(Value.cast(value)), name=name)
    m.d.comb += signal.eq(value)
    return signal


def _prefix_or(m: Module, bits: Sequence[Value], name: str) -> list[Value]:
    """Inclusive prefix ORs of ``bits`` (bit ``i``: any of ``bits[: i + 1]``) in a Sklansky
    tree: ``log2(n)`` OR levels and ``n log2(n) / 2`` gates, where one OR per bit over all the
    bits below it costs ``n^2 / 2`` (a 64-port round-robin arbiter's whole area). Each level is
    a signal: an expression is emitted again wherever it is used, which would undo the
    sharing."""
    out = list(bits)
    span = 1
    while span < len(out):
        level = {}
        for i in range(len(out)):
            if i & span:  # upper half of its block of 2 * span: OR in the lower half's last
                level[i] = out[i] | out[(i & ~(2 * span - 1)) + span - 1]
        for i, value in level.items():
            out[i] = _signal(m, value, f"{name}_{span}_{i}")
        span *= 2
    return out


def _below(prefix: list[Value], i: int) -> Value:
    """Any of the bits under bit ``i``, from their inclusive prefix ORs."""
    return prefix[i - 1] if i else Const(0, 1)


def lowest_one(m: Module, value, name: str = "lowest") -> Signal:
    """The lowest set bit of ``value`` alone (zero if none).

    ``value & -value`` in gates rather than an adder: a bit survives when no lower bit is set.
    Synthesis maps the ORs to LUTs and drops bits that are constant zero (inputs that can never
    request), which a carry chain would keep.
    """
    value = _signal(m, value, f"{name}_in")
    below = _prefix_or(m, [value[i] for i in range(len(value))], f"{name}_below")
    return _signal(m, Cat(*(value[i] & ~_below(below, i) for i in range(len(value)))), name)


def round_robin(m: Module, request, mask, name: str = "rr") -> Signal:
    """One-hot pick of the first requester at or after the pointer, cyclically.

    ``mask`` is the pointer as a thermometer: the bits at and above it are set. Requesters
    under the mask come first, lowest first; if there are none, the lowest requester wins, which
    is the cyclic wrap. A zero mask therefore means pointer 0, like an all-ones one.
    """
    request = _signal(m, request, f"{name}_request")
    mask = _signal(m, mask, f"{name}_mask")
    # the lowest set bit of the doubled vector (masked requests, then all requests), as two
    # prefix-OR trees: log depth and n log n gates per arbiter, where a flat AND per requester
    # of "no requester ahead of it" is n^2 (the cube of the ports per allocator)
    n = len(request)
    masked = _signal(m, request & mask, f"{name}_masked")
    masked_below = _prefix_or(m, [masked[i] for i in range(n)], f"{name}_masked_below")
    request_below = _prefix_or(m, [request[i] for i in range(n)], f"{name}_below")
    wrap = ~masked_below[-1]  # no requester under the mask
    grants = [
        (masked[i] & ~_below(masked_below, i)) | (request[i] & wrap & ~_below(request_below, i))
        for i in range(n)
    ]
    return _signal(m, Cat(*grants), name)


class Precedence:
    """A round-robin pointer over ``n`` requesters held as precedence pairs.

    Bit ``(j, i)`` (``j < i``) is set when requester ``j`` goes before ``i``: the pointer is
    not in ``j + 1 .. i``. A grant is then its request and no request ahead of it, an AND over
    register bits (two LUT4 levels for four requesters, one for two) where :func:`round_robin`'s
    thermometer mask needs a wrap on top. Initially the pointer is 0.
    """

    def __init__(self, n: int, name: str):
        self._ahead = {
            (j, i): Signal(name=f"{name}_ahead_{j}_{i}", init=1) for i in range(n) for j in range(i)
        }

    def _before(self, j: int, i: int) -> Value:
        return self._ahead[j, i] if j < i else ~self._ahead[i, j]

    def grant(self, m: Module, request, name: str) -> Signal:
        """One-hot: the first of ``request`` at or after the pointer, cyclically."""
        request = _signal(m, request, f"{name}_request")
        n = len(request)
        ahead = [
            request[i] & ~Cat(*(request[j] & self._before(j, i) for j in range(n) if j != i)).any()
            for i in range(n)
        ]
        return _signal(m, Cat(*ahead), name)

    def move(self, m: Module, grant: Value, when: Value) -> None:
        """In a cycle ``when`` holds, move the pointer just past the one-hot ``grant``."""
        with m.If(when):
            # after a grant to g the pointer is g + 1: j goes before i unless j <= g < i
            m.d.sync += [bit.eq(~grant[j:i].any()) for (j, i), bit in self._ahead.items()]


def matrix_round_robin(m: Module, request, name: str = "mrr") -> Signal:
    """:class:`Precedence`'s grant among ``request``, the pointer moved past it whenever any
    requester asks."""
    request = Value.cast(request)
    order = Precedence(len(request), name)
    grant = order.grant(m, request, name)
    order.move(m, grant, request.any())
    return grant


def after(one_hot: Value) -> Value:
    """The thermometer mask of the pointer just after a one-hot grant (zero after the last)."""
    return Cat(Const(0, 1), *(one_hot[: i + 1].any() for i in range(len(one_hot) - 1)))


def one_hot_index(one_hot: Value, width: int) -> Value:
    """Index of the set bit of a one-hot value, ``width`` bits (zero if none is set)."""
    return Cat(
        *(Cat(*(one_hot[i] for i in range(len(one_hot)) if i >> b & 1)).any() for b in range(width))
    )


class Allocator(wiring.Component):
    """Route-to-grant control of one switch.

    Output VCs are numbered flat: output port ``o``'s VC ``w`` is bit ``sum(out_vcs[:o]) + w``
    of the candidate, ``free`` and ``ready`` vectors. Per input VC the allocator holds the
    output VC its packet owns (one-hot, zero when it holds none).

    Per cycle (all on the state at the start of the cycle):

    - an input VC with a flit at its front requests its own output VC if it holds one and that
      VC has a credit; otherwise, if the front is a head, one of its candidates that is free and
      has a credit: with ``selection="first-free"`` the lowest flat index (the route unit orders
      candidates by priority that way); with ``"round-robin"`` the lowest flat index at or
      after the input port's selection pointer (an output port), cyclically; with
      ``"occupancy"`` the same round-robin among the candidates of the first (lowest) priority
      level that has one, its ``low`` ones if it has any;
    - each input port picks the first requesting VC at or after its pointer, cyclically;
    - each output port grants the first input port whose pick wants it, at or after its
      pointer, cyclically;
    - with ``iterations=2``, the input ports that got no grant pick again among their VCs that
      want an output no grant went to, and those outputs grant among them, on the same pointers;
    - a granted input VC pops its flit; a head takes the output VC, a tail gives it back; the
      input port's pointer moves to the VC after the granted one and the output port's to the
      input after the granted one; a granted head moves its input port's selection pointer to
      the output port after the one it took. Ports that sent or granted nothing keep their
      pointers.

    Parameters
    ----------
    in_vcs : tuple of int
        VCs per input port.
    out_vcs : tuple of int
        VCs per output port (same number of ports as ``in_vcs``).
    turns : set of (int, int), optional
        The (input port, output port) pairs packets can take (default: all). Other pairs get
        no request logic; an output's round-robin runs over its possible inputs only, which
        grants exactly as over all inputs since the others never request.
    selection : ``"first-free"``, ``"round-robin"``, ``"occupancy"`` or ``"random"``
        How a head picks among its usable candidates.
    levels : sequence of int, optional
        Per output VC (flat), its priority level for ``"occupancy"`` (0 first; default: all
        0). Constants: a level is a property of the output VC, not of the head.
    iterations : 1 or 2
        Separable allocation iterations.
    pipelined : bool
        VC allocation in a cycle of its own (``stages: 3``): a head without an output VC
        requests a free candidate, credit or not, in a separable VC allocation with pointers of
        its own (``va_*``), and takes it at the end of the cycle (``acquire``); only input VCs
        that hold an output VC with a credit compete for the crossbar, heads included. The
        selection pointer moves on VC allocation.
    split : bool
        Switch allocation in two cycles too (``stages: 4``, needs ``pipelined`` and one
        iteration): each input port picks a VC on the state at the start of the cycle, as if
        the pick it staged last cycle crossed now (that VC must then have a second flit
        (``more``), a second credit and no tail at its front), and registers it (``pick``, the
        crossbar's select); the output ports grant among the staged picks the next cycle.
    vc_split : bool
        VC allocation in two cycles too (``stages: 5``, needs ``pipelined`` and one iteration):
        each input port picks one head that wants an output VC, other than the one it staged
        last cycle, and registers it with the output VC it chose; the output ports grant
        among the staged heads the next cycle, those whose output VC is still ``free`` only.
    one_port : bool
        Every head's candidates lie in one output port (the routing's ``one_port``): the
        selection pointer is moot (first-free and round-robin pick its lowest usable VC,
        occupancy its lowest usable ``low`` one if any), and the output arbiters take the port
        from the candidates before the free and credit bits narrow them (the same grants, a
        shorter path).
    entering : sequence of int, optional
        Bubble flow control (docs/microarchitecture.md, *Bubble flow control*): per input
        port, a mask of the output VCs (flat) a head of that port enters a ring on, where it
        reads ``free2`` instead of ``free``. Empty (the default): no ``free2``. Not with
        ``vc_split``.
    straight : sequence of int, optional
        The straight bypass (docs/microarchitecture.md, *Straight bypass*): per input port, the
        output port it feeds straight, or -1. The flit on an input's link in its last cycle
        (``arriving``, ``link_head``, ``link_tail``, ``link_cand``) crosses to that output now
        (``bypass``, ``bypass_vc``) when its VC's FIFO is empty (``valid`` low), no input VC
        requests the output, and its output VC (the one its VC holds, or for a head the lowest
        usable candidate on that output) has a credit; a head takes that output VC, a tail
        gives it back, as at a pop. Empty (the default): none of it. Only at ``stages: 1``
        (not ``pipelined``) with ``one_port``.

    Members
    -------
    valid, head, tail : ``In(max(in_vcs)).array(n_ports)``
        Per input VC: a flit is at the front; it is a head; it is a tail.
    cand : ``In(n_out_vcs).array(n_ports, max(in_vcs))``
        Per input VC: the route unit's candidate output VCs for the head at its front.
    free, ready : ``In(n_out_vcs)``
        Per output VC: no owner; a credit.
    free2 : ``In(n_out_vcs)``
        Only with ``entering``: per output VC, free with room for two longest packets (the
        output unit's ``free2``; ``free`` where the output is no ring's).
    low : ``In(n_out_vcs)``
        Only with ``"occupancy"``: per output VC, low occupancy (its credit counter at least
        :func:`~zfabric.router_settings.low_occupancy` of the buffer depth).
    spare : ``In(n_out_vcs)``
        Per output VC: a credit at the start of the next cycle even if it sends now (the
        output unit's ``spare``). The allocator keeps, per input VC, ``ready`` of the output
        VC it holds as a flip-flop set from these a cycle ahead, so a holder's request does
        not wait for the wide select of its credit out of ``ready``.
    pick : ``Out(max(in_vcs)).array(n_ports)``
        Per input port: the VC it picked (one-hot, zero if none requested).
    pop : ``Out(max(in_vcs)).array(n_ports)``
        Per input port: ``pick`` if the output granted it, else zero.
    grant : ``Out(n_ports).array(n_ports)``
        Per output port: the input port it takes (one-hot, zero if none).
    vc : ``Out(range(max(out_vcs))).array(n_ports)``
        Per output port: the output VC of the granted flit.
    send : ``Out(n_out_vcs)``
        Only when ``pipelined``: per output VC, a flit goes out on it this cycle (``vc``
        one-hot, gated by the grant): the output units count credits and owners on it without
        decoding ``vc``, off the crossbar's path (at ``stages`` 1-2 the decode is cheaper).
    release : ``Out(n_out_vcs)``
        Only when ``split``: per output VC, the flit going out on it this cycle is a tail (its
        owner is cleared at the end of the cycle), from the staged picks' tail bits (registers)
        rather than behind the crossbar and the output arbiters' grants.
    acquire : ``Out(n_out_vcs)``
        Only when ``pipelined``: the output VCs a head acquires this cycle (their owner bits
        are set at the end of it).
    more : ``In(max(in_vcs)).array(n_ports)``
        Only when ``split``: per input VC, two flits or more in its buffer.
    spare2, keep2 : ``In(n_out_vcs)``
        Only when ``split``: per output VC, two credits or more at the start of the next cycle
        if it sends now, if it does not (the output unit's); the allocator keeps, per input
        VC, whether the output VC it holds has two credits as a flip-flop set from these.
    arriving : ``In(max(in_vcs)).array(n_ports)``
        Only with ``straight``: per input port, one-hot, the VC of the flit on its link (zero
        if none).
    link_head, link_tail : ``In(1).array(n_ports)``
        Only with ``straight``: that flit is a head; a tail.
    link_cand : ``In(n_out_vcs).array(n_ports)``
        Only with ``straight``: the route unit's candidates for that flit's head (on its VC).
    bypass : ``Out(max(in_vcs)).array(n_ports)``
        Only with ``straight``: per input port, ``arriving`` if the flit bypasses, else zero.
    bypass_vc : ``Out(n_out_vcs)``
        Only with ``straight``: the output VCs a bypassing flit goes out on this cycle (at
        most one per output port).
    """

    def __init__(
        self,
        *,
        in_vcs: Sequence[int],
        out_vcs: Sequence[int],
        turns: Iterable[tuple[int, int]] | None = None,
        selection: str = "first-free",
        levels: Sequence[int] | None = None,
        iterations: int = 1,
        pipelined: bool = False,
        split: bool = False,
        vc_split: bool = False,
        one_port: bool = False,
        entering: Sequence[int] = (),
        straight: Sequence[int] = (),
    ):
        if selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS!r}, not {selection!r}")
        if iterations not in (1, 2):
            raise ValueError(f"iterations must be 1 or 2, not {iterations!r}")
        # with one port per decision first-free, round-robin and random pick alike: no
        # selection pointer or LFSR to keep (occupancy still prefers a low VC within the port)
        pointless = one_port and selection in ("round-robin", "random")
        self._selection = "first-free" if pointless else selection
        self._iterations = iterations
        self._pipelined = bool(pipelined)
        self._split = bool(split)
        self._vc_split = bool(vc_split)
        self._one_port = bool(one_port)
        if (self._split or self._vc_split) and (not self._pipelined or iterations != 1):
            raise ValueError("split allocation needs pipelined VC allocation, 1 iteration")
        in_vcs, out_vcs = tuple(in_vcs), tuple(out_vcs)
        ports = range(len(in_vcs))
        self._turns = frozenset(
            turns if turns is not None else ((p, o) for p in ports for o in ports)
        )
        if len(in_vcs) != len(out_vcs) or not in_vcs:
            raise ValueError(f"in_vcs {in_vcs!r} and out_vcs {out_vcs!r} must be as long")
        for counts in (in_vcs, out_vcs):
            if any(not isinstance(n, int) or n < 1 for n in counts):
                raise TypeError(f"VC counts must be positive integers, not {counts!r}")
        self._in_vcs = in_vcs
        self._out_vcs = out_vcs
        self._base = [sum(out_vcs[:o]) for o in range(len(out_vcs))]
        n_ports, max_in, n_ovc = len(in_vcs), max(in_vcs), sum(out_vcs)
        levels = tuple(levels) if levels else (0,) * n_ovc
        if len(levels) != n_ovc or any(not isinstance(x, int) or x < 0 for x in levels):
            raise ValueError(f"levels must be {n_ovc} non-negative integers, not {levels!r}")
        self._levels = levels
        entering = tuple(entering)
        if entering and (len(entering) != n_ports or self._vc_split):
            raise ValueError(
                f"entering must be {n_ports} output VC masks, without vc_split, not {entering!r}"
            )
        self._entering = entering if any(entering) else ()
        straight = tuple(straight)
        if straight and (len(straight) != n_ports or self._pipelined or not self._one_port):
            raise ValueError(
                f"straight must be {n_ports} output ports (or -1), for a one-cycle switch whose"
                f" routing offers one port, not {straight!r}"
            )
        self._straight = straight if any(o >= 0 for o in straight) else ()
        members = {"acquire": Out(n_ovc), "send": Out(n_ovc)} if self._pipelined else {}
        if self._straight:
            members |= {
                "arriving": In(max_in).array(n_ports),
                "link_head": In(1).array(n_ports),
                "link_tail": In(1).array(n_ports),
                "link_cand": In(n_ovc).array(n_ports),
                "bypass": Out(max_in).array(n_ports),
                "bypass_vc": Out(n_ovc),
            }
        if self._entering:
            members["free2"] = In(n_ovc)
        if self._split:
            members["release"] = Out(n_ovc)
        if self._selection == "occupancy":
            members["low"] = In(n_ovc)
        if self._split:
            members |= {
                "more": In(max_in).array(n_ports),
                "spare2": In(n_ovc),
                "keep2": In(n_ovc),
            }
        super().__init__(
            members
            | {
                "valid": In(max_in).array(n_ports),
                "head": In(max_in).array(n_ports),
                "tail": In(max_in).array(n_ports),
                "cand": In(n_ovc).array(n_ports, max_in),
                "free": In(n_ovc),
                "ready": In(n_ovc),
                "spare": In(n_ovc),
                "pick": Out(max_in).array(n_ports),
                "pop": Out(max_in).array(n_ports),
                "grant": Out(n_ports).array(n_ports),
                "vc": Out(range(max(out_vcs))).array(n_ports),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n_ports, n_ovc = len(self._in_vcs), sum(self._out_vcs)
        # a head may take a free output VC with a credit; with its own VC-allocation cycle
        # (``pipelined``) any free one: the credit is switch allocation's business
        usable = _signal(m, self.free if self._pipelined else self.free & self.ready, "usable")
        usables = [usable] * n_ports  # per input port
        if self._entering:
            # bubble flow control: a head entering a ring reads the output VC's ``free2``
            # (room for two longest packets) instead of ``free``
            everything = (1 << n_ovc) - 1
            for port, mask in enumerate(self._entering):
                if mask:
                    free = (self.free & Const(everything ^ mask, n_ovc)) | (
                        self.free2 & Const(mask, n_ovc)
                    )
                    usable_here = free if self._pipelined else free & self.ready
                    usables[port] = _signal(m, usable_here, f"usable_{port}")
        reachable = [0] * n_ports  # per input port: the output VCs it can ever want
        for p, o in self._turns:
            reachable[p] |= ((1 << self._out_vcs[o]) - 1) << self._base[o]

        # per input port: (requesting VCs, per VC the output VC it wants, per VC the output
        # port it wants: the output arbiters read the port alone)
        requesters = []
        vc_requesters = []  # the same for VC allocation (``pipelined`` only)
        targets = []  # per input VC: (port, vc, held, wanted by a head)
        selects = []  # per input port: its selection pointer (round-robin selection only)
        stageds = []  # per input port: its staged pick, one-hot (``split`` only)
        vc_stageds = []  # per input port: its staged head, one-hot (``vc_split`` only)
        seconds = []  # per input VC: (port, vc, held, chosen, held_two) (``split`` only)
        holdings = {}  # per input VC: ``held.any()``, registered (``pipelined`` only)
        for port, n_vcs in enumerate(self._in_vcs):
            if self._split:
                stageds.append(Signal(n_vcs, name=f"staged_{port}"))
            if self._vc_split:
                vc_stageds.append(Signal(n_vcs, name=f"va_staged_{port}"))
            select = None
            if self._selection == "random" and not self._one_port:
                # the LFSR: which usable port each VC's head takes (``_random_mask``)
                select = Signal(16, name=f"select_lfsr_{port}", init=lfsr_seed(port))
            elif self._selection != "first-free" and not self._one_port:
                select = Signal(n_ports, name=f"select_pointer_{port}", init=(1 << n_ports) - 1)
                select_mask = _signal(m, self._per_port(select), f"select_mask_{port}")
            selects.append(select)
            requests, wanted, ports, vc_requests, chosens, cand_ports = [], [], [], [], [], []
            for vc in range(n_vcs):
                held = Signal(n_ovc, name=f"held_{port}_{vc}")
                if self._pipelined:  # ``held.any()`` for VC allocation: a flip-flop, no wide OR
                    holding = holdings[port, vc] = Signal(name=f"holding_{port}_{vc}")
                # ``(held & ready).any()``, registered (see ``spare``)
                held_ready = Signal(name=f"held_ready_{port}_{vc}")
                routed = _signal(m, self.cand[port][vc] & reachable[port], f"routed_{port}_{vc}")
                candidates = _signal(m, routed & usables[port], f"candidates_{port}_{vc}")
                name = f"chosen_{port}_{vc}"
                # the candidates the selection picks among (occupancy: a level, low or not)
                pool = candidates
                if self._selection == "occupancy":
                    pool = self._occupancy_pool(m, candidates, f"pool_{port}_{vc}")
                if self._one_port:
                    # the candidates lie in one port: its lowest VC in the pool is what every
                    # selection rule picks, and the port is known before ``usable`` is
                    chosen = _signal(
                        m,
                        Cat(
                            *(
                                lowest_one(m, pool[b : b + n], f"{name}_{o}")
                                for o, (b, n) in enumerate(
                                    zip(self._base, self._out_vcs, strict=True)
                                )
                            )
                        ),
                        name,
                    )
                    cand_port = self._ports_of(routed)
                else:
                    if select is None:
                        chosen = lowest_one(m, pool, name)
                    elif self._selection == "random":
                        mask = self._random_mask(m, pool, select, name)
                        chosen = round_robin(m, pool, mask, name)
                    else:
                        chosen = round_robin(m, pool, select_mask, name)
                    cand_port = self._ports_of(chosen)
                chosens.append(chosen)
                cand_ports.append(cand_port)
                held_port = self._ports_of(held)
                wants_vc = self.head[port][vc] & candidates.any()
                if self._vc_split:  # the staged head is granted or dropped this cycle
                    wants_vc = wants_vc & ~vc_stageds[port][vc]
                if self._split:
                    # two credits or more on the held output VC, registered like held_ready
                    held_two = Signal(name=f"held_two_{port}_{vc}")
                    seconds.append((port, vc, held, chosen, held_two))
                    again = self.more[port][vc] & held_two & ~self.tail[port][vc]
                    requests.append(
                        self.valid[port][vc] & held_ready & (~stageds[port][vc] | again)
                    )
                    vc_requests.append(self.valid[port][vc] & ~holding & wants_vc)
                    wanted.append(held)
                    ports.append(held_port)
                elif self._pipelined:
                    requests.append(self.valid[port][vc] & held_ready)
                    vc_requests.append(self.valid[port][vc] & ~holding & wants_vc)
                    wanted.append(held)
                    ports.append(held_port)
                else:
                    # a head at its front holds nothing, and one that holds nothing has ``held``
                    # and ``held_ready`` zero: ORs, not multiplexers on ``held.any()`` (which
                    # synthesis then also sees never set the bits of ``held`` no head chooses).
                    # The port's gate stays off ``usable`` (``cand_port`` may come before it);
                    # ``~held_ready`` keeps a head bit inside a packet from adding a port
                    requests.append(self.valid[port][vc] & (held_ready | wants_vc))
                    wanted.append(
                        _signal(m, held | (chosen & wants_vc.replicate(n_ovc)), f"want_{port}_{vc}")
                    )
                    new_head = self.head[port][vc] & ~held_ready
                    ports.append(
                        _signal(
                            m,
                            held_port | (cand_port & new_head.replicate(n_ports)),
                            f"want_port_{port}_{vc}",
                        )
                    )
                targets.append(
                    (port, vc, held, held_ready, wanted[-1] if not self._pipelined else chosen)
                )
            requesters.append((_signal(m, Cat(*requests), f"requests_{port}"), wanted, ports))
            if self._pipelined:
                vc_requesters.append(
                    (_signal(m, Cat(*vc_requests), f"va_requests_{port}"), chosens, cand_ports)
                )

        if self._split:
            pops, picks, grants, out_vcs, releases = self._two_cycles(
                m, requesters, stageds, "", switch=True
            )[:5]
        else:
            pops, picks, grants, out_vcs = self._separable(m, requesters, "")
        for out, grant in grants.items():
            base, n = self._base[out], self._out_vcs[out]
            m.d.comb += [
                self.grant[out].eq(grant),
                self.vc[out].eq(one_hot_index(out_vcs[out], len(self.vc[out]))),
            ]
            if self._pipelined:
                m.d.comb += self.send[base : base + n].eq(out_vcs[out])
            if self._split:
                m.d.comb += self.release[base : base + n].eq(releases[out])
        for port in range(n_ports):
            m.d.comb += [self.pop[port].eq(pops[port]), self.pick[port].eq(picks[port])]

        # the input VCs whose head acquires an output VC this cycle: in VC allocation when it
        # is a cycle of its own, else when the head crosses
        if self._vc_split:
            acquires, _, _, va_out_vcs, _, vc_targets = self._two_cycles(
                m, vc_requesters, vc_stageds, "va_", still=self.free, switch=False
            )
            # a head acquires the output VC its port staged, not the one it would choose now
            targets = [
                (port, vc, held, ready, vc_targets[port])
                for port, vc, held, ready, _wanted in targets
            ]
            seconds = [
                (port, vc, held, vc_targets[port], two) for port, vc, held, _chosen, two in seconds
            ]
        elif self._pipelined:
            acquires = self._separable(m, vc_requesters, "va_")[0]
        else:
            acquires = [
                Cat(*(pops[port][vc] & self.head[port][vc] for vc in range(n)))
                for port, n in enumerate(self._in_vcs)
            ]
        # the straight bypass: per input VC, (bypasses, takes an output VC, the one it takes)
        bypasses = self._bypass(m, requesters, targets, usable) if self._straight else {}
        if self._vc_split:
            # per output port the granted staged head's output VC, if it is still free: the
            # same as each input VC's acquisition below, two levels of gates sooner
            m.d.comb += self.acquire.eq(Cat(*va_out_vcs) & self.free)
        elif self._pipelined:
            acquired = 0
            for port, vc, _held, _ready, wanted in targets:
                acquired = acquired | (wanted & acquires[port][vc].replicate(n_ovc))
            m.d.comb += self.acquire.eq(acquired)

        for port, select in enumerate(selects):
            if select is None:
                continue
            taken = 0
            for p, vc, _held, _ready, wanted in targets:
                if p == port:
                    taken = taken | (wanted & acquires[port][vc].replicate(n_ovc))
            taken = _signal(m, taken, f"taken_{port}")
            if self._selection == "random":
                with m.If(taken.any()):  # zfabric.router_settings.lfsr_step
                    m.d.sync += select.eq((select >> 1) ^ Mux(select[0], LFSR_TAPS, 0))
                continue
            with m.If(taken.any()):
                m.d.sync += select.eq(
                    after(
                        Cat(
                            *(
                                taken[self._base[o] : self._base[o] + n].any()
                                for o, n in enumerate(self._out_vcs)
                            )
                        )
                    )
                )
        # ``held_ready`` of the next cycle. Only an output VC's owner sends on it, so a holder's
        # credit drops only when it pops itself. A head acquiring in VC allocation sends
        # nothing on its new output VC this cycle; one acquiring at traversal sends its head
        for port, vc, held, held_ready, wanted in targets:
            pop, acquire = self.pop[port][vc], acquires[port][vc]
            release = pop & self.tail[port][vc]
            if (port, vc) in bypasses:  # a bypassing flit spends, takes and releases as a pop
                crossed, taken, taking = bypasses[port, vc]
                pop = pop | crossed
                wanted = Mux(crossed, taking, wanted)
                acquire = acquire | taken
                release = release | (crossed & self.link_tail[port])
            # at traversal (no bypass) a pop is the only change: a head's acquires ``wanted``, a
            # body's leaves ``wanted`` equal to ``held``, a tail's releases. ``held_ready`` is
            # then one multiplexer on ``pop``, the latest signal, rather than a set and a reset
            # behind it (the clock it gives: docs/design/router-measurements.md)
            on_pop = not self._pipelined and (port, vc) not in bypasses
            if on_pop:
                m.d.sync += held_ready.eq(
                    Mux(
                        pop,
                        ~self.tail[port][vc] & (wanted & self.spare).any(),
                        (held & self.spare).any() | held_ready,
                    )
                )
            else:
                m.d.sync += held_ready.eq((held & self.spare).any() | (held_ready & ~pop))
            with m.If(acquire):  # a head that acquires takes one output VC
                m.d.sync += held.eq(wanted)
                if not on_pop:
                    spent = self.spare | self.ready if self._pipelined else self.spare
                    m.d.sync += held_ready.eq((wanted & spent).any())
                if self._pipelined:
                    m.d.sync += holdings[port, vc].eq(1)
            with m.If(release):
                m.d.sync += held.eq(0)
                if not on_pop:
                    m.d.sync += held_ready.eq(0)
                if self._pipelined:
                    m.d.sync += holdings[port, vc].eq(0)
        for port, vc, held, chosen, held_two in seconds:
            pop = self.pop[port][vc]
            m.d.sync += held_two.eq(Mux(pop, (held & self.spare2).any(), (held & self.keep2).any()))
            with m.If(acquires[port][vc]):  # it sends nothing on it this cycle
                m.d.sync += held_two.eq((chosen & self.keep2).any())
            with m.If(pop & self.tail[port][vc]):
                m.d.sync += held_two.eq(0)
        return m

    def _two_cycles(
        self,
        m: Module,
        requesters: list,
        stageds: list,
        prefix: str,
        *,
        switch: bool,
        still: Value | None = None,
    ) -> tuple:
        """Allocation over two cycles (``split``, ``vc_split``): each input port's round-robin
        pick among ``requesters`` (as in :meth:`_separable`; the arbiters here, input and
        output, are :func:`matrix_round_robin`'s) goes into its staged registers
        (``stageds``, and the output VC it wants) and its pointer moves past it; the output
        ports grant among the staged picks of the previous cycle. With ``still``, a granted
        pick whose output VC is not in it is dropped (after the arbiter: a request path as
        short as without). Names start with ``prefix``. Returns what
        :meth:`_separable` does, ``pick`` being the staged pick, then per input port the output
        VC its staged pick wants (one-hot). Only for ``switch`` allocation are the crossbar's
        grants and the releases built; the output VCs granted (before ``still``) are VC
        allocation's acquisitions."""
        n_ports, n_ovc = len(self._in_vcs), sum(self._out_vcs)
        targets = []  # per input port: the output VC its staged pick wants, one-hot
        target_ports = []  # per input port: the output port its staged pick wants, one-hot
        for port, ((requests, wanted, ports), staged) in enumerate(
            zip(requesters, stageds, strict=True)
        ):
            n = len(wanted)
            pick = matrix_round_robin(m, requests, f"{prefix}in_rr_{port}")
            target, target_port = 0, 0
            for vc in range(n):
                target = target | (wanted[vc] & pick[vc].replicate(n_ovc))
                target_port = target_port | (ports[vc] & pick[vc].replicate(n_ports))
            staged_target = Signal(n_ovc, name=f"{prefix}staged_target_{port}")
            staged_port = Signal(n_ports, name=f"{prefix}staged_port_{port}")
            m.d.sync += [staged.eq(pick), staged_target.eq(target), staged_port.eq(target_port)]
            targets.append(staged_target)
            target_ports.append(staged_port)
        # per input port: the staged pick is a tail (its front, registered in the input unit)
        tails = [
            _signal(m, (staged & self.tail[port][: len(staged)]).any(), f"staged_tail_{port}")
            for port, staged in enumerate(stageds)
            if switch
        ]
        granted = [Const(0, 1)] * n_ports
        grants, releases = {}, [0] * n_ports
        out_vcs = [Const(0, n) for n in self._out_vcs]
        for out in range(n_ports):
            inputs = [p for p in range(n_ports) if (p, out) in self._turns]
            if not inputs:
                continue
            base, n_vcs = self._base[out], self._out_vcs[out]
            wants = Cat(*(target_ports[p][out] for p in inputs))
            grant = matrix_round_robin(m, wants, f"{prefix}out_rr_{out}")
            spread = [Const(0, 1)] * n_ports
            for i, port in enumerate(inputs):
                granted[port] = granted[port] | grant[i]
                spread[port] = grant[i]
                target = targets[port][base : base + n_vcs]
                out_vcs[out] = out_vcs[out] | (target & grant[i].replicate(n_vcs))
                if switch:
                    releases[out] = releases[out] | (
                        target & (grant[i] & tails[port]).replicate(n_vcs)
                    )
            if switch:
                grants[out] = _signal(m, Cat(*spread), f"{prefix}grant_{out}")
        if still is not None:  # the staged pick's output VC may have gone meanwhile
            granted = [
                grant & _signal(m, (target & still).any(), f"{prefix}staged_live_{port}")
                for port, (grant, target) in enumerate(zip(granted, targets, strict=True))
            ]
        pops = [
            _signal(m, staged & granted[port].replicate(len(staged)), f"{prefix}pop_{port}")
            for port, staged in enumerate(stageds)
        ]
        return pops, stageds, grants, out_vcs, releases, targets

    def _occupancy_pool(self, m: Module, candidates: Value, name: str) -> Value:
        """Occupancy selection's pool: the candidates of the first priority level that has
        one, only its ``low`` ones if it has any. A priority chain of 2 x levels masks, each an
        AND with constants and the ``low`` bits: no comparison between candidates."""
        masks = []
        for level in sorted(set(self._levels)):
            mask = sum(1 << i for i, x in enumerate(self._levels) if x == level)
            masks += [candidates & self.low & mask, candidates & mask]
        pool = _signal(m, masks[-1], f"{name}_{len(masks) - 1}")
        for i in reversed(range(len(masks) - 1)):
            option = _signal(m, masks[i], f"{name}_{i}")
            pool = _signal(m, Mux(option.any(), option, pool), f"{name}_then_{i}")
        return pool

    def _bypass(self, m: Module, requesters: list, targets: list, usable: Value) -> dict:
        """The straight bypass's decisions (docs/microarchitecture.md, *Straight bypass*), all
        on start-of-cycle state: per output port whether some input VC requests it (the OR of
        the requests the output arbiters read), then per straight input VC whether the
        arriving flit crosses. Drives ``bypass`` and ``bypass_vc``; returns, per input VC that
        may bypass, (it crosses, it is a head taking an output VC, that output VC one-hot)."""
        n_ovc = sum(self._out_vcs)
        asked = self._asked(requesters)
        held_of = {(port, vc): (held, ready) for port, vc, held, ready, _ in targets}
        result, taken_vcs = {}, 0
        for port, o in enumerate(self._straight):
            if o < 0:
                continue
            span = Const(((1 << self._out_vcs[o]) - 1) << self._base[o], n_ovc)
            quiet = _signal(m, ~asked[o], f"unasked_{o}")
            # a head's output VC: its lowest usable candidate on the straight output
            chosen = lowest_one(m, self.link_cand[port] & usable & span, f"straight_{port}")
            crossing = []
            for vc in range(self._in_vcs[port]):
                held, held_ready = held_of[port, vc]
                here = _signal(
                    m, self.arriving[port][vc] & ~self.valid[port][vc] & quiet, f"here_{port}_{vc}"
                )
                head = _signal(
                    m, here & self.link_head[port] & chosen.any(), f"by_head_{port}_{vc}"
                )
                body = ~self.link_head[port] & held_ready & (held & span).any()
                crossed = _signal(m, head | (here & body), f"bypass_{port}_{vc}")
                crossing.append(crossed)
                taking = _signal(m, Mux(head, chosen, held & span), f"bypass_vc_{port}_{vc}")
                taken_vcs = taken_vcs | (taking & crossed.replicate(n_ovc))
                result[port, vc] = (crossed, head, chosen)
            m.d.comb += self.bypass[port].eq(Cat(*crossing))
        m.d.comb += self.bypass_vc.eq(taken_vcs)
        return result

    def _asked(self, requesters: list) -> list[Value]:
        """Per output port: some input VC requests it this cycle (step 2)."""
        asked = [Const(0, 1)] * len(self._in_vcs)
        for requests, _wanted, ports in requesters:
            for vc, port_bits in enumerate(ports):
                for o in range(len(asked)):
                    asked[o] = asked[o] | (requests[vc] & port_bits[o])
        return asked

    def _ports_of(self, out_vcs: Value) -> Value:
        """The output ports (one bit each) that have a bit of ``out_vcs`` among their VCs."""
        spans = zip(self._base, self._out_vcs, strict=True)
        return Cat(*(out_vcs[b : b + n].any() for b, n in spans))

    def _random_mask(self, m: Module, pool, lfsr, name: str) -> Value:
        """``random`` selection: the round-robin mask starting at the drawn one of ``pool``'s
        output ports (:func:`zfabric.router_settings.random_pick`: the LFSR's low 8 bits modulo
        their number, counted in ascending port order), so that its lowest VC in the pool wins."""
        ports = _signal(
            m,
            Cat(*(pool[b : b + n].any() for b, n in zip(self._base, self._out_vcs, strict=True))),
            f"{name}_ports",
        )
        count = _signal(m, sum(ports[o] for o in range(len(ports))), f"{name}_count")
        rank = _signal(m, lfsr[:8] % Mux(count == 0, 1, count), f"{name}_rank")
        drawn = [ports[o] & (sum(ports[i] for i in range(o)) == rank) for o in range(len(ports))]
        # the thermometer: every port at or after the drawn one
        thermometer = Cat(*(Cat(*drawn[: o + 1]).any() for o in range(len(ports))))
        return _signal(m, self._per_port(thermometer), f"{name}_mask")

    def _per_port(self, bits) -> Value:
        """An output-port vector spread over each port's output VCs."""
        return Cat(*(bits[o].replicate(n) for o, n in enumerate(self._out_vcs)))

    def _separable(self, m: Module, requesters: list, prefix: str) -> tuple:
        """Input-first separable allocation of ``requesters`` (per input port: the requesting
        VCs and, per VC, the one-hot output VC and output port it wants) on round-robin
        pointers of its own,
        named with ``prefix``: input pointers over VCs, output pointers over input ports, each
        moved past its grant at the end of the cycle. Returns, per input port, the granted VC
        (``pop``) and the picked one (``pick``), and per output port the granted input and
        the granted output VC (one-hot each; a dict by output port, only the reachable ones).
        The pointers are :class:`Precedence` pairs, read by every iteration alike."""
        n_ports, n_ovc = len(self._in_vcs), sum(self._out_vcs)
        in_orders = [Precedence(n, f"{prefix}in_rr_{port}") for port, n in enumerate(self._in_vcs)]
        out_orders = {}
        for out in range(n_ports):
            inputs = [p for p in range(n_ports) if (p, out) in self._turns]
            if inputs:
                out_orders[out] = Precedence(len(inputs), f"{prefix}out_rr_{out}")
        matched_in = [Const(0, 1)] * n_ports  # input ports granted by an earlier iteration
        matched_out = [Const(0, 1)] * n_ports  # output ports that granted in an earlier one
        picks = [[] for _ in range(n_ports)]  # per input port, per iteration: (pick, granted)
        grants = [0] * n_ports  # per output port: one-hot over all input ports
        out_vcs = [0] * n_ports  # per output port: the granted flit's output VC, one-hot
        for it in range(self._iterations):
            taken = Cat(*matched_out)
            picked = []  # per input port: the picked VC's output VC, one-hot
            picked_ports = []  # per input port: the picked VC's output port, one-hot
            for port, (requests, wanted, ports) in enumerate(requesters):
                open_requests = requests
                if it:
                    open_requests = Cat(
                        *(requests[vc] & ~(ports[vc] & taken).any() for vc in range(len(wanted)))
                    ) & ~matched_in[port].replicate(len(wanted))
                pick = in_orders[port].grant(m, open_requests, f"{prefix}pick_{port}_{it}")
                target, target_port = 0, 0
                for vc in range(len(wanted)):
                    target = target | (wanted[vc] & pick[vc].replicate(n_ovc))
                    target_port = target_port | (ports[vc] & pick[vc].replicate(n_ports))
                picked.append(_signal(m, target, f"{prefix}picked_{port}_{it}"))
                picked_ports.append(_signal(m, target_port, f"{prefix}picked_port_{port}_{it}"))
                picks[port].append(pick)
            granted = [Const(0, 1)] * n_ports
            for out, order in out_orders.items():
                base, n_vcs = self._base[out], self._out_vcs[out]
                inputs = [p for p in range(n_ports) if (p, out) in self._turns]
                wants = Cat(*(picked_ports[p][out] for p in inputs))
                grant = order.grant(m, wants, f"{prefix}grant_{out}_{it}")
                for i, port in enumerate(inputs):
                    out_vcs[out] = out_vcs[out] | (
                        picked[port][base : base + n_vcs] & grant[i].replicate(n_vcs)
                    )
                    granted[port] = granted[port] | grant[i]
                spread = [Const(0, 1)] * n_ports
                for i, port in enumerate(inputs):
                    spread[port] = grant[i]
                grants[out] = grants[out] | Cat(*spread)
                matched_out[out] = matched_out[out] | wants.any()
            for port in range(n_ports):
                picks[port][it] = (picks[port][it], granted[port])
                matched_in[port] = matched_in[port] | granted[port]

        grant_signals = {}  # only the output ports some input can reach
        for out, order in out_orders.items():
            grant = grant_signals[out] = _signal(m, grants[out], f"{prefix}grant_{out}")
            inputs = [p for p in range(n_ports) if (p, out) in self._turns]
            # some input wanted it: it granted one
            order.move(m, Cat(*(grant[p] for p in inputs)), matched_out[out])

        pops, pick_signals = [], []
        for port, iterations in enumerate(picks):
            pop, pick = 0, iterations[-1][0]
            for it_pick, it_granted in iterations:
                pop = pop | (it_pick & it_granted.replicate(len(it_pick)))
            for it_pick, it_granted in reversed(iterations[:-1]):
                pick = Mux(it_granted, it_pick, pick)
            pops.append(_signal(m, pop, f"{prefix}pop_{port}"))
            pick_signals.append(pick)
            in_orders[port].move(m, pick, matched_in[port])
        return pops, pick_signals, grant_signals, out_vcs


def indexed_mux(index: Value, values: list[Value]) -> Value:
    """``values[index]`` as a tree of 2:1 multiplexers, one level per bit of ``index`` (an
    index past the end reads one of the values). Each is a continuous assignment in the Verilog,
    where ``Array`` indexing gives an ``always @*`` block: with no time-0 event for it (Icarus
    ``-g2012`` on Amaranth's own Verilog) that block holds x until an input changes (the first
    flit an input unit read came out x)."""
    if not values or len(values) > 1 << len(index):
        raise ValueError(f"{len(values)} values need an index of more than {len(index)} bits")
    level = list(values)
    for bit in index:
        level = [
            Mux(bit, level[i + 1], level[i]) if i + 1 < len(level) else level[i]
            for i in range(0, len(level), 2)
        ]
    (value,) = level
    return value
