"""Synthesizable traffic generator and checker for one endpoint, and the packet format they share.

Packet streams
--------------
Both sit on the endpoint packet streams of ``hdl/endpoint.py`` (DESIGN.md, Endpoint), one beat
per flit:

- into the fabric, ``stream.Signature(packet_in_layout(flit_width, dst_width))``:
  ``data`` (``flit_width`` bits), ``dst`` (the destination endpoint id, read on the first beat),
  ``first``, ``last``; with backpressure (``ready``);
- out of the fabric, ``stream.Signature(packet_out_layout(flit_width, dst_width),
  always_ready=True)``: ``data``, ``first``, ``last``, ``src`` (the source endpoint id); the
  checker always takes (holding ``ready`` high).

Every beat's ``data`` arrives whole: the routing head rides in bits of its own beside it.

Packet format
-------------
Every packet is ``packet_length`` beats. A **tag** of ``dst | src | seq | timestamp`` (LSB
first: ``dst`` in the lowest bits) is spread over the low bits of the beats, beat by beat,
as far as it needs. The other data bits are
**fill**, a pseudo-random function of the tag: with a 32-bit xorshift state ``s`` starting at
``FILL_SEED``, beat ``k`` mixes its own tag chunk in (``s ^= fold32(chunk_k)``), fills its free
bits from ``expand(s)`` (the same bit positions), then steps ``s = xorshift32(s)``. So any
corrupted bit, tag or fill, shows as a fill mismatch in its own beat or a later one, or as a
wrong ``dst``/``seq``.

- ``seq`` counts packets per (source, destination) flow, modulo ``2**seq_bits``;
- ``timestamp`` is the global cycle count (modulo ``2**timestamp_bits``) of the packet's
  creation cycle: two cycles after the generator's decision, when its head is presented, or
  presented right after the previous packet's tail if that still waits in the generator's
  output stage (a source queue); the checker's latency is the cycle its tail is delivered
  minus that, so it matches the model's creation-to-delivery latency
  (docs/microarchitecture.md: ``2H + L + 2`` at zero load).

:class:`PacketFormat` is the bit-exact Python model of this format (``encode`` / ``decode``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from zfabric.sim.traffic import TrafficConfig, destination_function

__all__ = [
    "ErrorKind",
    "PacketFormat",
    "TrafficSettings",
    "Generator",
    "Checker",
    "IdealNetwork",
    "FaultInjector",
    "packet_in_layout",
    "packet_out_layout",
    "ORDERED_ROUTINGS",
]

#: routings that deliver every (source, destination) flow in order over one path
ORDERED_ROUTINGS = ("dor", "dort")

#: patterns the generator draws in hardware; the permutations come from ``zfabric.sim.traffic``
RANDOM_PATTERNS = ("uniform", "hotspot")
FIXED_PATTERNS = ("transpose", "bit-reversal", "bit-complement", "shuffle", "tornado", "neighbour")

FILL_SEED = 0x2545F491
_MASK32 = 0xFFFFFFFF


class ErrorKind:
    """Bits of a checker's ``error_kinds``."""

    DEST = 1  # the packet's tag names another endpoint
    DATA = 2  # a fill bit differs from what the tag predicts
    SEQ = 4  # the flow's sequence number skipped or went back (ordered routing only)
    FRAME = 8  # wrong length, a head inside a packet, or a body outside one

    NAMES = {DEST: "dest", DATA: "data", SEQ: "seq", FRAME: "frame"}

    @classmethod
    def describe(cls, mask: int) -> list[str]:
        return [name for bit, name in cls.NAMES.items() if mask & bit]


def packet_in_layout(flit_width: int, dst_width: int) -> data.StructLayout:
    """A beat into the fabric: ``data``, ``dst``, ``first``, ``last`` (``zfabric.hdl.endpoint``)."""
    return data.StructLayout(
        {"data": unsigned(flit_width), "dst": unsigned(dst_width), "first": 1, "last": 1}
    )


def packet_out_layout(flit_width: int, src_width: int) -> data.StructLayout:
    """A beat out of the fabric: ``data``, ``first``, ``last``, ``src``
    (``zfabric.hdl.endpoint``)."""
    return data.StructLayout(
        {"data": unsigned(flit_width), "first": 1, "last": 1, "src": unsigned(src_width)}
    )


# -- the fill function: Python model and Amaranth, kept side by side ---------------------------


def _xorshift32(x: int) -> int:
    x ^= (x << 13) & _MASK32
    x ^= x >> 17
    x ^= (x << 5) & _MASK32
    return x


