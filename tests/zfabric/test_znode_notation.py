"""The Znode thesis's Z/S notation against its own examples (reference/znode.md §1.3, §1.9).

Each example is written as the thesis prints it (the digest's linear reading of its fractions);
the expected processor, switch and link counts are the digest's table §1.9, and the expected
one-line forms are written by hand from the grammar in zfabric.topologies.znode_notation.
"""

from __future__ import annotations

import pytest
import yaml

from zfabric import compile_plan, load_spec
from zfabric.cli import main
from zfabric.topologies.znode_notation import (
    NotationError,
    ZnodeNotation,
    format_notation,
    parse_notation,
)

# (thesis text, one-line form, processors, switches, switch-to-switch links or None)
EXAMPLES = [
    ("Z2 ≝ (2,2)/(1,1) over (2,2)", "Z2(2,2)/(2,2)", 4, 6, 4),  # Fig 3.4a
    ("Z2 ≝ (2,4)/(1,2) over (2,2)", "Z2(2,4)/(1,2)/(2,2)", 4, 8, 16),  # Fig 3.4b
    ("Z2^(2) ≝ [(2,2)^(2)/(1,1) over (2,2)]", "Z2^(2)(2,2)/(2,2)", 4, 12, 8),  # Fig 3.6
    # Fig 3.5: the digest's 80 links assume psi_3 = psi_4 = 2; read as printed they are 1
    ("S2 ≝ (2) ∘ [(1,2,2,2)/(1,1) over (2,2,2,2)]", "2∘Z4(1,2,2,2)/(2,2,2,2)", 32, 44, None),
    ("Z2 ≝ (1,4)/(1,1) over (4,2)", "Z2(1,4)/(4,2)", 8, 6, 8),  # App. E network map
    ("oZ2 ≝ (1,3)/(1,1) over (3,12)", "Z2(1,3)/(3,12)", 36, 15, 36),  # the 36 optimum
    ("oZ2 ≝ (1,8)/(1,1) over (8,64)", "Z2(1,8)/(8,64)", 512, 72, 512),  # 512, level 2
    ("Z3 ≝ (1,8,64)/(1,1) over (8,8,16)", "Z3(1,8,64)/(8,8,16)", 1024, 320, 2048),  # §5.4
    # Ch. 6 buffer study: 512 links inside the Znodes, plus 240 side links
    ("S4 ≝ 4 ∘ [(2,4,8)/(1,2,2) over (4,2,4)]", "4∘Z3(2,4,8)/(1,2,2)/(4,2,4)", 128, 160, 752),
]


def spec(notation: str, **keys) -> dict:
    return {"name": "z", "topology": {"kind": "znode", "notation": notation, **keys}}


@pytest.mark.parametrize("text, line, processors, switches, links", EXAMPLES)
def test_the_thesis_examples(text, line, processors, switches, links):
    shape = parse_notation(text)
    assert format_notation(shape) == line
    assert parse_notation(line) == shape  # the one-line form reads back the same
    plan = compile_plan(load_spec(spec(text)))
    assert len(plan.endpoints) == processors
    assert len(plan.switches) == switches
    if links is not None:
        assert len(plan.links) // 2 == links


def test_the_issue_example_reads_as_R_over_z():
    # Z3(1,8,64)/(8,8,16): 1, 8 and 64 routing switches per zone over 8, 8 and 16 zones (§5.4)
    assert parse_notation("Z3(1,8,64)/(8,8,16)") == ZnodeNotation(
        R=(1, 8, 64), psi=(1, 1, 1), z=(8, 8, 16)
    )


def test_a_notation_spec_equals_the_spec_with_keys(tmp_path):
    # the buffer-study super node (§1.9, ch. 6) written both ways compiles to the same plan
    keys = {"z": [4, 2, 4], "R": [2, 4, 8], "psi": [1, 2, 2], "znodes": 4}
    written = compile_plan(load_spec({"name": "z", "topology": {"kind": "znode", **keys}}))
    noted = compile_plan(load_spec(spec("4∘Z3(2,4,8)/(1,2,2)/(4,2,4)")))
    assert noted == written


@pytest.mark.parametrize(
    "text, shape",
    [
        (
            "Z3(1,4,16)/(1,1,1)^(Ω)/(4,4,32)",
            ZnodeNotation((1, 4, 16), (1, 1, 1), (4, 4, 32), 1, 1, "omega"),
        ),
        (
            "Z3(1,4,16)/(1^(Ω),1^(Ω),1^(Ω))/(4,4,32)",
            ZnodeNotation((1, 4, 16), (1, 1, 1), (4, 4, 32), 1, 1, "omega"),
        ),
        ("Z2(2,4)/(1^(b),2^(b))/(2,2)", ZnodeNotation((2, 4), (1, 2), (2, 2))),
        ("S3 = 3*Z1(2)/(5)", ZnodeNotation((2,), (1,), (5,), 1, 3)),
        ("(1,8)/(8,64)", ZnodeNotation((1, 8), (1, 1), (8, 64))),
    ],
)
def test_patterns_and_counts(text, shape):
    # the connectivity exponents (b, Ω) on each psi entry or on the vector; m ∘ and S_m
    assert parse_notation(text) == shape
    assert parse_notation(format_notation(shape)) == shape


@pytest.mark.parametrize(
    "text, message",
    [
        ("Z3(1,8,64/(8,8,16)", "expected ')' at character 10, got '/(8,8,16)'"),
        ("Z3(1,8,64)", "expected '/' or 'over' at the end"),
        ("Z3(1,8,64)/(8,8)", "R has 3 entries but z has 2"),
        ("Z2(1,8,64)/(8,8,16)", "Z2 names 2 levels but z has 3"),
        ("Z3(1,8,64)/(1,1,1,1)/(8,8,16)", "psi has 4 entries but there are 3 levels"),
        ("Z2(1,0)/(8,64)", "R entries must be >= 1"),
        ("Z2(1,2)/(1^(b),2^(Ω))/(2,2)", "the same connectivity pattern"),
        ("S2 = 3∘Z1(1)/(2)", "the Znode count given twice, 2 and 3"),
        ("Z2^(2)(2,2)^(3)/(2,2)", "the layer count given twice, 2 and 3"),
        ("Z1(1)/(2) and more", "expected the end at character 11, got 'and more'"),
    ],
)
def test_bad_notation(text, message):
    with pytest.raises(NotationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_notation(text)


def test_check_prints_the_notation(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(spec("S4 ≝ 4 ∘ [(2,4,8)/(1,2,2) over (4,2,4)]"), allow_unicode=True)
    )
    assert main(["check", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert (
        first == "z: znode 4∘Z3(2,4,8)/(1,2,2)/(4,2,4), side=1x1x1, theta=64, vcs=1, routing sliced"
    )
