"""The root folders map under `pointlab`; every sub-package must be listed in pyproject.toml."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("robot", "perception", "bridge", "ui", "benchmark", "sim_mock")


def test_every_subpackage_is_listed_in_pyproject():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = set()
    for root in ROOTS:
        for init in (REPO / root).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO).parts
            found.add("pointlab." + ".".join(rel))
            assert cfg["package-dir"].get("pointlab." + ".".join(rel), "/".join(rel)) == "/".join(rel)
    assert found - listed == set(), f"add these to pyproject [tool.setuptools] packages: {sorted(found - listed)}"


def test_no_pointlab_init_shadows_the_namespace():
    assert not (REPO / "pointlab" / "__init__.py").exists()
