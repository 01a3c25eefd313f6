"""The import arrows run one way: the command line (``vaultfs.cli``) sits above the
bridge, the client and the server, and none of them imports it; the client and the
server never import each other; only the FUSE layer (``vaultfs.bridge.daemon.fuse``)
imports pyfuse3; the bridge's subpackages import one way (docs/architecture.md) and no
modules import each other in a circle. Read from the source (``ast``), so an import
inside a function or for the type checker alone counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vaultfs

PACKAGE = Path(vaultfs.__file__).parent


#: the one package that may import pyfuse3
FUSE_LAYER = "bridge/daemon/fuse/"


def imported_by(area: str, *, prefix: str = "vaultfs") -> dict[str, set[str]]:
    """Module path (relative to the package) -> the modules named ``prefix...`` it
    imports."""
    found: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / area).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[str(path.relative_to(PACKAGE))] = {n for n in names if n.startswith(prefix)}
    return found


@pytest.mark.parametrize(
    ("area", "forbidden"),
    [
        ("bridge", ("vaultfs.cli",)),
        ("client", ("vaultfs.cli", "vaultfs.server", "vaultfs.bridge")),
        ("server", ("vaultfs.cli", "vaultfs.client", "vaultfs.bridge")),
    ],
)
def test_no_arrow_runs_back_up(area: str, forbidden: tuple[str, ...]) -> None:
    modules = imported_by(area)
    below = tuple(f + "." for f in forbidden)
    assert modules  # the walk found the area's modules
    wrong = {
        module: sorted(n for n in names if n in forbidden or n.startswith(below))
        for module, names in modules.items()
    }
    assert {m: names for m, names in wrong.items() if names} == {}


def test_the_check_sees_imports() -> None:
    """It can fail: the command line itself imports both halves."""
    (names,) = [names for module, names in imported_by(".").items() if module == "cli.py"]
    assert "vaultfs.bridge.commands.mount_helper" in names
    assert "vaultfs.server.command" in names


def test_only_the_fuse_layer_imports_pyfuse3() -> None:
    importers = {m for m, names in imported_by(".", prefix="pyfuse3").items() if names}
    assert any(m.startswith(FUSE_LAYER) for m in importers)  # the check sees the layer
    assert sorted(m for m in importers if not m.startswith(FUSE_LAYER)) == []


#: the bridge's subpackages, each importing only those to its right
#: (docs/architecture.md); the ones in one tuple never import each other
BRIDGE_ORDER: tuple[tuple[str, ...], ...] = (
    ("commands",),
    ("webdav", "daemon"),  # the two fronts, side by side on the core
    ("core",),
    ("nodes",),
    ("fs",),
    ("lifecycle", "write"),
    ("content",),
    ("tree",),
)


def _subpackage(module: str) -> str | None:
    """The bridge subpackage of ``module`` (a dotted name or a path): None outside."""
    parts = module.removesuffix(".py").replace("/", ".").split(".")
    if parts[0] == "vaultfs":
        parts = parts[1:]
    if len(parts) < 3 or parts[0] != "bridge":  # outside, or the bridge's __init__
        return None
    return parts[1]


def test_the_bridge_subpackages_import_one_way() -> None:
    """No arrow from a bridge subpackage to one to its left or beside it, names
    imported for the type checker alone included (``if TYPE_CHECKING:``)."""
    rank = {name: i for i, group in enumerate(BRIDGE_ORDER) for name in group}
    modules = imported_by("bridge", prefix="vaultfs.bridge.")
    assert set(filter(None, map(_subpackage, modules))) == set(rank)  # every one placed
    wrong: dict[str, list[str]] = {}
    for module, names in modules.items():
        here = _subpackage(module)
        if here is None:
            continue
        for name in names:
            there = _subpackage(name)
            if there is not None and there != here and rank[there] <= rank[here]:
                wrong.setdefault(module, []).append(name)
    assert wrong == {}


def test_the_node_families_never_call_the_client() -> None:
    """A family asks the vault through the tree, write and content services below it
    (docs/architecture.md, "How to add a family"), never through the client."""
    modules = imported_by("bridge/nodes")
    assert "vaultfs.bridge.fs.families" in modules["bridge/nodes/family.py"]  # it sees them
    assert {
        m: sorted(n for n in names if n.startswith("vaultfs.client"))
        for m, names in modules.items()
        if any(n.startswith("vaultfs.client") for n in names)
    } == {}


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules of ``vaultfs`` it imports (``from package import module``
    counts as the module; a package's ``__init__`` is the package)."""
    paths = {
        ".".join(("vaultfs", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
            ".__init__"
        ): path
        for path in PACKAGE.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for module, names in imported_by(".").items():
        name = ".".join(("vaultfs", *Path(module).with_suffix("").parts)).removesuffix(".__init__")
        graph[name] = {n for n in names if n in paths and n != name}
    return graph


def _a_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` ([] when there is none)."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(module: str) -> list[str]:
        path.append(module)
        on_path.add(module)
        for name in sorted(graph.get(module, ())):
            if name in on_path:
                return [*path[path.index(name) :], name]
            if name not in done:
                found = visit(name)
                if found:
                    return found
        on_path.discard(path.pop())
        done.add(module)
        return []

    for module in sorted(graph):
        if module not in done:
            found = visit(module)
            if found:
                return found
    return []


def test_no_import_cycle() -> None:
    """No circle of imports among the modules of ``vaultfs``, names imported for the
    type checker alone (``if TYPE_CHECKING:``) or inside a function included."""
    graph = _module_graph()
    assert "vaultfs.bridge.fs.filesystem" in graph["vaultfs.bridge.core.build"]
    assert _a_cycle(graph) == []


def test_the_cycle_check_can_fail() -> None:
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": {"b"}, "b": set()}) == []
