"""Fixtures of the desktop tier: GNOME Files on a virtual display (``desktop.Desktop``),
one for each test, and a mount of the module's vault made for one test (a fresh mount:
its own cache directory, nothing read yet).

Every test module here marks its tests ``desktop`` (``pytest -m desktop`` runs the tier
alone) and ``mount``, and sends them to one worker of a parallel run
(``xdist_group("desktop")``, ``MARKS``): each test runs a display server, a session bus
and GNOME Files, and two at once on the suite's two cores would slow each other past
what the tests measure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.desktop.desktop import Desktop, need_desktop
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess

MARKS = [pytest.mark.desktop, pytest.mark.mount, pytest.mark.xdist_group("desktop")]


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[Callable[[Path], Desktop]]:
    """``desktop(folder)``: GNOME Files showing ``folder``, ended after the test."""
    need_desktop()
    started: list[Desktop] = []

    def open_folder(folder: Path) -> Desktop:
        session = Desktop(tmp_path / f"desktop{len(started)}")
        session.root.mkdir()
        started.append(session)
        return session.start(folder)

    try:
        yield open_folder
    finally:
        for session in started:
            session.stop()


@pytest.fixture
def fresh_mount(module_vault: VaultProcess, tmp_path: Path) -> Iterator[MountProcess]:
    """A mount of ``module_vault`` that has read nothing yet (its own cache)."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    process = MountProcess(module_vault.url, tmp_path / "mount")
    try:
        yield process.start()
    finally:
        process.stop()
