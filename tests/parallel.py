"""How the suite is shared among parallel processes (pytest-xdist, ``pytest -n N``,
which ``./run test`` uses): what one worker takes at a time.

A worker takes a whole test file: the file's module-scoped vaults and mounts are made
once, as in a serial run, and its tests run in their order. Tests marked
``xdist_group(name)`` go to one worker together, whatever their files (with
``--dist loadgroup``, the suite's default: pyproject.toml). Files with more tests are
handed out first, so that a long file does not start last.

Everything a test starts is its own (temporary directories, ports from the worker's
share: ``vaultfs.testing.vault_process.free_port``, PostgreSQL clusters, S3 servers,
session buses), so files run side by side as they run one after another.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadGroupScheduling

__all__ = ["FileScheduling"]


class FileScheduling(LoadGroupScheduling):
    """``loadgroup`` with a test file as the unit of work of the tests in no group."""

    def _split_scope(self, nodeid: str) -> str:
        scope = super()._split_scope(nodeid)
        if scope != nodeid:  # the name of the test's xdist_group
            return scope
        return nodeid.split("::", 1)[0]


def make_scheduler(config: pytest.Config, log: object) -> FileScheduling | None:
    """The scheduler of ``--dist loadgroup``; None (xdist's own) for another ``--dist``."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return FileScheduling(config, log)  # type: ignore[arg-type]
