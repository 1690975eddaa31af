"""User-facing errors: the CLI prints them as one line and exits with a fixed status."""

from __future__ import annotations

from collections.abc import Sequence


class SpecError(ValueError):
    """A bad spec: names the key path and the bad value. The CLI exits with status 2."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class PlanError(ValueError):
    """A plan that is malformed or whose routing does not deliver (a bug or a bad plan file)."""


class DeadlockError(RuntimeError):
    """The channel dependency graph has a cycle; ``cycle`` lists its channels in order."""

    def __init__(self, cycle: Sequence[str]):
        self.cycle = list(cycle)
        super().__init__("channel dependency cycle: " + " -> ".join([*self.cycle, self.cycle[0]]))
