"""What every subcommand shares: the parser class, argument types, output paths and folders,
atomic writes with the user's umask, progress bars and status text.

Every user error is a :class:`~zfabric.errors.SpecError` naming the argument (``--cycles``) or
the key path, which :func:`zfabric.cli.main` prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from zfabric.deadlock import routing_summary
from zfabric.errors import SpecError
from zfabric.fields import short
from zfabric.report import plural
from zfabric.routing import require_route_unit
from zfabric.sim.curve import rate_text
from zfabric.spec import load_spec
from zfabric.topologies import build_fabric

# the spec's own limits on the traffic section's windows and packet length
from zfabric.traffic_spec import MAX_CYCLES, MAX_PACKET_LENGTH
from zfabric.traffic_spec import locality as checked_locality

__all__ = [
    "MAX_CYCLES",
    "MAX_PACKET_LENGTH",
    "Parser",
    "HelpFormatter",
    "OutputFolder",
    "add_command",
    "check_output_file",
    "claim_output_file",
    "check_output_dir",
    "integer",
    "fraction",
    "rate",
    "rates",
    "weights",
    "locality",
    "packet_length",
    "plural",
    "rate_text",
    "deadlock_text",
    "report_deadlocks",
    "atomic_file",
    "write_atomically",
    "phase",
    "progress",
    "status",
]

#: the file, in a folder zfabric writes, listing the files zfabric wrote there
MANIFEST = ".zfabric-manifest"


# ---- the parser ---------------------------------------------------------------------------------


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none to show (flags, and options
    resolved after parsing, whose help text states the default itself)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the usage is one ``--help`` away)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def add_command(commands, name: str, help: str, description: str | None = None) -> Parser:
    """A subcommand parser with the shared formatter and ``-q``."""
    parser = commands.add_parser(
        name, help=help, description=description or help, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars or status lines (results still print)",
    )
    return parser


# ---- argument types: each refuses a bad value naming it -----------------------------------------


def integer(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An ``int`` argument in ``minimum..maximum``."""
    want = (
        f"an integer in {minimum}..{maximum}" if maximum is not None else f"an integer >= {minimum}"
    )

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {want}, got {short(text)}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {want}, got {short(text)}")
        return value

    parse.__name__ = "integer"
    return parse


def _real(text: str, low: float, high: float, *, open_low: bool, want: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {want}, got {short(text)}") from None
    inside = (low < value if open_low else low <= value) and value <= high  # NaN fails too
    if not inside:
        raise argparse.ArgumentTypeError(f"must be {want}, got {short(text)}")
    return value


def rate(text: str) -> float:
    """An injection rate in (0, 1] flits/cycle/endpoint."""
    return _real(text, 0.0, 1.0, open_low=True, want="a rate in (0, 1] flits/cycle/endpoint")


def fraction(text: str) -> float:
    """A fraction in [0, 1]."""
    return _real(text, 0.0, 1.0, open_low=False, want="a fraction in [0, 1]")


def rates(text: str) -> tuple[float, ...]:
    """Comma-separated rates, each in (0, 1], sorted."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or not all(parts):
        raise argparse.ArgumentTypeError(f"must be comma-separated rates, got {short(text)}")
    values = []
    for part in parts:
        try:
            values.append(rate(part))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"each rate must be in (0, 1] flits/cycle/endpoint, got {short(part)}"
                f" in {short(text)}"
            ) from None
    return tuple(sorted(set(values)))


def locality(text: str) -> str | tuple[float, ...]:
    """A locality preset's name, or comma-separated probabilities summing to 1."""
    value: object = text.strip()
    if "," in text or text.strip()[:1].isdigit() or text.strip()[:1] == ".":
        parts = [part.strip() for part in text.split(",")]
        try:
            value = [float(part) for part in parts]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a preset name or comma-separated probabilities, got {short(text)}"
            ) from None
    try:
        return checked_locality(value, "--locality")
    except SpecError as error:
        raise argparse.ArgumentTypeError(error.message) from None


