"""The package graph is the DAG docs/architecture.md draws, and it keeps holding.

Every import of every module (top-level and inside functions, absolute and relative) is walked with
``ast``; an edge between two of our packages that the drawing does not have fails the test, naming
the module and the import. The drawing itself must be acyclic, nothing may import ``sim_mock``, and
only ``bridge.ros`` may import rclpy or the ROS message packages.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("perception", "robot", "benchmark", "bridge", "ui", "sim_mock")
ROS_MODULES = ("rclpy", "sensor_msgs", "std_msgs", "geometry_msgs", "builtin_interfaces")


def drawn_edges() -> set[tuple[str, str]]:
    """``A --> B`` lines of the mermaid block under "Package graph" in docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"## Package graph.*?```mermaid\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md needs a '## Package graph' section with a mermaid block"
    return set(re.findall(r"^\s*(\w+)\s*-->\s*(\w+)\s*$", block.group(1), re.M))


def module_imports(path: Path, root: Path = REPO) -> list[tuple[str, int]]:
    """``(imported module without the pointlab. prefix, line)`` for every import in ``path`` (a file
    of the tree at ``root``)."""
    return list(_imports(path, root, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=None)
def _imports(path: Path, root: Path, _mtime_ns: int) -> tuple[tuple[str, int], ...]:
    # the package a relative import starts from: the folder, for a module and for an __init__ alike
    package_parts = path.relative_to(root).parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package_parts[: len(package_parts) - (node.level - 1)])
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((name, node.lineno))
    return tuple((n.removeprefix("pointlab."), line) for n, line in out)


def all_modules(root: Path = REPO):
    for pkg in PACKAGES:
        yield from sorted((root / pkg).rglob("*.py"))


def actual_edges(root: Path = REPO) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for path in all_modules(root):
        src = path.relative_to(root).parts[0]
        for name, line in module_imports(path, root):
            dst = name.split(".")[0]
            if dst in PACKAGES and dst != src:
                edges.setdefault((src, dst), []).append(f"{path.relative_to(root)}:{line} imports {name}")
    return edges


def test_the_drawn_graph_is_acyclic_and_names_our_packages():
    edges = drawn_edges()
    assert edges, "no edges drawn"
    assert {n for e in edges for n in e} <= set(PACKAGES)
    graph = {p: {b for a, b in edges if a == p} for p in PACKAGES}
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        assert state.get(n) != 1, f"cycle in docs/architecture.md's graph: {' -> '.join(path + [n])}"
        if state.get(n) == 2:
            return
        state[n] = 1
        for m in graph[n]:
            visit(m, path + [n])
        state[n] = 2

    for p in PACKAGES:
        visit(p, [])


def test_every_import_follows_the_drawn_graph():
    allowed = drawn_edges()
    wrong = {e: where for e, where in actual_edges().items() if e not in allowed}
    assert not wrong, "imports against docs/architecture.md's package graph:\n" + "\n".join(
        f"  {a} -> {b}: {w}" for (a, b), ws in sorted(wrong.items()) for w in ws
    )


def test_nothing_imports_sim_mock_and_sim_mock_has_no_drawn_users():
    assert not [e for e in drawn_edges() if e[1] == "sim_mock"]
    assert not [w for (a, b), ws in actual_edges().items() if b == "sim_mock" for w in ws]


def test_only_bridge_ros_imports_ros():
    outside = []
    for path in all_modules():
        rel = path.relative_to(REPO)
        if rel.parts[:2] == ("bridge", "ros"):
            continue
        for name, line in module_imports(path):
            if name.split(".")[0] in ROS_MODULES:
                outside.append(f"{rel}:{line} imports {name}")
    assert not outside, "ROS plumbing lives in bridge/ros only:\n" + "\n".join(outside)


def test_the_walker_sees_relative_and_function_level_imports(tmp_path):
    # the walker itself must find what a careless edit would add: a relative import two levels up
    # inside a function body (a test that cannot fail is a defect). The probe is written into a tree
    # of its own, not the checkout: tests running beside this one (ruff, mypy, the graph test above,
    # under pytest-xdist) read the checkout and would find the probe's bad imports.
    probe = tmp_path / "robot" / "_probe_import_direction.py"
    probe.parent.mkdir()
    probe.write_text("def f():\n    from ..bridge import session\n    import pointlab.ui.app\n", encoding="utf-8")
    assert sorted(n for n, _ in module_imports(probe, tmp_path)) == ["bridge", "ui.app"]
    edges = actual_edges(tmp_path)
    assert ("robot", "bridge") in edges and ("robot", "ui") in edges


@pytest.mark.parametrize(
    "group",
    [
        "pointlab.cli",
        "pointlab.camera_sources",
        "pointlab.arm_drivers",
        "pointlab.worlds",
        "pointlab.sim_model_servers",
    ],
)
def test_every_registry_entry_point_is_installed_and_loads(group):
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][group]
    installed = {ep.name: ep for ep in entry_points(group=group)}
    assert set(declared) <= set(installed), f"reinstall (pip install -e .): {set(declared) - set(installed)}"
    for name in declared:
        assert installed[name].value == declared[name]
        installed[name].load()
