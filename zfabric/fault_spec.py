"""The spec's optional ``faults:`` section: what is dead in the fabric (docs/faults.md).

Here the section is only read: names are strings, ports integers. Whether a named switch, port,
chip or endpoint exists is known once the fabric is wired; :func:`zfabric.faults.resolve`
checks that against the plan and names the key path of a bad entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SpecError
from .fields import Reader, checked_entries, choice, describe, integer, string

__all__ = [
    "FaultSpec",
    "LinkFault",
    "NamedFault",
    "AttachmentFault",
    "FAULT_ROUTINGS",
    "parse_faults",
]

#: Entries per fault list: far more than any single-failure or few-failure question needs.
MAX_FAULTS = 256
#: ``faults.routing``: keep the family's routing when it still delivers and is proven
#: deadlock-free on the degraded fabric, else the up*/down* table (``auto``); always the
#: family's (``own``: check says whether it survives); always the table (``table``).
FAULT_ROUTINGS = ("auto", "own", "table")
#: which channels of a port a link fault kills: both (the physical link's two directions, or
#: the port's input and output wires), or the output / input only
SIDES = ("both", "out", "in")


@dataclass(frozen=True)
class LinkFault:
    """A dead link: a switch's port (``side`` of it), or every link between two switches."""

    path: str  # the entry's key path, for errors found against the plan
    switch: str | None = None
    port: int | None = None
    side: str = "both"
    between: tuple[str, str] | None = None


@dataclass(frozen=True)
class NamedFault:
    """A dead switch, or a dead chip (both halves of an alternate-mode chip)."""

    path: str
    name: str


@dataclass(frozen=True)
class AttachmentFault:
    """A dead endpoint attachment: ``endpoint``'s attachments on ``switch``."""

    path: str
    endpoint: str
    switch: str


@dataclass(frozen=True)
class FaultSpec:
    """What the spec names dead, and the routing rule; false when nothing is dead (a
    ``routing`` alone changes nothing)."""

    links: tuple[LinkFault, ...] = ()
    switches: tuple[NamedFault, ...] = ()
    chips: tuple[NamedFault, ...] = ()
    attachments: tuple[AttachmentFault, ...] = ()
    routing: str = "auto"

    def __bool__(self) -> bool:
        return bool(self.links or self.switches or self.chips or self.attachments)


def _entries(value: Any, path: str) -> list:
    if not isinstance(value, list):
        raise SpecError(path, f"must be a list, got {describe(value)}")
    if len(value) > MAX_FAULTS:
        raise SpecError(path, f"must have at most {MAX_FAULTS} entries, got {len(value)}")
    return value


def _link(value: Any, path: str) -> LinkFault:
    reader = Reader(value, path)
    if reader.has("between"):
        pair = reader.get("between", _pair)
        reader.finish()
        return LinkFault(path, between=pair)
    switch = reader.get("switch", string)
    port = reader.get("port", integer(0, 4096))
    side = reader.get("side", choice(SIDES), "both")
    reader.finish()
    return LinkFault(path, switch=switch, port=port, side=side)


def _pair(value: Any, path: str) -> tuple[str, str]:
    if not isinstance(value, list) or len(value) != 2:
        raise SpecError(path, f"must be a list of two switch names, got {describe(value)}")
    a, b = checked_entries(value, path, string)
    if a == b:
        raise SpecError(path, f"names {a!r} twice: a link joins two switches")
    return a, b


def _named(value: Any, path: str) -> NamedFault:
    return NamedFault(path, string(value, path))


def _attachment(value: Any, path: str) -> AttachmentFault:
    reader = Reader(value, path)
    endpoint = reader.get("endpoint", string)
    switch = reader.get("switch", string)
    reader.finish()
    return AttachmentFault(path, endpoint, switch)


def parse_faults(reader: Reader) -> FaultSpec:
    """Read ``faults:`` (absent: no faults)."""

    def listed(name: str, each) -> tuple:
        return reader.get(
            name, lambda value, path: checked_entries(_entries(value, path), path, each), ()
        )

    faults = FaultSpec(
        links=listed("links", _link),
        switches=listed("switches", _named),
        chips=listed("chips", _named),
        attachments=listed("attachments", _attachment),
        routing=reader.get("routing", choice(FAULT_ROUTINGS), "auto"),
    )
    reader.finish()
    return faults
