"""Flits and links: the flit layout built from a plan, and the credit-based link signature.

A flit is ``kind`` (head / body / tail / single), ``vc`` (the VC it travels on over the current
link) and ``payload`` (``plan.flit_width`` bits). The head flit (kinds ``HEAD`` and ``SINGLE``)
carries the routing head in the low ``head_width`` bits of its payload: the destination endpoint
id for destination routing (``dor``, ``dort``, ``updown``), or the sliced header for ``sliced``
(``zfabric/routing/sliced.py``), which every switch shifts right by the bits it consumes. The
head flit's payload bits above ``head_width`` and every other flit's whole payload are data.

A link (DESIGN.md, link protocol) carries flits downstream with a valid bit and no
backpressure, and credits upstream: one pulse per freed buffer slot, one wire per VC.
"""

from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from zfabric.plan import FabricPlan
from zfabric.routing import routing_head_width as head_width

__all__ = [
    "FlitKind",
    "FlitLayout",
    "LinkSignature",
    "head_width",
]


class FlitKind(enum.Enum, shape=2):
    """Bit 0 marks a head, bit 1 a tail: ``SINGLE`` is both."""

    BODY = 0
    HEAD = 1
    TAIL = 2
    SINGLE = 3


class FlitLayout(data.StructLayout):
    """Layout of one flit: ``kind``, ``vc`` and ``payload``.

    Parameters
    ----------
    payload_width : int
        Bits of payload per flit (``plan.flit_width``).
    vc_width : int
        Bits of the VC field: enough for the link with the most VCs; 0 when every link has one.
    head_width : int
        Low payload bits of a head flit that hold the routing head; at most ``payload_width``.
    """

    def __init__(self, *, payload_width: int, vc_width: int, head_width: int):
        if not isinstance(payload_width, int) or payload_width < 1:
            raise TypeError(f"payload_width must be a positive integer, not {payload_width!r}")
        if not isinstance(vc_width, int) or vc_width < 0:
            raise TypeError(f"vc_width must be a non-negative integer, not {vc_width!r}")
        if not isinstance(head_width, int) or head_width < 1:
            raise TypeError(f"head_width must be a positive integer, not {head_width!r}")
        if head_width > payload_width:
            raise ValueError(
                f"the routing head needs {head_width} bits, more than the flit's "
                f"{payload_width}-bit payload"
            )
        self._payload_width = payload_width
        self._vc_width = vc_width
        self._head_width = head_width
        super().__init__(
            {"kind": FlitKind, "vc": unsigned(vc_width), "payload": unsigned(payload_width)}
        )

    @classmethod
    def from_plan(cls, plan: FabricPlan) -> FlitLayout:
        max_vcs = max([link.vcs for link in plan.links] + [plan.router.injection_vcs])
        return cls(
            payload_width=plan.flit_width,
            vc_width=(max_vcs - 1).bit_length(),
            head_width=head_width(plan),
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
    def data_width(self) -> int:
        """Data bits a head flit carries above its routing head."""
        return self._payload_width - self._head_width

    def __eq__(self, other):
        return (
            isinstance(other, FlitLayout)
            and self._payload_width == other._payload_width
            and self._vc_width == other._vc_width
            and self._head_width == other._head_width
        )

    def __hash__(self):
        return hash((FlitLayout, self._payload_width, self._vc_width, self._head_width))

    def __repr__(self):
        return (
            f"FlitLayout(payload_width={self._payload_width}, vc_width={self._vc_width}, "
            f"head_width={self._head_width})"
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

    Members
    -------
    flit : ``Out(stream.Signature(flit_layout, always_ready=True))``
    credit : ``In(n_vcs)``
        Bit ``v`` pulses for one cycle per slot freed in the receiver's VC ``v`` buffer.
    """

    def __init__(self, flit_layout: FlitLayout, n_vcs: int):
        if not isinstance(flit_layout, FlitLayout):
            raise TypeError(f"flit_layout must be a FlitLayout, not {flit_layout!r}")
        if not isinstance(n_vcs, int) or n_vcs < 1:
            raise TypeError(f"n_vcs must be a positive integer, not {n_vcs!r}")
        if n_vcs > 1 << flit_layout.vc_width:
            raise ValueError(
                f"{n_vcs} VCs do not fit the flit's {flit_layout.vc_width}-bit VC field"
            )
        self._flit_layout = flit_layout
        self._n_vcs = n_vcs
        super().__init__(
            {
                "flit": Out(stream.Signature(flit_layout, always_ready=True)),
                "credit": In(n_vcs),
            }
        )

    @property
    def flit_layout(self) -> FlitLayout:
        return self._flit_layout

    @property
    def n_vcs(self) -> int:
        return self._n_vcs

    def __eq__(self, other):
        return (
            isinstance(other, LinkSignature)
            and self._flit_layout == other._flit_layout
            and self._n_vcs == other._n_vcs
        )

    def __hash__(self):
        return hash((LinkSignature, self._flit_layout, self._n_vcs))

    def __repr__(self):
        return f"LinkSignature({self._flit_layout!r}, {self._n_vcs})"