def _fold32(x: int, width: int) -> int:
    out = 0
    for lo in range(0, width, 32):
        out ^= (x >> lo) & _MASK32
    return out


def _expand(state: int, width: int) -> int:
    """``width`` bits from a 32-bit state: the state, then rotations of it."""
    out, have, rotation = 0, 0, 0
    while have < width:
        rotated = (
            ((state << rotation) | (state >> (32 - rotation))) & _MASK32 if rotation else state
        )
        out |= rotated << have
        have += 32
        rotation = (rotation + 11) % 32
    return out & ((1 << width) - 1)


def _hw_xorshift32(x: Value) -> Value:
    x = (x ^ (x << 13))[:32]
    x = x ^ (x >> 17)
    return (x ^ (x << 5))[:32]


def _hw_fold32(x: Value) -> Value:
    out = Const(0, 32)
    for lo in range(0, len(x), 32):
        out = out ^ x[lo : lo + 32]
    return out


def _hw_expand(state: Value, width: int) -> Value:
    parts, have, rotation = [], 0, 0
    while have < width:
        parts.append(state.rotate_left(rotation))
        have += 32
        rotation = (rotation + 11) % 32
    return Cat(*parts)[:width]


class PacketFormat:
    """Where the tag and the fill sit in a packet, and a bit-exact model of both.

    Parameters
    ----------
    n_endpoints : int
    flit_width : int
    packet_length : int
        Beats (flits) per packet.
    seq_bits, timestamp_bits : int
    """

    def __init__(
        self,
        *,
        n_endpoints: int,
        flit_width: int,
        packet_length: int,
        seq_bits: int = 8,
        timestamp_bits: int = 16,
    ):
        for name, value, low in (
            ("n_endpoints", n_endpoints, 2),
            ("flit_width", flit_width, 1),
            ("packet_length", packet_length, 1),
            ("seq_bits", seq_bits, 1),
            ("timestamp_bits", timestamp_bits, 1),
        ):
            if not isinstance(value, int) or value < low:
                raise TypeError(f"{name} must be an integer >= {low}, not {value!r}")
        self.n_endpoints = n_endpoints
        self.flit_width = flit_width
        self.packet_length = packet_length
        self.seq_bits = seq_bits
        self.timestamp_bits = timestamp_bits
        self.dst_width = max(1, (n_endpoints - 1).bit_length())
        self.fields = {
            "dst": self.dst_width,
            "src": self.dst_width,
            "seq": seq_bits,
            "timestamp": timestamp_bits,
        }
        self.tag_width = sum(self.fields.values())
        capacity = packet_length * flit_width
        if self.tag_width > capacity:
            raise ValueError(
                f"a packet of {packet_length} x {flit_width}-bit flits carries {capacity} data "
                f"bits; the tag needs {self.tag_width} "
                f"(dst {self.dst_width} + src {self.dst_width} + seq {seq_bits} + timestamp "
                f"{timestamp_bits}): use longer packets, wider flits or fewer seq/timestamp bits"
            )
        #: per beat: (usable data bits, tag bits in it, offset of those in the tag)
        self.beats = []
        offset = 0
        for _ in range(packet_length):
            usable = flit_width
            chunk = min(usable, self.tag_width - offset)
            self.beats.append((usable, chunk, offset))
            offset += chunk

    @classmethod
    def from_plan(cls, plan, **kwargs) -> PacketFormat:
        return cls(
            n_endpoints=len(plan.endpoints),
            flit_width=plan.flit_width,
            packet_length=plan.packet_length,
            **kwargs,
        )

    @property
    def tag_layout(self) -> data.StructLayout:
        return data.StructLayout({name: unsigned(width) for name, width in self.fields.items()})

    def __repr__(self):
        return (
            f"PacketFormat(n_endpoints={self.n_endpoints}, flit_width={self.flit_width}, "
            f"packet_length={self.packet_length}, "
            f"seq_bits={self.seq_bits}, timestamp_bits={self.timestamp_bits})"
        )

    # -- model ---------------------------------------------------------------------------------

    def pack_tag(self, *, dst: int, src: int, seq: int, timestamp: int) -> int:
        values = {"dst": dst, "src": src, "seq": seq, "timestamp": timestamp}
        tag, lo = 0, 0
        for name, width in self.fields.items():
            tag |= (values[name] & ((1 << width) - 1)) << lo
            lo += width
        return tag

    def unpack_tag(self, tag: int) -> dict[str, int]:
        out, lo = {}, 0
        for name, width in self.fields.items():
            out[name] = (tag >> lo) & ((1 << width) - 1)
            lo += width
        return out

    def encode(self, *, dst: int, src: int, seq: int, timestamp: int) -> list[int]:
        """The ``data`` of each beat as the generator sends it (head routing bits zero)."""
        tag = self.pack_tag(dst=dst, src=src, seq=seq, timestamp=timestamp)
        state, beats = FILL_SEED, []
        for usable, chunk, offset in self.beats:
            bits = (tag >> offset) & ((1 << chunk) - 1)
            state ^= _fold32(bits, chunk)
            free = ((1 << usable) - 1) ^ ((1 << chunk) - 1)
            beats.append(bits | (_expand(state, usable) & free))
            state = _xorshift32(state)
        return beats

    def decode(self, beats: list[int]) -> dict[str, int]:
        """The tag fields of a delivered packet; ``ValueError`` if a fill bit is wrong."""
        if len(beats) != self.packet_length:
            raise ValueError(f"expected {self.packet_length} beats, got {len(beats)}")
        tag = 0
        for (_usable, chunk, offset), beat in zip(self.beats, beats, strict=True):
            tag |= (beat & ((1 << chunk) - 1)) << offset
        fields = self.unpack_tag(tag)
        expected = self.encode(**fields)
        for k, (usable, _, _) in enumerate(self.beats):
            mask = (1 << usable) - 1
            if (beats[k] ^ expected[k]) & mask:
                raise ValueError(f"beat {k}: fill mismatch, got {beats[k]:#x}")
        return fields


