"""The install puts only ``zfabric`` into the import namespace (hdl/, sim/ and boards/ install as
``zfabric.hdl``, ``zfabric.sim`` and ``zfabric.boards``), and lists every subpackage."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {
    "zfabric": "zfabric",
    "zfabric.hdl": "hdl",
    "zfabric.sim": "sim",
    "zfabric.boards": "boards",
}


def test_every_package_folder_is_listed_under_its_zfabric_name():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == MAPPED
    on_disk = set()
    for package, folder in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((package, *relative)))
    assert set(setuptools["packages"]) == on_disk


def test_generic_names_are_not_importable_outside_the_checkout(tmp_path):
    probe = (
        "import importlib.util, zfabric.hdl, zfabric.sim, zfabric.boards;"
        "print([n for n in ('hdl', 'sim', 'boards') if importlib.util.find_spec(n)])"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == "[]"
