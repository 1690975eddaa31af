"""The spec's value readers: checks of one value each, a reader of one mapping that names
unknown keys, and the error list a spec collects, so that every module reading a part of a spec
(topologies, routings, router settings, traffic) reports errors the same way: the key path, the
bad value quoted short, one line per error.
"""

from __future__ import annotations

import difflib
import math
import re
import reprlib
from collections.abc import Callable, Mapping
from typing import Any

from .errors import SpecError

#: A spec with more errors reports the first ones and says it stopped.
MAX_ERRORS = 20
#: Entries per list: a fabric within the size limits has at most 12 dimensions or useful levels.
MAX_LIST_LENGTH = 64
#: Integers without a range of their own: bounds every product of a list to a few hundred digits.
MAX_INTEGER = 10**6
#: Characters of a bad value quoted in an error; longer ones end in "…".
VALUE_CHARS = 100

_MISSING = object()


# ---- quoting bad values ------------------------------------------------------------------------


class _Short(reprlib.Repr):
    """``repr`` bounded in depth, entries and digits, so quoting an alias bomb or a 5000-digit
    integer costs microseconds (``repr`` of those takes minutes or raises)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 8
        self.maxdict = 6
        self.maxstring = self.maxother = VALUE_CHARS

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() <= 256:
            return repr(x)
        digits = math.floor(x.bit_length() * math.log10(2)) + 1
        return f"<an integer of about {digits} digits>"


_SHORT = _Short()


def short(value: Any) -> str:
    """``repr(value)`` cut to about :data:`VALUE_CHARS` characters."""
    text = _SHORT.repr(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def describe(value: Any) -> str:
    """A bad value as the user wrote it (cut short), with its type when that is the problem."""
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'} {short(value)}"
    return short(value)


def _key_name(name: str) -> str:
    """A user's key as it appears in a key path (an absurdly long key is cut short)."""
    return name if len(name) <= VALUE_CHARS else name[: VALUE_CHARS - 1] + "…"


def join_path(path: str, name: str) -> str:
    return f"{path}.{_key_name(name)}" if path else _key_name(name)


# ---- collecting errors -------------------------------------------------------------------------


class TooManyErrors(Exception):
    """Raised when error ``MAX_ERRORS + 1`` is found: the check stops there."""


