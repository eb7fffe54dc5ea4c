"""One exception base (issue 25, "Guards"): every error class pointlab defines (sim_mock's test doubles
aside) is a ``PointlabError`` under its own package's base, and keeps the built-in class callers
caught it as."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from pointlab.perception.errors import PointlabError

REPO = Path(__file__).resolve().parent.parent
BASES = {
    "perception": "pointlab.perception.errors:PerceptionError",
    "robot": "pointlab.robot.errors:RobotError",
    "benchmark": "pointlab.benchmark.errors:BenchmarkError",
    "bridge": "pointlab.bridge.errors:BridgeError",
    "ui": "pointlab.ui.errors:UiError",
}
# the calibration procedure's errors are about the camera's pose: perception errors raised by bridge
ACROSS = {"pointlab.bridge.calibration.procedure": "perception"}


def _base(spec: str) -> type:
    mod, name = spec.split(":")
    return getattr(importlib.import_module(mod), name)


def error_classes():
    """``(module, class name)`` of every public module-level class of our packages that has bases (found
    with ``ast``, so a class nobody imports is not missed; the caller keeps the exceptions)."""
    for pkg in BASES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            module = "pointlab." + ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module-level classes
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and node.bases:
                    yield module, node.name


def test_every_error_class_is_a_pointlab_error_of_its_package():
    found = 0
    for module, name in error_classes():
        cls = getattr(importlib.import_module(module), name)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)) or cls is PointlabError:
            continue
        found += 1
        pkg = ACROSS.get(module, module.split(".")[1])
        assert issubclass(cls, _base(BASES[pkg])), f"{module}.{name} is not a {BASES[pkg]}"
    assert found >= 60, found  # the walk found the errors (66 on 2026-12-03)


@pytest.mark.parametrize(
    "spec, builtin",
    [
        ("pointlab.benchmark.agents_config:AgentsConfigError", ValueError),
        ("pointlab.bridge.session:SessionError", RuntimeError),
        ("pointlab.robot.errors:ArmTimeoutError", TimeoutError),
        ("pointlab.ui.arena.curated:CuratedSetError", ValueError),
        ("pointlab.benchmark.video.errors:RecordError", ValueError),
    ],
)
def test_errors_keep_the_built_in_class_callers_catch(spec, builtin):
    cls = _base(spec)
    assert issubclass(cls, builtin) and issubclass(cls, PointlabError)
    with pytest.raises(PointlabError):
        raise cls("a refused input")


def test_no_code_matches_error_messages():
    # "no string matching on error messages": callers branch on the class, never on str(e)
    bad = []
    for pkg in BASES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                    right = [ast.unparse(c) for c in node.comparators]
                    if any(r.startswith("str(e") or r.startswith("str(exc") for r in right):
                        bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("startswith", "endswith")
                    and ast.unparse(node.func.value).startswith(("str(e", "str(exc"))
                ):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    assert bad == []
