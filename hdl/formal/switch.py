"""A switch between environments that obey the link protocol, and the properties it must keep.

The harness treats the switch as a black box behind its links (docs/microarchitecture.md), so
the same properties hold for every ``router:`` setting and survive any rewrite of its insides.

Environment (assumptions, on free inputs the solver chooses every cycle):

- **Upstream senders**, one per input port: a flit on VC ``v`` only while the sender holds a
  credit for ``v`` (``B`` at reset, one per flit, one back per credit pulse); packets well
  formed per VC (a head or single opens, body flits continue, a tail or single closes); a head
  carries a routing head this input can see (:func:`arrivals`, from the plan's routing function).
- **Downstream receivers**, one per output port: a buffer of ``B`` per VC that drains whenever
  the solver likes (a credit pulse only for a flit it holds), so outputs may stall for ever.

Every flit leaves its sender tagged, in its data bits, with its input port, VC, its sequence
number on that VC and, on a head, its routing head; the solver picks the rest of the data.

Properties (assertions):

1. *Credits.* No receiver buffer ever holds more than ``B`` flits (the switch spends only
   credits it has), and no sender ever holds more than ``B`` credits (the switch returns a
   credit only for a flit it took): together, credit conservation on both sides of every link.
2. *Buffers.* The switch's input buffers never overflow (its sticky ``overflow`` stays low).
3. *Exactly once, in order, unmodified.* The flits of each input VC leave in the order they
   came, none skipped or repeated (sequence numbers), and one flit the solver picks (any port,
   VC and cycle) leaves with every bit but the routing head as it came.
4. *Wormhole.* On each output VC a head opens a packet, and until its tail every flit is the
   next flit of the same input VC: one packet at a time, contiguous, whole.
5. *Routing.* A head leaves on an output VC the routing function offers for its input and
   routing head, carrying the routing head the function gives the next switch.

Covers show the properties are not vacuous: a packet crosses, two inputs contend for one
output VC, and an output VC carries a second packet after a first one's tail.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from zfabric.plan import PlanView
from zfabric.routing import make_routing

from ..flit import FlitKind
from ..switch import Switch

__all__ = ["arrivals", "SwitchHarness", "tag_width"]

#: bits of the per-VC flit sequence number: more than any count of flits a VC holds in flight
SEQ_BITS = 4


def arrivals(view: PlanView, switch: int) -> dict[tuple[int, int], dict[int, tuple]]:
    """Per (input port, input VC) of ``switch``: every routing head a packet can bring there,
    with the routing function's decision (candidate (port, VC) pairs, next head)."""
    routing = make_routing(view)
    plan = view.plan
    found: dict[tuple[int, int], dict[int, tuple]] = {}
    n = len(plan.endpoints)
    for dst in range(n):
        stack = [
            (inj.switch, inj.port, 0, inj.head)
            for src in range(n)
            if src != dst
            for inj in routing.injections(src, dst)
        ]
        seen = set()
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            s, p, v, head = state
            decision = routing.route(s, p, v, head)
            if s == switch:
                candidates = tuple((hop.port, w) for hop in decision.hops for w in hop.vcs)
                found.setdefault((p, v), {})[head] = (candidates, decision.head)
            for hop in decision.hops:
                link = view.out_link[s][hop.port]
                if link is not None:
                    stack.extend((link.dst.switch, link.dst.port, w, decision.head) for w in hop.vcs)
    return found


def tag_width(n_ports: int, max_vcs: int, head_width: int) -> int:
    """Data bits the tag needs: input port, VC, sequence number and the head's routing head."""
    return (
        max(1, (n_ports - 1).bit_length())
        + max(1, (max_vcs - 1).bit_length())
        + SEQ_BITS
        + head_width
    )


