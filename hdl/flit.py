"""Flits and links: the flit layout built from a plan, and the credit-based link signature.

A flit is ``kind`` (head / body / tail / single), ``vc`` (the VC it travels on over the current
link), ``head`` (``head_width`` bits), ``src`` (the source endpoint id) and ``payload``
(``plan.flit_width`` bits, all data). A head flit (kinds ``HEAD`` and ``SINGLE``) carries the
routing head in ``head``: the destination endpoint id for destination routing (``dor``,
``dort``, ``updown``), or the sliced header for ``sliced`` (``zfabric/routing/sliced.py``),
which every switch shifts right by the bits it consumes. ``head`` means nothing on body and
tail flits. No switch reads or changes ``src`` or ``payload``.

A link (DESIGN.md, link protocol) carries flits downstream with a valid bit and no
backpressure, and credits upstream: one pulse per freed buffer slot, one wire per VC; or, where
a switch drops a head's surplus head flits (``sliced`` heads with ``router.head_bits``,
docs/microarchitecture.md, *Heads longer than a flit*), a count per VC of the slots freed in the
previous cycle.
"""

from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from zfabric.plan import FabricPlan
from zfabric.routing import fixed_head_flits, head_flits, multi_flit_heads
from zfabric.routing import routing_head_width as head_width

__all__ = [
    "FlitKind",
    "FlitLayout",
    "LinkSignature",
    "built_head_flits",
    "credit_width",
    "dst_width",
    "surplus_head_flits",
    "head_width",
]


class FlitKind(enum.Enum, shape=2):
    """Bit 0 marks a head, bit 1 a tail: ``SINGLE`` is both."""

    BODY = 0
    HEAD = 1
    TAIL = 2
    SINGLE = 3


def dst_width(plan: FabricPlan) -> int:
    """Bits of an endpoint id (a destination's, a source's)."""
    return max(1, (len(plan.endpoints) - 1).bit_length())


def built_head_flits(plan: FabricPlan) -> int:
    """Head flits of every packet at every hop when the routing's heads keep their length
    (``router.head_bits``, docs/microarchitecture.md, *Heads longer than a flit*), else 1:
    ``sliced`` heads shrink, so their route units give each head's count
    (:func:`surplus_head_flits`). The first flit carries the whole routing head in ``head``
    all the same; the others only hold buffer places, link cycles and credits, the header's
    time on a link."""
    return fixed_head_flits(plan) or 1


def check_head_flits(head_flits: int, buffer_depth: int) -> None:
    """Refuse a head flit count a module cannot build: every head flit must fit its buffer."""
    if not isinstance(head_flits, int):
        raise TypeError(f"head_flits must be an integer, not {head_flits!r}")
    if not 1 <= head_flits <= buffer_depth:
        raise ValueError(
            f"head_flits must be an integer in 1..buffer_depth ({buffer_depth}), not {head_flits!r}"
        )


def surplus_head_flits(plan: FabricPlan) -> int:
    """The most head flits a switch drops with one head (docs/microarchitecture.md, *Heads
    longer than a flit*, Surplus): one less than the widest head's count when heads shrink on
    the way (``sliced``) and need several flits, else 0. It sizes the credit wires
    (:class:`LinkSignature`'s ``credit_width``): a dropped head flit's credit goes back in the
    cycle of the head's."""
    if fixed_head_flits(plan) is not None or not multi_flit_heads(plan):
        return 0
    return head_flits(head_width(plan), plan.router.head_bits) - 1


def credit_width(plan: FabricPlan) -> int:
    """Bits of a credit count on the links into switch inputs (:class:`LinkSignature`): 1
    unless a head drops surplus head flits (:func:`surplus_head_flits`)."""
    return (1 + surplus_head_flits(plan)).bit_length()


