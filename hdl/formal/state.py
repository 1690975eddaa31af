"""Harness access to a unit's internal state, without changing the unit.

A unit keeps its counters, owner bits and assignments in signals local to its ``elaborate``,
which no port shows. :func:`opened` elaborates the unit once and returns the resulting
fragment, to be added as the harness's submodule in place of the unit, together with every
signal its statements drive, by name: the harness can then state invariants on them
(k-induction needs those to close, docs/verification.md). The unit's cycle behaviour and its
emitted Verilog are untouched; Amaranth turns the signals the harness reads into ports of the
unit's module in the harness only.
"""

from __future__ import annotations

from amaranth.hdl import Elaboratable, Fragment, Signal

__all__ = ["opened"]


def opened(unit: Elaboratable, platform=None) -> tuple[Fragment, dict[str, Signal]]:
    """``unit`` elaborated, and the signals it drives by name (``sub.name`` in a submodule)."""
    fragment = Fragment.get(unit, platform)
    signals: dict[str, Signal] = {}

    def collect(fragment: Fragment, prefix: str) -> None:
        for statements in fragment.statements.values():
            for statement in statements:
                for signal in statement._lhs_signals():
                    signals.setdefault(prefix + signal.name, signal)
        for sub, name, _src_loc in fragment.subfragments:
            if isinstance(sub, Fragment) and name is not None:
                collect(sub, f"{prefix}{name}.")

    collect(fragment, "")
    return fragment, signals
