"""Harness access to a unit's internal state, without changing the unit.

A unit keeps its counters, owner bits and assignments in signals local to its ``elaborate``,
and its buffers in memories, which no port shows. :func:`opened` elaborates the unit once and
returns the resulting fragment, to be added as the harness's submodule in place of the unit,
together with every signal its statements drive, by name, and :func:`peek` adds a read port to
one of its memories: the harness can then state invariants on them (k-induction needs those to
close, docs/design/verification.md). The unit's cycle behaviour and its
emitted Verilog are untouched; Amaranth turns the signals the harness reads into ports of the
unit's module in the harness only.
"""

from __future__ import annotations

from amaranth.hdl import Const, Elaboratable, Fragment, MemoryInstance, Signal

__all__ = ["opened", "peek"]


def opened(
    unit: Elaboratable, platform=None
) -> tuple[Fragment, dict[str, Signal | MemoryInstance]]:
    """``unit`` elaborated, and the signals it drives and the memories it holds by name
    (``sub.name`` in a submodule)."""
    fragment = Fragment.get(unit, platform)
    signals: dict[str, Signal | MemoryInstance] = {}

    def collect(fragment: Fragment, prefix: str) -> None:
        for statements in fragment.statements.values():
            for statement in statements:
                for signal in statement._lhs_signals():
                    signals.setdefault(prefix + signal.name, signal)
        for sub, name, _src_loc in fragment.subfragments:
            if isinstance(sub, MemoryInstance) and name is not None:
                signals[prefix + name] = sub
            elif isinstance(sub, Fragment) and name is not None:
                collect(sub, f"{prefix}{name}.")

    collect(fragment, "")
    return fragment, signals


def peek(memory: MemoryInstance, address: int, name: str) -> Signal:
    """The content of ``memory`` at ``address``, through a read port of its own."""
    data = Signal(memory._data.shape, name=name)
    memory.read_port(
        domain="comb",
        addr=Const(address, len(memory._read_ports[0]._addr)),
        data=data,
        en=Const(1),
        transparent_for=(),
    )
    return data
