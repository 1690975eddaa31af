"""Bad-input corpus for spec files: ``zfabric check`` must answer every one with exit status 2,
one ``zfabric: error:`` line per error naming the key path and the bad value, no traceback, no
file created or changed, and in well under the time any real work would take."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from zfabric.cli import main

PREFIX = "zfabric: error: "
#: generous: every case is refused before anything is built (in-process, imports done); CPU
#: seconds, so that other jobs on the machine (parallel test workers) do not count
CPU_SECONDS = 2.0


@dataclass(frozen=True)
class Case:
    id: str
    content: str | bytes | None  # None: no file at all; a str or bytes goes to spec.yaml
    errors: tuple[tuple[str, str], ...]  # (key path, fragment of the message or bad value)
    spec: str = "spec.yaml"  # what is given to check
    lines: int | None = None  # stderr lines, when not one per expected error


def case(id: str, content: str | bytes | None, *errors: tuple[str, str], **options) -> Case:
    return Case(id, content, errors, **options)


def torus(extra: str = "", topology: str = "k: [4, 4]") -> str:
    return f"name: t\ntopology:\n  kind: torus\n  {topology}\n{extra}"


def bomb(levels: int = 9) -> str:
    """The billion laughs: 9 levels of 9 aliases each, ~4e8 strings if expanded."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


LAUGHS = "[[[[...], [...], [...]"  # the start of a cut-short bomb

