"""User-facing errors: the CLI prints them one line per error and exits with a fixed status."""

from __future__ import annotations

from collections.abc import Sequence

#: What the CLI prints before every error line (``print(f"zfabric: error: {error}")``).
ERROR_PREFIX = "zfabric: error: "


class SpecError(ValueError):
    """A bad spec: names the key path and the bad value. The CLI exits with status 2.

    One error is one line, ``path: message``. A spec with several errors raises one SpecError
    made by :meth:`combine`: ``errors`` holds the single errors, ``path`` and ``message`` are the
    first one's, and ``str()`` gives one line per error, every line after the first starting with
    :data:`ERROR_PREFIX`, so the CLI's single ``print`` shows each error on its own prefixed line.
    """

    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message
        self.errors: tuple[SpecError, ...] = (self,)
        super().__init__(f"{path}: {message}" if path else message)

    @property
    def lines(self) -> list[str]:
        """One line per error, without the CLI prefix."""
        return [f"{e.path}: {e.message}" if e.path else e.message for e in self.errors]

    @classmethod
    def combine(cls, errors: Sequence[SpecError], note: str | None = None) -> SpecError:
        """One SpecError for several (nested combined errors are flattened); ``note`` is a last
        line that is not an error of its own (e.g. that the search stopped)."""
        flat = tuple(single for error in errors for single in error.errors)
        if len(flat) == 1 and note is None:
            return flat[0]
        combined = cls(flat[0].path, flat[0].message)
        combined.errors = flat
        combined.args = (("\n" + ERROR_PREFIX).join(combined.lines + ([note] if note else [])),)
        return combined


class PlanError(ValueError):
    """A plan that is malformed or whose routing does not deliver (a bug or a bad plan file)."""


class DeadlockError(RuntimeError):
    """The channel dependency graph has a cycle; ``cycle`` lists its channels in order."""

    def __init__(self, cycle: Sequence[str]):
        self.cycle = list(cycle)
        super().__init__("channel dependency cycle: " + " -> ".join([*self.cycle, self.cycle[0]]))
