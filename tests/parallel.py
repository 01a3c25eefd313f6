"""How the suite is shared among parallel processes (pytest-xdist, ``pytest -n N``,
which ``./run test`` uses): what one worker takes at a time, and in which order.

A unit of work is a whole test file when one of its tests uses a fixture made once per
module or class (a module's vault, mount, API client): the file's module-scoped
fixtures are then made once, as in a serial run, and its tests run in their order.
The tests of a file whose fixtures are all per test or per session (a vault of each
test's own, ``fresh_vault``) are units of their own: a file of six tests of a minute
each no longer keeps one worker busy for six minutes while the others have finished.
Tests marked ``xdist_group(name)`` go to one worker together, whatever their files
(with ``--dist loadgroup``, the suite's default: pyproject.toml).

The heaviest units are handed out first (longest processing time first), so that no
long unit starts when the rest of the suite is nearly done and runs on alone. A unit's
weight is its file's seconds in ``file_seconds.txt`` (what a whole run measured, shared
among the file's tests when they go out one by one; ``python -m tests.parallel LOG``
makes the table again from a run's ``--durations=0`` output), or a second a test for a
file not in it. The weights only order the work: stale ones make a run longer, never
wrong.

The workers order their collection (``order_units``: every worker the same, so their
collections agree) and mark the tests that go out alone; the scheduler here, in the
controlling process, which sees node ids only, keeps that order and reads the mark
(the ``@apart`` at the end of the node id of a test in a group: ``name_groups``).

Everything a test starts is its own (temporary directories, ports from the worker's
share: ``vaultfs.testing.vault_process.free_port``, PostgreSQL clusters, S3 servers,
session buses), so units run side by side as they run one after another.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from xdist.scheduler import LoadGroupScheduling

__all__ = [
    "FileScheduling",
    "in_worker",
    "make_scheduler",
    "mark_apart",
    "name_groups",
    "order_units",
]

#: The group of the tests that go out one by one.
APART = "apart"
#: Module-scoped fixtures that hold nothing of their own, only pick what the session
#: made (tests/server/conftest.py: the session's vault of a backend), so that a test
#: using them can run in any worker.
SHARED_ANYWAY = frozenset({"vault_server"})
#: Seconds of a test of a file not in the table.
DEFAULT_SECONDS = 1.0
_TABLE = Path(__file__).with_name("file_seconds.txt")


class FileScheduling(LoadGroupScheduling):
    """``loadgroup`` with a test file as the unit of work of the tests in no group, each
    test of group ``APART`` a unit alone, and the units in the workers' order."""

    def _split_scope(self, nodeid: str) -> str:
        scope = super()._split_scope(nodeid)
        if scope == APART:
            return nodeid
        if scope != nodeid:  # the name of the test's xdist_group
            return scope
        return nodeid.split("::", 1)[0]


def make_scheduler(config: pytest.Config, log: object) -> FileScheduling | None:
    """The scheduler of ``--dist loadgroup``; None (xdist's own) for another ``--dist``."""
    if config.getvalue("dist") != "loadgroup":
        return None
    # The units in the order of the workers' collection (``order_units``), not by
    # their number of tests.
    config.option.loadscopereorder = False
    return FileScheduling(config, log)  # type: ignore[arg-type]


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _bound_to_its_module(item: pytest.Item) -> bool:
    """Whether the test uses a fixture made once per module or class (which its file's
    other tests share)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return True
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name)
        if name in SHARED_ANYWAY or not defs:
            continue
        if defs[-1].scope in ("module", "class", "package"):
            return True
    return False


def file_seconds(table: Path = _TABLE) -> dict[str, float]:
    """The table of ``file_seconds.txt``: seconds and path on each line."""
    seconds: dict[str, float] = {}
    try:
        lines = table.read_text().splitlines()
    except OSError:
        return seconds
    for line in lines:
        fields = line.split()
        if len(fields) == 2 and not line.startswith("#"):
            seconds[fields[1]] = float(fields[0])
    return seconds


def _group_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return None
    return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))


def in_worker(config: pytest.Config) -> bool:
    """Whether this process is a worker of a parallel run that shares the suite out here."""
    # xdist sets a worker's own --dist to "no", and "loadgroup" aside.
    return hasattr(config, "workerinput") and bool(getattr(config.option, "loadgroup", False))


def mark_apart(items: list[pytest.Item]) -> None:
    """Put the tests of each file whose fixtures are all per test or per session in
    group ``APART`` (before xdist reads the groups)."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(_file_of(item), []).append(item)
    for tests in files.values():
        if any(item.get_closest_marker("xdist_group") for item in tests):
            continue
        if not any(_bound_to_its_module(item) for item in tests):
            for item in tests:
                item.add_marker(pytest.mark.xdist_group(APART))


def name_groups(items: list[pytest.Item]) -> None:
    """End the node id of each test in a group with ``@`` and the group's name, which is
    what the scheduler reads. xdist's workers do it themselves by setting ``_nodeid``,
    which pytest 9 no longer reads (its node ids are ``NodeId`` objects): without this,
    no group would reach the scheduler."""
    for item in items:
        group = _group_of(item)
        if group is None or item.nodeid.endswith("@" + group):
            continue
        nodeid = f"{item.nodeid}@{group}"
        try:
            from _pytest.nodeid import NodeId  # pytest 9
        except ImportError:  # pragma: no cover - pytest 8 reads _nodeid
            item._nodeid = nodeid
        else:
            item._id = NodeId.parse(nodeid)  # type: ignore[attr-defined]


def order_units(items: list[pytest.Item]) -> None:
    """Order the units heaviest first (stable: a file's tests keep their order)."""
    seconds = file_seconds()
    units = _units_of(items)
    weighted: list[tuple[float, list[pytest.Item]]] = []
    for path, unit, share in units:
        weighted.append((seconds.get(path, DEFAULT_SECONDS * share) / share * len(unit), unit))
    weighted.sort(key=lambda unit: -unit[0])
    items[:] = [item for _, unit in weighted for item in unit]


def _units_of(items: list[pytest.Item]) -> list[tuple[str, list[pytest.Item], int]]:
    """(file, its tests in the unit, the file's number of tests) of each unit."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(_file_of(item), []).append(item)
    units: list[tuple[str, list[pytest.Item], int]] = []
    for path, tests in files.items():
        if all(_group_of(item) == APART for item in tests):
            units.extend((path, [item], len(tests)) for item in tests)
        else:
            units.append((path, tests, len(tests)))
    return units


def table_from_durations(log: str) -> str:
    """``file_seconds.txt`` from the output of a run with ``--durations=0``: each file's
    setup, call and teardown seconds summed."""
    seconds: Counter[str] = Counter()
    for line in log.splitlines():
        found = re.match(r"^([\d.]+)s (?:setup|call|teardown)\s+(\S+)", line)
        if found:
            seconds[found[2].split("::", 1)[0]] += float(found[1])
    rows = [f"{round(s)} {path}" for path, s in seconds.most_common() if round(s) >= 1]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(table_from_durations(Path(sys.argv[1]).read_text(errors="replace")))
