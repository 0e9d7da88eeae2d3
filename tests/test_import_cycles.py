"""No package-level import cycle inside ``sabre_prior`` (read from the source's AST, nothing imported).

A unit is a subpackage (``data``, ``inference``, ``scoring``, ...) or a top-level module
(``config``, ``options``, ...).  Every ``import`` / ``from ... import`` of the package counts,
lazy ones inside functions too: a lazy import still makes one package depend on another.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "sabre_prior"


def _targets(node: ast.AST, package: list[str]) -> list[list[str]]:
    """Dotted names (as parts) an import node refers to, relative imports resolved against ``package``."""
    if isinstance(node, ast.Import):
        return [alias.name.split(".") for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package[: len(package) - node.level + 1]
            module = base + (node.module.split(".") if node.module else [])
        else:
            module = node.module.split(".") if node.module else []
        # ``from . import inference`` names a subpackage in its alias
        return [module] + [module + [alias.name] for alias in node.names]
    return []


def unit_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """unit -> the other units it imports."""
    units = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    units |= {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {u: set() for u in units}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts == ("__init__",):
            continue
        unit = parts[0]
        module = ["sabre_prior", *parts]
        package = module[:-1] if parts[-1] != "__init__" else module[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            for target in _targets(node, package):
                if len(target) >= 2 and target[0] == "sabre_prior" and target[1] in units and target[1] != unit:
                    graph[unit].add(target[1])
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_find_cycle_reports_the_cycle_the_issue_named() -> None:
    # the shape issue 20 found: data -> inference -> scoring -> inference
    graph = {"data": {"inference"}, "inference": {"scoring"}, "scoring": {"inference"}, "options": set()}
    assert find_cycle(graph) == ["inference", "scoring", "inference"]
    assert find_cycle({"data": {"options"}, "scoring": {"options", "data"}, "options": set()}) is None


def test_unit_graph_sees_relative_lazy_and_absolute_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "sabre_prior"
    (pkg / "a" / "sub").mkdir(parents=True)
    (pkg / "b").mkdir()
    for init in (pkg / "a", pkg / "a" / "sub", pkg / "b"):
        (init / "__init__.py").write_text("")
    (pkg / "top.py").write_text("X = 1\n")
    (pkg / "a" / "sub" / "m.py").write_text("def f():\n    from ...b import thing\n    return thing\n")
    (pkg / "b" / "n.py").write_text("import sabre_prior.top\nfrom .. import a\n")
    assert unit_graph(pkg) == {"a": {"b"}, "b": {"top", "a"}, "top": set()}
    assert find_cycle(unit_graph(pkg)) == ["a", "b", "a"]


def test_no_package_level_import_cycle() -> None:
    graph = unit_graph()
    assert {"data", "inference", "scoring", "options"} <= set(graph)
    cycle = find_cycle(graph)
    if cycle:
        pytest.fail("package-level import cycle in sabre_prior: " + " -> ".join(cycle))