# -- traffic settings --------------------------------------------------------------------------


@dataclass(frozen=True)
class TrafficSettings:
    """What the generators offer.

    ``rate`` is offered flits per cycle per endpoint, as in ``zfabric.sim.traffic``: an idle
    generator
    starts a packet in a cycle with probability ``rate / packet_length`` (Bernoulli, 16-bit
    threshold). A generator has no source queue: while its packet waits for the fabric it
    creates nothing, so under congestion it offers less than ``rate``.

    ``pattern``: ``uniform`` (any other endpoint; the 8-bit draw is scaled by ``n - 1`` with a
    multiplier, so the spread is uniform to within 1/256), ``hotspot`` (``hotspot_fraction`` of
    packets to a hotspot other than the source, the rest uniform), or one of the fixed patterns
    of ``zfabric.sim.traffic`` (each source has one destination; a source mapped onto itself sends
    nothing).
    """

    pattern: str = "uniform"
    rate: float = 0.2
    hotspots: tuple[int, ...] = (0,)
    hotspot_fraction: float = 0.2
    seq_bits: int = 8
    timestamp_bits: int = 16
    seed: int = 1

    def __post_init__(self):
        if self.pattern not in RANDOM_PATTERNS + FIXED_PATTERNS:
            raise ValueError(
                f"pattern must be one of {RANDOM_PATTERNS + FIXED_PATTERNS}, not {self.pattern!r}"
            )
        if not isinstance(self.rate, (int, float)) or not 0 < self.rate <= 1:
            raise ValueError(f"rate must be in (0, 1] flits/cycle/endpoint, not {self.rate!r}")
        if not 0 <= self.hotspot_fraction <= 1:
            raise ValueError(f"hotspot_fraction must be in [0, 1], not {self.hotspot_fraction!r}")

    def packet_threshold(self, packet_length: int) -> int:
        """Start a packet when a 16-bit random draw is below this (0..65536)."""
        return min(1 << 16, round(self.rate / packet_length * (1 << 16)))

    def fixed_destination(self, src: int, n_endpoints: int) -> int | None:
        config = TrafficConfig(pattern=self.pattern, rate=self.rate)
        return destination_function(config, n_endpoints, random.Random(self.seed))(src)

    def generator_seed(self, src: int) -> int:
        """A non-zero 32-bit seed for endpoint ``src``'s random draws."""
        seed = random.Random(self.seed * 1_000_003 + src).getrandbits(32)
        return seed or 1


# -- generator ---------------------------------------------------------------------------------


