"""The import arrows run one way: the command line (``vaultfs.cli``) sits above the
bridge, the client and the server, and none of them imports it; the client and the
server never import each other; only the FUSE layer (``vaultfs.bridge.daemon.fuse``)
imports pyfuse3. Read from the source (``ast``), so an import inside a function counts
too."""

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