class Errors:
    """The errors found so far in one spec."""

    def __init__(self) -> None:
        self.found: list[SpecError] = []

    def add(self, error: SpecError) -> None:
        for single in error.errors:
            if single not in self.found:
                self.found.append(single)
        if len(self.found) > MAX_ERRORS:
            raise TooManyErrors

    def attempt(self, read: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """Run ``read``; ``(True, value)`` if it found no error, else ``(False, value or None)``.

        An error ``read`` raises after others were recorded in it is dropped: it may be a
        cross-key check that only failed because a bad key was replaced by its default.
        """
        before = len(self.found)
        try:
            value = read(*args)
        except SpecError as error:
            if len(self.found) == before:
                self.add(error)
            return False, None
        return len(self.found) == before, value


class Reader:
    """Reads one mapping of the spec; remembers the keys taken so :meth:`finish` finds strays.

    With ``errors`` (the loader's), a bad optional key is recorded and its default returned, so
    the other keys are still checked; a bad required key is recorded and raised. Without it,
    the first error is raised.
    """

    def __init__(self, data: Any, path: str, errors: Errors | None = None):
        if not isinstance(data, Mapping):
            raise SpecError(path, f"must be a mapping, got {describe(data)}")
        self.path = path
        self.errors = errors
        self._taken: set[str] = set()
        self._misspelt: set[str] = set()  # present keys a missing key's error already names
        for key in data:
            if not isinstance(key, str):
                where = "keys" if path else "top-level keys"
                self.report(SpecError(path, f"{where} must be strings, got {short(key)}"))
        self.data = {key: value for key, value in data.items() if isinstance(key, str)}

    def report(self, error: SpecError) -> None:
        """Record ``error`` (collecting) or raise it (strict): for checks across keys."""
        if self.errors is None:
            raise error
        self.errors.add(error)

    def _fail(self, error: SpecError) -> SpecError:
        """Record ``error`` when collecting; the caller raises it."""
        if self.errors is not None:
            self.errors.add(error)
        return error

    def key(self, name: str) -> str:
        return join_path(self.path, name)

    def has(self, name: str) -> bool:
        return name in self.data

    def skip(self, name: str) -> None:
        """Leave key ``name`` unchecked (its meaning depends on a key that is already bad)."""
        self._taken.add(name)

    def get(self, name: str, check: Callable[[Any, str], Any], default: Any = _MISSING) -> Any:
        self._taken.add(name)
        if name not in self.data:
            if default is _MISSING:
                hint = self._typo_hint(name)
                raise self._fail(SpecError(self.key(name), "missing required key" + hint))
            return default
        try:
            return check(self.data[name], self.key(name))
        except SpecError as error:
            if default is _MISSING or self.errors is None:
                raise self._fail(error) from None
            self.errors.add(error)
            return default

    def sub(self, name: str) -> Reader:
        """The mapping under required key ``name``."""
        self._taken.add(name)
        if name not in self.data:
            hint = self._typo_hint(name)
            raise self._fail(SpecError(self.key(name), "missing required key" + hint))
        return self.section(name)

    def section(self, name: str) -> Reader:
        """The mapping under optional key ``name`` (an empty one when it is absent)."""
        self._taken.add(name)
        try:
            return Reader(self.data.get(name, {}), self.key(name), self.errors)
        except SpecError as error:
            raise self._fail(error) from None

    def _typo_hint(self, name: str) -> str:
        """Point at a present key that looks like a misspelling of the missing one (not one
        already read: that one is right where it is)."""
        present = [
            k for k in self.data if k != name and k not in self._taken and len(k) <= VALUE_CHARS
        ]
        close = [k for k in present if k.lower() == name.lower()][:1]  # a key's case
        close = close or difflib.get_close_matches(name, present, n=1)
        self._misspelt.update(close)  # reported here: finish() does not report it again
        return f" (found unknown key {close[0]!r}: did you mean {name!r}?)" if close else ""

    def finish(self) -> None:
        for name in self.data:
            if name not in self._taken and name not in self._misspelt:
                close = difflib.get_close_matches(name[:VALUE_CHARS], sorted(self._taken), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                known = ", ".join(sorted(self._taken))
                self.report(SpecError(self.key(name), f"unknown key (known: {known}){hint}"))


# ---- value checks: each takes (value, path) and returns the checked value ----------------------


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[Any, str], int]:
    """An integer in a range; with no maximum, at most :data:`MAX_INTEGER`."""
    if minimum is not None and maximum is not None:
        want = f"an integer in {minimum}..{maximum}"
    elif minimum is not None:
        want = f"an integer >= {minimum}"
    else:
        want = "an integer"

    def check(value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(path, f"must be {want}, got {describe(value)}")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise SpecError(path, f"must be {want}, got {short(value)}")
        if maximum is None and value > MAX_INTEGER:
            raise SpecError(
                path, f"must be at most {MAX_INTEGER} (no fabric needs more), got {short(value)}"
            )
        return value

    return check


def number(low: float, high: float, *, low_open: bool = False) -> Callable[[Any, str], float]:
    """A finite number in ``[low, high]`` (``(low, high]`` if ``low_open``), as a float."""
    want = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"

    def check(value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(path, f"must be {want}, got {describe(value)}")
        below = value <= low if low_open else value < low
        if not math.isfinite(value) or below or value > high:
            raise SpecError(path, f"must be {want}, got {short(value)}")
        return float(value)

    return check


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(path, f"must be true or false, got {describe(value)}")
    return value


def string(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(path, f"must be a non-empty string, got {describe(value)}")
    return value


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
_NAME_RULE = "letters, digits, '.', '_', '+', '-', at most 64, starting with a letter or digit"


def fabric_name(value: Any, path: str) -> str:
    """The fabric's name: it becomes file and folder names (``out/NAME``) and Verilog modules,
    so it may not hold a path separator, a space or a leading dot."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise SpecError(path, f"must be a name ({_NAME_RULE}), got {describe(value)}")
    return value


def name_from_file(stem: str) -> str:
    """The default name of a spec without ``name:``: its file name with every character a name
    may not hold replaced by ``-`` (``my spec.yaml`` is ``my-spec``)."""
    name = re.sub(r"[^A-Za-z0-9._+-]", "-", stem).lstrip("._+-")[:64]
    return name or "fabric"


def choice(options: list[str] | tuple[str, ...]) -> Callable[[Any, str], str]:
    def check(value: Any, path: str) -> str:
        if not isinstance(value, str) or value not in options:
            known = isinstance(value, str) and len(value) <= VALUE_CHARS
            close = difflib.get_close_matches(value, options, n=1) if known else []
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(path, f"must be one of {', '.join(options)}, got {short(value)}{hint}")
        return value

    return check


def int_list(
    minimum: int | None = None, *, length: int | None = None, min_length: int = 1
) -> Callable[[Any, str], tuple[int, ...]]:
    """A list of integers (a bare integer is not accepted: sizes per dimension are explicit).

    Lists longer than :data:`MAX_LIST_LENGTH` are refused before any entry is looked at; every
    bad entry is reported.
    """
    each = integer(minimum)

    def check(value: Any, path: str) -> tuple[int, ...]:
        if not isinstance(value, list):
            raise SpecError(path, f"must be a list of integers, got {describe(value)}")
        if len(value) > MAX_LIST_LENGTH:
            raise SpecError(
                path,
                f"must have at most {MAX_LIST_LENGTH} entries, got {len(value)}: {short(value)}",
            )
        if length is not None and len(value) != length:
            raise SpecError(path, f"must have {length} entries, got {len(value)}: {short(value)}")
        if len(value) < min_length:
            raise SpecError(path, f"must have at least {min_length} entries, got {short(value)}")
        return checked_entries(value, path, each)

    return check


def checked_entries(value: list, path: str, each: Callable[[Any, str], Any]) -> tuple:
    """Every entry of the list ``value`` checked by ``each`` (as ``path[i]``); all the bad
    entries are reported together."""
    items, bad = [], []
    for i, item in enumerate(value):
        try:
            items.append(each(item, f"{path}[{i}]"))
        except SpecError as error:
            bad.append(error)
    if bad:
        raise SpecError.combine(bad)
    return tuple(items)