class Generator(wiring.Component):
    """Traffic generator of one endpoint (see the module docstring for the packet format).

    The generator decides in a cycle when ``en`` is high, it is idle (or handing its previous
    packet's tail on in that cycle), and the random draw says so. Its beats reach ``o`` through
    an output stage of two registers (a skid buffer: ``o`` is registered and the generator's
    own state does not wait for ``o.ready``, so no path runs from the network's injection logic
    into the generator), so the new packet's head is presented two cycles after the decision:
    that is the packet's creation cycle (its timestamp), unless the previous packet's beats
    are still waiting in the output stage, which then acts as a source queue (the head follows
    its tail with no gap). The draws (send or not, the destination) are registered, a cycle
    after the random state they come from, so the decision is not one long path with their
    comparators.

    Parameters
    ----------
    src : int
        This endpoint's id.
    fmt : PacketFormat
    settings : TrafficSettings

    Members
    -------
    o : ``Out(stream.Signature(packet_in_layout(fmt.flit_width, fmt.dst_width)))``
    en : ``In(1)``
        Create packets (a packet already started is finished regardless).
    now : ``In(fmt.timestamp_bits)``
        The global cycle count.
    sent : ``Out(1)``
        Pulses in the cycle a packet's tail is accepted on ``o``.
    created : ``Out(1)``
        Pulses in a new packet's creation cycle (its timestamp).
    created_dst : ``Out(fmt.dst_width)``
        With ``created``: the new packet's destination.
    busy : ``Out(1)``
        A packet is being handed to the output stage.
    """

    def __init__(self, *, src: int, fmt: PacketFormat, settings: TrafficSettings):
        if not isinstance(fmt, PacketFormat):
            raise TypeError(f"fmt must be a PacketFormat, not {fmt!r}")
        if not isinstance(src, int) or not 0 <= src < fmt.n_endpoints:
            raise TypeError(f"src must be an endpoint id below {fmt.n_endpoints}, not {src!r}")
        for hot in settings.hotspots:
            if not 0 <= hot < fmt.n_endpoints:
                raise ValueError(f"hotspot {hot} is not an endpoint of this fabric")
        self._src = src
        self._fmt = fmt
        self._settings = settings
        super().__init__(
            {
                "o": Out(stream.Signature(packet_in_layout(fmt.flit_width, fmt.dst_width))),
                "en": In(1),
                "now": In(fmt.timestamp_bits),
                "sent": Out(1),
                "created": Out(1),
                "created_dst": Out(fmt.dst_width),
                "busy": Out(1),
            }
        )

    @property
    def src(self) -> int:
        return self._src

    def _random_destination(self, m: Module, draw: Value, dst: Signal) -> None:
        """``dst`` = another endpoint, uniformly from an 8-bit draw."""
        n = self._fmt.n_endpoints
        scaled = Signal(self._fmt.dst_width)
        m.d.comb += scaled.eq((draw * (n - 1)) >> 8)
        m.d.comb += dst.eq(scaled + (scaled >= self._src))

    def elaborate(self, platform):
        m = Module()
        fmt, settings = self._fmt, self._settings
        n = fmt.n_endpoints

        rnd = Signal(32, init=settings.generator_seed(self._src))
        m.d.sync += rnd.eq(_hw_xorshift32(rnd))

        # -- what to create: drawn from ``rnd`` and registered, so the send decision does not
        # wait for the draws' comparators (the draws lag ``rnd`` by a cycle)
        drawn = Signal(fmt.dst_width)
        can_send = Const(1)
        if settings.pattern == "uniform":
            self._random_destination(m, rnd[16:24], drawn)
        elif settings.pattern == "hotspot":
            uniform = Signal(fmt.dst_width)
            self._random_destination(m, rnd[16:24], uniform)
            targets = [h for h in dict.fromkeys(settings.hotspots) if h != self._src]
            threshold = round(settings.hotspot_fraction * 256)
            if targets:
                pick = Signal(range(len(targets)))
                m.d.comb += pick.eq((rnd[8:16] * len(targets)) >> 8)
                hot = Signal(fmt.dst_width)
                with m.Switch(pick):
                    for index, target in enumerate(targets):
                        with m.Case(index):
                            m.d.comb += hot.eq(target)
                m.d.comb += drawn.eq(Mux(rnd[24:32] < threshold, hot, uniform))
            else:
                m.d.comb += drawn.eq(uniform)
        else:
            fixed = settings.fixed_destination(self._src, n)
            if fixed is None:
                can_send = Const(0)
            else:
                m.d.comb += drawn.eq(fixed)
        dst = Signal(fmt.dst_width)
        coin = Signal()  # create a packet (when enabled and free)
        m.d.sync += [
            dst.eq(drawn),
            coin.eq(rnd[:16] < settings.packet_threshold(fmt.packet_length)),
        ]

        # -- per-destination sequence numbers
        m.submodules.seq = seq_mem = Memory(shape=fmt.seq_bits, depth=n, init=[])
        seq_read = seq_mem.read_port(domain="comb")
        seq_write = seq_mem.write_port()
        m.d.comb += [
            seq_read.addr.eq(dst),
            seq_write.addr.eq(dst),
            seq_write.data.eq(seq_read.data + 1),
        ]

        # -- the packet being sent
        tag = Signal(fmt.tag_layout)
        state = Signal(32)  # the fill state before this beat's tag chunk is mixed in
        beat = Signal(range(fmt.packet_length))
        # the beat handed to the output stage
        handed = Signal.like(self.o.payload)
        output_ready = Signal()
        transfer = self.busy & output_ready
        tail = transfer & (beat == fmt.packet_length - 1)
        start = self.en & can_send & coin & (~self.busy | tail)

        m.d.comb += [
            handed.dst.eq(tag.dst),
            handed.first.eq(beat == 0),
            handed.last.eq(beat == fmt.packet_length - 1),
            self.sent.eq(self.o.valid & self.o.ready & self.o.payload.last),
            seq_write.en.eq(start),
        ]
        tag_bits = tag.as_value()
        mixed = Signal(32)
        # The beat's data goes through its own signal: driving ``handed.data`` inside the
        # Switch while ``dst``/``first``/``last`` are plain assignments makes the Verilog
        # backend (Yosys write_verilog, via amaranth.back.verilog) emit the payload as a ``reg``
        # with one ``always @*`` per field, and the one-line ones lack the time-0 trigger the
        # others get. Verilog runs an ``always @*`` only when an input changes, so in Icarus
        # ``first`` (``beat == 0``, true from reset) stayed x until the first transfer, which
        # needs ``first``: the network never granted and the generators stalled. Here the
        # payload is only continuous assignments.
        data = Signal(fmt.flit_width)
        with m.Switch(beat):
            for k, (usable, chunk, offset) in enumerate(fmt.beats):
                with m.Case(k):
                    bits = tag_bits[offset : offset + chunk]
                    m.d.comb += mixed.eq(state ^ _hw_fold32(bits) if chunk else state)
                    fill = _hw_expand(mixed, usable)
                    m.d.comb += data.eq(Cat(bits, fill[chunk:usable]))
        m.d.comb += handed.data.eq(data)
        self._output_stage(m, self.busy, handed, output_ready)

        # the head is on ``o`` two cycles after the decision at the earliest
        decided = Signal()
        m.d.sync += [decided.eq(start), self.created.eq(decided), self.created_dst.eq(tag.dst)]
        with m.If(transfer):
            m.d.sync += [beat.eq(beat + 1), state.eq(_hw_xorshift32(mixed))]
        with m.If(tail):
            m.d.sync += [beat.eq(0), self.busy.eq(0)]
        with m.If(start):
            m.d.sync += [
                tag.dst.eq(dst),
                tag.src.eq(self._src),
                tag.seq.eq(seq_read.data),
                tag.timestamp.eq(self.now + 2),  # the creation cycle (above)
                state.eq(FILL_SEED),
                beat.eq(0),
                self.busy.eq(1),
            ]
        return m

    def _output_stage(self, m: Module, valid: Value, payload: Value, ready: Signal) -> None:
        """Registers ``valid``/``payload`` onto ``o``; ``ready`` (to the generator) is a
        register, so ``o.ready`` reaches nothing but these registers. Two entries: the one on
        ``o`` and a spare that catches the beat handed on in a cycle ``o`` was refused, so
        beats move every cycle ``o.ready`` is high."""
        spare_valid = Signal()
        spare = Signal.like(payload)
        m.d.comb += ready.eq(~spare_valid)
        take = valid & ~spare_valid
        with m.If(~self.o.valid | self.o.ready):
            with m.If(spare_valid):
                m.d.sync += [self.o.payload.eq(spare), self.o.valid.eq(1), spare_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(payload), self.o.valid.eq(take)]
        with m.Elif(take):
            m.d.sync += [spare.eq(payload), spare_valid.eq(1)]


