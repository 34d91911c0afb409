"""The import graph, read from the source: arrows point one way (bot → estimator → catalog), the sandbox
imports nothing from the rest of bot, and no package's modules import each other in a circle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("catalog", "estimator", "bot")
# What each package may import from the project: only the layers below it.
ALLOWED = {"catalog": {"catalog"}, "estimator": {"estimator", "catalog"}, "bot": {"bot", "estimator", "catalog"}}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(name: str, path: Path, *, runs_only: bool) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the file, inside functions too; `runs_only`: leaving out
    those only the type checker reads (under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(nodes: list[ast.stmt]) -> Iterator[ast.stmt]:
        for node in nodes:
            if runs_only and isinstance(node, ast.If) and type_checking_only(node):
                yield from walk(node.orelse)
                continue
            yield node
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    yield from walk([c for c in children if isinstance(c, ast.stmt | ast.ExceptHandler)])  # type: ignore[misc]

    for node in walk(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target, node.lineno
            for alias in node.names:  # `from bot.store import cache` imports the module bot.store.cache
                yield f"{target}.{alias.name}", node.lineno


def project_imports(*, runs_only: bool) -> dict[str, set[tuple[str, int]]]:
    found = modules()
    graph: dict[str, set[tuple[str, int]]] = {}
    for name, path in found.items():
        graph[name] = {(target, line) for target, line in imports(name, path, runs_only=runs_only)
                       if target in found and target != name}
    return graph


def test_the_graph_is_read_from_every_module() -> None:
    graph = project_imports(runs_only=False)
    assert {"bot.client", "bot.sandbox.server", "estimator.verdict", "catalog.resolve"} <= set(graph)
    assert ("estimator.verdict", 1) not in graph["bot.client"]
    assert any(target.startswith("estimator") for target, _ in graph["bot.service"])


@pytest.mark.parametrize("package", PACKAGES)
def test_no_arrow_points_up(package: str) -> None:
    graph = project_imports(runs_only=False)
    up = sorted(f"{name}:{line} imports {target}" for name, targets in graph.items()
                if name.split(".")[0] == package for target, line in targets
                if target.split(".")[0] not in ALLOWED[package])
    assert not up, "\n".join(up)


def test_the_sandbox_imports_nothing_from_the_rest_of_bot() -> None:
    graph = project_imports(runs_only=False)
    outside = sorted(f"{name}:{line} imports {target}" for name, targets in graph.items()
                     if name.startswith("bot.sandbox") for target, line in targets
                     if not target.startswith("bot.sandbox"))
    assert not outside, "\n".join(outside)


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules in it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_cycle_finds_a_circle_and_only_a_circle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_inside_a_package() -> None:
    """Counting imports inside functions too (a circle there is one a module hides); a name imported only
    for the type checker (a cog naming the Bot's class) makes no circle at run time."""
    graph = project_imports(runs_only=True)
    by_module = {name: {target for target, _ in targets if target.split(".")[0] == name.split(".")[0]}
                 for name, targets in graph.items()}
    # A module importing the package it sits in makes no circle: the package is loaded before its modules.
    for name in by_module:
        by_module[name] = {t for t in by_module[name] if not (name + ".").startswith(t + ".")}
    assert cycle(by_module) is None, " → ".join(cycle(by_module) or [])