def weights(text: str) -> tuple[float, ...]:
    """Comma-separated weights, each >= 0, with a positive sum (kept in order)."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or not all(parts):
        raise argparse.ArgumentTypeError(f"must be comma-separated weights, got {short(text)}")
    values = []
    for part in parts:
        try:
            values.append(_real(part, 0.0, 1e6, open_low=False, want="a weight in [0, 1e6]"))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"each weight must be a number in [0, 1e6], got {short(part)} in {short(text)}"
            ) from None
    if not sum(values) > 0:
        raise argparse.ArgumentTypeError(f"must have a positive sum, got {short(text)}")
    return tuple(values)


def packet_length(text: str) -> int | tuple[int, int]:
    """``N`` or ``MIN-MAX`` flits, each in 1..4096 (the spec's limit)."""
    want = f"N or MIN-MAX flits, each in 1..{MAX_PACKET_LENGTH} and MIN <= MAX"
    try:
        low, _, high = text.partition("-")
        value = (int(low), int(high)) if high else int(low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {want}, got {short(text)}") from None
    ends = value if isinstance(value, tuple) else (value, value)
    if not 1 <= ends[0] <= ends[1] <= MAX_PACKET_LENGTH:
        raise argparse.ArgumentTypeError(f"must be {want}, got {short(text)}")
    return value


def deadlock_text(deadlock: dict[str, Any]) -> str:
    """A model deadlock as every command prints it: the cycle, and the knot of waiting
    channels one a line, back to the first."""
    channels = deadlock["channels"]
    kind = "partial deadlock" if deadlock.get("partial") else "deadlock"
    return f"{kind} at cycle {deadlock['cycle']}; waiting channels:\n  " + " ->\n  ".join(
        [*channels, channels[0]] if channels else ["(none found)"]
    )


def report_deadlocks(name: str, points: Iterable[dict[str, Any]]) -> bool:
    """Print on stderr each point of a curve (``rate``, ``deadlock``) at which the model
    deadlocked, with its knot: a deadlock is an error, never a mere saturation. True if any."""
    deadlocked = [point for point in points if point["deadlock"]]
    for point in deadlocked:
        where = f"{name} rate {rate_text(point['rate'])}"
        print(f"zfabric: {where}: {deadlock_text(point['deadlock'])}", file=sys.stderr)
    return bool(deadlocked)


# ---- output paths -------------------------------------------------------------------------------


def _check_ancestors(folder: Path, argument: str, shown: Path) -> None:
    """The nearest existing ancestor of ``folder`` must be a folder we may write in."""
    for ancestor in (folder, *folder.parents):
        if ancestor.is_dir():
            if not os.access(ancestor, os.W_OK | os.X_OK):
                raise SpecError(argument, f"cannot write {str(shown)!r}: {ancestor} is read-only")
            return
        if ancestor.exists() or ancestor.is_symlink():
            raise SpecError(argument, f"cannot write {str(shown)!r}: {ancestor} is not a folder")


def check_output_file(path: str | Path, argument: str, *, recognised: bool = False) -> Path:
    """Refuse, before any work, an output file that cannot be written (its folder missing
    too: a single file never makes folders, so a mistyped path is not taken for new ones), or
    that exists and was not written by zfabric: its folder's manifest lists the single files
    zfabric wrote there (:func:`atomic_file` with ``argument``), as it does an output folder's.
    ``recognised``: the caller has read the existing file and found it zfabric's own (a
    points file a sweep appends to), whatever the manifest says."""
    path = Path(path)
    if path.is_dir():
        raise SpecError(argument, f"{str(path)!r} is a folder, expected a file name")
    if path.exists() and not os.access(path, os.W_OK):
        raise SpecError(argument, f"cannot write {str(path)!r}: the file is read-only")
    if not path.parent.exists() and not path.parent.is_symlink():
        raise SpecError(
            argument, f"cannot write {str(path)!r}: the folder {str(path.parent)!r} does not exist"
        )
    _check_ancestors(path.parent, argument, path)
    if not recognised:
        OutputFolder(path.parent, argument, exclusive=False).check([path.name])
    return path


def claim_output_file(path: str | Path, argument: str) -> None:
    """List a single output file that a library writes itself (a plot, a waveform) in its
    folder's manifest just before it does (:func:`check_output_file` checked it up front)."""
    path = Path(path)
    OutputFolder(path.parent, argument, exclusive=False).claim(path.name)


def check_output_dir(path: str | Path, argument: str) -> Path:
    """Refuse, before any work, an output folder that is a file or cannot be created."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise SpecError(argument, f"{str(path)!r} is a file, expected a folder")
    _check_ancestors(path, argument, path)
    return path


# ---- writing ------------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(
    path: str | Path, mode: str = "w", *, argument: str | None = None
) -> Iterator[IO[Any]]:
    """A handle on a temporary file beside ``path`` that becomes ``path`` when the block ends
    (so output can stream to disk, never held in memory, and a failure leaves no partial file:
    the temporary file is removed); the file gets the user's umask (``mkstemp`` alone would
    make it 0600). With ``argument`` it is the user's single output file (``--plot``,
    ``--records``..., checked by :func:`check_output_file`): listed in its folder's manifest
    before it takes its name, so a rerun may replace it, and a folder refusing the temporary
    file is an error naming ``argument``."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        if argument is None:
            raise
        raise SpecError(argument, f"cannot write {str(path)!r}: {error.strerror}") from None
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
        if argument is not None:
            OutputFolder(path.parent, argument, exclusive=False).claim(path.name)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_atomically(path: Path, data: str | bytes, *, argument: str | None = None) -> None:
    """Write ``path`` whole or not at all (:func:`atomic_file`)."""
    with atomic_file(path, "wb" if isinstance(data, bytes) else "w", argument=argument) as handle:
        handle.write(data)