class SwitchHarness(wiring.Component):
    """``plan``'s switch ``switch`` with its environment and properties (module docstring).

    Members (all free inputs: the solver drives them)
    -------
    send<p> : valid, VC, kind and the untagged data bits of the flit sender ``p`` offers
    drain<p> : per VC, whether receiver ``p`` frees a slot this cycle
    watch : pick the flit sent this cycle as the one whose bits property 3 follows
    """

    def __init__(self, plan, switch: int):
        self._plan = plan
        self._view = view = PlanView(plan)
        self._switch = switch
        self.dut = Switch.from_plan(plan, switch)
        self._ports = ports = self.dut.ports
        self._arrivals = arrivals(view, switch)
        layout = self.dut._flit_layout
        self._layout = layout
        self._port_bits = max(1, (ports.n_ports - 1).bit_length())
        self._vc_bits = max(1, (max(ports.vcs) - 1).bit_length())
        need = layout.head_width + tag_width(ports.n_ports, max(ports.vcs), layout.head_width)
        if layout.payload_width < need:
            raise ValueError(
                f"the harness tags flits in {need} payload bits; the plan's flit_width is "
                f"{layout.payload_width}"
            )
        members = {}
        for p, n_vcs in enumerate(ports.vcs):
            members[f"send{p}_valid"] = In(1)
            members[f"send{p}_vc"] = In(range(n_vcs)) if n_vcs > 1 else In(1)
            members[f"send{p}_kind"] = In(2)
            members[f"send{p}_data"] = In(layout.payload_width)
            members[f"drain{p}"] = In(n_vcs)
        members["watch"] = In(1)
        super().__init__(members)

    def _tag(self, port: int, vc, seq, head):
        """The tag above the routing head: input port, VC, sequence number, routing head."""
        return Cat(Const(port, self._port_bits), vc, seq, head)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        ports, layout = self._ports, self._layout
        depth = self._plan.buffer_depth
        hw = layout.head_width
        tag_bits = tag_width(ports.n_ports, max(ports.vcs), hw)

        # -- upstream senders ------------------------------------------------------------------
        seq_in = {}  # (p, v) -> sequence number of the next flit sent
        watched = Signal(layout.payload_width + 2)  # kind and payload of the watched flit
        watched_src = Signal(self._port_bits + self._vc_bits + SEQ_BITS)
        watching = Signal()
        for p, n_vcs in enumerate(ports.vcs):
            valid = getattr(self, f"send{p}_valid")
            vc = getattr(self, f"send{p}_vc")
            kind = getattr(self, f"send{p}_kind")
            free = getattr(self, f"send{p}_data")
            link = dut.i(p)
            seq = Signal(SEQ_BITS, name=f"seq_in{p}")
            vc_tag = Signal(self._vc_bits, name=f"vc_in{p}")
            m.d.comb += vc_tag.eq(vc)
            head = free[:hw]
            payload = Signal(layout.payload_width, name=f"payload_in{p}")
            for v in range(n_vcs):
                credit = Signal(range(depth + 2), init=depth, name=f"sender_credit{p}_{v}")
                in_packet = Signal(name=f"sender_open{p}_{v}")
                seq_v = Signal(SEQ_BITS, name=f"seq_in{p}_{v}")
                seq_in[p, v] = seq_v
                sent = valid & (vc == v)
                m.d.sync += credit.eq(credit - sent + link.credit[v])
                m.d.comb += Assert(credit <= depth)  # property 1: no credit the switch lacks
                m.d.comb += Assume(~sent | (credit > 0))
                with m.If(sent):
                    m.d.sync += [in_packet.eq(~kind[1]), seq_v.eq(seq_v + 1)]
                    m.d.comb += Assume(kind[0] == ~in_packet)
                    heads = self._arrivals.get((p, v), {})
                    m.d.comb += Assume(
                        ~kind[0] | (Const(0, 1) if not heads else _any(head == h for h in heads))
                    )
                with m.If(vc == v):
                    m.d.comb += seq.eq(seq_v)
            if n_vcs == 1:
                m.d.comb += Assume(vc == 0)
            # the tag rides above the routing head; a head's own routing head is copied into it
            m.d.comb += payload.eq(
                Cat(
                    free[:hw],
                    self._tag(p, vc_tag, seq, Mux(kind[0], head, free[hw : 2 * hw])),
                    free[hw + tag_bits :],
                )
            )
            m.d.comb += [
                link.flit.valid.eq(valid),
                link.flit.payload.kind.eq(kind),
                link.flit.payload.vc.eq(vc),
                link.flit.payload.payload.eq(payload),
            ]
            with m.If(valid & self.watch & ~watching):
                m.d.sync += [
                    watching.eq(1),
                    watched.eq(Cat(kind, payload)),
                    watched_src.eq(Cat(Const(p, self._port_bits), vc_tag, seq)),
                ]

        # -- downstream receivers and the checks on every output VC ----------------------------
        seq_out = {key: Signal(SEQ_BITS, name=f"seq_out{key[0]}_{key[1]}") for key in seq_in}
        reallocated = []
        for o, n_vcs in enumerate(ports.vcs):
            link = dut.o(o)
            flit = link.flit.payload
            kind = flit.kind.as_value()
            data = flit.payload
            tag = data[hw : hw + tag_bits]
            src_port = tag[: self._port_bits]
            src_vc = tag[self._port_bits : self._port_bits + self._vc_bits]
            seq = tag[self._port_bits + self._vc_bits :][:SEQ_BITS]
            orig_head = tag[self._port_bits + self._vc_bits + SEQ_BITS :]
            for w in range(n_vcs):
                held = Signal(range(depth + 2), name=f"receiver_held{o}_{w}")
                arrive = link.flit.valid & (flit.vc == w)
                drain = getattr(self, f"drain{o}")[w] & (held > 0)
                m.d.comb += link.credit[w].eq(drain)
                m.d.sync += held.eq(held + arrive - drain)
                if not ports.local[o]:
                    m.d.comb += Assert(held <= depth)  # property 1
                # property 4: wormhole, one packet per output VC at a time
                open_ = Signal(name=f"open{o}_{w}")
                owner = Signal(self._port_bits + self._vc_bits, name=f"owner{o}_{w}")
                # covers: a second packet on this output VC, from another input VC
                packets = Signal(2, name=f"packets{o}_{w}")
                first = Signal.like(owner, name=f"first_owner{o}_{w}")
                with m.If(arrive):
                    m.d.comb += Assert(kind[0] == ~open_)
                    with m.If(open_):
                        m.d.comb += Assert(owner == Cat(src_port, src_vc))
                    m.d.sync += [open_.eq(~kind[1]), owner.eq(Cat(src_port, src_vc))]
                    with m.If(kind[0] & (packets == 0)):
                        m.d.sync += [packets.eq(1), first.eq(Cat(src_port, src_vc))]
                    with m.If(kind[0] & (packets == 1) & (first != Cat(src_port, src_vc))):
                        m.d.sync += packets.eq(2)
                reallocated.append(packets == 2)
                # property 5: the head's output VC and next routing head are the function's
                with m.If(arrive & kind[0]):
                    allowed = []
                    for (p, v), heads in self._arrivals.items():
                        for h, (candidates, next_head) in heads.items():
                            if (o, w) in candidates:
                                allowed.append(
                                    (src_port == p)
                                    & (src_vc == v)
                                    & (orig_head == h)
                                    & (data[:hw] == next_head)
                                )
                    m.d.comb += Assert(_any(allowed) if allowed else Const(0, 1))
            # property 3: per input VC, flits leave in order, none lost or repeated
            with m.If(link.flit.valid):
                for (p, v), expect in seq_out.items():
                    with m.If((src_port == p) & (src_vc == v)):
                        m.d.comb += Assert(seq == expect)
                        m.d.sync += expect.eq(expect + 1)
                with m.If(watching & (tag[: len(watched_src)] == watched_src)):
                    # every bit but the routing head of a head flit, which switches rewrite
                    same_kind = kind == watched[:2]
                    body = data[hw:] == watched[2 + hw :]
                    low = kind[0] | (data[:hw] == watched[2 : 2 + hw])
                    m.d.comb += Assert(same_kind & body & low)
        # sequence numbers in flight per input VC never wrap around the counter
        for key, expect in seq_out.items():
            m.d.comb += Assert((seq_in[key] - expect)[:SEQ_BITS] <= depth + 2)
        m.d.comb += Assert(~dut.overflow)  # property 2

        # covers: not vacuous
        crossed = Signal()
        for o in range(ports.n_ports):
            link = dut.o(o)
            with m.If(link.flit.valid & link.flit.payload.kind.as_value()[1]):
                m.d.sync += crossed.eq(1)
        m.d.comb += Cover(crossed)
        m.d.comb += Cover(_any(reallocated))
        return m


def _any(values) -> Signal:
    out = Const(0, 1)
    for value in values:
        out = out | value
    return out
