"""docs/architecture.md's "Who owns what" tables against the source tree, both ways.

The rule the tables follow (and the doc states): under "## Who owns what", each
``###`` heading names its package in backticks (``Client (`vaultfs.client`)``); in a
table whose first column is ``subpackage``, a backticked name there names the
subpackage (dotted below the package, ``write.spool``) of its row and of the rows below
it until the next one, within that table; every backticked name in the module column
(the first column, or the second after ``subpackage``) names one module by its name in
that (sub)package. So ``| | `store`, `entry` | ...`` under ``write.spool`` of
``vaultfs.bridge`` names ``vaultfs.bridge.write.spool.store`` and ``...entry``.

- every module file of ``src/vaultfs`` but the ``__init__.py`` files is named;
- every name there is a module file or a package of ``src/vaultfs``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"

_SECTION = "## Who owns what"
_BACKTICKED = re.compile(r"`([^`]+)`")


def named_modules(text: str) -> dict[str, int]:
    """Dotted module name -> the doc's line that names it, by the rule above."""
    start = text.index(_SECTION)
    following = text.find("\n## ", start + len(_SECTION))
    lines = text[start : following if following != -1 else len(text)].splitlines()
    first_line = text[:start].count("\n") + 1
    named: dict[str, int] = {}
    package: str | None = None
    has_subpackage = False
    subpackage = ""
    for number, line in enumerate(lines, first_line):
        if line.startswith("### "):
            found = _BACKTICKED.findall(line)
            assert found, f"line {number}: a table's heading names its package: {line!r}"
            package, has_subpackage, subpackage = found[-1], False, ""
            continue
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in ("module", "subpackage"):  # a table's header row
            has_subpackage, subpackage = cells[0] == "subpackage", ""
            continue
        if cells[0] and set(cells[0]) <= set("-: "):  # the row under the header
            continue
        assert package is not None, f"line {number}: a table row before any package heading"
        if has_subpackage:
            given = _BACKTICKED.findall(cells[0])
            if given:
                subpackage = given[0]
            module_cell = cells[1]
        else:
            module_cell = cells[0]
        prefix = ".".join(part for part in (package, subpackage) if part)
        for name in _BACKTICKED.findall(module_cell):
            named.setdefault(f"{prefix}.{name}", number)
    return named


def source_modules(source: Path) -> tuple[set[str], set[str]]:
    """(every module file but ``__init__.py``, every package) of ``source``, dotted."""
    modules: set[str] = set()
    packages: set[str] = set()
    for path in (source / "vaultfs").rglob("*.py"):
        parts = path.relative_to(source).with_suffix("").parts
        if parts[-1] == "__init__":
            packages.add(".".join(parts[:-1]))
        else:
            modules.add(".".join(parts))
    return modules, packages


def test_every_module_has_a_row() -> None:
    modules, _ = source_modules(SOURCE)
    missing = sorted(modules - named_modules(DOC.read_text()).keys())
    assert not missing, "modules without a row in docs/architecture.md:\n" + "\n".join(missing)


def test_every_row_names_a_module_that_exists() -> None:
    modules, packages = source_modules(SOURCE)
    named = named_modules(DOC.read_text())
    stale = sorted(
        f"line {line}: {name}" for name, line in named.items() if name not in modules | packages
    )
    assert not stale, "docs/architecture.md names modules that do not exist:\n" + "\n".join(stale)


def test_the_rule_catches_both_ways(tmp_path: Path) -> None:
    """The rule on a small tree and doc: a module left out and a name that leads
    nowhere are both found; the subpackage is carried down, and reset by a new table."""
    for module in ("vaultfs/a.py", "vaultfs/sub/b.py", "vaultfs/sub/c.py", "vaultfs/d.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    (tmp_path / "vaultfs" / "sub" / "__init__.py").write_text("")
    doc = (
        "# A\n\n## Who owns what\n\n### Top (`vaultfs`)\n"
        "| subpackage | module | owns |\n|---|---|---|\n"
        "| | `a` | a |\n| `sub` | `b` | b |\n| | `gone`, `c` | c |\n"
        "### Again (`vaultfs`)\n| module | owns |\n|---|---|\n| `sub` | the package |\n"
        "\n## Later\n| module | owns |\n|---|---|\n| `d` | not in the section |\n"
    )
    named = named_modules(doc)
    assert set(named) == {
        "vaultfs.a",
        "vaultfs.sub.b",
        "vaultfs.sub.gone",
        "vaultfs.sub.c",
        "vaultfs.sub",
    }
    modules, packages = source_modules(tmp_path)
    assert modules - named.keys() == {"vaultfs.d"}
    assert {name for name in named if name not in modules | packages} == {"vaultfs.sub.gone"}