CASES = [
    # ---- files that are not specs --------------------------------------------------------------
    case(
        "binary", bytes(range(256)) * 4, ("spec.yaml", "not UTF-8 text (byte 0x80 at offset 128)")
    ),
    case("latin1", b"name: caf\xe9\n", ("spec.yaml", "not UTF-8 text (byte 0xe9 at offset 9)")),
    case("nul", "name: a\x00b\n", ("spec.yaml", "unacceptable character #x0000 at offset 7")),
    case("empty", "", ("spec.yaml", "the spec is empty")),
    case("comment-only", "# nothing\n", ("spec.yaml", "the spec is empty")),
    case(
        "top-list", "- a\n- b\n", ("spec.yaml", "must be a mapping of keys, got a list ['a', 'b']")
    ),
    case("top-scalar", "hello\n", ("spec.yaml", "must be a mapping of keys, got 'hello'")),
    case("directory", None, ("adir", "cannot read: Is a directory"), spec="adir"),
    case("missing", None, ("nope.yaml", "cannot read: No such file"), spec="nope.yaml"),
    case("oversized", "description: " + "x" * 70_000 + "\n", ("spec.yaml", "larger than 64 KiB")),
    case("syntax", torus(topology="k: [4, 4"), ("spec.yaml", "YAML syntax error at line 5")),
    case("two-documents", "name: a\n---\nname: b\n", ("spec.yaml", "YAML syntax error at line 2")),
    case("bad-date", torus("when: 2024-13-01\n"), ("spec.yaml", "bad value '2024-13-01'")),
    case("5000-digits", "name: 1" + "0" * 5000 + "\n", ("spec.yaml", "value has 5001 digits")),
    case("unknown-tag", "name: !python/object x\n", ("spec.yaml", "'!python/object'")),
    case("undefined-alias", "name: *nowhere\n", ("spec.yaml", "found undefined alias")),
    case(
        "deep-nesting",
        "name: " + "[" * 999 + "]" * 999 + "\n",  # 1000 levels with the top mapping: parsed
        ("name", "got a list [[[["),
        ("topology", "missing required key"),
    ),
    case(
        "too-deep-nesting",  # refused by libyaml (PyYAML >= 6.0.4) and by our walk alike
        "name: " + "[" * 5000 + "]" * 5000 + "\n",
        ("spec.yaml", "at line 1, column 1006: nested deeper than 1000 levels"),
    ),
    # ---- hostile sizes -------------------------------------------------------------------------
    case(
        "k-15000",
        torus(topology="k: [" + ",".join(["2"] * 15000) + "]"),
        ("topology.k", "must have at most 64 entries, got 15000: [2, 2, 2"),
    ),
    case(
        "znode-14000-levels",
        "topology:\n  kind: znode\n  z: [" + ",".join(["2"] * 14000) + "]\n"
        "  R: [" + ",".join(["1"] * 14000) + "]\n",
        ("topology.z", "must have at most 64 entries, got 14000: [2, 2, 2"),
    ),
    case(
        "bomb-in-name",
        bomb() + "name: *a8\ntopology: {kind: torus, k: [4]}\n",
        (
            "name",
            f"a letter or digit), got a list {LAUGHS}",
        ),
        *((f"a{i}", "unknown key") for i in range(9)),
    ),
    case(
        "bomb-in-k",
        bomb(3) + "topology: {kind: torus, k: *a2}\n",
        *(
            (f"topology.k[{i}]", "must be an integer >= 2, got a list [['lol', 'lol'")
            for i in range(9)
        ),
        *((f"a{i}", "unknown key") for i in range(3)),
    ),
    case(
        "recursive-alias",
        "topology: &t {kind: torus, k: &a [2, *a], x: *t}\n",
        ("topology.k[1]", "got a list [2, [2, [2, [...]]]]"),
    ),
    case("huge-k", torus(topology="k: [1" + "0" * 1000 + "]"), ("topology.k[0]", "about 1001 dig")),
    case(
        "too-many-switches",
        torus(topology="k: [64, 64, 16]"),
        ("topology", "gives 65536 switches, over the limit of 32768"),
    ),
    # a fabric of one endpoint has nothing to route (every command used to end in a traceback)
    case(
        "one-endpoint-znode",
        "name: z\ntopology: {kind: znode, z: [1, 1], R: [1, 1]}\n",
        ("topology", "gives 1 endpoint, a fabric needs at least 2"),
    ),
    case(
        "one-endpoint-xgft",
        "name: x\ntopology: {kind: xgft, h: 1, m: [1], w: [1]}\n",
        ("topology", "gives 1 endpoint, a fabric needs at least 2"),
    ),
    case(
        "too-many-errors",
        torus("".join(f"extra{i}: {i}\n" for i in range(40))),
        *((f"extra{i}", "unknown key") for i in range(20)),
        lines=21,
    ),
    # ---- mappings ------------------------------------------------------------------------------
    case(
        "duplicate-top",
        "name: a\ntopology: {kind: torus, k: [4]}\nname: b\n",
        ("name", "duplicate key (lines 1 and 3)"),
    ),
    case(
        "duplicate-nested",
        torus(topology="k: [4, 4]\n  k: [8]"),
        ("topology.k", "duplicate key (lines 4 and 5)"),
    ),
    case(
        "duplicate-traffic",
        torus("traffic:\n  rate: 0.1\n  seed: 1\n  rate: 0.2\n"),
        ("traffic.rate", "duplicate key (lines 6 and 8)"),
    ),
    case("int-key-top", torus("7: x\n"), ("", "top-level keys must be strings, got 7")),
    case("int-key-nested", torus(topology="k: [4]\n  3: x"), ("topology", "keys must be strings")),
    case("no-topology", "name: t\n", ("topology", "missing required key")),
    case("topology-list", "topology: [1]\n", ("topology", "must be a mapping, got a list [1]")),
    case("unknown-kind", torus().replace("torus", "toruss"), ("topology.kind", "'toruss'")),
    case("name-list", torus().replace("name: t", "name: [a]"), ("name", "got a list ['a']")),
    case("name-path", torus().replace("name: t", "name: ../../home"), ("name", "got '../../home'")),
    case("name-space", torus().replace("name: t", "name: my fabric"), ("name", "got 'my fabric'")),
    case("description-int", torus("description: 5\n"), ("description", "got 5")),
    case("typo-key", torus("flit_widht: 32\n"), ("flit_widht", "did you mean 'flit_width'?")),
    case(
        "many-at-once",
        torus(
            "routing: xy\nflit_width: 2\nbuffer_depth: 0\ntraffic: {rate: 2, cycles: 0}\n",
            topology="k: [1, 4, x]",
        ),
        ("topology.k[0]", "got 1"),
        ("topology.k[2]", "got 'x'"),
        ("routing", "got 'xy'"),
        ("flit_width", "got 2"),
        ("buffer_depth", "got 0"),
        ("traffic.rate", "got 2"),
        ("traffic.cycles", "got 0"),
    ),
    # ---- torus and mesh ------------------------------------------------------------------------
    case("torus-k1", torus(topology="k: [4, 1]"), ("topology.k[1]", "got 1")),
    case(
        "torus-k-int", torus(topology="k: 4"), ("topology.k", "must be a list of integers, got 4")
    ),
    case("torus-k-empty", torus(topology="k: []"), ("topology.k", "at least 1 entries, got []")),
    case("torus-wrap", torus(topology="k: [4]\n  wrap: 'yes'"), ("topology.wrap", "got 'yes'")),
    case("mesh-k1", "topology: {kind: mesh, k: [3, 1]}\n", ("topology.k[1]", "got 1")),
    case("mesh-wrap", "topology: {kind: mesh, k: [3], wrap: true}\n", ("topology.wrap", "unknown")),
    # ---- nDT -----------------------------------------------------------------------------------
    case(
        "ndt-1d", "topology: {kind: ndt, k: [4]}\n", ("topology.k", "at least 2 entries, got [4]")
    ),
    case(
        "ndt-duplicate-port",
        "topology: {kind: ndt, k: [4, 4], ports: [d0+, d0+]}\n",
        ("topology.ports[1]", "duplicate port 'd0+'"),
    ),
    case(
        "ndt-port-dimension",
        "topology: {kind: ndt, k: [4, 4], ports: [d0+, d7-]}\n",
        ("topology.ports[1]", "port 'd7-' names dimension 7"),
    ),
    case(
        "ndt-internal-vcs",
        "topology: {kind: ndt, k: [4, 4]}\nrouting: {name: dort, internal_vcs: {ch: 0, pe: 99}}\n",
        ("routing.internal_vcs.pe", "got 99"),
    ),
    # ---- Znode, its presets and super nodes ----------------------------------------------------
    case(
        "znode-R-length",
        "topology: {kind: znode, z: [4, 4], R: [1]}\n",
        ("topology.R", "must have 2 entries, got 1: [1]"),
    ),
    case(
        "znode-psi0",
        "topology: {kind: znode, z: [4, 4], R: [1, 4], psi: [2, 1]}\n",
        ("topology.psi[0]", "must be 1"),
    ),
    case(
        "znode-theta",
        "topology: {kind: znode, z: [8, 64], R: [1, 8], theta: 32}\n",
        ("topology.theta", "over theta = 32"),
    ),
    case(
        "znode-pattern",
        "topology: {kind: znode, z: [4], R: [1], pattern: omgea}\n",
        (
            "topology.pattern",
            "got 'omgea'; did you mean 'omega'?",
        ),
    ),
    case("znode-vcs", "topology: {kind: znode, z: [4], R: [1], vcs: 0}\n", ("topology.vcs", "0")),
    case(
        "znode-notation-unclosed",
        "topology: {kind: znode, notation: 'Z3(1,8,64/(8,8,16)'}\n",
        (
            "topology.notation",
            "expected ')' at character 10, got '/(8,8,16)' in 'Z3(1,8,64/(8,8,16)'",
        ),
    ),
    case(
        "znode-notation-levels",
        "topology: {kind: znode, notation: 'Z2(1,8,64)/(8,8,16)'}\n",
        ("topology.notation", "Z2 names 2 levels but z has 3"),
    ),
    case(
        "znode-notation-psi",
        "topology: {kind: znode, notation: 'Z2(1,8)/(1,2)/(8,64)'}\n",
        ("topology.notation", "psi[1] must be <= R[0] = 1 for forward connectivity"),
    ),
    case(
        "znode-notation-not-text",
        "topology: {kind: znode, notation: [1, 8]}\n",
        ("topology.notation", "must be a string like 'Z3(1,8,64)/(8,8,16)', got a list"),
    ),
    case(
        "znode-notation-and-z",
        "topology: {kind: znode, notation: 'Z1(1)/(4)', z: [4]}\n",
        ("topology.z", "not with notation, which gives it"),
    ),
    case("kary-k1", "topology: {kind: kary_ntree, k: 1, n: 3}\n", ("topology.k", "got 1")),
    case("kary-n-huge", "topology: {kind: kary_ntree, k: 2, n: 20000}\n", ("topology.n", "1..64")),
    case("kary-n-text", "topology: {kind: kary_ntree, k: 4, n: three}\n", ("topology.n", "three")),
    # ---- Transit: sizes the seed rules out ----------------------------------------------------
    case(
        "transit-j-1",
        "topology: {kind: transit, form: hybrid, leaf_stages: 1}\n",
        ("topology.leaf_stages", "2..4, got 1"),
    ),
    case(
        "transit-j-5",
        "topology: {kind: transit, form: hybrid, leaf_stages: 5}\n",
        ("topology.leaf_stages", "2..4, got 5"),
    ),
    case(
        "transit-early-stack-over-512",
        "topology: {kind: transit, form: bidelta, stacks: [4, 2]}\n",
        ("topology.stacks[0]", "B256x8 stack of 2048 channels, over the 512"),
    ),
    case(
        "transit-last-stack-over-512",
        "topology: {kind: transit, form: bidelta, stacks: [2, 5]}\n",
        ("topology.stacks[1]", "B1024x2 stack of 2048 channels, over the 512"),
    ),
    case(
        "transit-stack-huge",
        "topology: {kind: transit, form: bidelta, stacks: [99999999999]}\n",
        ("topology.stacks[0]", "4^99999999999 x 2 channels"),
    ),
    case(
        "transit-no-form",
        "topology: {kind: transit, leaf_stages: 2}\n",
        ("topology.form", "missing required key"),
    ),
    case(
        "transit-cap-on-bidelta",
        "topology: {kind: transit, form: bidelta, stacks: [3], cap: true}\n",
        ("topology.cap", "a bidelta network has no unit-tree layers"),
    ),
    case(
        "transit-cap-on-full",
        "topology: {kind: transit, form: full, ut_layers: 2, cap: true}\n",
        ("topology.cap", "a full network has UT64x2 unit trees at its bottom"),
    ),
    case(
        "transit-hybrid-key-on-full",
        "topology: {kind: transit, form: full, leaf_stages: 2}\n",
        ("topology.leaf_stages", "unknown key"),
    ),
    case(
        "xgft-m-length",
        "topology: {kind: xgft, h: 2, m: [4], w: [1, 4]}\n",
        ("topology.m", "must have 2 entries, got 1: [4]"),
    ),
    case(
        "snode-side-0",
        "topology: {kind: znode, znodes: 4, z: [4, 2], R: [2, 4], side: [1, 0]}\n",
        ("topology.side[1]", "must be >= 1 when znodes > 1 (got 0)"),
    ),
    case(
        "snode-processors",
        "topology: {kind: znode, znodes: 4, z: [4, 2], R: [2, 4], processors: 16}\n",
        ("topology.processors", "= 32, got 16"),
    ),
    case(
        "snode-znodes-0",
        "topology: {kind: znode, znodes: 0, z: [4], R: [1]}\n",
        ("topology.znodes", "got 0"),
    ),
    # ---- routing -------------------------------------------------------------------------------
    case("routing-xy", torus("routing: xy\n"), ("routing", "must be one of dor, duato, got 'xy'")),
    case("routing-sliced-torus", torus("routing: sliced\n"), ("routing", "got 'sliced'")),
    case(
        "routing-option-typo",
        torus("routing: {name: dor, dateline: false}\n"),
        ("routing.dateline", "did you mean 'datelines'?"),
    ),
    case("routing-no-name", torus("routing: {datelines: false}\n"), ("routing.name", "missing")),
    case("routing-list", torus("routing: [dor]\n"), ("routing", "got ['dor']")),
    case(
        "dor-tie",
        torus("routing: {name: dor, tie: minus}\n"),
        ("routing.tie", "must be one of alternate, plus, got 'minus'"),
    ),
    case(
        "ndt-tie",
        "topology: {kind: ndt, k: [4, 4]}\nrouting: {name: dort, tie: minus}\n",
        ("routing.tie", "got 'minus'"),
    ),
    # ---- flit width, buffers, packet length ----------------------------------------------------
    case("flit-width-small", torus("flit_width: 4\n"), ("flit_width", "8..1024, got 4")),
    case("flit-width-float", torus("flit_width: 32.0\n"), ("flit_width", "got 32.0")),
    case("buffer-depth-1", torus("buffer_depth: 1\n"), ("buffer_depth", "2..1024, got 1")),
    case("buffer-depth-text", torus("buffer_depth: '4'\n"), ("buffer_depth", "got '4'")),
    case(
        "injection-vcs-0",
        torus("router: {injection_vcs: 0}\n"),
        ("router.injection_vcs", "1..16, got 0"),
    ),
    case(
        "injection-vcs-17",
        torus("router: {injection_vcs: 17}\n"),
        ("router.injection_vcs", "1..16, got 17"),
    ),
    case(
        "injection-vcs-bool",
        torus("router: {injection_vcs: true}\n"),
        ("router.injection_vcs", "got True"),
    ),
    case(
        "injection-vcs-float",
        torus("router: {injection_vcs: 2.0}\n"),
        ("router.injection_vcs", "got 2.0"),
    ),
    case(
        "buffers-unknown",
        torus("router: {buffers: bram}\n"),
        ("router.buffers", "must be one of distributed, block-ram, got 'bram'"),
    ),
    case(
        # a sliced head pops its surplus head flits with it; a block RAM reads one per cycle
        "buffers-block-ram-head-bits",
        torus("router: {buffers: block-ram, head_bits: 2}\n"),
        ("router.buffers", "block-ram cannot take head_bits (use distributed)"),
    ),
    case("packet-length-0", torus("packet_length: 0\n"), ("packet_length", "1..4096, got 0")),
    # ---- traffic -------------------------------------------------------------------------------
    case("traffic-list", torus("traffic: [uniform]\n"), ("traffic", "got a list ['uniform']")),
    case("traffic-rate-0", torus("traffic: {rate: 0}\n"), ("traffic.rate", "(0, 1], got 0")),
    case("traffic-rate-nan", torus("traffic: {rate: .nan}\n"), ("traffic.rate", "got nan")),
    case("traffic-rates", torus("traffic: {rates: [0.1, 3]}\n"), ("traffic.rates[1]", "got 3")),
    case(
        "traffic-rate-and-rates",
        torus("traffic: {rate: 0.1, rates: [0.2]}\n"),
        ("traffic.rates", "give traffic.rate or rates, not both"),
    ),
    case(
        "traffic-packet-length-twice",
        torus("packet_length: 4\ntraffic: {packet_length: 8}\n"),
        ("traffic.packet_length", "also given as the top-level packet_length"),
    ),
    case(
        "traffic-packet-length-range",
        torus("traffic: {packet_length: [8, 2]}\n"),
        ("traffic.packet_length", "MIN <= MAX, got [8, 2]"),
    ),
    case(
        "traffic-packet-length-big",
        torus("traffic: {packet_length: 100000}\n"),
        ("traffic.packet_length", "1..4096, got 100000"),
    ),
    case("traffic-process", torus("traffic: {process: gauss}\n"), ("traffic.process", "'gauss'")),
    case(
        "traffic-pattern", torus("traffic: {pattern: unifrom}\n"), ("traffic.pattern", "'uniform'")
    ),
    case("traffic-cycles-0", torus("traffic: {cycles: 0}\n"), ("traffic.cycles", "got 0")),
    case(
        "traffic-cycles-big", torus("traffic: {cycles: 999999999999}\n"), ("traffic.cycles", "99")
    ),
    case("traffic-warmup", torus("traffic: {warmup: -1}\n"), ("traffic.warmup", "got -1")),
    case(
        "traffic-hotspot",
        torus("traffic: {hotspot_fraction: 2}\n"),
        ("traffic.hotspot_fraction", "[0, 1], got 2"),
    ),
    case("traffic-seed", torus("traffic: {seed: x}\n"), ("traffic.seed", "got 'x'")),
    case("traffic-typo", torus("traffic: {rat: 0.1}\n"), ("traffic.rat", "did you mean 'rate'?")),
]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` with a digest of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else ""
        for p in sorted(folder.rglob("*"))
    }


def prepare(tmp_path: Path, item: Case) -> None:
    (tmp_path / "adir").mkdir()
    (tmp_path / "keep.txt").write_text("the user's own file\n")
    if item.content is not None:
        data = item.content.encode() if isinstance(item.content, str) else item.content
        (tmp_path / (item.spec if item.spec.endswith(".yaml") else "spec.yaml")).write_bytes(data)


def check_stderr(stderr: str, item: Case) -> None:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert lines and all(line.startswith(PREFIX) for line in lines), stderr
    assert len(lines) == (item.lines or len(item.errors)), stderr
    for path, fragment in item.errors:
        start = PREFIX + (f"{path}: " if path else "")
        matching = [line for line in lines if line.startswith(start) and fragment in line]
        assert matching, f"no line for {path!r} with {fragment!r} in:\n{stderr}"
    # a quoted value is cut short: no line carries more than the message and ~100 characters
    assert max(len(line) for line in lines) < 400, stderr


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40
    assert len({item.id for item in CASES}) == len(CASES)


@pytest.mark.parametrize("item", CASES, ids=[item.id for item in CASES])
def test_bad_spec_is_refused_in_one_line_per_error(item, tmp_path, monkeypatch, capsys):
    prepare(tmp_path, item)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    start = time.process_time()
    status = main(["check", item.spec, "--plan-out", "plan.json"])
    elapsed = time.process_time() - start
    out, err = capsys.readouterr()
    assert status == 2, err
    assert out == ""
    check_stderr(err, item)
    assert snapshot(tmp_path) == before  # nothing written, nothing changed
    assert elapsed < CPU_SECONDS


def zfabric_command() -> list[str]:
    """The installed ``zfabric`` script beside this interpreter (what a user runs)."""
    script = Path(sys.executable).parent / "zfabric"
    assert script.exists(), "install the package (scripts/setup.sh) to get the zfabric script"
    return [str(script)]


@pytest.mark.parametrize("name", ["binary", "bomb-in-name", "many-at-once"])
def test_no_traceback_reaches_the_terminal(name, tmp_path):
    item = next(item for item in CASES if item.id == name)
    prepare(tmp_path, item)
    before = snapshot(tmp_path)
    result = subprocess.run(
        [*zfabric_command(), "check", item.spec],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    check_stderr(result.stderr, item)
    assert snapshot(tmp_path) == before


def test_an_alias_adds_no_nesting(tmp_path, capsys):
    """999 nested lists under an anchor, named again by an alias four mappings deep: the text
    nests 1000 levels, not 1004, so the spec is judged by its keys, not refused as too deep."""
    anchor = "[" * 999 + "]" * 999
    (tmp_path / "spec.yaml").write_text(f"x: &x {anchor}\ny: {{a: {{b: {{c: *x}}}}}}\n")
    assert main(["check", str(tmp_path / "spec.yaml")]) == 2
    err = capsys.readouterr().err
    assert "nested deeper" not in err and "x: unknown key" in err, err