class OutputFolder:
    """A folder zfabric writes its files into without touching anybody else's.

    The folder's ``.zfabric-manifest`` lists (one relative path a line) the files zfabric wrote
    there. A commit writes the new files and refuses a name that exists without being listed: a
    file zfabric did not write is never deleted or overwritten. A commit removes only the listed
    files its caller names as superseded (``replaces``: files of the command's own earlier
    result that this one does not write again, such as a co-simulation report of a run that
    now skips it); every other listed file is kept, whatever command wrote it. With
    ``exclusive`` the folder holds one result (``zfabric run``: a report goes to a folder of its
    own), so a non-empty folder without a manifest is refused as a whole; without it the
    folder is shared (``zfabric verilog`` of several fabrics into ``build``).

    A manifest entry must name a file inside the folder (relative, no ``..``, not through a
    symbolic link leading out): a manifest naming anything else is refused, as it could
    otherwise make zfabric delete or overwrite a file elsewhere.
    """

    def __init__(self, path: str | Path, argument: str, *, exclusive: bool):
        self.path = check_output_dir(path, argument)
        self.argument = argument
        manifest = self.path / MANIFEST
        self.owned: set[str] = set()
        if manifest.is_file():
            self.owned = {line for line in manifest.read_text().splitlines() if line}
            for name in sorted(self.owned):
                self._check_entry(name, manifest)
        elif exclusive and self.path.is_dir() and any(self.path.iterdir()):
            raise SpecError(
                argument,
                f"{str(self.path)!r} is not empty and was not written by zfabric (no {MANIFEST});"
                " choose a new or empty folder",
            )

    def _check_entry(self, name: str, manifest: Path) -> None:
        """Refuse a manifest entry naming a file outside the folder."""
        parts = PurePosixPath(name).parts
        inside = self.path.resolve()
        if (
            "\\" in name
            or PurePosixPath(name).is_absolute()
            or any(part in ("..", ".") for part in name.split("/"))
            or not parts
            or not (self.path / name).resolve().is_relative_to(inside)
            or (self.path / name).resolve() == inside
        ):
            raise SpecError(
                self.argument,
                f"{str(manifest)!r} lists {short(name)}, which is not a file inside"
                f" {str(self.path)!r}; refusing to use the folder (remove the line or the folder)",
            )

    def check(self, names: Iterable[str]) -> None:
        """Refuse names that exist without zfabric having written them (or under a file)."""
        for name in names:
            target = self.path / name
            for parent in list(Path(name).parents)[:-1]:
                if (self.path / parent).exists() and not (self.path / parent).is_dir():
                    raise SpecError(self.argument, f"{str(self.path / parent)!r} is not a folder")
            if (target.exists() or target.is_symlink()) and name not in self.owned:
                raise SpecError(
                    self.argument,
                    f"{str(target)!r} exists and was not written by zfabric; refusing to"
                    " overwrite it",
                )

    def claim(self, name: str) -> None:
        """List ``name`` (checked as :meth:`check` does) in the manifest before zfabric writes
        it, as :meth:`commit` lists first: the folder's single output file."""
        self.check([name])
        if name not in self.owned:
            self.owned = self.owned | {name}
            write_atomically(self.path / MANIFEST, "".join(f"{n}\n" for n in sorted(self.owned)))

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A temporary folder inside the output folder (same file system, so moves are atomic),
        removed afterwards; the output folder is removed again if it was made for nothing."""
        created = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=self.path, prefix=".zfabric-staging-"))
        except OSError as error:
            raise SpecError(
                self.argument, f"cannot write into {str(self.path)!r}: {error.strerror}"
            ) from None
        try:
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # our own temporary folder
            if created and not any(self.path.iterdir()):
                self.path.rmdir()

    def listed(self, *patterns: str) -> list[str]:
        """The listed files whose names match any of ``patterns`` (``fnmatch``, ``*`` crossing
        folders): a command's own earlier result, for :meth:`commit`'s ``replaces``."""
        return sorted(n for n in self.owned if any(fnmatch.fnmatchcase(n, p) for p in patterns))

    def commit(self, staging: Path, replaces: Iterable[str] = ()) -> list[str]:
        """Move every file of ``staging`` into the folder; returns their relative paths.
        ``replaces``: files of an earlier result that this one supersedes (an earlier emission
        of the same fabric, the report a run wrote before), removed if listed and not written
        again; no other file is removed."""
        new = sorted(
            path.relative_to(staging).as_posix() for path in staging.rglob("*") if path.is_file()
        )
        self.check(new)
        listed = (self.owned - set(replaces)) | set(new)
        # list old and new first: an interruption leaves nothing unlisted that zfabric wrote
        write_atomically(
            self.path / MANIFEST, "".join(f"{n}\n" for n in sorted(self.owned | set(new)))
        )
        mode = 0o777 & ~_umask()
        for name in new:
            target = self.path / name
            for parent in reversed(list(Path(name).parents)[:-1]):
                if not (self.path / parent).is_dir():
                    (self.path / parent).mkdir()
                    os.chmod(self.path / parent, mode)
            os.replace(staging / name, target)
        for name in sorted(self.owned - listed):
            (self.path / name).unlink(missing_ok=True)
            for parent in list(Path(name).parents)[:-1]:  # drop folders left empty
                with contextlib.suppress(OSError):
                    (self.path / parent).rmdir()
        write_atomically(self.path / MANIFEST, "".join(f"{n}\n" for n in sorted(listed)))
        self.owned = listed
        return new


# ---- progress and status ------------------------------------------------------------------------


def _quiet(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "quiet", False))


@contextlib.contextmanager
def progress(
    args: argparse.Namespace, label: str, unit: str = "it"
) -> Iterator[Callable[[int, int], None] | None]:
    """A tqdm bar on stderr as a ``(done, total)`` callback, or None when stderr is not a
    terminal or with ``-q`` (so the library skips the calls)."""
    if _quiet(args) or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    # no monitor thread: the set-up's walks fork processes only from a single-threaded one
    tqdm.monitor_interval = 0
    with tqdm(desc=label, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True) as bar:

        def update(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        yield update


@contextlib.contextmanager
def phase(args: argparse.Namespace, label: str) -> Iterator[None]:
    """A tqdm line with the elapsed time for a step that reports no progress of its own
    (Verilog emission, a simulator build and run), refreshed twice a second; nothing when
    stderr is not a terminal or with ``-q``."""
    if _quiet(args) or not sys.stderr.isatty():
        yield
        return
    import threading

    from tqdm import tqdm

    done = threading.Event()
    with tqdm(desc=label, bar_format="{desc}: {elapsed}", file=sys.stderr, leave=False) as bar:

        def tick() -> None:
            while not done.wait(0.5):
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()


def status(args: argparse.Namespace, text: str) -> None:
    """A status line: on stderr, not at all with ``-q`` (stdout holds the results)."""
    if not _quiet(args):
        from tqdm import tqdm

        tqdm.write(text, file=sys.stderr)


def checked_plan(args: argparse.Namespace, spec_path: str, *, rtl: str | None = None):
    """Compile the spec and refuse a cyclic channel dependency graph unless
    ``--allow-deadlock``: returns ``(spec, plan, analysis, ok)``. ``rtl``: the command, which
    builds RTL (:func:`require_route_unit`)."""
    spec = load_spec(spec_path)
    if rtl:
        require_route_unit(spec, rtl)
    plan, _graph = build_fabric(spec)
    with progress(args, f"{spec.name} routes", "destinations") as update:
        analysis = routing_summary(plan, progress=update)
    if analysis.cycle and not getattr(args, "allow_deadlock", False):
        print(
            f"zfabric: {spec.name} is not deadlock-free (use --allow-deadlock to simulate it):\n  "
            + " ->\n  ".join([*analysis.cycle, analysis.cycle[0]]),
            file=sys.stderr,
        )
        return spec, plan, analysis, False
    return spec, plan, analysis, True


#: the file types matplotlib's Agg backend writes (``canvas.get_supported_filetypes()``, less
#: those that need optional Pillow codecs), checked before a sweep so it cannot fail at the end
PLOT_FORMATS = (
    "eps", "jpeg", "jpg", "pdf", "pgf", "png", "ps", "raw", "rgba", "svg", "svgz", "tif", "tiff",
    "webp",
)  # fmt: skip


def check_plot_file(path: str, argument: str) -> None:
    """Refuse (before any work) a plot path zfabric may not write or whose suffix names no
    format matplotlib writes."""
    check_output_file(path, argument)
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise SpecError(
            argument,
            f"{path!r} must end in one of .{', .'.join(PLOT_FORMATS)} (the plot's format)",
        )


def add_executor_arguments(parser: argparse.ArgumentParser, *, default_workers: int) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--workers",
        type=integer(0, 1024),
        metavar="N",
        default=default_workers,
        help="run on a local Dask cluster of N worker processes; 0 runs the points one after"
        " another in this process, without Dask",
    )
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask scheduler at ADDRESS (tcp://host:8786) instead of a local cluster",
    )


@contextlib.contextmanager
def executor(args: argparse.Namespace, retries: int) -> Iterator[object]:
    """The executor the arguments name: in this process, a local cluster (closed afterwards),
    or a client of ``--scheduler``; the dashboard link goes to stderr."""
    from zfabric.sim.study import DaskExecutor, SerialExecutor, start_local_cluster

    if args.scheduler is None and args.workers == 0:
        yield SerialExecutor(retries)
        return
    try:
        import distributed
    except ImportError:
        argument = "--scheduler" if args.scheduler else "--workers"
        raise SpecError(
            argument, "Dask is not installed: pip install 'zfabric[study]' (or use --workers 0)"
        ) from None
    if args.scheduler is not None:
        try:
            client = distributed.Client(args.scheduler)
        except (OSError, ValueError, TypeError) as error:
            text = " ".join(str(error).split())[:200]
            raise SpecError(
                "--scheduler", f"cannot connect to {args.scheduler!r}: {text}"
            ) from None
        cluster = None
    else:
        cluster, client = start_local_cluster(args.workers, retries)
    try:
        status(args, f"Dask dashboard: {client.dashboard_link}")
        yield DaskExecutor(client, retries)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def cosim_cache() -> Path:
    """The co-simulation build cache, as the runner finds it
    (:func:`zfabric.sim.tb.runner.default_cache`)."""
    from zfabric.sim.tb.runner import default_cache  # lazily: only the cache commands need it

    return default_cache()
