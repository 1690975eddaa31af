"""Building blocks the route units share: masks, mixed-radix digits, ring direction, groups."""

from __future__ import annotations

from collections.abc import Iterable

from amaranth.hdl import Module, Mux, Signal, Value

from .ports import SwitchPorts

__all__ = [
    "mask_bit",
    "mask_bits",
    "mixed_digits",
    "bit_fields",
    "coord_widths",
    "ring_plus",
    "named_signals",
    "select_mask",
]


def mask_bit(ports: SwitchPorts, port: int, vc: int) -> int:
    return 1 << (ports.base(port) + vc)


def mask_bits(ports: SwitchPorts, port: int, vcs) -> int:
    """The mask of a candidate that may take any of ``vcs`` on ``port``."""
    return sum(mask_bit(ports, port, vc) for vc in vcs)


def mixed_digits(value: Value, radices) -> list[Value]:
    """Mixed-radix digits of ``value``, least significant first (bit slices for powers of 2)."""
    digits = []
    for radix in radices:
        if radix & (radix - 1) == 0:
            bits = (radix - 1).bit_length()
            digits.append(value[:bits])
            value = value[bits:]
        else:
            digits.append((value % radix)[: (radix - 1).bit_length()])
            value = value // radix
    return digits


def bit_fields(value: Value, widths) -> list[Value]:
    out, offset = [], 0
    for width in widths:
        out.append(value[offset : offset + width])
        offset += width
    return out


def coord_widths(k) -> tuple[int, ...]:
    return tuple(max(1, (radix - 1).bit_length()) for radix in k)


def ring_plus(
    m, cur: Value, dst: Value, k: int, *, wrap: bool, tie_plus: bool | Value, name: str
) -> Value:
    """``zfabric.routing.dor.ring_direction`` in logic: 1 for +, 0 for - (cur != dst assumed);
    ``tie_plus`` is the direction of a tie (a constant, or logic of the coordinates)."""
    if not wrap:
        return dst > cur
    forward = Signal(range(k), name=f"{name}_forward")  # (dst - cur) mod k
    m.d.comb += forward.eq(Mux(dst >= cur, dst - cur, dst + k - cur))
    backward = k - forward
    return (forward < backward) | ((forward == backward) & tie_plus)


def named_signals(m, values, name: str) -> list[Signal]:
    """Comb signals for expressions used more than once (simulation expands shared trees)."""
    signals = []
    for i, value in enumerate(values):
        signal = Signal(len(value), name=f"{name}{i}")
        m.d.comb += signal.eq(value)
        signals.append(signal)
    return signals


def select_mask(
    m: Module, target: Value, selector: Value, masks: Iterable[tuple[int, int]]
) -> None:
    """``target`` = the mask paired with ``selector``'s value in ``masks`` ((value, mask)
    pairs), 0 for a value no pair has; a 0-bit selector (one group) picks value 0's."""
    if len(selector) == 0:
        m.d.comb += target.eq(dict(masks).get(0, 0))
        return
    with m.Switch(selector):
        for value, mask in masks:
            with m.Case(value):
                m.d.comb += target.eq(mask)
        with m.Default():  # a value no group has: no candidate, said (Verilator's lint)
            m.d.comb += target.eq(0)