class FlitLayout(data.StructLayout):
    """Layout of one flit: ``kind``, ``vc``, ``head``, ``src`` and ``payload``, LSB first.

    ``kind`` and ``head`` are the low bits, side by side: what a switch decides on (the input
    buffer keeps them in a register, ``hdl/router/input_unit.py``).

    Parameters
    ----------
    payload_width : int
        Data bits per flit (``plan.flit_width``).
    vc_width : int
        Bits of the VC field: enough for the link with the most VCs; 0 when every link has one.
    head_width : int
        Bits of the routing head.
    src_width : int
        Bits of the source endpoint id.
    """

    def __init__(self, *, payload_width: int, vc_width: int, head_width: int, src_width: int):
        for name, value, low in (
            ("payload_width", payload_width, 1),
            ("vc_width", vc_width, 0),
            ("head_width", head_width, 1),
            ("src_width", src_width, 1),
        ):
            if not isinstance(value, int) or value < low:
                kind = "positive" if low else "non-negative"
                raise TypeError(f"{name} must be a {kind} integer, not {value!r}")
        self._payload_width = payload_width
        self._vc_width = vc_width
        self._head_width = head_width
        self._src_width = src_width
        super().__init__(
            {
                "kind": FlitKind,
                "vc": unsigned(vc_width),
                "head": unsigned(head_width),
                "src": unsigned(src_width),
                "payload": unsigned(payload_width),
            }
        )

    @classmethod
    def from_plan(cls, plan: FabricPlan) -> FlitLayout:
        router = plan.router
        max_vcs = max(
            [link.vcs for link in plan.links] + [router.injection_vcs, router.ejection_vcs]
        )
        return cls(
            payload_width=plan.flit_width,
            vc_width=(max_vcs - 1).bit_length(),
            head_width=head_width(plan),
            src_width=dst_width(plan),
        )

    @property
    def payload_width(self) -> int:
        return self._payload_width

    @property
    def vc_width(self) -> int:
        return self._vc_width

    @property
    def head_width(self) -> int:
        return self._head_width

    @property
    def src_width(self) -> int:
        return self._src_width

    def _key(self) -> tuple:
        return (self._payload_width, self._vc_width, self._head_width, self._src_width)

    def __eq__(self, other):
        return isinstance(other, FlitLayout) and self._key() == other._key()

    def __hash__(self):
        return hash((FlitLayout, *self._key()))

    def __repr__(self):
        return (
            f"FlitLayout(payload_width={self._payload_width}, vc_width={self._vc_width}, "
            f"head_width={self._head_width}, src_width={self._src_width})"
        )


class LinkSignature(wiring.Signature):
    """One direction of a link: flits downstream, per-VC credit pulses upstream.

    The flit stream is ``always_ready``: a sender sends only when it holds a credit for the
    flit's VC, so the receiver never pushes back (``wiring.connect`` refuses to join it to a
    stream that needs ``ready``).

    Parameters
    ----------
    flit_layout : FlitLayout
    n_vcs : int
        VCs on this link (a local link has one).
    credit_width : int
        Bits of each VC's credit count: 1 (a pulse), or wider where a receiver frees several
        slots of one VC in a cycle (a head and its surplus head flits,
        :func:`surplus_head_flits`).

    Members
    -------
    flit : ``Out(stream.Signature(flit_layout, always_ready=True))``
    credit : ``In(n_vcs)``, or ``In(data.ArrayLayout(credit_width, n_vcs))``
        ``credit[v]``: the slots freed in the receiver's VC ``v`` buffer in the previous
        cycle (a one-cycle pulse per slot with ``credit_width`` 1).
    """

    def __init__(self, flit_layout: FlitLayout, n_vcs: int, credit_width: int = 1):
        if not isinstance(flit_layout, FlitLayout):
            raise TypeError(f"flit_layout must be a FlitLayout, not {flit_layout!r}")
        if not isinstance(n_vcs, int) or n_vcs < 1:
            raise TypeError(f"n_vcs must be a positive integer, not {n_vcs!r}")
        if n_vcs > 1 << flit_layout.vc_width:
            raise ValueError(
                f"{n_vcs} VCs do not fit the flit's {flit_layout.vc_width}-bit VC field"
            )
        if not isinstance(credit_width, int) or credit_width < 1:
            raise TypeError(f"credit_width must be a positive integer, not {credit_width!r}")
        self._flit_layout = flit_layout
        self._n_vcs = n_vcs
        self._credit_width = credit_width
        credit = n_vcs if credit_width == 1 else data.ArrayLayout(credit_width, n_vcs)
        super().__init__(
            {
                "flit": Out(stream.Signature(flit_layout, always_ready=True)),
                "credit": In(credit),
            }
        )

    @property
    def flit_layout(self) -> FlitLayout:
        return self._flit_layout

    @property
    def n_vcs(self) -> int:
        return self._n_vcs

    @property
    def credit_width(self) -> int:
        return self._credit_width

    def __eq__(self, other):
        return (
            isinstance(other, LinkSignature)
            and self._flit_layout == other._flit_layout
            and self._n_vcs == other._n_vcs
            and self._credit_width == other._credit_width
        )

    def __hash__(self):
        return hash((LinkSignature, self._flit_layout, self._n_vcs, self._credit_width))

    def __repr__(self):
        width = "" if self._credit_width == 1 else f", credit_width={self._credit_width}"
        return f"LinkSignature({self._flit_layout!r}, {self._n_vcs}{width})"