# -- checker -----------------------------------------------------------------------------------


class Checker(wiring.Component):
    """Checks the packets delivered to one endpoint (one attachment's stream).

    Four stages, so no path is long: each beat is registered as it arrives, with the cycle it
    arrived in (so no path runs from the network's ejection logic into the checker's state, and
    latencies are those of the arrival); the next cycle it is registered with its fill state,
    and its fill bits and framing are checked in the cycle after; after a tail that check stage
    registers the complete tag, and in the next cycle the destination and (``ordered``) the
    flow's sequence number are checked and the packet reported: ``received`` pulses with
    ``latency``, and ``error`` pulses too if anything was wrong. One packet counts one error
    however many things were wrong with it; a stray body beat counts one error on its own.

    Parameters
    ----------
    endpoint : int
        The id of the endpoint this checker sits at.
    fmt : PacketFormat
    ordered : bool
        Check that every flow's sequence numbers arrive in order, none skipped (only for
        routings in :data:`ORDERED_ROUTINGS` with single-attachment endpoints). When a number is
        wrong the checker resynchronises, so one lost packet counts one error.

    Members
    -------
    i : ``In(stream.Signature(packet_out_layout(fmt.flit_width, fmt.dst_width),
        always_ready=True))``
    now : ``In(fmt.timestamp_bits)``
    received : ``Out(1)``
        Pulses once per delivered packet, four cycles after the cycle its tail arrived in.
    latency : ``Out(fmt.timestamp_bits)``
        With ``received``: tail delivery cycle minus creation cycle.
    error : ``Out(1)``
        Pulses with ``received`` for a bad packet, or on its own for a stray body beat.
    error_kinds : ``Out(4)``
        Sticky OR of :class:`ErrorKind` bits.
    """

    def __init__(self, *, endpoint: int, fmt: PacketFormat, ordered: bool):
        if not isinstance(fmt, PacketFormat):
            raise TypeError(f"fmt must be a PacketFormat, not {fmt!r}")
        if not isinstance(endpoint, int) or not 0 <= endpoint < fmt.n_endpoints:
            raise TypeError(
                f"endpoint must be an endpoint id below {fmt.n_endpoints}, not {endpoint!r}"
            )
        self._endpoint = endpoint
        self._fmt = fmt
        self._ordered = bool(ordered)
        super().__init__(
            {
                "i": In(
                    stream.Signature(
                        packet_out_layout(fmt.flit_width, fmt.dst_width), always_ready=True
                    )
                ),
                "now": In(fmt.timestamp_bits),
                "received": Out(1),
                "latency": Out(fmt.timestamp_bits),
                "error": Out(1),
                "error_kinds": Out(4),
            }
        )

    @property
    def endpoint(self) -> int:
        return self._endpoint

    def elaborate(self, platform):
        m = Module()
        fmt = self._fmt
        # the input stage: the beat and the cycle it arrived in, registered
        beat_in = Signal.like(self.i.payload)
        valid = Signal()
        arrived = Signal.like(self.now)
        m.d.sync += [beat_in.eq(self.i.payload), valid.eq(self.i.valid), arrived.eq(self.now)]

        in_packet = Signal()
        beat = Signal(range(fmt.packet_length + 1))  # index of the next beat; L = too long
        state = Signal(32)
        tag_acc = Signal(fmt.tag_width)
        bad = Signal(4)  # kinds found so far in this packet

        # this beat, taken as part of the current packet or as a new one
        k = Mux(beat_in.first, 0, beat)
        s = Mux(beat_in.first, FILL_SEED, state)
        mixed = Signal(32)
        tag_now = Signal(fmt.tag_width)  # tag_acc with this beat's chunk merged in
        # the beat's fill bits (none past the packet's length), registered for the check stage
        # in the same ``Switch`` (a combinational one would start as x in Icarus: its
        # ``always @*`` waits for ``k`` to change)
        c_mask = Signal(fmt.flit_width)
        m.d.comb += [mixed.eq(s), tag_now.eq(Mux(beat_in.first, 0, tag_acc))]
        m.d.sync += c_mask.eq(0)
        with m.Switch(k):
            for index, (usable, chunk, offset) in enumerate(fmt.beats):
                with m.Case(index):
                    m.d.sync += c_mask.eq((1 << usable) - (1 << chunk))
                    if chunk:
                        bits = beat_in.data[:chunk]
                        m.d.comb += mixed.eq(s ^ _hw_fold32(bits))
                        m.d.comb += tag_now[offset : offset + chunk].eq(bits)

        too_long = ~beat_in.first & (beat == fmt.packet_length)
        short = beat_in.last & (k != fmt.packet_length - 1)
        taken = valid & (beat_in.first | in_packet)

        # the check stage: the beat, registered with its mixed state, checked a cycle later
        # (so the fill comparison and the beat's own decoding are not one long path)
        c_valid, c_first, c_last, c_frame, c_stray = (
            Signal(name=f"c_{n}") for n in ("valid", "first", "last", "frame", "stray")
        )
        c_mixed = Signal(32)
        c_data = Signal(fmt.flit_width)
        c_tag = Signal(fmt.tag_width)
        c_now = Signal(fmt.timestamp_bits)
        m.d.sync += [
            c_valid.eq(taken),
            c_first.eq(beat_in.first),
            c_last.eq(beat_in.last),
            c_frame.eq(too_long | short | (beat_in.first & in_packet)),
            c_stray.eq(valid & ~beat_in.first & ~in_packet),
            c_mixed.eq(mixed),
            c_data.eq(beat_in.data),
            c_tag.eq(tag_now),
            c_now.eq(arrived),
        ]
        # the fill is the state's expansion in the bits the mask selects (each beat's fill
        # bits are a prefix of one expansion at the same offsets): a balanced compare of two
        # registers, not a comparison per beat index behind a multiplexer
        fill_ok = Signal()
        fill = _hw_expand(c_mixed, fmt.flit_width)
        m.d.comb += fill_ok.eq(~((c_data ^ fill) & c_mask).any())
        kinds_now = Signal(4)
        m.d.comb += kinds_now.eq(
            Mux(c_first, 0, bad)
            | Mux(fill_ok, 0, ErrorKind.DATA)
            | Mux(c_frame, ErrorKind.FRAME, 0)
        )
        stray = c_stray

        # the finish stage: a complete packet, checked one cycle after its check stage
        done = Signal()
        done_tag = Signal(fmt.tag_layout)
        done_kinds = Signal(4)
        done_at = Signal(fmt.timestamp_bits)
        m.d.sync += done.eq(0)

        with m.If(taken):
            m.d.sync += [
                state.eq(_hw_xorshift32(mixed)),
                tag_acc.eq(tag_now),
                beat.eq(Mux(k == fmt.packet_length, k, k + 1)),
                in_packet.eq(~beat_in.last),
            ]
        with m.If(c_valid):
            m.d.sync += bad.eq(kinds_now)
            with m.If(c_last):
                m.d.sync += [
                    done.eq(1),
                    done_tag.eq(c_tag),
                    done_kinds.eq(kinds_now),
                    done_at.eq(c_now),
                ]

        m.submodules.seq = seq_mem = Memory(shape=fmt.seq_bits, depth=fmt.n_endpoints, init=[])
        seq_read = seq_mem.read_port(domain="comb")
        seq_write = seq_mem.write_port()
        m.d.comb += [
            seq_read.addr.eq(done_tag.src),
            seq_write.addr.eq(done_tag.src),
            seq_write.data.eq(done_tag.seq + 1),
            seq_write.en.eq(done),
        ]
        kinds = Signal(4)
        m.d.comb += kinds.eq(
            done_kinds
            | Mux(done_tag.dst != self._endpoint, ErrorKind.DEST, 0)
            | Mux(Const(self._ordered) & (seq_read.data != done_tag.seq), ErrorKind.SEQ, 0)
        )
        m.d.sync += [
            self.received.eq(done),
            self.latency.eq(done_at - done_tag.timestamp),
            self.error.eq((done & (kinds != 0)) | stray),
        ]
        with m.If(done):
            m.d.sync += self.error_kinds.eq(self.error_kinds | kinds)
        with m.If(stray):
            m.d.sync += self.error_kinds.eq(self.error_kinds | ErrorKind.FRAME)
        return m


