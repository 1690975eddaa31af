"""The Znode thesis's semantic notation, read and written (A. Peratikou, *An optimised and
generalised node for fat tree classes*, 2014, §3.3.2).

The thesis writes a Znode as a fraction, ``Z_n^(l) ≝ [(R_1,…,R_n)^(l)/(ψ_1,…,ψ_n) over
(z_1,…,z_n)]``, and a super node of m Znodes as ``S_m ≝ m ∘ Z_n^(l)``. On one line the fraction
bar is a slash: ``Z3(1,8,64)/(1,1,1)/(8,8,16)`` is R, then ψ, then z, and with ψ left out
(all 1) ``Z3(1,8,64)/(8,8,16)``. The grammar (spaces are ignored)::

    notation := [ "S" ["_"] int ("=" | "≝") ] [ count ("∘" | "*") ] znode
    count    := int | "(" int ")"
    znode    := [ ["o"] "Z" ["_"] [int] [layers] ["=" | "≝"] ] ( "[" fraction "]" | fraction )
    fraction := vector [layers] [ "/" psi ] ("/" | "over") vector        R, ψ, z
    psi      := "(" entry {"," entry} ")" [pattern]
    entry    := int [pattern]
    layers   := "^" ( int | "(" int ")" )
    pattern  := "^(" ("b" | "butterfly" | "Ω" | "omega") ")"

``o`` (an optimal Znode) is read and ignored. ψ may list fewer entries than levels (the
thesis's ``(1,2,2,2)/(1,1)``): the missing ones are 1. The connectivity-function exponents
(``b`` butterfly, ``Ω`` omega) may sit on each ψ entry or on the whole ψ vector, and must agree:
zfabric wires every level with one pattern. A layer count given twice (on Z and on R), or a
Znode count given twice (S_m and m ∘), must agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NotationError", "ZnodeNotation", "parse_notation", "format_notation"]

#: pattern names, lower case (Ω is read as ω)
_PATTERNS = {"b": "butterfly", "butterfly": "butterfly", "ω": "omega", "omega": "omega"}
_TOKEN = re.compile(r"\s*(?:(\d+)|(over|butterfly|omega)|(.))", re.IGNORECASE)


class NotationError(ValueError):
    """A notation that does not parse or does not describe a Znode (one line)."""


@dataclass(frozen=True)
class ZnodeNotation:
    """What a notation says: per-level tuples (level 1 first), layers, Znodes, pattern."""

    R: tuple[int, ...]
    psi: tuple[int, ...]
    z: tuple[int, ...]
    layers: int = 1
    znodes: int = 1
    pattern: str = "butterfly"


class _Reader:
    """Tokens of one notation: integers, the words ``over``/``butterfly``/``omega``, and single
    characters; :meth:`fail` names the place."""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, int]] = []  # (token, character index)
        for match in _TOKEN.finditer(text):
            if match.group(0).strip():
                start = match.start(match.lastindex or 0)
                self.tokens.append((match.group(match.lastindex or 0), start))
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else None

    def take(self, *expected: str) -> str | None:
        """The next token if it is one of ``expected`` (words in any case), else None."""
        token = self.peek()
        if token is not None and any(
            token == e or (len(e) > 1 and token.lower() == e) for e in expected
        ):
            self.at += 1
            return token
        return None

    def expect(self, *expected: str) -> str:
        token = self.take(*expected)
        if token is None:
            self.fail(" or ".join(repr(e) for e in expected))
        return token

    def number(self, what: str) -> int:
        token = self.peek()
        if token is None or not token.isdigit():
            self.fail(what)
        self.at += 1
        return int(token)

    def fail(self, wanted: str) -> None:
        if self.at < len(self.tokens):
            where = self.tokens[self.at][1]
            rest = self.text[where:].rstrip()
            rest = rest if len(rest) <= 12 else rest[:11] + "…"
            raise NotationError(f"expected {wanted} at character {where + 1}, got {rest!r}")
        raise NotationError(f"expected {wanted} at the end")


def _exponent(reader: _Reader, what: str) -> int:
    """``^k``, ``^(k)``: after the ``^``."""
    if reader.take("("):
        value = reader.number(what)
        reader.expect(")")
        return value
    return reader.number(what)


def _pattern(reader: _Reader) -> str | None:
    """An optional ``^(b)`` / ``^(Ω)``; a ``^`` followed by something else is left unread."""
    if reader.peek() != "^" or reader.at + 2 >= len(reader.tokens):
        return None
    word = reader.tokens[reader.at + 2][0]
    if reader.tokens[reader.at + 1][0] != "(" or word.lower() not in _PATTERNS:
        return None
    reader.at += 3
    reader.expect(")")
    return _PATTERNS[word.lower()]


def _vector(reader: _Reader, what: str, patterns: list[str] | None = None) -> tuple[int, ...]:
    """``(a,b,...)``; with ``patterns``, each entry may carry a pattern exponent."""
    reader.expect("(")
    values = []
    while True:
        values.append(reader.number(f"an integer in {what}"))
        if patterns is not None and (pattern := _pattern(reader)):
            patterns.append(pattern)
        if not reader.take(","):
            break
    reader.expect(")")
    return tuple(values)


def _agree(first: int | None, second: int, what: str) -> int:
    if first is not None and first != second:
        raise NotationError(f"{what} given twice, {first} and {second}")
    return second


def parse_notation(text: str) -> ZnodeNotation:
    """Read a Znode or super-node notation (module docstring); raises :class:`NotationError`."""
    reader = _Reader(text)
    znodes = layers = None
    if reader.take("S"):
        reader.take("_")
        znodes = reader.number("the Znode count after S")
        reader.expect("=", "≝")
    ahead = [token for token, _ in reader.tokens[reader.at : reader.at + 4]]
    if ahead[1:2] in (["∘"], ["*"]) or ahead[3:4] in (["∘"], ["*"]):  # m ∘, (m) ∘
        bracketed = reader.take("(")
        count = reader.number("a Znode count")
        if bracketed:
            reader.expect(")")
        reader.expect("∘", "*")
        znodes = _agree(znodes, count, "the Znode count")
    elif znodes is not None:
        reader.fail("the Znode count m and '∘' (S_m = m ∘ Z...)")
    levels = None
    if reader.take("o") or reader.peek() == "Z":  # Z_n^(l) = ..., or the bare fraction
        reader.expect("Z")
        reader.take("_")
        levels = reader.number("the level count") if (reader.peek() or "").isdigit() else None
        if reader.take("^"):
            layers = _exponent(reader, "a layer count")
        reader.take("=", "≝")
    bracketed = reader.take("[")
    R = _vector(reader, "R")
    if reader.take("^"):
        layers = _agree(layers, _exponent(reader, "a layer count"), "the layer count")
    patterns: list[str] = []
    middle = None
    if reader.take("over"):
        z = _vector(reader, "z")
    else:
        reader.expect("/", "over")
        middle = _vector(reader, "psi", patterns)
        if (pattern := _pattern(reader)) is not None:
            patterns.append(pattern)
        if reader.take("/", "over"):
            z = _vector(reader, "z")
        else:
            z, middle = middle, None
            if patterns:
                raise NotationError("a connectivity pattern is given on z (it belongs on psi)")
    if bracketed:
        reader.expect("]")
    if reader.peek() is not None:
        reader.fail("the end")
    n = len(z)
    if len(R) != n:
        raise NotationError(f"R has {len(R)} entries but z has {n} (one per level)")
    if levels is not None and levels != n:
        raise NotationError(f"Z{levels} names {levels} levels but z has {n}")
    psi = middle or (1,)
    if len(psi) > n:
        raise NotationError(f"psi has {len(psi)} entries but there are {n} levels")
    for name, values in (("R", R), ("psi", psi), ("z", z)):
        if 0 in values:
            raise NotationError(f"{name} entries must be >= 1, got {values}")
    if len(set(patterns)) > 1:
        raise NotationError("every level takes the same connectivity pattern (butterfly or omega)")
    if layers == 0 or znodes == 0:
        raise NotationError("layer and Znode counts must be >= 1")
    return ZnodeNotation(
        R=R,
        psi=psi + (1,) * (n - len(psi)),
        z=z,
        layers=layers or 1,
        znodes=znodes or 1,
        pattern=patterns[0] if patterns else "butterfly",
    )


def format_notation(spec: ZnodeNotation) -> str:
    """The one-line notation: ``[m∘]Z_n[^(l)](R)[/(ψ)[^(Ω)]]/(z)``, ψ left out when every ψ is
    1 and the pattern is butterfly (the thesis leaves out what is 1 or butterfly)."""

    def vector(values: tuple[int, ...]) -> str:
        return "(" + ",".join(map(str, values)) + ")"

    text = f"{spec.znodes}∘" if spec.znodes > 1 else ""
    text += f"Z{len(spec.z)}" + (f"^({spec.layers})" if spec.layers > 1 else "")
    text += vector(spec.R)
    if spec.pattern == "omega":
        text += f"/{vector(spec.psi)}^(Ω)"
    elif any(value != 1 for value in spec.psi):
        text += f"/{vector(spec.psi)}"
    return text + f"/{vector(spec.z)}"
