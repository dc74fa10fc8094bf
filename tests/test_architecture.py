"""ARCHITECTURE.md stays true: every import in ctk/ is one its table allows, and class names are
unique across ctk/ (issue 13)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "ctk"


def _names(cell: str) -> set[str]:
    return {n.strip() for n in cell.split(",") if n.strip()}


def _rules() -> dict[str, tuple[set[str], set[str]]]:
    """part -> (ctk parts it may import, other modules it may not import), from ARCHITECTURE.md."""
    rules = {}
    for line in (REPO / "ARCHITECTURE.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ctk") and len(cells) == 3:
            rules[cells[0]] = (_names(cells[1]), _names(cells[2]))
    return rules


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def _part(module: str, parts: set[str]) -> str | None:
    """The most specific part that ``module`` belongs to."""
    matches = [p for p in parts if module == p or module.startswith(p + ".")]
    return max(matches, key=len, default=None)


def _covers(name: str, module: str) -> bool:
    return module == name or module.startswith(name + ".")


def test_the_table_covers_every_module() -> None:
    rules = _rules()
    assert {"ctk", "ctk.cli", "ctk.host", "ctk.cdi", "ctk.doctor"} <= rules.keys()
    uncovered = [_module(p) for p in PACKAGE.rglob("*.py") if _part(_module(p), set(rules)) is None]
    assert uncovered == []


def test_imports_follow_architecture_md() -> None:
    rules = _rules()
    parts = set(rules)
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _part(_module(path), parts)
        assert source is not None
        allowed, banned = rules[source]
        for line, name in _imports(path):
            where = f"{path.relative_to(REPO)}:{line}: {source} imports {name}"
            if any(_covers(b, name) for b in banned):
                broken.append(where)
            if not name.startswith("ctk"):
                continue
            target = _part(name, parts)
            if target is not None and target != source and target not in allowed:
                broken.append(where)
    assert broken == []


def _class_names() -> dict[str, list[str]]:
    names: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                names[node.name].append(str(path.relative_to(REPO)))
    return names


def test_no_two_classes_share_a_name() -> None:
    """A class name says what it is: no two classes in ctk/ share one."""
    shared = {name: where for name, where in _class_names().items() if len(where) > 1}
    assert shared == {}


def test_every_engine_is_one_entry_per_table() -> None:
    """Adding an engine is one entry in each per-engine table, never a branch on its name."""
    from ctk.host.engine_files import FILES
    from ctk.runtime_config.engines import ENGINES, Runtime

    assert (set(ENGINES), set(FILES)) == (set(Runtime), set(Runtime))
    branches = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in (
            PACKAGE / "host" / "engine_files.py",
            *(PACKAGE / "host" / "facts").glob("*.py"),
        )
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Compare)
        and any(
            isinstance(side, ast.Attribute)
            and isinstance(side.value, ast.Name)
            and side.value.id == "Runtime"
            for side in (node.left, *node.comparators)
        )
    ]
    assert branches == []


def test_one_doctor_check_module_per_group() -> None:
    """The checks of group G are the module ctk/doctor/checks/G.py, and only its checks."""
    import ctk.doctor.checks  # noqa: F401  (importing it fills the registry)
    from ctk.doctor.groups import Group
    from ctk.doctor.model import REGISTRY

    misplaced = sorted(
        f"{check.id} in {check.run.__module__}"
        for check in REGISTRY.values()
        if check.run.__module__ != f"ctk.doctor.checks.{check.group.value}"
    )
    assert misplaced == []
    assert {check.group for check in REGISTRY.values()} == set(Group)