# -- a stand-in network ------------------------------------------------------------------------


class IdealNetwork(wiring.Component):
    """A crossbar with the fabric's endpoint interface: a stand-in for tests and bring-up.

    Every output has a round-robin arbiter over the inputs whose packet goes there; the winner
    holds the output until its tail. A granted beat is registered and delivered the next cycle
    (no fabric timing is modelled). Every beat comes out with its data whole and its source's
    id, as the fabric delivers it.

    Parameters
    ----------
    fmt : PacketFormat

    Members
    -------
    i : ``In(stream.Signature(packet_in_layout(...))).array(n_endpoints)``
    o : ``Out(stream.Signature(packet_out_layout(...), always_ready=True))
        .array(n_endpoints, 1)``
    """

    def __init__(self, fmt: PacketFormat):
        if not isinstance(fmt, PacketFormat):
            raise TypeError(f"fmt must be a PacketFormat, not {fmt!r}")
        self._fmt = fmt
        n = fmt.n_endpoints
        super().__init__(
            {
                "i": In(stream.Signature(packet_in_layout(fmt.flit_width, fmt.dst_width))).array(n),
                "o": Out(
                    stream.Signature(
                        packet_out_layout(fmt.flit_width, fmt.dst_width), always_ready=True
                    )
                ).array(n, 1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        fmt = self._fmt
        n = fmt.n_endpoints
        held = [Signal(fmt.dst_width, name=f"held{i}") for i in range(n)]
        target = []
        for i in range(n):
            beat = self.i[i].payload
            dst = Signal(fmt.dst_width, name=f"dst{i}")
            m.d.comb += dst.eq(Mux(beat.first, beat.dst, held[i]))
            with m.If(self.i[i].valid & self.i[i].ready & beat.first):
                m.d.sync += held[i].eq(beat.dst)
            target.append(dst)

        grants = [[Signal(name=f"grant{o}_{i}") for i in range(n)] for o in range(n)]
        for o in range(n):
            owner = Signal(range(n), name=f"owner{o}")
            locked = Signal(name=f"locked{o}")
            pointer = Signal(range(n), name=f"pointer{o}")
            requests = Cat(*(self.i[i].valid & (target[i] == o) for i in range(n)))
            with m.If(locked):
                for i in range(n):
                    m.d.comb += grants[o][i].eq((owner == i) & requests[i])
            with m.Else():
                # first requester at or after the pointer, cyclically: the lowest set bit of
                # the requests at or above the pointer, else of all requests
                above = Signal(n, name=f"above{o}")
                pick = Signal(n, name=f"pick{o}")
                m.d.comb += above.eq(requests & ~((Const(1, n + 1) << pointer) - 1)[:n])
                chosen = Mux(above.any(), above, requests)
                m.d.comb += pick.eq(chosen & (~chosen + 1)[:n])
                for i in range(n):
                    m.d.comb += grants[o][i].eq(pick[i])
            out = self.o[o][0]
            m.d.sync += out.valid.eq(0)
            for i in range(n):
                beat = self.i[i].payload
                with m.If(grants[o][i]):
                    m.d.sync += [
                        out.valid.eq(1),
                        out.payload.first.eq(beat.first),
                        out.payload.last.eq(beat.last),
                        out.payload.data.eq(beat.data),
                        out.payload.src.eq(i),
                        locked.eq(~beat.last),
                        owner.eq(i),
                        pointer.eq((i + 1) % n),
                    ]
        for i in range(n):
            m.d.comb += self.i[i].ready.eq(Cat(*(grants[o][i] for o in range(n))).any())
        return m


class FaultInjector(wiring.Component):
    """Passes a delivered-packet stream through, flipping one data bit of one beat, once.

    For self-tests: put it in front of a :class:`Checker` and the checker must report an error.

    Parameters
    ----------
    flit_width, src_width : int
        As :func:`packet_out_layout`'s.
    after : int
        Beats to let through untouched before the corrupted one.
    bit : int
        The data bit to flip.

    Members
    -------
    i : ``In(stream.Signature(packet_out_layout(flit_width, src_width), always_ready=True))``
    o : ``Out(stream.Signature(packet_out_layout(flit_width, src_width), always_ready=True))``
    injected : ``Out(1)``
        Sticky: the fault has been injected.
    """

    def __init__(self, *, flit_width: int, src_width: int, after: int, bit: int = 0):
        if not isinstance(after, int) or after < 0:
            raise TypeError(f"after must be a non-negative integer, not {after!r}")
        if not isinstance(bit, int) or not 0 <= bit < flit_width:
            raise TypeError(f"bit must be a data bit below {flit_width}, not {bit!r}")
        self._after = after
        self._bit = bit
        sig = stream.Signature(packet_out_layout(flit_width, src_width), always_ready=True)
        super().__init__({"i": In(sig), "o": Out(sig), "injected": Out(1)})

    def elaborate(self, platform):
        m = Module()
        seen = Signal(range(self._after + 1))
        hit = self.i.valid & ~self.injected & (seen == self._after)
        m.d.comb += [
            self.o.valid.eq(self.i.valid),
            self.o.payload.eq(self.i.payload),
            self.o.payload.data.eq(self.i.payload.data ^ (hit << self._bit)),
        ]
        with m.If(self.i.valid & (seen != self._after)):
            m.d.sync += seen.eq(seen + 1)
        with m.If(hit):
            m.d.sync += self.injected.eq(1)
        return m
