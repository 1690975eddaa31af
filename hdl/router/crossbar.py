"""Crossbar: every output takes the flit of the input its one-hot grant selects."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..flit import FlitLayout

__all__ = [
    "Crossbar",
]


class Crossbar(wiring.Component):
    """``n_in`` x ``n_out`` flit switch, an AND-OR multiplexer per output.

    An output that only one input can reach (a torus output under ``tie: plus``) takes that
    input's flit ungated: its ``payload`` is then meaningful only while ``valid``, which is all
    the output unit reads (a flit's bits on an idle link were zero before and are anything
    now; the 42 ANDs per such output were 4 % of the ``stages: 1`` torus switch).

    Parameters
    ----------
    flit_layout : FlitLayout
    n_in, n_out : int
    turns : set of (int, int), optional
        The (input, output) pairs to connect (default: all); other grants are ignored.

    Members
    -------
    i : ``In(flit_layout).array(n_in)``
    grant : ``In(n_in).array(n_out)``
        One-hot (or zero): the input each output takes this cycle.
    vc : ``In(flit_layout.vc_width).array(n_out)``
        The output VC each output's flit takes on its next link.
    o : ``Out(stream.Signature(flit_layout, always_ready=True)).array(n_out)``
    """

    def __init__(self, *, flit_layout: FlitLayout, n_in: int, n_out: int, turns=None):
        self._n_in = n_in
        self._n_out = n_out
        self._turns = frozenset(
            turns if turns is not None else ((i, o) for i in range(n_in) for o in range(n_out))
        )
        super().__init__(
            {
                "i": In(flit_layout).array(n_in),
                "grant": In(n_in).array(n_out),
                "vc": In(flit_layout.vc_width).array(n_out),
                "o": Out(stream.Signature(flit_layout, always_ready=True)).array(n_out),
            }
        )

    def elaborate(self, platform):
        m = Module()
        for out in range(self._n_out):
            grant = self.grant[out]
            flit, valid = 0, 0
            inputs = [i for i in range(self._n_in) if (i, out) in self._turns]
            for i in inputs:
                bits = self.i[i].as_value()
                if len(inputs) > 1:
                    bits = bits & grant[i].replicate(len(bits))
                flit = flit | bits
                valid = valid | grant[i]
            m.d.comb += [
                self.o[out].valid.eq(valid),
                self.o[out].payload.eq(flit),
                self.o[out].payload.vc.eq(self.vc[out]),
            ]
        return m
